package operator

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
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
// flow's QFI in the G-PDU's PDU Session Container, from any other the session's. The flow's gates
// and the session's (its default flow's) close their own packets alone. On a pipeline
// without qos_flows (a P4 program may leave them out) the session is refused: NotSupportedByPipeline.
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
	cell := int64(*s.Status.QoSFlowIndex) * 5 // flow 0 (docs/pipeline.md: a block of five cells)
	entries := mustEntries(t, r.u, r.sch)
	if n := countTable(entries, "qos_flows"); n != 4 {
		t.Errorf("%d qos_flows entries, want one per direction for the flow and for the default flow:\n%v", n, entries)
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

	// Gates from the manifest (docs/pipeline.md, "QoS flows"): the flow's downlink closed at its
	// cell, the default flow's uplink (spec.gates) at the block's last; each stops that flow's
	// packets that way alone.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		t.Fatal(err)
	}
	s.Spec.QoSFlows[0].Gates = &junctionv1.Gates{Downlink: junctionv1.GateClosed}
	s.Spec.Gates = &junctionv1.Gates{Uplink: junctionv1.GateClosed}
	if err := k8s.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	closed := &p4v1.MeterConfig{}
	eventually(t, programTimeout, "the flow's downlink cell and the default flow's uplink cell closed", func() error {
		for _, c := range []struct {
			meter string
			cell  int64
		}{{"downlink_flow_mbr", cell}, {"uplink_flow_mbr", cell + 4}} {
			if got, err := r.u.meter(r.sch, c.meter, c.cell); err != nil || got == nil || !proto.Equal(got, closed) {
				return fmt.Errorf("%s[%d] = %v (%v)", c.meter, c.cell, got, err)
			}
		}
		return nil
	})
	up := func(server string) int {
		return len(r.u.forward(t, wiretest.Build(eth, wire.IPv4{Src: addr4("198.51.100.10"), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: 0x301},
			wire.IPv4{Src: ue.As4(), Dst: addr4(server)}, wire.UDP{SrcPort: 40000, DstPort: 443}, make([]byte, 32))))
	}
	if _, err := qfiOf("203.0.113.77"); err == nil {
		t.Error("the flow's downlink left with its gate closed")
	}
	if q, err := qfiOf("203.0.113.10"); err != nil || q != 9 {
		t.Errorf("the default flow's downlink, its gate open: QFI %d (%v), want 9", q, err)
	}
	if n := up("203.0.113.10"); n != 0 {
		t.Errorf("the default flow's uplink left (%d frames) with its gate closed", n)
	}
	if n := up("203.0.113.77"); n != 1 {
		t.Errorf("the flow's uplink, its gate open: %d frames left, want 1", n)
	}

	// A pipeline without qos_flows: a session that needs it is refused, not programmed
	// without its flow.
	bare := newUPFRigWith(t, "noflows", stripQoSFlows)
	startOperator(t, bare.ns, operatorOptions{})
	refused := flowSession(bare.ns, bare.upf.Name, ue)
	create(t, refused)
	waitCondition(t, programTimeout, refused, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "NotSupportedByPipeline")
}

// stripQoSFlows takes qos_flows, its actions and its meters out of a P4Info, as a P4 program may
// leave them out.
func stripQoSFlows(i *p4configv1.P4Info) {
	i.Tables = slices.DeleteFunc(i.Tables, func(t *p4configv1.Table) bool { return t.GetPreamble().GetName() == "qos_flows" })
	i.Actions = slices.DeleteFunc(i.Actions, func(a *p4configv1.Action) bool {
		return a.GetPreamble().GetName() == "set_qos_flow" || a.GetPreamble().GetName() == "no_qos_flow"
	})
	i.Meters = slices.DeleteFunc(i.Meters, func(m *p4configv1.Meter) bool {
		return m.GetPreamble().GetName() == "uplink_flow_mbr" || m.GetPreamble().GetName() == "downlink_flow_mbr"
	})
}

// flowRule is one of a subscriber's flow rules as free5GC's SMF gives it a QoS flow: its PDRs and
// FARs id (uplink) and id+1 (downlink), its QER id, its precedence, its filter's server, QFI, MBR
// and GBR (0: a non-GBR 5QI), and the URRs its PDRs name beside the session's (1 and 2).
type flowRule struct {
	id      uint16
	prec    uint32
	server  string
	qfi     uint8
	mbrKbps uint64
	gbrKbps uint64
	urrs    []uint32
}

