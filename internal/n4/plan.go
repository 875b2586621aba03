package n4

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/wmnsk/go-pfcp/ie"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/wire"
)

// Plan is what one PFCP session becomes in Junction's model: an ATSSSSession spec and the
// traffic-class SteeringPolicies its SDF filters need (docs/n4.md, "Mapping").
type Plan struct {
	Spec     junctionv1.ATSSSSessionSpec
	Policies []Policy
	// DropBuffered: drop the downlink the session holds before the rules apply (a Session
	// Modification's PFCPSMReq-Flags DROBU, TS 29.244 §8.2.57).
	DropBuffered bool `json:"-"`
	// EndMarkers: the GTP-U tunnels to send an End Marker on once the rules apply (an Update
	// FAR's SNDEM that moved the FAR to another tunnel).
	EndMarkers []EndMarker `json:"-"`
	// Parked: no entry names the session's usage cells (a session without PDRs, idlePlan; an
	// MA PDU session that holds its downlink), so they count nothing until its next rules zero
	// them (State.Carried).
	Parked bool `json:"-"`
}

// EndMarker names a tunnel a FAR left: its peer's address and the TEID the peer gave.
type EndMarker struct {
	Peer netip.Addr
	TEID uint32
}

// endMarkers are the tunnels the FARs of next left whose Update FAR asked for End Markers
// (SNDEM): a FAR that tunnelled over GTP-U in cur and now tunnels elsewhere or not at all. SNDEM
// on a FAR whose tunnel stays asks for nothing (TS 29.244 sets it where Outer Header Creation
// changes). It clears the requests' flags.
func endMarkers(cur, next *Rules) []EndMarker {
	var out []EndMarker
	for _, id := range sortedKeys(next.FARs) {
		f := next.FARs[id]
		if !f.SendEndMarker {
			continue
		}
		f.SendEndMarker = false
		old := cur.FARs[id]
		if old == nil || old.OHC == nil || old.OHC.Desc != ohcGTPUv4 || sameOHC(old.OHC, f.OHC) {
			continue
		}
		if m := (EndMarker{Peer: old.OHC.Addr, TEID: old.OHC.TEID}); !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Policy is a SteeringPolicy the plan needs: a traffic class (an SDF filter at a precedence)
// named by its content, so sessions with the same filter share it. Its own steering is the
// pipeline's default application's (active-standby on 3GPP), so the traffic of a session that
// does not select it is steered as if it had no policy; sessions that select it steer it by
// their MAR (spec.policySteering).
type Policy struct {
	Name string
	Spec junctionv1.SteeringPolicySpec
}

// Target is what the plan needs of the UPF.
type Target struct {
	UPF            string     // the UserPlaneFunction's name
	TunnelEndpoint string     // the tunnel endpoint N4 sessions use
	N3             netip.Addr // its n3Address: F-TEIDs the UPF allocates carry it
	// Gateways are the access of the gateways spec.n4.accessGateways lists, by N3 address; a
	// non-3GPP leg through any other gateway, or a plain one, is WiFi.
	Gateways map[netip.Addr]junctionv1.NonThreeGPPType
}

// access is a leg of the MA PDU session.
type access int

const (
	access3GPP access = iota
	accessNon3GPP
)

func (a access) api() junctionv1.Access {
	if a == access3GPP {
		return junctionv1.Access3GPP
	}
	return junctionv1.AccessNon3GPP
}

// leg is what the FARs and PDRs say of one access. An inactive one's FAR buffers, drops or has
// no tunnel yet: the access carries nothing for now (docs/n4.md, "An access not active").
type leg struct {
	far      uint32
	ohc      OHC
	kind     junctionv1.NonThreeGPPType
	inactive bool
	buffers  bool // inactive, its FAR says BUFF
}

// gtpu says whether the leg runs over GTP-U: the 3GPP leg always, a non-3GPP one from an access
// gateway on N3.
func (l *leg) gtpu() bool { return l.ohc.Desc == ohcGTPUv4 }

// makePlan maps a session's rules onto Junction's model. teids are the TEIDs the UPF chose for
// PDRs with CH set; idle is the address of the single-access session the rules belong to, which
// it keeps if they have no PDR left (State.Idle). Every refusal names the rule (Failed Rule ID)
// or the IE (Offending IE).
func makePlan(r *Rules, teids map[uint16]uint32, supi string, idle netip.Addr, t Target) (*Plan, error) {
	for _, id := range sortedKeys(r.PDRs) {
		p := r.PDRs[id]
		if err := checkRefs(r, p); err != nil {
			return nil, err
		}
		if !r.cpForwarding(p) && p.Source != ifaceAccess && p.Source != ifaceCore && p.Source != ifaceN6LAN {
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d: Source Interface %d is neither Access nor Core (nor the CP function's IPv6 router advertisements, docs/n4.md)", p.ID, p.Source)
		}
	}
	// After the references: a URR's scope reads the QoS flows, and so the QERs the PDRs name.
	if err := r.checkURRs(); err != nil {
		return nil, err
	}
	fw, err := indirectForwardingOf(r, teids, t)
	if err != nil {
		return nil, err
	}
	plan, err := mapSession(r, teids, supi, idle, t)
	if err != nil || fw == nil {
		return plan, err
	}
	leg := plan.Spec.AccessLegs.ThreeGPP
	switch {
	case leg == nil:
		return nil, ruleFailure(ie.RuleIDTypePDR, uint32(fw.pdr), "PDR %d forwards a handover's downlink to a gNB, and the session has no 3GPP leg", fw.pdr)
	case leg.UplinkTEID == fw.tunnel.TEID:
		return nil, ruleFailure(ie.RuleIDTypePDR, uint32(fw.pdr), "forwarding PDR %d has the uplink's TEID %#x: the TEID tells the UPF which a G-PDU is", fw.pdr, fw.tunnel.TEID)
	}
	leg.IndirectForwarding = &fw.tunnel
	return plan, nil
}

// mapSession is makePlan for the PDRs that carry the session's own traffic (byDirection).
func mapSession(r *Rules, teids map[uint16]uint32, supi string, idle netip.Addr, t Target) (*Plan, error) {
	up, down, _ := r.byDirection()
	for _, id := range sortedKeys(r.FARs) {
		if b := r.FARs[id].BARID; b != nil && r.BARs[*b] == nil {
			return nil, ruleFailure(ie.RuleIDTypeFAR, id, "FAR %d names BAR %d, which the session does not have", id, *b)
		}
	}
	for _, id := range sortedKeys(r.MARs) {
		m := r.MARs[id]
		for _, a := range m.AFAI {
			if a != nil && r.FARs[a.FARID] == nil {
				return nil, ruleFailure(ruleTypeMAR, uint32(m.ID), "MAR %d names FAR %d, which the session does not have", m.ID, a.FARID)
			}
		}
	}
	if len(down) == 0 && len(up) == 0 {
		if !idle.IsValid() {
			return nil, refuse(CauseMandatoryIEMissing, ie.CreatePDR, "the session has no PDR")
		}
		return idlePlan(idle, supi, t), nil
	}
	multi := false
	for _, p := range down {
		multi = multi || p.MARID != nil
	}
	q, err := qosOf(r)
	if err != nil {
		return nil, err
	}
	gates, err := q.gates(r, up, down)
	if err != nil {
		return nil, err
	}
	if !multi {
		// A flow's downlink PDR that waits for its gNB (pendingDownlink) is none of the session's
		// downlink yet.
		down = slices.DeleteFunc(slices.Clone(down), func(p *PDR) bool { return q.pending[p.ID] })
		p, err := singleAccessPlan(r, up, down, teids, supi, q.qfi, q.mbr, t)
		if p != nil {
			p.Spec.Gates, p.Spec.QoSFlows = gates, q.flows
		}
		return p, err
	}

	// Downlink: the UE IP address is the session address; every downlink PDR is steered by a MAR.
	spec := junctionv1.ATSSSSessionSpec{UE: junctionv1.UE{SUPI: supi}, UPFRef: junctionv1.LocalObjectReference{Name: t.UPF}, TunnelEndpoint: t.TunnelEndpoint, QFI: q.qfi,
		MaxBitRate: q.mbr, Gates: gates, QoSFlows: q.flows}
	session, err := downlinkAddress(r, down)
	if err != nil {
		return nil, err
	}
	for _, p := range down {
		if p.MARID == nil {
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "downlink PDR %d has a FAR and no MAR, other downlink PDRs have MARs: an MA PDU session's downlink is steered by MARs", p.ID)
		}
	}
	spec.SessionAddress = junctionv1.IPv4Address(session.String())

	// The legs: each MAR's AFAIs name the FARs of the two accesses; all MARs must agree.
	var legs [2]*leg
	accessOf := map[uint32]access{} // each MAR's FAR, by the access it serves
	for _, p := range down {
		m := r.MARs[*p.MARID]
		for i, a := range m.AFAI {
			if a == nil {
				continue
			}
			l, acc, err := legOf(r.FARs[a.FARID], i, t.Gateways)
			if err != nil {
				return nil, err
			}
			if o := legs[acc]; o != nil && (o.ohc != l.ohc || o.inactive != l.inactive || o.buffers != l.buffers) {
				return nil, ruleFailure(ruleTypeMAR, uint32(m.ID), "MAR %d sends %s traffic through FAR %d, another MAR through FAR %d with another outer header or action: a session has one leg per access, active or not", m.ID, acc.api(), l.far, o.far)
			}
			legs[acc], accessOf[a.FARID] = l, acc
		}
	}
	active := func(acc access) bool { return legs[acc] != nil && !legs[acc].inactive }

	// Uplink: a leg over GTP-U (3GPP, or non-3GPP from an N3IWF, TNGF or W-AGF) takes its TEID and
	// UE address from the PDR with an F-TEID whose 3GPP Interface Type names the access (none:
	// 3GPP); a plain non-3GPP PDR (UDP/IPv4 removed) must agree with the non-3GPP FAR.
	var ul [2]*PDR
	var ulTEID [2]uint32
	for _, p := range up {
		if err := forwardsToCore(r, p); err != nil {
			return nil, err
		}
		switch {
		case p.FTEID != nil:
			teid, err := uplinkTEID(p, teids, t)
			if err != nil {
				return nil, err
			}
			acc := access3GPP
			if p.SourceType != nil && (*p.SourceType == itypeN3TrustedNon3GPP || *p.SourceType == itypeN3UntrustedNon3GPP) {
				acc = accessNon3GPP
			}
			if l := legs[acc]; active(acc) && !l.gtpu() {
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d has an F-TEID on %s access, whose FAR sends plain UDP/IPv4: a leg is over GTP-U both ways or neither", p.ID, acc.api())
			}
			if !p.UEIP.IsValid() {
				return nil, refuse(CauseConditionalIEMissing, ie.UEIPAddress, "uplink PDR %d has no source UE IP Address (the UE's address on its %s leg)", p.ID, acc.api())
			}
			if o := ul[acc]; o != nil && (teid != ulTEID[acc] || p.UEIP != o.UEIP) {
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDRs %d and %d differ in TEID or UE address: a session has one %s leg", o.ID, p.ID, acc.api())
			}
			ul[acc], ulTEID[acc] = p, teid
		case p.OHR != nil && *p.OHR == ohrUDPv4:
			if l := legs[accessNon3GPP]; l != nil && l.inactive {
				ul[accessNon3GPP] = p // the leg's UE address, if the PDR gives it
			} else if l == nil || l.gtpu() || (p.UEIP.IsValid() && p.UEIP != l.ohc.Addr) {
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d (UDP/IPv4 removed) does not match the non-3GPP FAR of the session's MARs", p.ID)
			}
		default:
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d has neither an F-TEID (a leg over GTP-U) nor Outer Header Removal UDP/IPv4 (non-3GPP over plain IP)", p.ID)
		}
	}
	if ulTEID[access3GPP] != 0 && ulTEID[access3GPP] == ulTEID[accessNon3GPP] {
		return nil, ruleFailure(ie.RuleIDTypePDR, uint32(ul[accessNon3GPP].ID), "uplink PDRs %d and %d share TEID %#x: the TEID tells which leg a packet came on", ul[access3GPP].ID, ul[accessNon3GPP].ID, ulTEID[access3GPP])
	}
	for acc, l := range legs {
		if active(access(acc)) && l.gtpu() && ul[acc] == nil {
			return nil, refuse(CauseConditionalIEMissing, ie.FTEID, "the MARs send on %s access over GTP-U but no uplink PDR from it has an F-TEID", access(acc).api())
		}
		// An inactive leg keeps the UE's address on it (its uplink PDR's UE IP Address) and no
		// tunnel until its FAR forwards again; a 3GPP one keeps its uplink TEID too (below).
		if l != nil && l.inactive && (ul[acc] == nil || !ul[acc].UEIP.IsValid()) {
			return nil, ruleFailure(ie.RuleIDTypeFAR, l.far, "FAR %d of %s access does not forward yet, and no uplink PDR from that access gives the UE's address on it", l.far, access(acc).api())
		}
	}
	// No access active and the UE idle on 3GPP (its FAR buffers): the UPF holds the downlink and
	// reports it, so that the SMF pages the UE. Nothing of the session counts meanwhile (no
	// entry names its usage cells): Parked, as a session without PDRs.
	hold := !active(access3GPP) && !active(accessNon3GPP) && legs[access3GPP] != nil && legs[access3GPP].buffers
	if l := legs[access3GPP]; l != nil {
		leg := &junctionv1.ThreeGPPLeg{UEAddress: junctionv1.IPv4Address(ul[access3GPP].UEIP.String()), DropDownlink: l.inactive && !hold, BufferDownlink: hold}
		if !l.inactive {
			leg.GNBAddress, leg.DownlinkTEID = junctionv1.IPv4Address(l.ohc.Addr.String()), int64(l.ohc.TEID)
		}
		// Inactive, its uplink PDR still forwards: a UE back on 3GPP sends before the SMF's
		// modification with the gNB's tunnel arrives (a Service Request, TS 23.502 §4.2.3.2).
		leg.UplinkTEID = int64(ulTEID[access3GPP])
		spec.AccessLegs.ThreeGPP = leg
	}
	if l := legs[accessNon3GPP]; l != nil {
		n := &junctionv1.NonThreeGPPLeg{Type: l.kind, UEAddress: junctionv1.IPv4Address(l.ohc.Addr.String())}
		switch {
		case l.inactive:
			n.UEAddress, n.DropDownlink = junctionv1.IPv4Address(ul[accessNon3GPP].UEIP.String()), true
		case l.gtpu(): // over N3: the UE's address from its uplink PDR, the gateway from the FAR
			n.UEAddress = junctionv1.IPv4Address(ul[accessNon3GPP].UEIP.String())
			n.GatewayAddress = junctionv1.IPv4Address(l.ohc.Addr.String())
			n.UplinkTEID, n.DownlinkTEID = int64(ulTEID[accessNon3GPP]), int64(l.ohc.TEID)
		}
		spec.AccessLegs.NonThreeGPP = n
	}

	// Steering: a PDR without SDF filter or application is the session's default (modeOverride);
	// one with SDF filters gets a traffic-class policy per filter, one with an Application ID the
	// policy of that name; both steer by the PDR's MAR (policySteering).
	plan := &Plan{Parked: hold}
	var defaultPDR *PDR
	steered := map[string]bool{}
	sort.SliceStable(down, func(i, j int) bool { return down[i].Precedence < down[j].Precedence })
	for _, p := range down {
		mode, th, err := steering(r.MARs[*p.MARID], accessOf)
		if err != nil {
			return nil, err
		}
		var names []string
		sdf, err := r.filters(p)
		if err != nil {
			return nil, err
		}
		switch {
		case len(sdf) > 0 && p.ApplicationID != "":
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d has both SDF filters and an Application ID", p.ID)
		case p.ApplicationID != "" && len(p.PFDs) == 0:
			names = []string{p.ApplicationID}
		case len(sdf)+len(p.PFDs) > 0: // an application with PFDs is its flow descriptions
			sdf = slices.Concat(sdf, p.PFDs)
			if p.Precedence > 65534 {
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d: precedence %d is above 65534, the largest a policy takes", p.ID, p.Precedence)
			}
			for _, fd := range sdf {
				td, err := parseFlowDescription(fd, session)
				if err != nil {
					return nil, refuse(CauseMandatoryIEIncorrect, ie.SDFFilter, "SDF Filter of PDR %d: %v", p.ID, err)
				}
				pol := trafficClass(td, int32(p.Precedence))
				plan.Policies = append(plan.Policies, pol)
				names = append(names, pol.Name)
			}
		default:
			if defaultPDR != nil {
				// The lower precedence value wins; the other could never match.
				if *p.MARID != *defaultPDR.MARID {
					return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d matches all the session's traffic, as PDR %d with a lower precedence value does: it would never apply", p.ID, defaultPDR.ID)
				}
				continue
			}
			defaultPDR = p
			spec.ModeOverride, spec.ModeOverrideThresholds = mode, th
			continue
		}
		for _, n := range names {
			if steered[n] {
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d describes the same traffic class (%s) as a PDR with a lower precedence value", p.ID, n)
			}
			steered[n] = true
			spec.PolicyRefs = append(spec.PolicyRefs, junctionv1.LocalObjectReference{Name: n})
			spec.PolicySteering = append(spec.PolicySteering, junctionv1.PolicySteering{Name: n, Steering: *mode, Thresholds: th})
		}
	}
	plan.Spec = spec
	return plan, nil
}

// byDirection are the session's PDRs that carry its traffic (not cpForwarding, not
// indirectForwarding), uplink (Source Interface Access) and downlink (Core, N6-LAN), in ID
// order, and the first UE IP Address they give, downlink first: the session's address for its
// QoS flows' SDF filters (the plans check that the PDRs agree on it).
func (r *Rules) byDirection() (up, down []*PDR, ue netip.Addr) {
	for _, id := range sortedKeys(r.PDRs) {
		p := r.PDRs[id]
		switch {
		case r.cpForwarding(p), r.indirectForwarding(p):
		case p.Source == ifaceAccess:
			up = append(up, p)
		case p.Source == ifaceCore || p.Source == ifaceN6LAN:
			down = append(down, p)
		}
	}
	for _, p := range append(slices.Clone(down), up...) {
		if !ue.IsValid() {
			ue = p.UEIP
		}
	}
	return up, down, ue
}

// downlinkAddress is the session address the downlink PDRs give: their UE IP Address, one for
// all. A PDR with SDF filters may leave it out, as Open5GS's SMF does for a dedicated QoS flow's,
// when the other PDRs give it and its filters are to it ("assigned" or the address); one PDR at
// least must (else 73, the first PDR without it).
func downlinkAddress(r *Rules, down []*PDR) (netip.Addr, error) {
	var session netip.Addr
	var without *PDR
	for _, p := range down {
		switch {
		case !p.UEIP.IsValid() && len(p.SDF)+len(p.SDFRefs) == 0:
			return session, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "downlink PDR %d has no UE IP Address (the session address) and no SDF filter", p.ID)
		case !p.UEIP.IsValid():
			if without == nil {
				without = p
			}
		case session.IsValid() && p.UEIP != session:
			return session, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "downlink PDR %d is for UE IP %s, another PDR for %s: one session has one address", p.ID, p.UEIP, session)
		default:
			session = p.UEIP
		}
	}
	if !session.IsValid() && without != nil {
		return session, ruleFailure(ie.RuleIDTypePDR, uint32(without.ID), "downlink PDR %d has no UE IP Address, and no other downlink PDR gives the session address", without.ID)
	}
	for _, p := range down {
		if p.UEIP.IsValid() {
			continue
		}
		descs, err := r.filters(p)
		if err != nil {
			return session, err
		}
		for _, d := range descs {
			if td, err := parseFlowDescription(d, session); err == nil && len(td.SourcePrefixes) > 0 {
				return session, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "downlink PDR %d has no UE IP Address and an SDF filter to %s, not the session address %s", p.ID, td.SourcePrefixes[0], session)
			}
		}
	}
	return session, nil
}

