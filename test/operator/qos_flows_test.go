package operator

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// flowSession is an ordinary PDU session at ue behind the gNB 198.51.100.10 (QFI 9), with a QoS
// flow of its own for the server 203.0.113.77 (QFI 2, 8,000 kbit/s up and 16,000 down).
func flowSession(ns, upf string, ue netip.Addr) *junctionv1.ATSSSSession {
	a := junctionv1.IPv4Address(ue.String())
	return &junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flows"},
		Spec: junctionv1.ATSSSSessionSpec{
			Type: junctionv1.SessionSingleAccess, UE: junctionv1.UE{SUPI: "imsi-001010000000301"}, SessionAddress: a,
			UPFRef: junctionv1.LocalObjectReference{Name: upf}, QFI: 9,
			AccessLegs: junctionv1.AccessLegs{ThreeGPP: &junctionv1.ThreeGPPLeg{UEAddress: a, GNBAddress: "198.51.100.10", UplinkTEID: 0x301, DownlinkTEID: 0x300}},
			QoSFlows: []junctionv1.QoSFlow{{Name: "one-one", QFI: 2, Precedence: 128,
				TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"203.0.113.77/32"}},
				MaxBitRate:        &junctionv1.BitRate{UplinkKbps: ptr(int64(8000)), DownlinkKbps: ptr(int64(16000))}}},
		},
	}
}

// TestQoSFlowsOfTheirOwn: a session with a QoS flow of its own (spec.qosFlows) gets a block of
// flow policer cells (status.qosFlowIndex), a qos_flows entry per direction for the flow's server,
// and the flow's MBR in both its cells, configured as docs/pipeline.md says of an MBR (kbit/s ×
// 125 bytes/s, bursts of 100 ms, at least 3,000 bytes). Its downlink from that server carries the
// flow's QFI in the G-PDU's PDU Session Container, from any other the session's. On a pipeline
// without qos_flows (the Tofino 2 build's) the session is refused: NotSupportedByPipeline.
func TestQoSFlowsOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.31")
	r := newUPFRig(t, "upf")
	startOperator(t, r.ns, operatorOptions{})
	s := flowSession(r.ns, r.upf.Name, ue)
	create(t, s)
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		t.Fatal(err)
	}
	if s.Status.QoSFlowIndex == nil {
		t.Fatal("status.qosFlowIndex is not set")
	}
	cell := int64(*s.Status.QoSFlowIndex) * junctionv1.MaxQoSFlows // flow 0
	entries := mustEntries(t, r.u, r.sch)
	if n := countTable(entries, "qos_flows"); n != 2 {
		t.Errorf("%d qos_flows entries, want one per direction:\n%v", n, entries)
	}
	for _, d := range []struct {
		meter string
		kbps  int64
	}{{"uplink_flow_mbr", 8000}, {"downlink_flow_mbr", 16000}} {
		rate := d.kbps * 125
		want := &p4v1.MeterConfig{Cir: rate, Cburst: max(rate/10, 3000), Pir: rate, Pburst: max(rate/10, 3000)}
		if got, err := r.u.meter(r.sch, d.meter, cell); err != nil || !proto.Equal(got, want) {
			t.Errorf("%s[%d] = %v (%v), want %v", d.meter, cell, got, err, want)
		}
	}

	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 3}, Src: [6]byte{2, 0, 0, 0, 2, 3}}
	qfiOf := func(server string) (uint8, error) {
		frame := wiretest.Build(eth, wire.IPv4{Src: addr4(server), Dst: ue.As4()}, wire.UDP{SrcPort: 443, DstPort: 40000}, make([]byte, 64))
		out := r.u.forward(t, frame)
		if len(out) != 1 {
			return 0, fmt.Errorf("%d frames left for the downlink from %s", len(out), server)
		}
		var f wire.Frame
		if err := f.Parse(out[0].frame); err != nil || f.Has&wire.HasGTPU == 0 || f.GTPU.TEID != 0x300 {
			return 0, fmt.Errorf("the downlink from %s left as %x (%v), want a G-PDU into TEID 0x300", server, out[0].frame, err)
		}
		return f.GTPU.PSC[1] & 0x3f, nil
	}
	for _, c := range []struct {
		server string
		qfi    uint8
	}{{"203.0.113.77", 2}, {"203.0.113.10", 9}} {
		if q, err := qfiOf(c.server); err != nil || q != c.qfi {
			t.Errorf("downlink from %s: QFI %d (%v), want %d", c.server, q, err, c.qfi)
		}
	}

	// The Tofino 2 build has no qos_flows: a session that needs it is refused, not programmed
	// without its flow.
	tofino := newUPFRigWith(t, "tofino", stripQoSFlows)
	startOperator(t, tofino.ns, operatorOptions{})
	refused := flowSession(tofino.ns, tofino.upf.Name, ue)
	create(t, refused)
	waitCondition(t, programTimeout, refused, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "NotSupportedByPipeline")
}

// stripQoSFlows takes qos_flows, its actions and its meters out of a P4Info, as the Tofino 2
// build has none of them.
func stripQoSFlows(i *p4configv1.P4Info) {
	i.Tables = slices.DeleteFunc(i.Tables, func(t *p4configv1.Table) bool { return t.GetPreamble().GetName() == "qos_flows" })
	i.Actions = slices.DeleteFunc(i.Actions, func(a *p4configv1.Action) bool {
		return a.GetPreamble().GetName() == "set_qos_flow" || a.GetPreamble().GetName() == "no_qos_flow"
	})
	i.Meters = slices.DeleteFunc(i.Meters, func(m *p4configv1.Meter) bool {
		return m.GetPreamble().GetName() == "uplink_flow_mbr" || m.GetPreamble().GetName() == "downlink_flow_mbr"
	})
}