// free5GCFlowRule is what free5GC's SMF adds for a subscriber's flow rule (internal/context/
// datapath.go, ActivateTunnelAndPDR and AddQoS; the webconsole's default subscriber has one,
// 1.1.1.1/32): a data path of its own, its uplink and downlink PDRs at the rule's precedence with
// the rule's filter as SDF filter on both (pcc_rule.go: "UL, DL flow description should be
// same"), on the session's uplink TEID (datapath.go, AddForwardingParameters: "the AN tunnel is
// only one") and its gNB's tunnel, each PDR naming the flow's QER (the rule's QFI and MBR, and
// its GBR for a GBR 5QI) and the session's URRs, and the session AMBR's QER (2) unless the flow
// is a GBR flow ("if ambrQER != nil && !dataPath.GBRFlow").
func free5GCFlowRule(ue, gnb netip.Addr, ulTEID, dlTEID uint32, f flowRule) []*ie.IE {
	sdf := ie.NewSDFFilter("permit out ip from "+f.server+" to assigned", "", "", "", 0)
	named := []*ie.IE{ie.NewQERID(2), ie.NewQERID(uint32(f.id)), ie.NewURRID(1), ie.NewURRID(2)}
	qer := ie.NewCreateQER(ie.NewQERID(uint32(f.id)), ie.NewGateStatus(0, 0), ie.NewMBR(f.mbrKbps, f.mbrKbps), ie.NewQFI(f.qfi))
	if f.gbrKbps != 0 {
		named = named[1:]
		qer = ie.NewCreateQER(ie.NewQERID(uint32(f.id)), ie.NewGateStatus(0, 0), ie.NewMBR(f.mbrKbps, f.mbrKbps), ie.NewGBR(f.gbrKbps, f.gbrKbps), ie.NewQFI(f.qfi))
	}
	for _, u := range f.urrs {
		named = append(named, ie.NewURRID(u))
	}
	ul, dl := f.id, f.id+1
	return []*ie.IE{
		ie.NewCreateFAR(ie.NewFARID(uint32(ul)), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
		ie.NewCreateFAR(ie.NewFARID(uint32(dl)), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewOuterHeaderCreation(0x0100, dlTEID, gnb.String(), "", 0, 0, 0))),
		qer,
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(ul), ie.NewPrecedence(f.prec), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x01, ulTEID, net.ParseIP("192.0.2.1"), nil, 0),
			ie.NewNetworkInstance("internet"), ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0), sdf),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(uint32(ul))}, named...)...),
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(dl), ie.NewPrecedence(f.prec), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewNetworkInstance("internet"), ie.NewUEIPAddress(0x06, ue.String(), "", 0, 0), sdf),
			ie.NewFARID(uint32(dl))}, named...)...),
	}
}

// webconsoleFlow is free5GC's webconsole's default subscriber's flow rule, as the tests send it
// (its server one of the test network's).
func webconsoleFlow(urrs ...uint32) flowRule {
	return flowRule{id: 3, prec: 128, server: "203.0.113.77/32", qfi: 2, mbrKbps: 108000, urrs: urrs}
}

// TestN4QoSFlowsAsFree5GCSendsThem: free5GC's SMF gives a subscriber's flow rule a QoS flow of its
// own (free5GCFlowRule): the session object gets it in spec.qosFlows (its QFI, precedence, server
// and MBR), its downlink from the rule's server carries the flow's QFI and the rest the session's,
// and the flow's MBR is in its policer cells. A flow rule with charging data also gets a URR of
// its own (datapath.go, AddChargingRules), which measures the flow's traffic alone, as one for the
// default rule measures the rest (docs/n4.md, "QoS flows").
func TestN4QoSFlowsAsFree5GCSendsThem(t *testing.T) {
	ctx := context.Background()
	ue, dlTEID := netip.MustParseAddr("10.60.0.32"), uint32(0x91)
	r, est, ulTEID, _ := forwardingRig(t, ue, dlTEID)
	m, err := r.smf.Modify(ctx, est, free5GCFlowRule(ue, forwardingGNB, ulTEID, dlTEID, webconsoleFlow())...)
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("free5GC's flow rule: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	obj := awaitFlows(t, r, 2)
	f := obj.Spec.QoSFlows[0]
	if r := f.MaxBitRate; f.QFI != 2 || f.Precedence != 128 || len(f.TrafficDescriptor.DestinationPrefixes) != 1 || f.TrafficDescriptor.DestinationPrefixes[0] != "203.0.113.77/32" ||
		r == nil || r.UplinkKbps == nil || *r.UplinkKbps != 108000 || r.DownlinkKbps == nil || *r.DownlinkKbps != 108000 || obj.Spec.QFI != 1 {
		t.Errorf("the session's QFI %d and flow %+v; want the session's 1, the flow's 2 at precedence 128 for 203.0.113.77/32 at 108,000 kbit/s each way", obj.Spec.QFI, f)
	}
	rate := int64(108000) * 125
	want := &p4v1.MeterConfig{Cir: rate, Cburst: rate / 10, Pir: rate, Pburst: rate / 10}
	cell := int64(*obj.Status.QoSFlowIndex) * 5 // flow 0 (docs/pipeline.md: a block of five cells)
	eventually(t, programTimeout, "the flow's policer cells", func() error {
		for _, m := range []string{"uplink_flow_mbr", "downlink_flow_mbr"} {
			if got, err := r.u.meter(r.sch, m, cell); err != nil || !proto.Equal(got, want) {
				return fmt.Errorf("%s[%d] = %v (%v), want %v", m, cell, got, err, want)
			}
		}
		return nil
	})
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 3}, Src: [6]byte{2, 0, 0, 0, 2, 3}}
	for _, c := range []struct {
		server string
		qfi    uint8
	}{{"203.0.113.77", 2}, {"203.0.113.10", 1}} {
		out := r.u.forward(t, wiretest.Build(eth, wire.IPv4{Src: addr4(c.server), Dst: ue.As4()}, wire.UDP{SrcPort: 443, DstPort: 40000}, make([]byte, 64)))
		var g wire.Frame
		if len(out) != 1 || g.Parse(out[0].frame) != nil || g.Has&wire.HasGTPU == 0 || g.GTPU.TEID != dlTEID || g.GTPU.PSC[1]&0x3f != c.qfi {
			t.Errorf("the downlink from %s left as %x, want a G-PDU into TEID %#x with QFI %d", c.server, out, dlTEID, c.qfi)
		}
	}

	// Charging by rule, as free5GC's SMF does for a flow rule with charging data
	// (AddChargingRules): the flow's URR named by its PDRs alone, the default rule's by the
	// default PDRs alone. Each measures its own flow's packets, both ways, to the byte; the
	// session's URRs (1, 2) go on measuring all of them.
	volume := func(id uint32) *ie.IE {
		return ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0))
	}
	m, err = r.smf.Modify(ctx, est, volume(3), volume(4),
		ie.NewUpdatePDR(ie.NewPDRID(3), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(3)), ie.NewUpdatePDR(ie.NewPDRID(4), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(3)),
		ie.NewUpdatePDR(ie.NewPDRID(idlePDRUplink), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(4)),
		ie.NewUpdatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(4)))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a URR for the flow's rule and one for the default rule: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	var flowSent, defaultSent sentUsage
	for range 3 {
		exchange(t, r, &flowSent, ue, ulTEID, "203.0.113.77", 2)
		exchange(t, r, &flowSent, ue, ulTEID, "203.0.113.77", 2)
		exchange(t, r, &defaultSent, ue, ulTEID, "203.0.113.10", 1)
	}
	q, err := r.smf.Modify(ctx, est, ie.NewQueryURR(ie.NewURRID(3)), ie.NewQueryURR(ie.NewURRID(4)))
	if err != nil || q.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Query URR 3 and 4: %v, cause %d (%s)", err, q.Cause(), why(q))
	}
	reps := usageReports(t, q.IEs, 2)
	for i, want := range []smf.UsageReport{flowSent.report(3), defaultSent.report(4)} {
		want.Trigger = []byte{0x80, 0, 0} // IMMER
		checkReport(t, fmt.Sprintf("URR %d's report", want.URRID), reps[i], want)
	}
}