// singleAccessPlan maps an ordinary PDU session (no MAR): plain GTP-U on N3 both ways. Every
// downlink PDR forwards through one GTP-U tunnel toward the gNB (SDF filters then change
// nothing and are accepted); every uplink PDR has the one F-TEID and forwards to Core. A
// session with no downlink PDR yet (OAI's SMF sends it with the gNB's tunnel, docs/n4.md)
// drops its downlink, as a packet no PDR matches is dropped (TS 29.244 §5.2.1), and takes its
// address from the uplink PDRs' UE IP Address.
func singleAccessPlan(r *Rules, up, down []*PDR, teids map[uint16]uint32, supi string, qfi int32, mbr *junctionv1.BitRate, t Target) (*Plan, error) {
	var session netip.Addr
	var tunnel *OHC
	var tunnelFAR uint32
	// The downlink FARs all forward into one tunnel, all buffer, or all drop (downlinkMode).
	mode := actDrop
	if len(down) > 0 {
		mode = downlinkMode(r.FARs[*down[0].FARID])
	} else {
		for _, p := range up {
			if !p.UEIP.IsValid() || session.IsValid() && p.UEIP != session {
				return nil, refuse(CauseMandatoryIEMissing, ie.CreatePDR, "the session has no downlink PDR and its uplink PDRs do not give one UE IP Address (the session address)")
			}
			session = p.UEIP
		}
	}
	buffers, drops := mode == actBuff, mode == actDrop
	if len(down) > 0 {
		var err error
		if session, err = downlinkAddress(r, down); err != nil {
			return nil, err
		}
	}
	for i, p := range down {
		f := r.FARs[*p.FARID]
		switch {
		case downlinkMode(f) != mode:
			return nil, ruleFailure(ie.RuleIDTypeFAR, f.ID, "FAR %d and FAR %d differ in forwarding, buffering or dropping: a single-access session's downlink is forwarded, held or dropped as a whole",
				*down[0].FARID, f.ID)
		case f.Dest != nil && *f.Dest != ifaceAccess, f.Action&actForw != 0 && f.Dest == nil, f.OHC != nil && f.OHC.Desc != ohcGTPUv4:
			return nil, ruleFailure(ie.RuleIDTypeFAR, f.ID, "FAR %d: a single-access session's downlink must forward to Access in GTP-U/UDP/IPv4", f.ID)
		case f.DestType != nil && *f.DestType != itypeN3Access3GPP:
			return nil, ruleFailure(ie.RuleIDTypeFAR, f.ID, "FAR %d: a single-access session is on N3 3GPP access (3GPP Interface Type %d)", f.ID, *f.DestType)
		case f.OHC != nil && f.OHC.TEID == 0:
			return nil, refuse(CauseMandatoryIEIncorrect, ie.OuterHeaderCreation, "Outer Header Creation of FAR %d has TEID 0", f.ID)
		case i > 0 && !sameOHC(tunnel, f.OHC):
			return nil, ruleFailure(ie.RuleIDTypeFAR, f.ID, "FAR %d and FAR %d send one session's downlink into different tunnels", tunnelFAR, f.ID)
		}
		tunnel, tunnelFAR = f.OHC, f.ID
	}
	var ulTEID uint32
	for _, p := range up {
		if err := forwardsToCore(r, p); err != nil {
			return nil, err
		}
		if p.FTEID == nil {
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d of a single-access session has no F-TEID", p.ID)
		}
		teid, err := uplinkTEID(p, teids, t)
		if err != nil {
			return nil, err
		}
		switch {
		case ulTEID != 0 && teid != ulTEID:
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDRs with TEIDs %#x and %#x: a single-access session has one", ulTEID, teid)
		case p.UEIP.IsValid() && p.UEIP != session:
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d is for UE IP %s, the downlink for %s", p.ID, p.UEIP, session)
		}
		ulTEID = teid
	}
	if ulTEID == 0 {
		return nil, refuse(CauseConditionalIEMissing, ie.FTEID, "no uplink PDR has an F-TEID")
	}
	a := junctionv1.IPv4Address(session.String())
	leg := &junctionv1.ThreeGPPLeg{UEAddress: a, UplinkTEID: int64(ulTEID), BufferDownlink: buffers, DropDownlink: drops}
	if tunnel != nil {
		leg.GNBAddress, leg.DownlinkTEID = junctionv1.IPv4Address(tunnel.Addr.String()), int64(tunnel.TEID)
	}
	return &Plan{Spec: junctionv1.ATSSSSessionSpec{
		Type: junctionv1.SessionSingleAccess, UE: junctionv1.UE{SUPI: supi}, SessionAddress: a,
		UPFRef: junctionv1.LocalObjectReference{Name: t.UPF}, TunnelEndpoint: t.TunnelEndpoint, QFI: qfi, MaxBitRate: mbr,
		AccessLegs: junctionv1.AccessLegs{ThreeGPP: leg},
	}}, nil
}

