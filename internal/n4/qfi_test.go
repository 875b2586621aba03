package n4

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// TestUplinkQFI: an uplink PDR's PDI may name the session's one QoS flow (docs/n4.md, as
// Open5GS does in every uplink PDR); another flow, beside the downlink's or another uplink
// PDR's, is refused with 73 naming that PDR.
func TestUplinkQFI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		up     []*PDR
		qfi    int32
		failed uint16 // 0: accepted
	}{
		{"the downlink's flow", []*PDR{{ID: 1, QFI: 9}}, 9, 0},
		{"a flow, the downlink none", []*PDR{{ID: 1, QFI: 9}, {ID: 2, QFI: 9}}, 0, 0},
		{"no QFI at all", []*PDR{{ID: 1}, {ID: 2}}, 9, 0},
		{"another flow than the downlink's", []*PDR{{ID: 1}, {ID: 2, QFI: 5}}, 9, 2},
		{"two uplink flows", []*PDR{{ID: 1, QFI: 5}, {ID: 2}, {ID: 3, QFI: 6}}, 0, 3},
	} {
		err := uplinkQFI(tc.up, tc.qfi)
		var r *Refusal
		switch {
		case tc.failed == 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.failed != 0 && !errors.As(err, &r):
			t.Errorf("%s: %v, want a refusal", tc.name, err)
		case tc.failed != 0 && (r.Cause != CauseRuleFailure || r.Rule == nil || r.Rule.ID != uint32(tc.failed)):
			t.Errorf("%s: cause %d, failed rule %+v; want 73 naming PDR %d", tc.name, r.Cause, r.Rule, tc.failed)
		}
	}
}

