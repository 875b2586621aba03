package desired

import (
	"net/netip"
	"slices"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// TestQoSFlowEntries: a session's QoS flow is one qos_flows entry per direction and combination
// of its server prefixes and port ranges, keyed by the session's address, at priority 65535 -
// precedence, naming cell 5 × block + i (docs/pipeline.md, "QoS flows"), gbr 1 when it is a GBR
// flow; its MBR is its cells' configuration as a session MBR's is. The session's own MBR policer
// is untouched by it.
func TestQoSFlowEntries(t *testing.T) {
	block := uint32(5)
	s := Session{Name: "ns/s", QoSFlowIndex: &block, Spec: junctionv1.ATSSSSessionSpec{
		SessionAddress: "10.60.0.9", QFI: 9,
		QoSFlows: []junctionv1.QoSFlow{
			{Name: "web", QFI: 3, Precedence: 200},
			{Name: "games", QFI: 2, Precedence: 100, TrafficDescriptor: junctionv1.TrafficDescriptor{
				DestinationPrefixes: []junctionv1.IPv4Prefix{"198.18.20.0/24", "198.18.21.0/24"},
				DestinationPorts:    []junctionv1.PortRange{{From: 3074, To: ptr[int32](3079)}, {From: 9000}},
				Protocol:            junctionv1.ProtocolUDP},
				MaxBitRate:        &junctionv1.BitRate{DownlinkKbps: ptr[int64](8000)},
				GuaranteedBitRate: &junctionv1.BitRate{DownlinkKbps: ptr[int64](64)}},
		},
	}}
	es, err := qosFlowEntries(s, netip.MustParseAddr("10.60.0.9"))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2+2*(1+4) {
		t.Fatalf("%d entries, want 2 for the default flow, 2 for web and 8 for games (2 prefixes × 2 port ranges, each way)", len(es))
	}
	// docs/pipeline.md: flow i of block b at cell 5b + i, the default flow at 5b + 4, with QFI 0
	// (the tunnel's) at priority 1; a flow at 65535 - precedence; gbr 1 for the GBR flow alone.
	up := map[string]int{}
	for _, e := range es {
		cell, prio, matches, gbr := []byte{0, 0, 0, 25}, int32(65335), 2, byte(0) // web: flow 0 of block 5, matching all
		switch e.Params[0].Value[0] {
		case 2:
			cell, prio, matches, gbr = []byte{0, 0, 0, 26}, 65435, 5, 1
		case 0:
			cell, prio, matches = []byte{0, 0, 0, 29}, 1, 2
		}
		if e.Table != "qos_flows" || e.Action != "set_qos_flow" || e.Priority != prio || string(e.Params[1].Value) != string(cell) {
			t.Errorf("entry %+v: want qos_flows set_qos_flow at priority %d, flow_idx %v", e, prio, cell)
		}
		if len(e.Params) != 3 || e.Params[2].Name != "gbr" || string(e.Params[2].Value) != string([]byte{gbr}) {
			t.Errorf("entry %+v: want gbr %d", e, gbr)
		}
		if e.Match[0].Field != "ue_addr" || string(e.Match[0].Value) != string([]byte{10, 60, 0, 9}) || e.Match[1].Field != "uplink" {
			t.Errorf("entry %+v is not keyed by the session's address and a direction", e)
		}
		if len(e.Match) != matches {
			t.Errorf("entry %+v matches %d fields, want %d", e, len(e.Match), matches)
		}
		up[string(e.Match[1].Value)]++
	}
	if up[string([]byte{0})] != 6 || up[string([]byte{1})] != 6 {
		t.Errorf("entries by direction %v, want 6 each way", up)
	}
	ms := SessionMeters(s)
	want := MeterCell{Meter: "downlink_flow_mbr", Index: 26, Config: MeterConfig{CIR: 1_000_000, CBurst: 100_000, PIR: 1_000_000, PBurst: 100_000}}
	if len(ms) != 1 || ms[0] != want {
		t.Errorf("meter cells %+v, want only %+v", ms, want)
	}
	if e := mbrSessionEntry(s, netip.MustParseAddr("10.60.0.9")); e != nil {
		t.Errorf("an mbr_sessions entry %+v for a session without an MBR of its own", e)
	}
}

// A closed gate of the default flow closes its cell and not the session's (which would stop the
// flows too); a flow's closes the flow's cell at rate zero whatever its MBR (docs/pipeline.md,
// "QoS flows").
func TestQoSFlowGates(t *testing.T) {
	block := uint32(5)
	closed := junctionv1.GateClosed
	s := Session{Name: "ns/s", QoSFlowIndex: &block, UsageIndex: 7, Spec: junctionv1.ATSSSSessionSpec{
		SessionAddress: "10.60.0.9", QFI: 9,
		MaxBitRate: &junctionv1.BitRate{UplinkKbps: ptr[int64](16000)},
		Gates:      &junctionv1.Gates{Uplink: closed},
		QoSFlows: []junctionv1.QoSFlow{
			{Name: "web", QFI: 3, Precedence: 200},
			{Name: "games", QFI: 2, Precedence: 100, MaxBitRate: &junctionv1.BitRate{DownlinkKbps: ptr[int64](8000)},
				Gates: &junctionv1.Gates{Downlink: closed}},
		},
	}}
	want := []MeterCell{
		{Meter: "uplink_mbr", Index: 7, Config: MeterConfig{CIR: 2_000_000, CBurst: 200_000, PIR: 2_000_000, PBurst: 200_000}},
		{Meter: "uplink_flow_mbr", Index: 29},
		{Meter: "downlink_flow_mbr", Index: 26},
	}
	if ms := SessionMeters(s); !slices.Equal(ms, want) {
		t.Errorf("meter cells %+v, want %+v", ms, want)
	}
	s.Spec.QoSFlows = nil // the same gate without flows closes the session's cell
	want = []MeterCell{{Meter: "uplink_mbr", Index: 7}}
	if ms := SessionMeters(s); !slices.Equal(ms, want) {
		t.Errorf("without QoS flows: meter cells %+v, want %+v", ms, want)
	}
}

// TestQoSFlowFilters: a flow described by filters gets entries for each filter's direction alone
// (Downlink: uplink 0; Uplink: uplink 1; Bidirectional: both), each at the flow's priority and
// cell (docs/pipeline.md, "QoS flows"), as Open5GS's SDF filters per PDR ask.
func TestQoSFlowFilters(t *testing.T) {
	block := uint32(2)
	rtp := junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"198.51.100.20/32"}, Protocol: junctionv1.ProtocolUDP,
		DestinationPorts: []junctionv1.PortRange{{From: 30000}}}
	s := Session{Name: "ns/s", QoSFlowIndex: &block, Spec: junctionv1.ATSSSSessionSpec{
		SessionAddress: "10.60.0.9", QFI: 9,
		QoSFlows: []junctionv1.QoSFlow{{Name: "voice", QFI: 3, Precedence: 10, Filters: []junctionv1.QoSFlowFilter{
			{Direction: junctionv1.FlowDownlink, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"198.51.100.0/24", "203.0.113.0/24"}}},
			{Direction: junctionv1.FlowUplink, TrafficDescriptor: rtp},
			{Direction: junctionv1.FlowBidirectional, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"192.0.2.1/32"}}},
		}}},
	}}
	es, err := qosFlowEntries(s, netip.MustParseAddr("10.60.0.9"))
	if err != nil {
		t.Fatal(err)
	}
	// Per direction, uplink 0 then 1: the default flow's 1 + 1; the downlink filter's 2 prefixes
	// + 0; the uplink filter's 0 + 1; the bidirectional one's 1 + 1.
	count := [2]int{}
	for _, e := range es {
		up := e.Match[1].Value[0]
		count[up]++
		if e.Params[0].Value[0] != 3 {
			continue
		}
		if e.Priority != 65525 || string(e.Params[1].Value) != string([]byte{0, 0, 0, 10}) {
			t.Errorf("entry %+v: want priority 65525 and flow_idx 10", e)
		}
		if up == 1 && len(e.Match) == 5 && (e.Match[3].Field != "proto" || e.Match[4].Field != "remote_port") {
			t.Errorf("the uplink filter's entry %+v: want remote_addr, proto and remote_port", e)
		}
	}
	if count != [2]int{4, 3} {
		t.Errorf("entries by direction (downlink, uplink) %v, want [4 3]", count)
	}
}