// idlePlan is a single-access session at addr without a PDR: OAI's SMF removes every rule of a
// session whose UE goes idle (and creates them anew when it comes back). Packets no PDR matches
// are dropped (TS 29.244 §5.2.1): the downlink by the filter of a dropped downlink, the uplink
// for want of a TEID.
func idlePlan(addr netip.Addr, supi string, t Target) *Plan {
	a := junctionv1.IPv4Address(addr.String())
	return &Plan{Spec: junctionv1.ATSSSSessionSpec{
		Type: junctionv1.SessionSingleAccess, UE: junctionv1.UE{SUPI: supi}, SessionAddress: a,
		UPFRef: junctionv1.LocalObjectReference{Name: t.UPF}, TunnelEndpoint: t.TunnelEndpoint,
		AccessLegs: junctionv1.AccessLegs{ThreeGPP: &junctionv1.ThreeGPPLeg{UEAddress: a, DropDownlink: true}},
	}, Parked: true}
}

// idle is what State.Idle keeps of a plan: a single-access session's address.
func (p *Plan) idle() netip.Addr {
	if p.Spec.Type != junctionv1.SessionSingleAccess {
		return netip.Addr{}
	}
	a, _ := netip.ParseAddr(string(p.Spec.SessionAddress))
	return a
}

