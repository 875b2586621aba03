package dataplane

// The P4Info objects this data plane implements, by name (docs/pipeline.md, "P4Info names").
// CheckPipeline refuses a P4Info that lacks one of them or changes its shape; CommitPipeline
// resolves every ID from the P4Info it is given, so no ID is ever hard-coded here.

import (
	"fmt"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/p4schema"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// tableKind, actionKind, registerKind and counterKind number the objects this package knows; the P4Info's
// IDs map onto them at commit. Each spec below lists keys and params in the order the decoders
// in tables.go read them.
type tableKind uint8

const (
	tLocalAddresses tableKind = iota
	tUplinkTunnels
	tTunnelEndpoints
	tTunnelPeers
	tSessions
	tApplications
	tSessionOverrides
	tDownlinkTunnels
	tFilters
	tRoutes
	tTunnelQFIs
	tMBRSessions // part of the MBR policer, which a program may lack (resolveSchema)
	tQoSFlows    // QoS flows of their own, which a program may lack likewise
	numTables
)

type actionKind uint8

const (
	aAcceptLocal actionKind = iota
	aNotLocal
	aDecapGTPU
	aDropUnknownTEID
	aSetTunnelEndpoint
	aDropNoEndpoint
	aSetTunnelPeer
	aDropNoTunnelPeer
	aSetSession
	aMissSession
	aSetApplication
	aSetDefaultApplication
	aOverrideSteering
	aNoOverride
	aEncapGTPU
	aNoTunnel
	aPermit
	aDeny
	aRoute
	aDropNoRoute
	aSetQFI
	aNoQFI
	aPolice          // mbr_sessions'
	aNoPolice        // likewise
	aBufferDownlink  // downlink_tunnels', which a program may lack (resolveSchema)
	aSetQoSFlow      // qos_flows'
	aNoQoSFlow       // likewise
	aForwardIndirect // uplink_tunnels', which a program may lack (resolveSchema)
	numActions
)

type registerKind uint8

const (
	rRTT3GPP registerKind = iota
	rRTTNon3GPP
	rPathUpdatesSuspended
	rLoss3GPP
	rLossNon3GPP
	rSessionSeq
	rReorderState
	rReorderDeadline
	rAutonomousShare
	numRegisters
)

type counterKind uint8

const (
	cDrops               counterKind = iota // indexed by drop reason
	cUplinkUsage                            // indexed by a PDU session's usage_idx
	cDownlinkUsage                          // likewise
	cMBRDrops                               // indexed by direction: the MBR policer's red packets (meter.go)
	cUplinkPoliced                          // indexed by usage_idx: what the policer dropped of a session
	cDownlinkPoliced                        // likewise
	cUplinkFlowUsage                        // indexed by flow_idx: a QoS flow's own usage (qos_flows)
	cDownlinkFlowUsage                      // likewise
	cUplinkFlowPoliced                      // indexed by flow_idx: what the policers dropped of a QoS flow
	cDownlinkFlowPoliced                    // likewise
	numCounters
)

type fieldSpec struct {
	name string
	kind p4configv1.MatchField_MatchType
	bits int32
}

type tableSpec struct {
	name    string
	keys    []fieldSpec
	actions []actionKind // the hit action first, then the P4 default action
}

// p4Default is the table's default action in the P4 program (docs/pipeline.md).
func (t *tableSpec) p4Default() actionKind {
	if t.name == "filters" {
		return aPermit
	}
	return t.actions[1]
}

type paramSpec struct {
	name string
	bits int32
}

type actionSpec struct {
	name   string
	params []paramSpec
}

const (
	exact   = p4configv1.MatchField_EXACT
	ternary = p4configv1.MatchField_TERNARY
	rangeM  = p4configv1.MatchField_RANGE
	lpm     = p4configv1.MatchField_LPM
)

var tableSpecs = [numTables]tableSpec{
	tLocalAddresses: {"local_addresses", []fieldSpec{{"dst_addr", exact, 32}},
		[]actionKind{aAcceptLocal, aNotLocal}},
	tUplinkTunnels: {"uplink_tunnels", []fieldSpec{{"teid", exact, 32}},
		[]actionKind{aDecapGTPU, aDropUnknownTEID, aForwardIndirect}},
	tTunnelEndpoints: {"tunnel_endpoints", []fieldSpec{{"endpoint_idx", exact, 8}},
		[]actionKind{aSetTunnelEndpoint, aDropNoEndpoint}},
	tTunnelPeers: {"tunnel_peers", []fieldSpec{{"peer_idx", exact, 16}},
		[]actionKind{aSetTunnelPeer, aDropNoTunnelPeer}},
	tSessions: {"sessions", []fieldSpec{{"session_addr", exact, 32}},
		[]actionKind{aSetSession, aMissSession}},
	tApplications: {"applications", []fieldSpec{
		{"remote_addr", ternary, 32}, {"local_addr", ternary, 32}, {"proto", ternary, 8},
		{"remote_port", rangeM, 16}, {"local_port", rangeM, 16}, {"dscp", ternary, 6}},
		[]actionKind{aSetApplication, aSetDefaultApplication}},
	tSessionOverrides: {"session_overrides", []fieldSpec{{"session_addr", exact, 32}, {"app_id", exact, 16}},
		[]actionKind{aOverrideSteering, aNoOverride}},
	tDownlinkTunnels: {"downlink_tunnels", []fieldSpec{{"ue_addr", exact, 32}},
		[]actionKind{aEncapGTPU, aNoTunnel, aBufferDownlink}},
	tFilters: {"filters", []fieldSpec{
		{"src_addr", ternary, 32}, {"dst_addr", ternary, 32}, {"proto", ternary, 8},
		{"src_port", rangeM, 16}, {"dst_port", rangeM, 16}},
		[]actionKind{aPermit, aDeny}},
	tRoutes: {"routes", []fieldSpec{{"dst_addr", lpm, 32}},
		[]actionKind{aRoute, aDropNoRoute}},
	tTunnelQFIs: {"tunnel_qfis", []fieldSpec{{"peer_addr", exact, 32}, {"teid", exact, 32}},
		[]actionKind{aSetQFI, aNoQFI}},
	tMBRSessions: {"mbr_sessions", []fieldSpec{{"ue_addr", exact, 32}},
		[]actionKind{aPolice, aNoPolice}},
	tQoSFlows: {"qos_flows", []fieldSpec{
		{"ue_addr", exact, 32}, {"uplink", exact, 1}, {"remote_addr", ternary, 32}, {"proto", ternary, 8},
		{"remote_port", rangeM, 16}, {"local_port", rangeM, 16}},
		[]actionKind{aSetQoSFlow, aNoQoSFlow}},
}

var actionSpecs = [numActions]actionSpec{
	aAcceptLocal:       {"accept_local", nil},
	aNotLocal:          {"not_local", nil},
	aDecapGTPU:         {"decap_gtpu", []paramSpec{{"access", 8}, {"usage_idx", 32}}},
	aDropUnknownTEID:   {"drop_unknown_teid", nil},
	aSetTunnelEndpoint: {"set_tunnel_endpoint", []paramSpec{{"n3_addr", 32}, {"junction_addr", 32}}},
	aDropNoEndpoint:    {"drop_no_endpoint", nil},
	aSetTunnelPeer:     {"set_tunnel_peer", []paramSpec{{"peer_addr", 32}}},
	aDropNoTunnelPeer:  {"drop_no_tunnel_peer", nil},
	aSetSession: {"set_session", []paramSpec{{"user_idx", 32}, {"endpoint_idx", 8}, {"peer_idx", 16},
		{"teid", 32}, {"ue_addr_3gpp", 32}, {"ue_addr_non3gpp", 32}, {"gateway_non3gpp", 32}, {"teid_non3gpp", 32},
		{"usage_idx", 32}}},
	aMissSession: {"miss_session", nil},
	aSetApplication: {"set_application", []paramSpec{{"app_id", 16}, {"mode", 8}, {"access", 8},
		{"ratio_3gpp", 8}, {"rtt_threshold_us", 32}, {"loss_limit_pct", 8}}},
	aSetDefaultApplication: {"set_default_application", nil},
	aOverrideSteering: {"override_steering", []paramSpec{{"mode", 8}, {"access", 8}, {"ratio_3gpp", 8},
		{"rtt_threshold_us", 32}, {"loss_limit_pct", 8}, {"seq_index", 32}}},
	aNoOverride:  {"no_override", nil},
	aEncapGTPU:   {"encap_gtpu", []paramSpec{{"teid", 32}, {"peer_idx", 16}, {"endpoint_idx", 8}, {"usage_idx", 32}}},
	aNoTunnel:    {"no_tunnel", nil},
	aPermit:      {"permit", nil},
	aDeny:        {"deny", nil},
	aRoute:       {"route", []paramSpec{{"port", 9}, {"src_mac", 48}, {"dst_mac", 48}}},
	aDropNoRoute: {"drop_no_route", nil},
	aSetQFI:      {"set_qfi", []paramSpec{{"qfi", 6}}},
	aNoQFI:       {"no_qfi", nil},
	aPolice:      {"police", []paramSpec{{"usage_idx", 32}}},
	aNoPolice:    {"no_police", nil},
	// The SMF's BUFF FAR: the packet goes to the controller, which holds it.
	aBufferDownlink: {"buffer_downlink", nil},
	aSetQoSFlow:     {"set_qos_flow", []paramSpec{{"flow_qfi", 6}, {"flow_idx", 32}, {"gbr", 1}}},
	aNoQoSFlow:      {"no_qos_flow", nil},
	// An N2 handover's indirect forwarding tunnel: the G-PDU goes to the controller, which relays it.
	aForwardIndirect: {"forward_indirect", nil},
}

var registerSpecs = [numRegisters]paramSpec{
	rRTT3GPP:              {"rtt_3gpp", 32},
	rRTTNon3GPP:           {"rtt_non3gpp", 32},
	rPathUpdatesSuspended: {"path_updates_suspended", 8},
	rLoss3GPP:             {"loss_3gpp", 8},
	rLossNon3GPP:          {"loss_non3gpp", 8},
	rSessionSeq:           {"session_seq", 32},
	rReorderState:         {"reorder_state", 8},
	rReorderDeadline:      {"reorder_deadline", 32},
	rAutonomousShare:      {"autonomous_share", 8},
}

// counterSpecs name the counters (all packets and bytes); the usage counters' sizes are the
// P4Info's, the drops counter needs a cell per drop reason.
var counterSpecs = [numCounters]string{
	cDrops:               "drops",
	cUplinkUsage:         "uplink_usage",
	cDownlinkUsage:       "downlink_usage",
	cMBRDrops:            "mbr_drops",
	cUplinkPoliced:       "uplink_policed",
	cDownlinkPoliced:     "downlink_policed",
	cUplinkFlowUsage:     "uplink_flow_usage",
	cDownlinkFlowUsage:   "downlink_flow_usage",
	cUplinkFlowPoliced:   "uplink_flow_policed",
	cDownlinkFlowPoliced: "downlink_flow_policed",
}

const (
	probeDigestName = "probe_reports"
	packetInName    = "packet_in"
	packetOutName   = "packet_out"
	// toIngressName is packet_out's optional bit: 1 sends the frame through the pipeline.
	toIngressName = "to_ingress"
)

// schema is a P4Info resolved against the specs: P4Info IDs to this package's kinds, and the
// position of each match field and action param in the spec order.
type schema struct {
	tableIDs    [numTables]uint32
	tables      map[uint32]tableKind
	fieldPos    [numTables]map[uint32]int // P4Info field ID -> position in tableSpec.keys
	actionIDs   [numActions]uint32
	actions     map[uint32]actionKind
	paramPos    [numActions]map[uint32]int // P4Info param ID -> position in actionSpec.params
	registerIDs [numRegisters]uint32
	registers   map[uint32]registerKind
	regSizes    [numRegisters]int
	counterIDs  [numCounters]uint32
	counters    map[uint32]counterKind
	ctrSizes    [numCounters]int
	meterIDs    [numMeters]uint32
	meters      map[uint32]meterKind
	meterSizes  [numMeters]int
	digestID    uint32
	// toIngress says the packet_out header has to_ingress: a program without it only sends
	// packet-outs unchanged.
	toIngress bool
}

// resolveSchema checks info against every spec and returns the resolved IDs, or an error
// that names the first object that is missing or different.
func resolveSchema(info *p4configv1.P4Info) (*schema, error) {
	ps, err := p4schema.Compile(info)
	if err != nil {
		return nil, err
	}
	s := &schema{
		tables:    map[uint32]tableKind{},
		actions:   map[uint32]actionKind{},
		registers: map[uint32]registerKind{},
		counters:  map[uint32]counterKind{},
		meters:    map[uint32]meterKind{},
	}

	// The MBR policer (mbr_sessions, its two actions, the two meters and mbr_drops) is all
	// there or all absent: a program without it runs with nothing policed, and the operator
	// refuses a session's MBR on it.
	_, errMeter := ps.Meter(meterSpecs[mUplinkMBR])
	policer := errMeter == nil
	// buffer_downlink likewise: a program without it never sends a downlink packet up.
	_, errBuffer := ps.Action(actionSpecs[aBufferDownlink].name)
	buffering := errBuffer == nil
	// forward_indirect likewise: a program without it has no forwarding tunnels.
	_, errForward := ps.Action(actionSpecs[aForwardIndirect].name)
	forwarding := errForward == nil
	// QoS flows of their own (qos_flows, its two actions, meters and counters) likewise, with
	// the policer: a program without them has each session's traffic in its own flow.
	_, errFlows := ps.Table(tableSpecs[tQoSFlows].name)
	flows := policer && errFlows == nil
	absent := func(k actionKind) bool {
		return (!policer && (k == aPolice || k == aNoPolice)) || (!buffering && k == aBufferDownlink) || (!forwarding && k == aForwardIndirect) ||
			(!flows && (k == aSetQoSFlow || k == aNoQoSFlow))
	}
	for k := range numActions {
		if absent(k) {
			continue
		}
		spec := actionSpecs[k]
		a, err := ps.Action(spec.name)
		if err != nil {
			return nil, err
		}
		if len(a.Params) != len(spec.params) {
			return nil, fmt.Errorf("action %q has %d params, the software UPF implements %d",
				spec.name, len(a.Params), len(spec.params))
		}
		pos := map[uint32]int{}
		for i, want := range spec.params {
			p, err := a.Param(want.name)
			if err != nil {
				return nil, fmt.Errorf("action %q lacks param %q", spec.name, want.name)
			}
			if p.Width != int(want.bits) {
				return nil, fmt.Errorf("action %q param %q is %d bits, want %d", spec.name, want.name, p.Width, want.bits)
			}
			pos[p.ID] = i
		}
		s.actionIDs[k] = a.ID
		s.actions[a.ID] = k
		s.paramPos[k] = pos
	}

	for k := range numTables {
		if (!policer && k == tMBRSessions) || (!flows && k == tQoSFlows) {
			continue
		}
		spec := tableSpecs[k]
		t, err := ps.Table(spec.name)
		if err != nil {
			return nil, err
		}
		if t.Indirect {
			return nil, fmt.Errorf("table %q uses an action profile, the software UPF implements direct tables", spec.name)
		}
		if len(t.Fields) != len(spec.keys) {
			return nil, fmt.Errorf("table %q has %d match fields, the software UPF implements %d",
				spec.name, len(t.Fields), len(spec.keys))
		}
		pos := map[uint32]int{}
		for i, fs := range spec.keys {
			f, err := t.Field(fs.name)
			if err != nil {
				return nil, fmt.Errorf("table %q lacks match field %q", spec.name, fs.name)
			}
			if f.Kind != fs.kind {
				return nil, fmt.Errorf("table %q field %q is %s, want %s", spec.name, fs.name, f.Kind, fs.kind)
			}
			if f.Width != int(fs.bits) {
				return nil, fmt.Errorf("table %q field %q is %d bits, want %d", spec.name, fs.name, f.Width, fs.bits)
			}
			pos[f.ID] = i
		}
		for _, ak := range spec.actions {
			if absent(ak) {
				continue
			}
			if _, ok := t.Actions[s.actionIDs[ak]]; !ok {
				return nil, fmt.Errorf("table %q lacks action %q", spec.name, actionSpecs[ak].name)
			}
		}
		s.tableIDs[k] = t.ID
		s.tables[t.ID] = k
		s.fieldPos[k] = pos
	}

	for k := range numRegisters {
		spec := registerSpecs[k]
		r, err := ps.Register(spec.name)
		if err != nil {
			return nil, err
		}
		if r.Width != int(spec.bits) {
			return nil, fmt.Errorf("register %q elements are bit<%d>, want bit<%d>", spec.name, r.Width, spec.bits)
		}
		s.registerIDs[k] = r.ID
		s.registers[r.ID] = k
		s.regSizes[k] = int(r.Size)
	}

	for k := range numCounters {
		name := counterSpecs[k]
		if (k == cMBRDrops && !policer) || (!flows && k >= cUplinkFlowUsage) {
			continue
		}
		c, err := ps.Counter(name)
		if err != nil && (k == cUplinkPoliced || k == cDownlinkPoliced || k == cUplinkFlowPoliced || k == cDownlinkFlowPoliced) {
			continue // what the policers dropped per session or flow goes uncounted (the TNA build has no such counters yet)
		}
		if err != nil {
			return nil, err
		}
		if c.Unit != p4configv1.CounterSpec_BOTH {
			return nil, fmt.Errorf("counter %q counts %s, the software UPF counts packets and bytes", name, c.Unit)
		}
		if k == cDrops && c.Size < int64(numDropReasons) {
			return nil, fmt.Errorf("counter %q has %d cells, want at least %d", name, c.Size, numDropReasons)
		}
		s.counterIDs[k] = c.ID
		s.counters[c.ID] = k
		s.ctrSizes[k] = int(c.Size)
	}
	if policer && s.ctrSizes[cMBRDrops] < 2 {
		return nil, fmt.Errorf("counter %q has %d cells, want one per direction (2)", counterSpecs[cMBRDrops], s.ctrSizes[cMBRDrops])
	}

	for k := range numMeters {
		if !policer || (!flows && (k == mUplinkFlowMBR || k == mDownlinkFlowMBR)) {
			continue
		}
		name := meterSpecs[k]
		m, err := ps.Meter(name)
		if err != nil {
			return nil, err
		}
		if m.Unit != p4configv1.MeterSpec_BYTES || m.Type != p4configv1.MeterSpec_TWO_RATE_THREE_COLOR {
			return nil, fmt.Errorf("meter %q is %s of %s, the software UPF's is TWO_RATE_THREE_COLOR of BYTES", name, m.Type, m.Unit)
		}
		s.meterIDs[k] = m.ID
		s.meters[m.ID] = k
		s.meterSizes[k] = int(m.Size)
	}

	d, err := ps.Digest(probeDigestName)
	if err != nil {
		return nil, err
	}
	if !d.IsStruct || len(d.Members) != len(contract.ProbeReportMembers) {
		return nil, fmt.Errorf("digest %q has %d members, want a struct of %d", probeDigestName, len(d.Members), len(contract.ProbeReportMembers))
	}
	for i, want := range contract.ProbeReportMembers {
		if m := d.Members[i]; m.Name != want.Name || m.Width != want.Width {
			return nil, fmt.Errorf("digest %q member %d is %s bit<%d>, want %s bit<%d>", probeDigestName, i, m.Name, m.Width, want.Name, want.Width)
		}
	}
	s.digestID = d.ID

	for _, h := range []struct {
		name, port string
		hdr        *p4schema.ControllerHeader
	}{{packetInName, "ingress_port", ps.PacketIn}, {packetOutName, "egress_port", ps.PacketOut}} {
		if h.hdr == nil {
			return nil, fmt.Errorf("P4Info lacks controller header %q", h.name)
		}
		if i, ok := h.hdr.ByName[h.port]; !ok || h.hdr.Fields[i].Width != 9 {
			return nil, fmt.Errorf("controller header %q lacks %s: bit<9>", h.name, h.port)
		}
	}
	if i, ok := ps.PacketOut.ByName[toIngressName]; ok {
		if w := ps.PacketOut.Fields[i].Width; w != 1 {
			return nil, fmt.Errorf("controller header %q field %s is bit<%d>, want bit<1>", packetOutName, toIngressName, w)
		}
		s.toIngress = true
	}
	return s, nil
}
