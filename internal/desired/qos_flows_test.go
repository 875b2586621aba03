package desired

import (
	"net/netip"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// TestQoSFlowEntries: a session's QoS flow is one qos_flows entry per direction and combination
// of its server prefixes and port ranges, keyed by the session's address, at priority 65535 -
// precedence, naming cell 4 × block + i (docs/pipeline.md, "QoS flows"); its MBR is its cells'
// configuration as a session MBR's is. The session's own MBR policer is untouched by it.
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
				MaxBitRate: &junctionv1.BitRate{DownlinkKbps: ptr[int64](8000)}},
		},
	}}
	es, err := qosFlowEntries(s, netip.MustParseAddr("10.60.0.9"))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2*(1+4) {
		t.Fatalf("%d entries, want 2 for web and 8 for games (2 prefixes × 2 port ranges, each way)", len(es))
	}
	up := map[string]int{}
	for _, e := range es {
		cell, prio := []byte{0, 0, 0, 20}, int32(65335) // web: flow 0 of block 5
		if e.Params[0].Value[0] == 2 {
			cell, prio = []byte{0, 0, 0, 21}, 65435
		}
		if e.Table != "qos_flows" || e.Action != "set_qos_flow" || e.Priority != prio || string(e.Params[1].Value) != string(cell) {
			t.Errorf("entry %+v: want qos_flows set_qos_flow at priority %d, flow_idx %v", e, prio, cell)
		}
		if e.Match[0].Field != "ue_addr" || string(e.Match[0].Value) != string([]byte{10, 60, 0, 9}) || e.Match[1].Field != "uplink" {
			t.Errorf("entry %+v is not keyed by the session's address and a direction", e)
		}
		up[string(e.Match[1].Value)]++
	}
	if up[string([]byte{0})] != 5 || up[string([]byte{1})] != 5 {
		t.Errorf("entries by direction %v, want 5 each way", up)
	}
	ms := SessionMeters(s)
	want := MeterCell{Meter: "downlink_flow_mbr", Index: 21, Config: MeterConfig{CIR: 1_000_000, CBurst: 100_000, PIR: 1_000_000, PBurst: 100_000}}
	if len(ms) != 1 || ms[0] != want {
		t.Errorf("meter cells %+v, want only %+v", ms, want)
	}
	if e := mbrSessionEntry(s, netip.MustParseAddr("10.60.0.9")); e != nil {
		t.Errorf("an mbr_sessions entry %+v for a session without an MBR of its own", e)
	}
}