// downlinkMode is what a single-access session's downlink FAR does with a packet: actBuff, hold
// it (the UE is idle: an SMF sends BUFF, with or without the tunnel it will forward into, until
// the UE is paged and its gNB known); actDrop, drop it, as DROP says, or as FORW to Access
// without Outer Header Creation must, there being no tunnel to forward into (free5GC's SMF
// establishes every session with one or the other until the gNB has given its tunnel: DROP
// without Forwarding Parameters in its newer builds, FORW without Outer Header Creation in
// v4.0.1); 0, forward it into the FAR's GTP-U tunnel.
func downlinkMode(f *FAR) uint8 {
	switch {
	case f.Action&actBuff != 0:
		return actBuff
	case f.Action&actDrop != 0, f.OHC == nil:
		return actDrop
	}
	return 0
}

// sameOHC: both absent, or both the same tunnel.
func sameOHC(a, b *OHC) bool { return a == b || a != nil && b != nil && *a == *b }

// notBuffering refuses BUFF on a FAR Junction cannot hold packets for: an uplink one, or an
// indirect forwarding one. (A MAR's FAR that buffers makes its access inactive: legOf.)
func notBuffering(f *FAR, what string) error {
	if f != nil && f.Action&actBuff != 0 {
		return refuse(CauseServiceNotSupported, ie.ApplyAction, "Apply Action of FAR %d: BUFF on %s is not supported (only a single-access session's downlink buffers)", f.ID, what)
	}
	return nil
}

