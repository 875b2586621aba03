package desired

import (
	"fmt"
	"net/netip"
	"sort"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
)

// Session is an ATSSSSession with what the operator allocated for it.
type Session struct {
	Name string
	Spec junctionv1.ATSSSSessionSpec
	// UserIndex is the SUPI's index into the path-state registers.
	UserIndex uint32
	// EndpointIndex is the position of the session's tunnel endpoint in the UPF spec.
	EndpointIndex uint8
	// PeerIndex is the gNB's tunnel_peers index; 0 when the session has no 3GPP leg.
	PeerIndex uint16
	// SequenceIndex is the session's sequence counter, set for exception sessions only.
	SequenceIndex *uint32
	// UsageIndex is the session's cell in the usage counters (uplink_usage, downlink_usage).
	UsageIndex uint32
	// QoSFlowIndex is the session's block of QoS flow policer cells, set for a session with
	// spec.qosFlows only (QoSFlowCell).
	QoSFlowIndex *uint32
	// Policies are the SteeringPolicies the session selects that exist.
	Policies []Policy
}

// Lookup decides whether a session can be summarized (the shared applications entries give its
// steering) or is an exception: a mode override or a policy steering of its own, or a selected
// policy whose mode splits one session's packets across both accesses and so needs a
// per-session sequence counter.
func Lookup(spec junctionv1.ATSSSSessionSpec, policies []Policy) (junctionv1.LookupKind, error) {
	if spec.Type == junctionv1.SessionSingleAccess {
		return junctionv1.LookupSummarized, nil
	}
	if spec.ModeOverride != nil || len(spec.PolicySteering) > 0 {
		return junctionv1.LookupException, nil
	}
	for _, p := range policies {
		s, err := p.Steering()
		if err != nil {
			return "", err
		}
		if s.NeedsSequence() {
			return junctionv1.LookupException, nil
		}
	}
	return junctionv1.LookupSummarized, nil
}

// SessionEntries are the entries one session owns: its `sessions` entry, its legs' uplink TEIDs
// (the 3GPP leg's, and the non-3GPP leg's when it runs over N3), and for exception sessions one `session_overrides` entry per selected policy (and one for traffic
// no policy matches, when the mode is overridden). Tunnel peers are shared and counted apart.
func SessionEntries(s Session) ([]Entry, error) {
	sa, err := parseAddr("sessionAddress", string(s.Spec.SessionAddress))
	if err != nil {
		return nil, err
	}
	var out []Entry
	if s.Spec.Type == junctionv1.SessionSingleAccess {
		out, err = singleAccessEntries(s, sa)
	} else {
		out, err = multiAccessEntries(s, sa)
	}
	if err != nil {
		return nil, err
	}
	if leg := s.Spec.AccessLegs.ThreeGPP; leg != nil && leg.IndirectForwarding != nil {
		out = append(out, forwardingTunnel(leg.IndirectForwarding.TEID))
	}
	flows, err := qosFlowEntries(s, sa)
	return append(out, flows...), err
}