// TestN4GBRFlowOutsideTheSessionAMBR: a subscriber's flow rule with a GBR 5QI, as free5GC's SMF
// sends it (free5GCFlowRule: a QER with a GBR, its PDRs without the session AMBR's QER), is a GBR
// QoS flow of the session's own, outside its Session-AMBR (TS 23.501 §5.7.2.6): with the AMBR cut
// to 8 kbit/s (100-byte bursts), the GBR flow's packets go both ways, policed at its own MBR
// alone, while a non-GBR flow's and the default flow's are red at the AMBR and dropped.
func TestN4GBRFlowOutsideTheSessionAMBR(t *testing.T) {
	ctx := context.Background()
	ue, dlTEID := netip.MustParseAddr("10.60.0.35"), uint32(0x94)
	r, est, ulTEID, usage := forwardingRig(t, ue, dlTEID)
	voice := flowRule{id: 5, prec: 127, server: "203.0.113.78/32", qfi: 3, mbrKbps: 108000, gbrKbps: 64}
	ies := append(free5GCFlowRule(ue, forwardingGNB, ulTEID, dlTEID, webconsoleFlow()), free5GCFlowRule(ue, forwardingGNB, ulTEID, dlTEID, voice)...)
	m, err := r.smf.Modify(ctx, est, append(ies, ie.NewUpdateQER(ie.NewQERID(2), ie.NewMBR(8, 8)))...)
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a GBR flow rule and a non-GBR one, the AMBR at 8 kbit/s: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	obj := awaitFlows(t, r, 3, 2) // by precedence
	if g := obj.Spec.QoSFlows[0].GuaranteedBitRate; g == nil || g.UplinkKbps == nil || *g.UplinkKbps != 64 || g.DownlinkKbps == nil || *g.DownlinkKbps != 64 {
		t.Errorf("the voice flow's guaranteedBitRate %+v, want 64 kbit/s each way", g)
	}
	if g := obj.Spec.QoSFlows[1].GuaranteedBitRate; g != nil {
		t.Errorf("the webconsole's flow has a guaranteedBitRate %+v, want none (a non-GBR flow)", *g)
	}
	ambr := &p4v1.MeterConfig{Cir: 1000, Cburst: 3000, Pir: 1000, Pburst: 3000} // the smallest burst (docs/pipeline.md, "MBR policer")
	eventually(t, programTimeout, "the session's AMBR cells at 8 kbit/s", func() error {
		if up, down := mbrCells(t, r, usage); !proto.Equal(up, ambr) || !proto.Equal(down, ambr) {
			return fmt.Errorf("uplink_mbr %v, downlink_mbr %v; want %v", up, down, ambr)
		}
		return nil
	})

	down := func(server string) []byte { return downlinkUDP(ue, server, 443, 40000) }
	up := func(server string) []byte { return uplinkUDP(ulTEID, ue, server, 443, 40000) }
	// The AMBR's 3,000-byte buckets used up, each way, by the default flow's packets.
	for _, frame := range [][]byte{down("203.0.113.10"), up("203.0.113.10")} {
		n := 0
		for ; n < 100 && len(r.u.forward(t, frame)) == 1; n++ {
		}
		if n == 100 || n < 3000/len(frame)-1 {
			t.Fatalf("%d packets of %d bytes left before the first red one, want about 3,000 bytes' worth", n, len(frame))
		}
	}
	var sent sentUsage
	for range 3 {
		exchange(t, r, &sent, ue, ulTEID, "203.0.113.78", 3) // the GBR flow: both ways, with its QFI
	}
	for _, frame := range [][]byte{down("203.0.113.77"), up("203.0.113.77"), down("203.0.113.10")} { // the non-GBR flow's, the default flow's
		if out := r.u.forward(t, frame); len(out) != 0 {
			t.Errorf("a packet of a non-GBR flow left over the 8 kbit/s AMBR: %x", out)
		}
	}
	if n := packets(t, r, "mbr_drops", 0) + packets(t, r, "mbr_drops", 1); n != 5 {
		t.Errorf("mbr_drops counted %d packets, want the 5 red at the AMBR", n)
	}
}