// cpForwarding reports whether p is one of the two PDRs Open5GS's SMF gives every PDU session for
// IPv6 router solicitations and advertisements between the UE and itself (src/smf/context.c,
// smf_sess_create_cp_up_data_forwarding): from the CP function (Source Interface CP-function,
// an F-TEID of its own) into a FAR of the session's downlink; or on the uplink, for ICMPv6 from
// ff02::2 only (every SDF filter's "from" address IPv6), into a FAR that forwards to the CP
// function. In an IPv4 PDU session, the only kind Junction serves (PDN Type), the SMF sends no
// router advertisement and the UE no IPv6 packet, so neither rule has a packet to match and
// Junction installs nothing for them: a G-PDU on the first one's TEID is dropped as an unknown
// TEID (docs/n4.md). A PDR from the CP function into anything else, or one to the CP function
// for any IPv4 traffic, is not this pair and is refused.
func (r *Rules) cpForwarding(p *PDR) bool {
	if p.FARID == nil {
		return false
	}
	far := r.FARs[*p.FARID]
	switch {
	case far == nil:
		return false
	case p.Source == ifaceCPFunction:
		for _, q := range r.PDRs {
			if (q.Source == ifaceCore || q.Source == ifaceN6LAN) && q.FARID != nil && *q.FARID == far.ID {
				return true
			}
		}
		return false
	case p.Source == ifaceAccess && far.Dest != nil && *far.Dest == ifaceCPFunction && len(p.SDF) > 0:
		for _, fd := range p.SDF {
			if f := strings.Fields(fd); len(f) < 5 || f[3] != "from" || !strings.Contains(f[4], ":") {
				return false
			}
		}
		return true
	}
	return false
}