// multiAccessEntries are the entries of an MA PDU session (SessionEntries).
func multiAccessEntries(s Session, sa netip.Addr) ([]Entry, error) {
	spec := s.Spec
	if spec.AccessLegs.ThreeGPP.Buffers() {
		// No access is active and the UE is idle on 3GPP: the downlink misses `sessions` and is
		// held (buffer_downlink); the overrides stay for when a leg is back.
		hold := Entry{Table: TableDownlinkTunnels, Match: []Match{{Field: "ue_addr", Kind: Exact, Value: addr(sa)}}, Action: ActionBufferDownlink}
		overrides, err := sessionOverrides(s, sa)
		return append([]Entry{hold}, overrides...), err
	}
	var err error
	var ue3, ueN, gwN = netip.IPv4Unspecified(), netip.IPv4Unspecified(), netip.IPv4Unspecified()
	var teidDown, teidDownN uint32
	peer := s.PeerIndex
	var out []Entry
	// An inactive leg (dropDownlink) has no downlink. A 3GPP one with an uplink TEID keeps its
	// address and that TEID, with no tunnel peer (0: no tunnel_peers entry): what the UE sends
	// before the SMF's modification reaches the UPF (a Service Request's first uplink, TS 23.502
	// §4.2.3.2) goes through, and a downlink steered to it would find no peer, so the programmer
	// keeps its path state unavailable (initialPathWrites). Any other inactive leg gets nothing:
	// with its UE address 0 in `sessions` steering does not choose it.
	if leg := spec.AccessLegs.ThreeGPP; leg != nil && leg.DropDownlink && leg.UplinkTEID != 0 {
		if ue3, err = parseAddr("accessLegs.threeGPP.ueAddress", string(leg.UEAddress)); err != nil {
			return nil, err
		}
		peer = 0
		out = append(out, uplinkTunnel(leg.UplinkTEID, contract.Access3GPP, s.UsageIndex))
	} else if leg != nil && !leg.DropDownlink {
		if ue3, err = parseAddr("accessLegs.threeGPP.ueAddress", string(leg.UEAddress)); err != nil {
			return nil, err
		}
		if peer == 0 {
			return nil, fmt.Errorf("session %s has a 3GPP leg but no tunnel peer index", s.Name)
		}
		teidDown = uint32(leg.DownlinkTEID)
		out = append(out, uplinkTunnel(leg.UplinkTEID, contract.Access3GPP, s.UsageIndex))
		qfis, err := tunnelQFI(leg, spec.QFI)
		if err != nil {
			return nil, err
		}
		out = append(out, qfis...)
	}
	if leg := spec.AccessLegs.NonThreeGPP; leg != nil && !leg.DropDownlink {
		if ueN, err = parseAddr("accessLegs.nonThreeGPP.ueAddress", string(leg.UEAddress)); err != nil {
			return nil, err
		}
		if leg.OverN3() {
			if gwN, err = parseAddr("accessLegs.nonThreeGPP.gatewayAddress", string(leg.GatewayAddress)); err != nil {
				return nil, err
			}
			teidDownN = uint32(leg.DownlinkTEID)
			out = append(out, uplinkTunnel(leg.UplinkTEID, contract.AccessNon3GPP, s.UsageIndex))
			out = append(out, tunnelQFIEntry(gwN, leg.DownlinkTEID, spec.QFI)...)
		}
	}
	out = append(out, Entry{
		Table:  "sessions",
		Match:  []Match{{Field: "session_addr", Kind: Exact, Value: addr(sa)}},
		Action: "set_session",
		Params: []Param{
			{"user_idx", u32(s.UserIndex)},
			{"endpoint_idx", u8(s.EndpointIndex)},
			{"peer_idx", u16(peer)},
			{"teid", u32(teidDown)},
			{"ue_addr_3gpp", addr(ue3)},
			{"ue_addr_non3gpp", addr(ueN)},
			{"gateway_non3gpp", addr(gwN)},
			{"teid_non3gpp", u32(teidDownN)},
			{"usage_idx", u32(s.UsageIndex)},
		},
	})
	out = append(out, mbrSessionEntry(s, sa)...)
	overrides, err := sessionOverrides(s, sa)
	return append(out, overrides...), err
}

// sessionOverrides are an exception session's `session_overrides` entries (SessionEntries); none
// for a summarized one.
func sessionOverrides(s Session, sa netip.Addr) ([]Entry, error) {
	spec := s.Spec
	kind, err := Lookup(spec, s.Policies)
	if err != nil {
		return nil, err
	}
	if kind == junctionv1.LookupSummarized {
		return nil, nil
	}
	if s.SequenceIndex == nil {
		return nil, fmt.Errorf("session %s is an exception entry but has no sequence index", s.Name)
	}
	var override *Steering
	if spec.ModeOverride != nil {
		o, err := EncodeSteering(*spec.ModeOverride, spec.ModeOverrideThresholds)
		if err != nil {
			return nil, fmt.Errorf("modeOverride: %w", err)
		}
		override = &o
	}
	own, err := PolicySteerings(spec)
	if err != nil {
		return nil, err
	}
	// Overrides per application: the session's own steering of the policy, else its override,
	// else the policy's own mode (for its sequence counter); with an override, traffic no policy
	// matches is overridden too.
	steerings := map[uint16]Steering{}
	for _, p := range s.Policies {
		st, err := p.Steering()
		if err != nil {
			return nil, err
		}
		o, mine := own[p.Name]
		switch {
		case mine:
			st = o
		case override != nil:
			st = *override
		}
		if mine || override != nil || st.NeedsSequence() {
			steerings[p.AppID] = st
		}
	}
	if override != nil {
		steerings[defaultApplicationID] = *override
	}
	apps := make([]uint16, 0, len(steerings))
	for id := range steerings {
		apps = append(apps, id)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i] < apps[j] })
	var out []Entry
	for _, id := range apps {
		out = append(out, Entry{
			Table: "session_overrides",
			Match: []Match{
				{Field: "session_addr", Kind: Exact, Value: addr(sa)},
				{Field: "app_id", Kind: Exact, Value: u16(id)},
			},
			Action: "override_steering",
			Params: append(steerings[id].params(), Param{"seq_index", u32(*s.SequenceIndex)}),
		})
	}
	return out, nil
}