// TestN4QoSFlowAsOpen5GSCreatesIt: Open5GS's SMF gives a PCC rule a QoS flow of its own
// (src/smf/binding.c, smf_qos_flow_add, smf_bearer_tft_update): a downlink PDR without UE IP
// Address carrying the downlink and bidirectional flow descriptions (the latter with an SDF
// Filter ID), an uplink PDR on the session's CHOOSE ID carrying the uplink ones and the
// bidirectional one by its ID alone, both naming the flow's QER alone (MBR and GBR), the
// downlink FAR BUFF|NOCP until the gNB has set the flow up, then an Update FAR into the
// session's tunnel (src/smf/gsm-sm.c). Until then the flow's downlink stays in the default flow
// and is held nowhere; then each filter takes the flow's packets its way (docs/n4.md, "QoS
// flows").
func TestN4QoSFlowAsOpen5GSCreatesIt(t *testing.T) {
	ctx := context.Background()
	ue, gnbTEID := netip.MustParseAddr("10.45.0.9"), uint32(0x4321)
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	cp := r.smf.NewCPSEID()
	// The session as Open5GS establishes it (idleEstablishment), with its default flow's QER (QFI 1,
	// the session AMBR) named by both PDRs (src/smf/npcf-handler.c).
	ies := idleEstablishment(r.smf, cp, ue, 0x0c)
	for i, x := range ies {
		if id, _ := x.PDRID(); x.Type == ie.CreatePDR && (id == idlePDRUplink || id == idlePDRDownlink) {
			ies[i] = ie.NewCreatePDR(append(slices.Clone(x.ChildIEs), ie.NewQERID(1))...)
		}
	}
	ies = append(ies, ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewMBR(1000000, 1000000), ie.NewQFI(1)))
	resp, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, ies...)
	if err != nil || resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Open5GS's establishment: %v, cause %d (%s)", err, resp.Cause(), why(resp))
	}
	fseid, err := resp.Find(ie.FSEID).FSEID()
	if err != nil {
		t.Fatal(err)
	}
	est := &smf.Established{CPSEID: cp, UPSEID: fseid.SEID}
	var ulTEID uint32
	for _, x := range resp.IEs {
		if id, _ := x.PDRID(); x.Type == ie.CreatedPDR && id == idlePDRUplink {
			f, _ := x.FTEID()
			ulTEID = f.TEID
		}
	}
	forward := func(far uint32) *ie.IE {
		return ie.NewUpdateFAR(ie.NewFARID(far), ie.NewApplyAction(0x02), ie.NewUpdateForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewTGPPInterfaceType(11), ie.NewNetworkInstance("internet"),
			ie.NewOuterHeaderCreation(0x0100, gnbTEID, forwardingGNB.String(), "", 0, 0, 0)))
	}
	if m, err := r.smf.Modify(ctx, est, forward(idleFARDownlink)); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the gNB's tunnel: %v, cause %d (%s)", err, m.Cause(), why(m))
	}

	const flowPDRDown, flowPDRUp, flowFARDown, flowFARUp, flowQER, flowURR = 10, 11, 10, 11, 10, 10
	server := "203.0.113.78"
	m, err := r.smf.Modify(ctx, est,
		// BUFF without Forwarding Parameters (ogs_pfcp_build_create_far); the uplink to N6.
		ie.NewCreateFAR(ie.NewFARID(flowFARDown), ie.NewApplyAction(0x0c), ie.NewBARID(idleBAR)),
		ie.NewCreateFAR(ie.NewFARID(flowFARUp), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore), ie.NewTGPPInterfaceType(17))),
		ie.NewCreateURR(ie.NewURRID(flowURR), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x02, 0), ie.NewVolumeThreshold(0x01, 100<<20, 0, 0)),
		ie.NewCreateQER(ie.NewQERID(flowQER), ie.NewGateStatus(0, 0), ie.NewMBR(128, 128), ie.NewGBR(64, 64), ie.NewQFI(2)),
		ie.NewCreatePDR(ie.NewPDRID(flowPDRDown), ie.NewPrecedence(10), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewNetworkInstance("internet"),
			ie.NewSDFFilter("permit out 17 from "+server+" 30000 to "+ue.String()+" 40000", "", "", "", 1),
			ie.NewSDFFilter("permit out 17 from "+server+" 30001 to "+ue.String(), "", "", "", 0), ie.NewTGPPInterfaceType(17)),
			ie.NewFARID(flowFARDown), ie.NewURRID(flowURR), ie.NewQERID(flowQER)),
		ie.NewCreatePDR(ie.NewPDRID(flowPDRUp), ie.NewPrecedence(10), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
			ie.NewFTEID(0x0d, 0, nil, nil, idleChooseID), ie.NewNetworkInstance("internet"), ie.NewQFI(2), ie.NewTGPPInterfaceType(11),
			ie.NewSDFFilter("", "", "", "", 1),
			ie.NewSDFFilter("permit out 17 from "+server+" to "+ue.String()+" 40001", "", "", "", 0)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(flowFARUp), ie.NewQERID(flowQER)))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Open5GS's QoS flow: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	for _, x := range m.IEs {
		if id, _ := x.PDRID(); x.Type == ie.CreatedPDR && id == flowPDRUp {
			if f, _ := x.FTEID(); f.TEID != ulTEID {
				t.Errorf("the flow's uplink PDR on CHOOSE ID %d got TEID %#x, want the session's %#x", idleChooseID, f.TEID, ulTEID)
			}
		}
	}

	down := func(serverPort uint16) []byte { return downlinkUDP(ue, server, serverPort, 40000) }
	up := func(serverPort, uePort uint16) []byte { return uplinkUDP(ulTEID, ue, server, serverPort, uePort) }
	qfiOf := func(frame []byte) int {
		out := r.u.forward(t, frame)
		var g wire.Frame
		if len(out) != 1 || g.Parse(out[0].frame) != nil || g.Has&wire.HasGTPU == 0 || g.GTPU.TEID != gnbTEID {
			return -1
		}
		return int(g.GTPU.PSC[1] & 0x3f)
	}
	udp := junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(server + "/32")}, Protocol: junctionv1.ProtocolUDP}
	with := func(td junctionv1.TrafficDescriptor, dport, sport int32) junctionv1.TrafficDescriptor {
		if dport != 0 {
			td.DestinationPorts = []junctionv1.PortRange{{From: dport}}
		}
		if sport != 0 {
			td.SourcePorts = []junctionv1.PortRange{{From: sport}}
		}
		return td
	}
	filtersOf := func(want []junctionv1.QoSFlowFilter) junctionv1.ATSSSSession {
		t.Helper()
		var obj junctionv1.ATSSSSession
		eventually(t, programTimeout, fmt.Sprintf("the flow's filters %v", want), func() error {
			obj = awaitFlows(t, r, 2)
			f := obj.Spec.QoSFlows[0]
			if !equality.Semantic.DeepEqual(f.Filters, want) || f.GuaranteedBitRate == nil || f.Precedence != 10 {
				return fmt.Errorf("flow %+v", f)
			}
			return nil
		})
		return obj
	}

	// Pending: the uplink filters alone; the flow's downlink goes in the default flow, not held.
	filtersOf([]junctionv1.QoSFlowFilter{
		{Direction: junctionv1.FlowUplink, TrafficDescriptor: with(udp, 30000, 40000)},
		{Direction: junctionv1.FlowUplink, TrafficDescriptor: with(udp, 0, 40001)},
	})
	eventually(t, programTimeout, "the flow's downlink in the default flow", func() error {
		if q := qfiOf(down(30000)); q != 1 {
			return fmt.Errorf("a downlink packet of the flow left with QFI %d (-1: not as a G-PDU into the gNB's tunnel), want the default flow's 1", q)
		}
		return nil
	})
	if got := downlinkDataReports(r.smf); len(got) != 0 {
		t.Errorf("Downlink Data Reports for PDRs %v while the session forwards", got)
	}

	// The gNB has set the flow up: each filter its way.
	if m, err := r.smf.Modify(ctx, est, forward(idleFARDownlink), forward(flowFARDown)); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Update FARs into the session's tunnel: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	obj := filtersOf([]junctionv1.QoSFlowFilter{
		{Direction: junctionv1.FlowBidirectional, TrafficDescriptor: with(udp, 30000, 40000)},
		{Direction: junctionv1.FlowDownlink, TrafficDescriptor: with(udp, 30001, 0)},
		{Direction: junctionv1.FlowUplink, TrafficDescriptor: with(udp, 0, 40001)},
	})
	eventually(t, programTimeout, "the flow's downlink with its QFI", func() error {
		for _, c := range []struct {
			sport uint16
			qfi   int
		}{{30000, 2}, {30001, 2}, {443, 1}} {
			if q := qfiOf(down(c.sport)); q != c.qfi {
				return fmt.Errorf("downlink from port %d left with QFI %d, want %d", c.sport, q, c.qfi)
			}
		}
		return nil
	})
	cell := int64(*obj.Status.QoSFlowIndex) * 5
	before := packets(t, r, "uplink_flow_usage", cell)
	for _, c := range []struct {
		dport, sport uint16
		inFlow       bool
	}{{30000, 40000, true}, {9999, 40001, true}, {30001, 40000, false}} { // the bidirectional filter, the uplink one, the downlink one's ports
		if out := r.u.forward(t, up(c.dport, c.sport)); len(out) != 1 {
			t.Fatalf("uplink to %s:%d from port %d: %d frames left, want 1", server, c.dport, c.sport, len(out))
		}
		n := packets(t, r, "uplink_flow_usage", cell)
		if (n == before+1) != c.inFlow {
			t.Errorf("uplink to %s:%d from port %d: the flow's uplink usage went %d to %d; in the flow: %v", server, c.dport, c.sport, before, n, c.inFlow)
		}
		before = n
	}

	// A PCC rule's flow description added (Open5GS's TFT add: an Update PDR with the PDI whole).
	m, err = r.smf.Modify(ctx, est, ie.NewUpdatePDR(ie.NewPDRID(flowPDRDown), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewNetworkInstance("internet"),
		ie.NewSDFFilter("permit out 17 from "+server+" 30000 to "+ue.String()+" 40000", "", "", "", 1),
		ie.NewSDFFilter("permit out 17 from "+server+" 30001 to "+ue.String(), "", "", "", 0),
		ie.NewSDFFilter("permit out 17 from "+server+" 30002 to "+ue.String(), "", "", "", 0))))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a flow description added: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	filtersOf([]junctionv1.QoSFlowFilter{
		{Direction: junctionv1.FlowBidirectional, TrafficDescriptor: with(udp, 30000, 40000)},
		{Direction: junctionv1.FlowDownlink, TrafficDescriptor: with(udp, 30001, 0)},
		{Direction: junctionv1.FlowDownlink, TrafficDescriptor: with(udp, 30002, 0)},
		{Direction: junctionv1.FlowUplink, TrafficDescriptor: with(udp, 0, 40001)},
	})
	eventually(t, programTimeout, "the added description's downlink with the flow's QFI", func() error {
		if q := qfiOf(down(30002)); q != 2 {
			return fmt.Errorf("downlink from port 30002 left with QFI %d, want 2", q)
		}
		return nil
	})

	// The PCC rule removed: its rules go, and its packets are the default flow's again.
	m, err = r.smf.Modify(ctx, est, ie.NewRemovePDR(ie.NewPDRID(flowPDRDown)), ie.NewRemovePDR(ie.NewPDRID(flowPDRUp)),
		ie.NewRemoveFAR(ie.NewFARID(flowFARDown)), ie.NewRemoveFAR(ie.NewFARID(flowFARUp)), ie.NewRemoveQER(ie.NewQERID(flowQER)), ie.NewRemoveURR(ie.NewURRID(flowURR)))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the flow removed: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	eventually(t, programTimeout, "the flow gone", func() error {
		if fs := r.awaitN4Sessions(t, 1)[0].Spec.QoSFlows; len(fs) != 0 {
			return fmt.Errorf("spec.qosFlows %+v", fs)
		}
		if q := qfiOf(down(30000)); q != 1 {
			return fmt.Errorf("downlink from port 30000 left with QFI %d, want the default flow's 1", q)
		}
		return nil
	})
}