// indirectForwarding reports whether p is an N2 handover's indirect data forwarding PDR (TS
// 23.502 §4.9.1.3.2; Open5GS's SMF, smf_sess_create_indirect_data_forwarding): from Access into
// a FAR that forwards to Access, the source gNB's forwarded downlink on its way to the target
// gNB.
func (r *Rules) indirectForwarding(p *PDR) bool {
	if p.Source != ifaceAccess || p.FARID == nil {
		return false
	}
	f := r.FARs[*p.FARID]
	return f != nil && f.Dest != nil && *f.Dest == ifaceAccess
}

// forwarding is the session's indirect forwarding tunnel and the first PDR that gives it.
type forwarding struct {
	tunnel junctionv1.IndirectForwarding
	pdr    uint16
}

// indirectForwardingOf maps the session's indirect forwarding PDRs (nil when it has none): one
// F-TEID of the UPF's (Open5GS's SMF gives every QoS flow a PDR of its own, all with one CHOOSE
// ID) into FARs that forward to one GTP-U tunnel, the target gNB's. The UPF relays each G-PDU
// whole, so a PDI's QFI filters nothing and its QERs police nothing (what the source gNB
// forwards is downlink the session's policers passed once); what the relay cannot do is refused:
// SDF filters, a URR (the relayed packets are counted nowhere), a closed gate.
func indirectForwardingOf(r *Rules, teids map[uint16]uint32, t Target) (*forwarding, error) {
	var fw *forwarding
	for _, id := range sortedKeys(r.PDRs) {
		p := r.PDRs[id]
		if !r.indirectForwarding(p) {
			continue
		}
		far := r.FARs[*p.FARID]
		if err := notBuffering(far, "an indirect forwarding FAR"); err != nil {
			return nil, err
		}
		switch {
		case p.FTEID == nil:
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d forwards from Access to Access (indirect data forwarding) and has no F-TEID", p.ID)
		case len(p.SDF)+len(p.SDFRefs) > 0 || p.ApplicationID != "":
			return nil, refuse(CauseServiceNotSupported, ie.SDFFilter, "indirect forwarding PDR %d: the UPF relays every G-PDU of the tunnel, it filters none", p.ID)
		case len(p.URRIDs) > 0:
			return nil, refuse(CauseServiceNotSupported, ie.URRID, "indirect forwarding PDR %d names URR %d: the UPF does not measure what it relays", p.ID, p.URRIDs[0])
		case far.Action != actForw || far.OHC == nil || far.OHC.Desc != ohcGTPUv4:
			return nil, ruleFailure(ie.RuleIDTypeFAR, far.ID, "FAR %d of indirect forwarding PDR %d must forward in GTP-U/UDP/IPv4 (to the target gNB)", far.ID, p.ID)
		case far.OHC.TEID == 0:
			return nil, refuse(CauseMandatoryIEIncorrect, ie.OuterHeaderCreation, "Outer Header Creation of FAR %d has TEID 0", far.ID)
		}
		for _, q := range p.QERIDs {
			if qer := r.QERs[q]; qer.GateUL != gateOpen || qer.GateDL != gateOpen {
				return nil, refuse(CauseServiceNotSupported, ie.GateStatus, "QER %d of indirect forwarding PDR %d closes a gate: the UPF relays what the tunnel carries", q, p.ID)
			}
		}
		teid, err := uplinkTEID(p, teids, t)
		if err != nil {
			return nil, err
		}
		tunnel := junctionv1.IndirectForwarding{TEID: int64(teid), GNBAddress: junctionv1.IPv4Address(far.OHC.Addr.String()), GNBTEID: int64(far.OHC.TEID)}
		if fw != nil && fw.tunnel != tunnel {
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "indirect forwarding PDRs %d and %d differ in F-TEID or target tunnel: a session has one forwarding tunnel", fw.pdr, p.ID)
		}
		if fw == nil {
			fw = &forwarding{tunnel: tunnel, pdr: p.ID}
		}
	}
	return fw, nil
}