// TestQoSFlowsOfRules: the rule at the largest precedence value is the session's default QoS
// flow; a rule whose own QERs give another QFI or an MBR of its own is a flow of the session's
// own (free5GC's flow rule: the AMBR's QER and the flow's); a rule whose QERs, its own or not,
// give the default's QFI and rates is in the default flow (pfcpsim gives each rule QERs of its
// own alike); one that keeps the default's QFI with an MBR of its own, or whose flow has no
// default QFI to replace, is refused with 73 naming its first PDR (docs/n4.md, "QoS flows").
func TestQoSFlowsOfRules(t *testing.T) {
	ue := netip.MustParseAddr("10.60.0.9")
	pdr := func(id uint16, prec uint32, access bool, sdf string, qers ...uint32) *PDR {
		p := &PDR{ID: id, Precedence: prec, Source: ifaceCore, UEIP: ue, QERIDs: qers}
		if access {
			p.Source = ifaceAccess
		}
		if sdf != "" {
			p.SDF = []string{sdf}
		}
		return p
	}
	const any, server = "permit out ip from any to assigned", "permit out ip from 1.1.1.1/32 to assigned"
	qers := map[uint32]*QER{
		1: {ID: 1, QFI: 1}, 2: {ID: 2, QFI: 1, MBRUL: 1_000_000, MBRDL: 1_000_000}, // free5GC's default and AMBR
		3: {ID: 3, QFI: 2, MBRUL: 108_000, MBRDL: 108_000},     // a flow rule's
		4: {ID: 4, QFI: 1, MBRUL: 1_000_000, MBRDL: 1_000_000}, // another rule's, alike the AMBR
		5: {ID: 5, QFI: 1, MBRDL: 5_000},                       // the default's QFI, a rate of its own
		6: {ID: 6, QFI: 2}, 7: {ID: 7},                         // a QFI without a rate; none at all
		8: {ID: 8, QFI: 2, MBRUL: 108_000, MBRDL: 108_000, GBR: true, GBRUL: 64, GBRDL: 64}, // a GBR flow rule's
	}
	for _, tc := range []struct {
		name     string
		up, down []*PDR
		flows    int
		failed   uint16
		gbr      int64 // the flow's GBR each way (0: a non-GBR flow)
	}{
		{"free5GC's flow rule", []*PDR{pdr(1, 255, true, any, 1, 2), pdr(3, 128, true, server, 2, 3)},
			[]*PDR{pdr(2, 255, false, any, 1, 2), pdr(4, 128, false, server, 2, 3)}, 1, 0, 0},
		{"a rule alike the default", []*PDR{pdr(1, 255, true, any, 1, 2)},
			[]*PDR{pdr(2, 255, false, any, 1, 2), pdr(4, 100, false, server, 4)}, 0, 0, 0},
		{"the default's QFI, a rate of its own", []*PDR{pdr(1, 255, true, any, 1, 2)},
			[]*PDR{pdr(2, 255, false, any, 1, 2), pdr(4, 100, false, server, 2, 5)}, 0, 4, 0},
		{"no default QFI to replace", []*PDR{pdr(1, 255, true, any, 7)},
			[]*PDR{pdr(2, 255, false, any, 7), pdr(4, 100, false, server, 6)}, 0, 4, 0},
		{"a flow without an SDF filter", []*PDR{pdr(1, 255, true, any, 1, 2)},
			[]*PDR{pdr(2, 255, false, any, 1, 2), pdr(4, 100, false, "", 2, 3)}, 0, 4, 0},
		{"free5GC's GBR flow rule: no AMBR QER", []*PDR{pdr(1, 255, true, any, 1, 2), pdr(3, 128, true, server, 8)},
			[]*PDR{pdr(2, 255, false, any, 1, 2), pdr(4, 128, false, server, 8)}, 1, 0, 64},
		{"a GBR flow that names the AMBR QER (outside the Session-AMBR, TS 23.501 §5.7.2.6)", []*PDR{pdr(1, 255, true, any, 1, 2), pdr(3, 128, true, server, 2, 8)},
			[]*PDR{pdr(2, 255, false, any, 1, 2), pdr(4, 128, false, server, 2, 8)}, 0, 4, 0},
	} {
		pdrs := map[uint16]*PDR{}
		for _, p := range append(tc.up, tc.down...) {
			pdrs[p.ID] = p
		}
		q, err := qosOf(&Rules{QERs: qers, PDRs: pdrs})
		var r *Refusal
		switch {
		case tc.failed == 0 && (err != nil || len(q.flows) != tc.flows):
			t.Errorf("%s: %v, %d flows of its own; want %d", tc.name, err, len(q.flows), tc.flows)
		case tc.failed != 0 && !errors.As(err, &r):
			t.Errorf("%s: %v, want a refusal", tc.name, err)
		case tc.failed != 0 && (r.Cause != CauseRuleFailure || r.Rule == nil || r.Rule.ID != uint32(tc.failed)):
			t.Errorf("%s: cause %d, failed rule %+v; want 73 naming PDR %d", tc.name, r.Cause, r.Rule, tc.failed)
		case tc.flows == 1 && (q.qfi != 1 || q.flows[0].QFI != 2 || *q.flows[0].MaxBitRate.DownlinkKbps != 108_000 || *q.mbr.DownlinkKbps != 1_000_000):
			t.Errorf("%s: session QFI %d, MBR %+v, flow %+v; want 1 at 1,000,000 kbit/s and a flow with QFI 2 at 108,000", tc.name, q.qfi, q.mbr, q.flows[0])
		case tc.flows == 1 && tc.gbr == 0 && q.flows[0].GuaranteedBitRate != nil:
			t.Errorf("%s: a GBR of %+v, want a non-GBR flow", tc.name, *q.flows[0].GuaranteedBitRate)
		case tc.gbr != 0 && (q.flows[0].GuaranteedBitRate == nil || *q.flows[0].GuaranteedBitRate.UplinkKbps != tc.gbr || *q.flows[0].GuaranteedBitRate.DownlinkKbps != tc.gbr):
			t.Errorf("%s: GBR %+v, want %d kbit/s each way", tc.name, q.flows[0].GuaranteedBitRate, tc.gbr)
		}
	}
}