// awaitFlows waits for the rig's one N4 session object to have QoS flows of its own with the
// QFIs qfis, in that order, and a block of cells for them, and returns it.
func awaitFlows(t *testing.T, r n4Rig, qfis ...int32) junctionv1.ATSSSSession {
	t.Helper()
	var obj junctionv1.ATSSSSession
	eventually(t, programTimeout, fmt.Sprintf("QoS flows %v in the session object, programmed", qfis), func() error {
		obj = r.awaitN4Sessions(t, 1)[0]
		var got []int32
		for _, f := range obj.Spec.QoSFlows {
			got = append(got, f.QFI)
		}
		if !slices.Equal(got, qfis) || obj.Status.QoSFlowIndex == nil {
			return fmt.Errorf("spec.qosFlows' QFIs %v, status.qosFlowIndex %v", got, obj.Status.QoSFlowIndex)
		}
		return nil
	})
	return obj
}

// downlinkUDP is a user packet from server to ue, 64 bytes of UDP payload, as it comes from N6;
// uplinkUDP one from ue to server, 32 bytes, in a G-PDU from forwardingGNB on ulTEID. Both take
// the server's port, then the UE's.
func downlinkUDP(ue netip.Addr, server string, serverPort, uePort uint16) []byte {
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 3}, Src: [6]byte{2, 0, 0, 0, 2, 3}}
	return wiretest.Build(eth, wire.IPv4{Src: addr4(server), Dst: ue.As4()}, wire.UDP{SrcPort: serverPort, DstPort: uePort}, make([]byte, 64))
}