// forwardsToCore refuses an uplink PDR whose FAR does not just forward to Core: Junction
// decapsulates and routes.
func forwardsToCore(r *Rules, p *PDR) error {
	var far *FAR
	if p.FARID != nil {
		far = r.FARs[*p.FARID]
	}
	if err := notBuffering(far, "an uplink FAR"); err != nil {
		return err
	}
	if p.MARID != nil || far == nil || far.Action != actForw || far.Dest == nil || (*far.Dest != ifaceCore && *far.Dest != ifaceN6LAN) || far.OHC != nil {
		return ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d: its FAR must forward to Core without outer header creation (Junction decapsulates and routes)", p.ID)
	}
	return nil
}

// uplinkTEID is the TEID of an uplink PDR with an F-TEID: the one the UPF chose (CH) or the
// SMF's, which must be on the UPF's N3 address; the PDR must remove GTP-U.
func uplinkTEID(p *PDR, teids map[uint16]uint32, t Target) (uint32, error) {
	if p.OHR == nil || *p.OHR != ohrGTPUv4 {
		return 0, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d with an F-TEID must remove GTP-U/UDP/IPv4 (Outer Header Removal 0)", p.ID)
	}
	teid := p.FTEID.TEID
	if p.FTEID.Choose {
		teid = teids[p.ID]
	} else if p.FTEID.Addr != t.N3 {
		return 0, refuse(CauseMandatoryIEIncorrect, ie.FTEID, "F-TEID of PDR %d is on %s; this UPF's N3 address is %s", p.ID, p.FTEID.Addr, t.N3)
	}
	if teid == 0 {
		return 0, refuse(CauseMandatoryIEIncorrect, ie.FTEID, "F-TEID of PDR %d has TEID 0", p.ID)
	}
	return teid, nil
}

// checkRefs refuses a PDR that names a FAR, MAR or QER the session does not have, or has
// neither FAR nor MAR.
func checkRefs(r *Rules, p *PDR) error {
	id := uint32(p.ID)
	switch {
	case p.FARID == nil && p.MARID == nil:
		return ruleFailure(ie.RuleIDTypePDR, id, "PDR %d has neither FAR ID nor MAR ID", p.ID)
	case p.FARID != nil && p.MARID != nil:
		return ruleFailure(ie.RuleIDTypePDR, id, "PDR %d has both a FAR ID and a MAR ID; the MAR names the FARs", p.ID)
	case p.FARID != nil && r.FARs[*p.FARID] == nil:
		return ruleFailure(ie.RuleIDTypePDR, id, "PDR %d names FAR %d, which the session does not have", p.ID, *p.FARID)
	case p.MARID != nil && r.MARs[*p.MARID] == nil:
		return ruleFailure(ie.RuleIDTypePDR, id, "PDR %d names MAR %d, which the session does not have", p.ID, *p.MARID)
	}
	for _, q := range p.QERIDs {
		if r.QERs[q] == nil {
			return ruleFailure(ie.RuleIDTypePDR, id, "PDR %d names QER %d, which the session does not have", p.ID, q)
		}
	}
	return nil
}

// legOf reads which access a MAR's FAR serves and how: by its 3GPP Interface Type when sent,
// else by position (AFAI 1 is 3GPP, AFAI 2 non-3GPP, as Rel-16 named them). The 3GPP leg is
// GTP-U toward the gNB; the non-3GPP leg GTP-U toward its access gateway (N3IWF, TNGF, W-AGF),
// whose access gateways says, or plain UDP/IPv4 toward the UE's address on that access. A FAR
// that buffers, drops, or forwards without Outer Header Creation makes the leg inactive: the SMF
// has no tunnel for that access yet (an establishment before the access node answers) or the
// UE's user plane there is deactivated (idle on 3GPP, gone from WiFi).
func legOf(f *FAR, position int, gateways map[netip.Addr]junctionv1.NonThreeGPPType) (*leg, access, error) {
	id := f.ID
	inactive := f.Action&(actBuff|actDrop) != 0 || f.OHC == nil
	if f.Dest != nil && *f.Dest != ifaceAccess || !inactive && f.Dest == nil {
		return nil, 0, ruleFailure(ie.RuleIDTypeFAR, id, "FAR %d of a MAR must forward to Access", id)
	}
	acc := access(position)
	kind := junctionv1.NonThreeGPPWiFi
	if f.DestType != nil {
		switch *f.DestType {
		case itypeN3Access3GPP:
			acc = access3GPP
		case itypeN3TrustedNon3GPP, itypeN3UntrustedNon3GPP:
			acc = accessNon3GPP
		default:
			return nil, 0, ruleFailure(ie.RuleIDTypeFAR, id, "FAR %d: 3GPP Interface Type %d is not an N3 access", id, *f.DestType)
		}
	}
	if inactive { // no gateway to read the access from: an inactive leg says WiFi
		return &leg{far: id, kind: kind, inactive: true, buffers: f.Action&actBuff != 0}, acc, nil
	}
	switch {
	case acc == access3GPP && f.OHC.Desc != ohcGTPUv4:
		return nil, 0, ruleFailure(ie.RuleIDTypeFAR, id, "FAR %d serves 3GPP access: its outer header must be GTP-U/UDP/IPv4", id)
	case f.OHC.Desc == ohcGTPUv4 && f.OHC.TEID == 0:
		return nil, 0, refuse(CauseMandatoryIEIncorrect, ie.OuterHeaderCreation, "Outer Header Creation of FAR %d has TEID 0", id)
	case acc == accessNon3GPP && f.OHC.Desc != ohcGTPUv4 && f.OHC.Port != 0 && f.OHC.Port != wire.JunctionPort:
		return nil, 0, refuse(CauseMandatoryIEIncorrect, ie.OuterHeaderCreation, "Outer Header Creation of FAR %d: port %d; Junction's port is %d", id, f.OHC.Port, wire.JunctionPort)
	}
	if t, ok := gateways[f.OHC.Addr]; ok && f.OHC.Desc == ohcGTPUv4 {
		kind = t
	}
	o := *f.OHC
	o.Port = 0
	return &leg{far: id, ohc: o, kind: kind}, acc, nil
}