// Downlink buffering (docs/pipeline.md): the downlink_tunnels action that sends a session's
// downlink to the controller, and the packet_out field that sends a held packet back through the
// pipeline. A P4 program may leave both out; a session that buffers then cannot be programmed.
const (
	TableDownlinkTunnels = "downlink_tunnels"
	ActionBufferDownlink = "buffer_downlink"
	PacketOutToIngress   = "to_ingress"
)

// PacketOutEgressPort is the packet_out field that names the port a packet-out without
// to_ingress leaves on, unchanged (an End Marker, desired.EndMarker).
const PacketOutEgressPort = "egress_port"

// singleAccessEntries are an ordinary PDU session's: its uplink TEID (decapsulated, then routed)
// and its downlink_tunnels entry (plain GTP-U toward its gNB, no Junction header; or, while its
// UE is idle, buffer_downlink: the packets go to the controller, which holds them). A session
// whose downlink drops has no downlink_tunnels entry but a filters entry that denies its address
// as destination (dropDownlinkFilter), and no uplink_tunnels entry while it has no uplink TEID
// (an idle UE's session whose SMF removed every rule).
func singleAccessEntries(s Session, sa netip.Addr) ([]Entry, error) {
	leg := s.Spec.AccessLegs.ThreeGPP
	if leg == nil || s.Spec.AccessLegs.NonThreeGPP != nil {
		return nil, fmt.Errorf("session %s is SingleAccess: it needs its 3GPP leg and no other", s.Name)
	}
	if leg.DropDownlink {
		var out []Entry
		if leg.UplinkTEID != 0 {
			out = append(out, uplinkTunnel(leg.UplinkTEID, contract.Access3GPP, s.UsageIndex))
		}
		return append(append(out, dropDownlinkFilter(sa)), mbrSessionEntry(s, sa)...), nil
	}
	down := Entry{Table: TableDownlinkTunnels, Match: []Match{{Field: "ue_addr", Kind: Exact, Value: addr(sa)}}, Action: ActionBufferDownlink}
	var qfis []Entry // a buffering session has no tunnel yet, so no QFI for it
	if !leg.BufferDownlink {
		if s.PeerIndex == 0 {
			return nil, fmt.Errorf("session %s has a 3GPP leg but no tunnel peer index", s.Name)
		}
		var err error
		if qfis, err = tunnelQFI(leg, s.Spec.QFI); err != nil {
			return nil, err
		}
		down.Action = "encap_gtpu"
		down.Params = []Param{{"teid", u32(uint32(leg.DownlinkTEID))}, {"peer_idx", u16(s.PeerIndex)}, {"endpoint_idx", u8(s.EndpointIndex)}, {"usage_idx", u32(s.UsageIndex)}}
	}
	out := []Entry{uplinkTunnel(leg.UplinkTEID, contract.Access3GPP, s.UsageIndex), down}
	return append(append(out, qfis...), mbrSessionEntry(s, sa)...), nil
}

// dropDownlinkFilter is the filters entry of a single-access session whose downlink drops: deny
// every user packet to its address (docs/pipeline.md, step 5: counted as FILTERED). Without it
// the downlink would miss downlink_tunnels and be routed like any other packet, back toward the
// data network. The filters table is ternary and shared (MAX_FILTERS), so a drop is meant for
// the moments an SMF has no tunnel yet, not as a standing state.
func dropDownlinkFilter(sa netip.Addr) Entry {
	return Entry{Table: tableFilters, Match: []Match{{Field: "dst_addr", Kind: Ternary, Value: addr(sa), Mask: []byte{0xff, 0xff, 0xff, 0xff}}},
		Action: actionDeny, Priority: dropDownlinkPriority}
}