func uplinkUDP(ulTEID uint32, ue netip.Addr, server string, serverPort, uePort uint16) []byte {
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 3}, Src: [6]byte{2, 0, 0, 0, 2, 3}}
	return wiretest.Build(eth, wire.IPv4{Src: forwardingGNB.As4(), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: ulTEID},
		wire.IPv4{Src: ue.As4(), Dst: addr4(server)}, wire.UDP{SrcPort: uePort, DstPort: serverPort}, make([]byte, 32))
}

// exchange sends a downlink packet from server to ue, which must leave as a G-PDU with QFI qfi,
// and an uplink G-PDU from the gNB on ulTEID to server, which must leave; sent counts both.
func exchange(t *testing.T, r n4Rig, sent *sentUsage, ue netip.Addr, ulTEID uint32, server string, qfi uint8) {
	t.Helper()
	down, up := downlinkUDP(ue, server, 443, 40000), uplinkUDP(ulTEID, ue, server, 443, 40000)
	out := r.u.forward(t, down)
	var g wire.Frame
	if len(out) != 1 || g.Parse(out[0].frame) != nil || g.Has&wire.HasGTPU == 0 || g.GTPU.PSC[1]&0x3f != qfi {
		t.Fatalf("the downlink from %s left as %x, want a G-PDU with QFI %d", server, out, qfi)
	}
	sent.Downlink, sent.DLPackets = sent.Downlink+uint64(len(down)-wire.EthernetHeaderLen), sent.DLPackets+1
	if err := sent.forward(t, r.u, up, true); err != nil {
		t.Fatalf("uplink to %s: %v", server, err)
	}
}