// TestURRScopes: a URR measures what the PDRs that name it carry: all the session's, its
// default QoS flow's or one flow of its own's (free5GC's charging by rule); any other part of a
// direction is refused with 73 naming the URR. A quota used up closes the gates of what its URR
// measures: one flow's, the default flow's (spec.gates) or every flow's; a QER's closed gate
// closes its PDRs' flow alone (docs/n4.md, "QoS flows").
func TestURRScopes(t *testing.T) {
	ue := netip.MustParseAddr("10.60.0.9")
	const any, server = "permit out ip from any to assigned", "permit out ip from 1.1.1.1/32 to assigned"
	r := &Rules{
		QERs: map[uint32]*QER{1: {ID: 1, QFI: 1}, 2: {ID: 2, QFI: 1, MBRUL: 1_000_000, MBRDL: 1_000_000}, 3: {ID: 3, QFI: 2, MBRUL: 108_000, MBRDL: 108_000}},
		PDRs: map[uint16]*PDR{
			1: {ID: 1, Precedence: 255, Source: ifaceAccess, UEIP: ue, SDF: []string{any}, QERIDs: []uint32{1, 2}, URRIDs: []uint32{1, 3, 4}},
			2: {ID: 2, Precedence: 255, Source: ifaceCore, UEIP: ue, SDF: []string{any}, QERIDs: []uint32{1, 2}, URRIDs: []uint32{1, 3}},
			3: {ID: 3, Precedence: 128, Source: ifaceAccess, UEIP: ue, SDF: []string{server}, QERIDs: []uint32{2, 3}, URRIDs: []uint32{1, 2, 5}},
			4: {ID: 4, Precedence: 128, Source: ifaceCore, UEIP: ue, SDF: []string{server}, QERIDs: []uint32{2, 3}, URRIDs: []uint32{1, 2, 4}},
		},
	}
	for _, c := range []struct {
		id     uint32
		ul, dl bool
		scope  int
		failed bool
	}{{1, true, true, scopeSession, false}, {2, true, true, 0, false}, {3, true, true, scopeDefault, false},
		{4, false, false, 0, true} /* the default's uplink and the flow's downlink */, {5, true, false, 0, false}} {
		ul, dl, scope, err := r.urrScope(&URR{ID: c.id})
		if c.failed {
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Cause != CauseRuleFailure || ref.Rule == nil || ref.Rule.ID != c.id {
				t.Errorf("URR %d: %v, want 73 naming it", c.id, err)
			}
			continue
		}
		if err != nil || ul != c.ul || dl != c.dl || scope != c.scope {
			t.Errorf("URR %d: up %v, down %v, scope %d (%v); want %v, %v, %d", c.id, ul, dl, scope, err, c.ul, c.dl, c.scope)
		}
	}
	r.URRs = map[uint32]*URR{1: {ID: 1}, 2: {ID: 2, VolumeQuota: &VolumeThreshold{}}, 3: {ID: 3}, 5: {ID: 5}}
	for _, p := range r.PDRs {
		p.URRIDs = slices.DeleteFunc(p.URRIDs, func(id uint32) bool { return id == 4 })
	}
	if err := r.checkURRs(); err != nil {
		t.Errorf("a quota on a QoS flow's URR: %v", err)
	}
	closed, both := junctionv1.GateClosed, &junctionv1.Gates{Uplink: junctionv1.GateClosed, Downlink: junctionv1.GateClosed}
	gates := func() (def, flow *junctionv1.Gates) {
		t.Helper()
		q, err := qosOf(r)
		if err != nil {
			t.Fatal(err)
		}
		up, down, _ := r.byDirection()
		def, err = q.gates(r, up, down)
		if err != nil || len(q.flows) != 1 {
			t.Fatalf("gates: %v, %d flows", err, len(q.flows))
		}
		return def, q.flows[0].Gates
	}
	eq := func(a, b *junctionv1.Gates) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for _, c := range []struct {
		name      string
		exhausted []uint32
		def, flow *junctionv1.Gates
	}{
		{"none used up", nil, nil, nil},
		{"the flow's URR (2) used up", []uint32{2}, nil, both},
		{"the default's URR (3) used up", []uint32{3}, both, nil},
		{"the session's URR (1) used up", []uint32{1}, both, both},
		{"the flow's uplink URR (5) used up", []uint32{5}, nil, &junctionv1.Gates{Uplink: closed}},
	} {
		for id, u := range r.URRs {
			u.VolumeQuota, u.Exhausted = &VolumeThreshold{}, [3]byte{}
			if slices.Contains(c.exhausted, id) {
				u.Exhausted = reportVOLQU
			}
		}
		if def, flow := gates(); !eq(def, c.def) || !eq(flow, c.flow) {
			t.Errorf("%s: default flow's gates %+v, the flow's %+v; want %+v, %+v", c.name, def, flow, c.def, c.flow)
		}
	}
	for _, u := range r.URRs {
		u.Exhausted = [3]byte{}
	}
	r.QERs[3].GateDL = 1 // the flow's own QER closes its downlink: the flow's PDR 4 only
	if def, flow := gates(); def != nil || !eq(flow, &junctionv1.Gates{Downlink: closed}) {
		t.Errorf("the flow's QER closed downlink: default flow's gates %+v, the flow's %+v; want open, downlink closed", def, flow)
	}
	r.QERs[3].GateDL, r.QERs[2].GateUL = 0, 1 // the AMBR's QER, which every PDR names, closes every uplink
	if def, flow := gates(); !eq(def, &junctionv1.Gates{Uplink: closed}) || !eq(flow, &junctionv1.Gates{Uplink: closed}) {
		t.Errorf("the session's QER closed uplink: default flow's gates %+v, the flow's %+v; want both uplink closed", def, flow)
	}
}