// The stateless filter (docs/pipeline.md, step 5), and the priority of a dropped downlink's
// entry in it: Junction writes no other filters entry, so any priority does.
const (
	tableFilters         = "filters"
	actionDeny           = "deny"
	dropDownlinkPriority = 1
)

// tunnelQFI is tunnelQFIEntry for a 3GPP leg's tunnel, toward its gNB.
func tunnelQFI(leg *junctionv1.ThreeGPPLeg, qfi int32) ([]Entry, error) {
	if qfi == 0 {
		return nil, nil
	}
	gnb, err := parseAddr("accessLegs.threeGPP.gnbAddress", string(leg.GNBAddress))
	if err != nil {
		return nil, err
	}
	return tunnelQFIEntry(gnb, leg.DownlinkTEID, qfi), nil
}

// tunnelQFIEntry is the tunnel_qfis entry of a downlink GTP-U tunnel (its peer, gNB or access
// gateway, and the TEID the peer gave) when the session has a QFI: its G-PDUs carry it in a PDU
// Session Container (docs/pipeline.md). None without a QFI.
func tunnelQFIEntry(peer netip.Addr, teid int64, qfi int32) []Entry {
	if qfi == 0 {
		return nil
	}
	return []Entry{{Table: "tunnel_qfis", Match: []Match{{Field: "peer_addr", Kind: Exact, Value: addr(peer)}, {Field: "teid", Kind: Exact, Value: u32(uint32(teid))}},
		Action: "set_qfi", Params: []Param{{"qfi", u8(uint8(qfi))}}}}
}

// uplinkTunnel is a leg's uplink TEID entry: decapsulated, and the leg it belongs to (the
// arrival access of the Junction inside), with the session's usage cell.
func uplinkTunnel(teid int64, access contract.Access, usage uint32) Entry {
	return Entry{Table: "uplink_tunnels", Match: []Match{{Field: "teid", Kind: Exact, Value: u32(uint32(teid))}}, Action: "decap_gtpu",
		Params: []Param{{"access", u8(uint8(access))}, {"usage_idx", u32(usage)}}}
}

// PolicySteerings encodes a session's spec.policySteering by policy name.
func PolicySteerings(spec junctionv1.ATSSSSessionSpec) (map[string]Steering, error) {
	out := make(map[string]Steering, len(spec.PolicySteering))
	for i, ps := range spec.PolicySteering {
		st, err := EncodeSteering(ps.Steering, ps.Thresholds)
		if err != nil {
			return nil, fmt.Errorf("policySteering[%d] (%s): %w", i, ps.Name, err)
		}
		out[ps.Name] = st
	}
	return out, nil
}

// ReadsRTTComparison reports whether any steering the session's downlink can take reads the
// RTT comparison (Steering.ReadsRTTComparison): a selected policy's mode, the session's own
// steering of it or its mode override, and, for traffic no policy matches, the override or the
// default (active-standby on 3GPP, which reads none).
func ReadsRTTComparison(s Session) (bool, error) {
	spec := s.Spec
	if spec.ModeOverride != nil {
		o, err := EncodeSteering(*spec.ModeOverride, spec.ModeOverrideThresholds)
		if err != nil {
			return false, fmt.Errorf("modeOverride: %w", err)
		}
		// The override steers every application the session selects except those it steers
		// itself (policySteering), and the traffic no policy matches.
		if o.ReadsRTTComparison() {
			return true, nil
		}
	}
	own, err := PolicySteerings(spec)
	if err != nil {
		return false, err
	}
	for _, p := range s.Policies {
		st, err := p.Steering()
		if err != nil {
			return false, err
		}
		if o, mine := own[p.Name]; mine {
			st = o
		} else if spec.ModeOverride != nil {
			continue // the override, judged above
		}
		if st.ReadsRTTComparison() {
			return true, nil
		}
	}
	return false, nil
}