// TestN4FlowUsageAcrossAMove: a flow rule added ahead of another (a lower precedence value, as a
// PCF's policy update may send) takes its position among the session's flows and so its cell
// (docs/pipeline.md, "QoS flows"); the flow that moved starts again from zero in another cell.
// Its URR still reports every packet of the flow, before and after the move, to the byte, the
// new flow's URR its own, and the default rule's the rest; once the first flow's rule goes, its
// packets stay out of the default rule's count.
func TestN4FlowUsageAcrossAMove(t *testing.T) {
	ctx := context.Background()
	ue, dlTEID := netip.MustParseAddr("10.60.0.34"), uint32(0x93)
	r, est, ulTEID, _ := forwardingRig(t, ue, dlTEID)
	volume := func(id uint32) *ie.IE {
		return ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0))
	}
	modify := func(what string, ies ...*ie.IE) {
		t.Helper()
		if m, err := r.smf.Modify(ctx, est, ies...); err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("%s: %v, cause %d (%s)", what, err, m.Cause(), why(m))
		}
	}
	modify("free5GC's flow rule with a URR of its own, and one for the default rule",
		append(free5GCFlowRule(ue, forwardingGNB, ulTEID, dlTEID, webconsoleFlow(3)), volume(3), volume(4),
			ie.NewUpdatePDR(ie.NewPDRID(idlePDRUplink), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(4)),
			ie.NewUpdatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(4)))...)
	awaitFlows(t, r, 2)
	const flowServer, newServer, otherServer = "203.0.113.77", "203.0.113.88", "203.0.113.10"
	var flowSent, newSent, defaultSent sentUsage
	for range 2 {
		exchange(t, r, &flowSent, ue, ulTEID, flowServer, 2)
	}
	exchange(t, r, &defaultSent, ue, ulTEID, otherServer, 1)

	modify("a second flow rule ahead of the first", append(free5GCFlowRule(ue, forwardingGNB, ulTEID, dlTEID,
		flowRule{id: 5, prec: 64, server: newServer + "/32", qfi: 3, mbrKbps: 50000, urrs: []uint32{5}}), volume(5))...)
	awaitFlows(t, r, 3, 2)
	for range 3 {
		exchange(t, r, &flowSent, ue, ulTEID, flowServer, 2)
	}
	exchange(t, r, &newSent, ue, ulTEID, newServer, 3)
	exchange(t, r, &defaultSent, ue, ulTEID, otherServer, 1)
	q, err := r.smf.Modify(ctx, est, ie.NewQueryURR(ie.NewURRID(3)), ie.NewQueryURR(ie.NewURRID(4)), ie.NewQueryURR(ie.NewURRID(5)))
	if err != nil || q.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Query URR 3, 4 and 5: %v, cause %d (%s)", err, q.Cause(), why(q))
	}
	reps := usageReports(t, q.IEs, 3)
	for i, want := range []smf.UsageReport{flowSent.report(3), defaultSent.report(4), newSent.report(5)} {
		want.Trigger = []byte{0x80, 0, 0} // IMMER
		checkReport(t, fmt.Sprintf("URR %d's report", want.URRID), reps[i], want)
	}

	// The first flow's rule goes (its URR reports on removal); the default rule's URR goes on
	// counting only its own.
	modify("the first flow rule removed", ie.NewRemovePDR(ie.NewPDRID(3)), ie.NewRemovePDR(ie.NewPDRID(4)),
		ie.NewRemoveFAR(ie.NewFARID(3)), ie.NewRemoveFAR(ie.NewFARID(4)), ie.NewRemoveQER(ie.NewQERID(3)), ie.NewRemoveURR(ie.NewURRID(3)))
	awaitFlows(t, r, 3)
	var after sentUsage
	exchange(t, r, &after, ue, ulTEID, otherServer, 1)
	exchange(t, r, &after, ue, ulTEID, flowServer, 1) // in the default flow now
	q, err = r.smf.Modify(ctx, est, ie.NewQueryURR(ie.NewURRID(4)))
	if err != nil || q.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Query URR 4: %v, cause %d (%s)", err, q.Cause(), why(q))
	}
	want := after.report(4)
	want.Trigger, want.Seq = []byte{0x80, 0, 0}, 1 // its second report
	checkReport(t, "URR 4's report after the flow went", usageReports(t, q.IEs, 1)[0], want)
}