// TestUsageFollowsMovedFlows: a QoS flow added ahead of another (a lower precedence) takes its
// position, and so its cell (docs/pipeline.md, "QoS flows"), which the programmer zeroes for it;
// the flow that moved starts again from zero in its new cell. A URR of the moved flow measures
// what it carried before and after the move, and the default flow's URR none of it; once a flow
// goes, what it carried stays out of the default flow's measurement.
func TestUsageFollowsMovedFlows(t *testing.T) {
	ue := netip.MustParseAddr("10.60.0.9")
	const any = "permit out ip from any to assigned"
	flowRule := func(r *Rules, ul, dl uint16, prec uint32, server string, qer uint32, urr uint32) {
		sdf := []string{"permit out ip from " + server + " to assigned"}
		r.PDRs[ul] = &PDR{ID: ul, Precedence: prec, Source: ifaceAccess, UEIP: ue, SDF: sdf, QERIDs: []uint32{1, qer}, URRIDs: []uint32{urr}}
		r.PDRs[dl] = &PDR{ID: dl, Precedence: prec, Source: ifaceCore, UEIP: ue, SDF: sdf, QERIDs: []uint32{1, qer}, URRIDs: []uint32{urr}}
	}
	cur := &Rules{
		QERs: map[uint32]*QER{1: {ID: 1, QFI: 1}, 2: {ID: 2, QFI: 2}, 3: {ID: 3, QFI: 3}},
		PDRs: map[uint16]*PDR{
			1: {ID: 1, Precedence: 255, Source: ifaceAccess, UEIP: ue, SDF: []string{any}, QERIDs: []uint32{1}, URRIDs: []uint32{9}},
			2: {ID: 2, Precedence: 255, Source: ifaceCore, UEIP: ue, SDF: []string{any}, QERIDs: []uint32{1}, URRIDs: []uint32{9}},
		},
		URRs: map[uint32]*URR{2: {ID: 2}, 9: {ID: 9}},
	}
	flowRule(cur, 3, 4, 128, "1.1.1.1/32", 2, 2) // QFI 2, URR 2: position 0
	r := cur.clone()
	r.URRs[3] = &URR{ID: 3}
	flowRule(r, 5, 6, 64, "8.8.8.8/32", 3, 3) // QFI 3 ahead of it: position 0, QFI 2 to 1
	from, moved := flowMoves(cur, r)
	if !moved || from[0] != -1 || from[1] != 0 {
		t.Fatalf("flowMoves: %v, moved %v; want QFI 3 new at 0, QFI 2 from 0 to 1", from, moved)
	}

	// Before the move: the session carried 10 packets down, 4 of them QFI 2's (cell 0). URR 2
	// (QFI 2's) and URR 9 (the default's) measure from zero.
	s := &State{}
	s.counted(Usage{DLPackets: 10, Flows: [4]FlowUsage{{DLPackets: 4}}})
	for _, u := range r.URRs {
		u.movedFlows(from)
	}
	s.carryMovedFlows(from)
	// After it: cell 0 (QFI 3's now) counted 1, cell 1 (QFI 2's) 2, the session 3 more.
	now := s.counted(Usage{DLPackets: 13, Flows: [4]FlowUsage{{DLPackets: 1}, {DLPackets: 2}}})
	for _, c := range []struct {
		urr  uint32
		want uint64
	}{{2, 6}, {3, 1}, {9, 6}} {
		if got := r.URRs[c.urr].measured(r, r.URRs[c.urr].Base, now).DLPackets; got != c.want {
			t.Errorf("URR %d measured %d packets down, want %d", c.urr, got, c.want)
		}
	}

	// QFI 2's rule goes: QFI 3 stays at 0, and QFI 2's 6 packets stay out of the default flow's.
	gone := r.clone()
	delete(gone.PDRs, 3)
	delete(gone.PDRs, 4)
	delete(gone.URRs, 2)
	from, moved = flowMoves(r, gone)
	if !moved || from[0] != 0 || from[1] != -1 {
		t.Fatalf("flowMoves after QFI 2 went: %v, moved %v; want QFI 3 kept at 0", from, moved)
	}
	for _, u := range gone.URRs {
		u.movedFlows(from)
	}
	s.carryMovedFlows(from)
	now = s.counted(Usage{DLPackets: 14, Flows: [4]FlowUsage{{DLPackets: 1}}}) // one more packet, the default's
	if got := gone.URRs[9].measured(gone, gone.URRs[9].Base, now).DLPackets; got != 7 {
		t.Errorf("URR 9 (the default flow's) measured %d packets down, want 7 (6 before the flow went, 1 after)", got)
	}
}