// steering maps a MAR onto a Junction steering mode and Rel-17 thresholds; accessOf gives the
// access each of the MARs' FARs serves.
func steering(m *MAR, accessOf map[uint32]access) (*junctionv1.SteeringMode, *junctionv1.Thresholds, error) {
	fail := func(format string, args ...any) error {
		return ruleFailure(ruleTypeMAR, uint32(m.ID), "MAR %d: "+format, append([]any{m.ID}, args...)...)
	}
	if m.Functionality != functionalityATSSSLL {
		return nil, nil, fail("steering functionality %d: only ATSSS-LL (0) is supported; MPTCP is not offered", m.Functionality)
	}
	// Which AFAI serves which access, and with which weight and priority.
	var by [2]*AFAI
	for _, a := range m.AFAI {
		if a != nil {
			by[accessOf[a.FARID]] = a
		}
	}
	both := by[0] != nil && by[1] != nil
	var th *junctionv1.Thresholds
	if m.RTTms != nil || m.LossPercent != nil {
		th = &junctionv1.Thresholds{}
		if m.RTTms != nil {
			if *m.RTTms == 0 {
				return nil, nil, refuse(CauseMandatoryIEIncorrect, ieThresholds, "Thresholds of MAR %d: an RTT of 0 ms", m.ID)
			}
			th.RTT = junctionv1.Duration(fmt.Sprintf("%dms", *m.RTTms))
		}
		if m.LossPercent != nil {
			v := int32(*m.LossPercent)
			th.PacketLossPercent = &v
		}
	}
	priorityOf := func(p uint8) (junctionv1.Access, bool) {
		for acc, a := range by {
			if a != nil && a.Priority != nil && *a.Priority == p {
				return access(acc).api(), true
			}
		}
		return "", false
	}
	s := &junctionv1.SteeringMode{}
	switch m.Mode {
	case modeActiveStandby:
		s.Mode = junctionv1.ModeActiveStandby
		active, ok := priorityOf(ie.PriorityActive)
		if !ok {
			active = access3GPP.api()
			if by[0] == nil {
				active = accessNon3GPP.api()
			}
		}
		if _, noStandby := priorityOf(ie.PriorityNoStandby); noStandby {
			return nil, nil, fail("priority No Standby: Junction always falls back to the other access")
		}
		s.ActiveStandby = &junctionv1.ActiveStandby{Active: active}
	case modeSmallestDelay:
		s.Mode, s.SmallestDelay = junctionv1.ModeSmallestDelay, &junctionv1.SmallestDelay{}
	case modeLoadBalancing:
		if !both {
			return nil, nil, fail("load balancing needs both accesses")
		}
		s.Mode = junctionv1.ModeLoadBalance
		if m.ALBI {
			s.LoadBalance = &junctionv1.LoadBalance{Autonomous: true}
			break
		}
		if by[0].Weight == nil || by[1].Weight == nil {
			return nil, nil, refuse(CauseConditionalIEMissing, ie.Weight, "MAR %d: load balancing without a Weight for each access", m.ID)
		}
		if int(*by[0].Weight)+int(*by[1].Weight) != 100 {
			return nil, nil, refuse(CauseMandatoryIEIncorrect, ie.Weight, "MAR %d: weights %d and %d do not add up to 100", m.ID, *by[0].Weight, *by[1].Weight)
		}
		pct := int32(*by[0].Weight)
		s.LoadBalance = &junctionv1.LoadBalance{ThreeGPPPercent: &pct}
	case modePriorityBased:
		if !both {
			return nil, nil, fail("priority-based needs both accesses")
		}
		high, ok := priorityOf(ie.PriorityHigh)
		if !ok {
			return nil, nil, refuse(CauseConditionalIEMissing, ie.Priority, "MAR %d: priority-based without an access of priority High", m.ID)
		}
		if th == nil || th.RTT == "" {
			return nil, nil, refuse(CauseConditionalIEMissing, ieThresholds, "MAR %d: priority-based needs an RTT threshold (Thresholds), the congestion signal Junction reads", m.ID)
		}
		s.Mode = junctionv1.ModePriorityBased
		s.PriorityBased = &junctionv1.PriorityBased{PriorityAccess: high, RTTThreshold: th.RTT}
		th.RTT = ""
		if th.PacketLossPercent == nil {
			th = nil
		}
	case modeRedundant:
		if !both {
			return nil, nil, fail("redundant needs both accesses")
		}
		s.Mode, s.Redundant = junctionv1.ModeRedundant, &junctionv1.Redundant{}
	default:
		return nil, nil, fail("steering mode %d is not one of TS 29.244's", m.Mode)
	}
	if th != nil && (s.Mode == junctionv1.ModeSmallestDelay || s.Mode == junctionv1.ModeRedundant) {
		return nil, nil, fail("%s reads no threshold; Junction refuses thresholds it would not enforce", s.Mode)
	}
	return s, th, nil
}

// trafficClass is the policy of one SDF filter at one precedence, named by its content.
func trafficClass(td junctionv1.TrafficDescriptor, precedence int32) Policy {
	spec := junctionv1.SteeringPolicySpec{
		Precedence:        precedence,
		TrafficDescriptor: td,
		Steering:          junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby, ActiveStandby: &junctionv1.ActiveStandby{Active: junctionv1.Access3GPP}},
	}
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return Policy{Name: "n4-" + hex.EncodeToString(sum[:6]), Spec: spec}
}