// TestN4QuotaPerQoSFlow: free5GC's SMF charges a flow rule online (its webconsole's default
// subscriber does): the flow's URR, named by the flow's PDRs alone, carries a Volume Quota. Used
// up, it closes the flow's gates (its policer cells at rate zero, spec.qosFlows[0].gates) and
// nothing else: the rest of the session goes on with the session's QFI. A new quota opens them.
// A quota on the default rule's URR, used up, closes the default flow's gates (spec.gates, its
// cell in the block) and the flow goes on (docs/n4.md, "QoS flows"; TS 29.244 §5.2.2.2.1: the
// UP function stops forwarding the traffic the URR measures).
func TestN4QuotaPerQoSFlow(t *testing.T) {
	ctx := context.Background()
	ue, dlTEID := netip.MustParseAddr("10.60.0.33"), uint32(0x92)
	r, est, ulTEID, usage := forwardingRig(t, ue, dlTEID)
	volqu := func(id uint32, bytes uint64) *ie.IE {
		return ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0x01), ie.NewVolumeQuota(0x01, bytes, 0, 0)) // VOLQU
	}
	ies := append(free5GCFlowRule(ue, forwardingGNB, ulTEID, dlTEID, webconsoleFlow(3)), volqu(3, 300), volqu(4, 1_000_000),
		ie.NewUpdatePDR(ie.NewPDRID(idlePDRUplink), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(4)),
		ie.NewUpdatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(4)))
	if m, err := r.smf.Modify(ctx, est, ies...); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("free5GC's flow rule charged online: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	obj := awaitFlows(t, r, 2)
	// docs/pipeline.md: flow 0 at cell 5 × qosFlowIndex, the default flow at 5 × qosFlowIndex + 4.
	flowCell, defaultCell := int64(*obj.Status.QoSFlowIndex)*5, int64(*obj.Status.QoSFlowIndex)*5+4
	rate := int64(108000) * 125
	flowMBR, closed := &p4v1.MeterConfig{Cir: rate, Cburst: rate / 10, Pir: rate, Pburst: rate / 10}, &p4v1.MeterConfig{}
	cells := func(what string, cell int64, want *p4v1.MeterConfig) {
		t.Helper()
		eventually(t, programTimeout, what, func() error {
			for _, m := range []string{"uplink_flow_mbr", "downlink_flow_mbr"} {
				if got, err := r.u.meter(r.sch, m, cell); err != nil || !proto.Equal(got, want) || (want != nil) != (got != nil) {
					return fmt.Errorf("%s[%d] = %v (%v), want %v", m, cell, got, err, want)
				}
			}
			return nil
		})
	}
	cells("the flow's cells at its MBR", flowCell, flowMBR)
	cells("the default flow's cells open (none configured)", defaultCell, nil)

	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 3}, Src: [6]byte{2, 0, 0, 0, 2, 3}}
	down := func(server string) []byte {
		return wiretest.Build(eth, wire.IPv4{Src: addr4(server), Dst: ue.As4()}, wire.UDP{SrcPort: 443, DstPort: 40000}, make([]byte, 64))
	}
	const flowServer, otherServer = "203.0.113.77", "203.0.113.10"
	// leaves says whether a downlink packet from server leaves, and with which QFI.
	leaves := func(what, server string, qfi uint8) {
		t.Helper()
		out := r.u.forward(t, down(server))
		var g wire.Frame
		switch {
		case qfi == 0 && len(out) != 0:
			t.Fatalf("%s: the downlink from %s left; want it dropped", what, server)
		case qfi != 0 && (len(out) != 1 || g.Parse(out[0].frame) != nil || g.Has&wire.HasGTPU == 0 || g.GTPU.TEID != dlTEID || g.GTPU.PSC[1]&0x3f != qfi):
			t.Fatalf("%s: the downlink from %s left as %x; want a G-PDU into TEID %#x with QFI %d", what, server, out, dlTEID, qfi)
		}
	}
	// objectGates waits for the session object's gates: spec.gates and the flow's.
	objectGates := func(what string, def, flow *junctionv1.Gates) {
		t.Helper()
		eq := func(a, b *junctionv1.Gates) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
		eventually(t, programTimeout, "the object's gates: "+what, func() error {
			o := r.awaitN4Sessions(t, 1)[0]
			if !eq(o.Spec.Gates, def) || !eq(o.Spec.QoSFlows[0].Gates, flow) {
				return fmt.Errorf("spec.gates %+v, spec.qosFlows[0].gates %+v", o.Spec.Gates, o.Spec.QoSFlows[0].Gates)
			}
			return nil
		})
	}
	// Four packets of 92 IP bytes from the flow's server: 368 >= the flow's 300-byte quota.
	for i := range 4 {
		leaves(fmt.Sprintf("flow packet %d within the quota", i), flowServer, 2)
	}
	cells("the flow's gates closed", flowCell, closed)
	rep := usageReportWith(t, r, est.CPSEID, 3, []byte{0, 0x01, 0}) // VOLQU
	if rep.Downlink != 4*92 || rep.DLPackets != 4 || rep.Uplink != 0 {
		t.Errorf("URR 3's VOLQU report: %s; want the flow's 4 downlink packets, 368 bytes", rep)
	}
	before := packets(t, r, "mbr_drops", 1)
	leaves("the flow past its quota", flowServer, 0)
	if after := packets(t, r, "mbr_drops", 1); after != before+1 {
		t.Errorf("mbr_drops[1] went from %d to %d for the flow's packet past its quota", before, after)
	}
	leaves("the rest of the session while the flow's gates are closed", otherServer, 1)
	closedBoth := &junctionv1.Gates{Uplink: junctionv1.GateClosed, Downlink: junctionv1.GateClosed}
	objectGates("the flow's closed both ways, the default's open", nil, closedBoth)
	if up, down := mbrCells(t, r, usage); !proto.Equal(up, free5GCAMBR) || !proto.Equal(down, free5GCAMBR) {
		t.Errorf("the session's cells: uplink_mbr %v, downlink_mbr %v; want the AMBR's %v", up, down, free5GCAMBR)
	}

	// The CHF's next grant opens the flow.
	if m, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(3), ie.NewVolumeQuota(0x01, 1_000_000, 0, 0))); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a new quota for the flow's URR: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	cells("the flow's cells at its MBR again", flowCell, flowMBR)
	leaves("the flow with a new quota", flowServer, 2)

	// The default rule's quota used up: the default flow stops, the flow goes on.
	if m, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(4), ie.NewVolumeQuota(0x01, 100, 0, 0))); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a 100-byte quota for the default rule's URR: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	leaves("the default flow within its quota", otherServer, 1)
	leaves("the default flow reaching its quota", otherServer, 1)
	cells("the default flow's gates closed", defaultCell, closed)
	usageReportWith(t, r, est.CPSEID, 4, []byte{0, 0x01, 0})
	leaves("the default flow past its quota", otherServer, 0)
	leaves("the flow while the default flow's gates are closed", flowServer, 2)
	objectGates("the default flow's closed both ways, the flow's open", closedBoth, nil)
	cells("the flow's cells at its MBR", flowCell, flowMBR)
	if up, down := mbrCells(t, r, usage); !proto.Equal(up, free5GCAMBR) || !proto.Equal(down, free5GCAMBR) {
		t.Errorf("the session's cells: uplink_mbr %v, downlink_mbr %v; want the AMBR's %v (the session's own cell stays open)", up, down, free5GCAMBR)
	}
}