// TestQoSFlowOfSeveralFilters: a QoS flow as Open5GS's SMF gives a PCC rule (smf_bearer_tft_update):
// its downlink PDR carries the downlink and bidirectional flow descriptions (the latter with an
// SDF Filter ID) and no UE IP Address, its uplink PDR the uplink ones and the bidirectional ones by
// ID alone, both naming the flow's QER alone (a GBR). The flow is one, of filters for each
// direction (docs/n4.md, "QoS flows"); rules of one QFI at other precedences, or naming an ID no
// description carries, are refused with 73 naming the PDR.
func TestQoSFlowOfSeveralFilters(t *testing.T) {
	ue := netip.MustParseAddr("10.45.0.2")
	const (
		any  = "permit out ip from any to assigned"
		bidi = "permit out 17 from 10.10.0.1 30000 to 10.45.0.2 40000"
		down = "permit out 17 from 10.10.0.1 30001 to 10.45.0.2"
		up   = "permit out 17 from 10.10.0.1 to 10.45.0.2 40001"
	)
	qers := map[uint32]*QER{
		1: {ID: 1, QFI: 1, MBRUL: 1_000_000, MBRDL: 1_000_000},
		2: {ID: 2, QFI: 2, MBRUL: 128, MBRDL: 128, GBR: true, GBRUL: 64, GBRDL: 64},
	}
	rules := func(ulPrec uint32, ref uint32) *Rules {
		return &Rules{QERs: qers, PDRs: map[uint16]*PDR{
			1: {ID: 1, Precedence: 65535, Source: ifaceAccess, UEIP: ue, SDF: []string{any}, QERIDs: []uint32{1}},
			2: {ID: 2, Precedence: 65535, Source: ifaceCore, UEIP: ue, SDF: []string{any}, QERIDs: []uint32{1}},
			3: {ID: 3, Precedence: 100, Source: ifaceCore, SDF: []string{bidi, down}, SDFIDs: []uint32{1, 0}, QERIDs: []uint32{2}},
			4: {ID: 4, Precedence: ulPrec, Source: ifaceAccess, UEIP: ue, SDF: []string{up}, SDFRefs: []uint32{ref}, QERIDs: []uint32{2}},
		}}
	}
	q, err := qosOf(rules(100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(q.flows) != 1 {
		t.Fatalf("flows %+v, want one", q.flows)
	}
	f := q.flows[0]
	port := func(p int32) []junctionv1.PortRange { return []junctionv1.PortRange{{From: p}} }
	server := []junctionv1.IPv4Prefix{"10.10.0.1/32"}
	want := []junctionv1.QoSFlowFilter{
		{Direction: junctionv1.FlowBidirectional, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: server, Protocol: junctionv1.ProtocolUDP, DestinationPorts: port(30000), SourcePorts: port(40000)}},
		{Direction: junctionv1.FlowDownlink, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: server, Protocol: junctionv1.ProtocolUDP, DestinationPorts: port(30001)}},
		{Direction: junctionv1.FlowUplink, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: server, Protocol: junctionv1.ProtocolUDP, SourcePorts: port(40001)}},
	}
	got, _ := json.Marshal(f.Filters)
	wantJSON, _ := json.Marshal(want)
	if f.QFI != 2 || f.Precedence != 100 || string(got) != string(wantJSON) || f.GuaranteedBitRate == nil {
		t.Errorf("flow %+v with filters %s; want QFI 2 at precedence 100, a GBR and filters %s", f, got, wantJSON)
	}
	for _, tc := range []struct {
		name   string
		rules  *Rules
		failed uint16
	}{
		{"the uplink PDR at another precedence", rules(90, 1), 3},
		{"an SDF Filter ID no description carries", rules(100, 9), 4},
	} {
		var r *Refusal
		if _, err := qosOf(tc.rules); !errors.As(err, &r) || r.Cause != CauseRuleFailure || r.Rule == nil || r.Rule.ID != uint32(tc.failed) {
			t.Errorf("%s: %v, want 73 naming PDR %d", tc.name, err, tc.failed)
		}
	}
}
