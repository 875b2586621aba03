package operator

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"github.com/wmnsk/go-pfcp/ie"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// An N2 handover's indirect data forwarding tunnel as Open5GS's SMF creates it
// (src/smf/context.c, smf_sess_create_indirect_data_forwarding; lib/pfcp/context.h, types.h):
// a PDR from Access with a CHOOSE F-TEID (V4, V6, CHOOSE ID 10), 3GPP Interface Type 28
// (SGW/UPF GTP-U for UL data forwarding), Outer Header Removal GTP-U/UDP/IPv4, precedence
// 4096, its QoS flow's QFI and QER; its FAR forwards to Access, 3GPP Interface Type 10 (SGW/UPF
// GTP-U for DL data forwarding), in GTP-U to the tunnel the target gNB gave.
const (
	fwdPDR, fwdFAR, fwdQER = 10, 10, 10
	fwdChooseID            = 10
)

func forwardingRules(targetGNB string, targetTEID uint32) []*ie.IE {
	return []*ie.IE{
		ie.NewCreateQER(ie.NewQERID(fwdQER), ie.NewGateStatus(0, 0), ie.NewQFI(1)),
		ie.NewCreateFAR(ie.NewFARID(fwdFAR), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewTGPPInterfaceType(10),
			ie.NewOuterHeaderCreation(0x0100, targetTEID, targetGNB, "", 0, 0, 0))),
		ie.NewCreatePDR(ie.NewPDRID(fwdPDR), ie.NewPrecedence(4096), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x0f, 0, nil, nil, fwdChooseID),
			ie.NewTGPPInterfaceType(28), ie.NewQFI(1)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(fwdFAR), ie.NewQERID(fwdQER)),
	}
}

// forwardedGPDU is the downlink the source gNB forwards on teid: a user packet to ue in GTP-U
// with a PDU Session Container (DL, QFI 1), as it came to the gNB.
func forwardedGPDU(ue, sourceGNB netip.Addr, teid uint32, seq byte) []byte {
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	return wiretest.Build(eth, wire.IPv4{Src: sourceGNB.As4(), Dst: addr4("192.0.2.1")}, wire.UDP{},
		wire.DownlinkGTPU(teid, 1), wire.IPv4{Src: addr4("203.0.113.200"), Dst: ue.As4(), TTL: 63},
		wire.UDP{SrcPort: 443, DstPort: 40000}, bytes.Repeat([]byte{seq}, 64))
}

// forwardedFrames is junction_indirect_forwarded_frames_total of upf and result.
func forwardedFrames(t *testing.T, upf, result string) float64 {
	return resultCounter(t, "junction_indirect_forwarded_frames_total", upf, result)
}

// connectAt has the SMF give est's downlink FAR the tunnel of gnb, TEID 0x100: the UE connected
// there.
func connectAt(t testing.TB, r n4Rig, est *smf.Established, gnb netip.Addr) {
	t.Helper()
	if m, err := r.smf.Modify(context.Background(), est, ie.NewUpdateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02),
		ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x100, gnb.String(), "", 0, 0, 0)))); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the UE connected at %s: %v, cause %d (%s)", gnb, err, m.Cause(), why(m))
	}
}

// addForwarding has the SMF add the forwarding tunnel toward target's TEID to est, and returns
// the TEID the UPF chose for it (its Created PDR, on the UPF's N3 address 192.0.2.1).
func addForwarding(t testing.TB, r n4Rig, est *smf.Established, target netip.Addr, targetTEID uint32) uint32 {
	t.Helper()
	m, err := r.smf.Modify(context.Background(), est, forwardingRules(target.String(), targetTEID)...)
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the forwarding tunnel: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	var teid uint32
	for _, x := range m.IEs {
		if x.Type != ie.CreatedPDR {
			continue
		}
		id, err := x.PDRID()
		f, err2 := x.FTEID()
		if err != nil || err2 != nil || id != fwdPDR || f.TEID == 0 || !f.IPv4Address.Equal(net.IPv4(192, 0, 2, 1)) {
			t.Fatalf("Created PDR %v: %v %v; want PDR %d with a TEID on the UPF's N3 address 192.0.2.1", x, err, err2, fwdPDR)
		}
		teid = f.TEID
	}
	if teid == 0 {
		t.Fatal("no Created PDR for the forwarding PDR's CHOOSE F-TEID")
	}
	return teid
}

// The gNBs of an N2 handover: the source the UE leaves, the target it goes to.
var handoverSource, handoverTarget = netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("198.51.100.12")

// handoverRig is ue's session as Open5GS establishes it, connected at handoverSource, with the
// forwarding tunnel toward handoverTarget's TEID 0x777 on the UPF; it returns the TEID the UPF
// chose for the tunnel.
func handoverRig(t testing.TB, ue netip.Addr) (n4Rig, *smf.Established, uint32) {
	t.Helper()
	r, est := idleUE(t, ue)
	connectAt(t, r, est, handoverSource)
	teid := addForwarding(t, r, est, handoverTarget, 0x777)
	wantEntries(t, r, fmt.Sprintf("uplink_tunnels teid=%08x -> forward_indirect()", teid))
	return r, est, teid
}

// TestN4RelaysIndirectDataForwarding: an N2 handover without a direct path between the gNBs, as
// Open5GS's SMF drives it. The SMF adds the forwarding tunnel to a connected UE's session; the UPF
// chooses its TEID (Created PDR) and the session's object shows it. What the source gNB forwards
// on it leaves toward the target gNB's tunnel: a G-PDU from the UPF's N3 address, routed as the
// UPF's routes say, its GTP-U header and what it carries as they came but for the TEID
// (docs/n4.md, "Indirect data forwarding"). The SMF removes the tunnel after the handover: its
// TEID is unknown again.
func TestN4RelaysIndirectDataForwarding(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.11")
	source, target := handoverSource, handoverTarget
	r, est, teid := handoverRig(t, ue)
	eventually(t, programTimeout, "the object's forwarding tunnel", func() error {
		leg := r.awaitN4Sessions(t, 1)[0].Spec.AccessLegs.ThreeGPP
		if f := leg.IndirectForwarding; f == nil || f.TEID != int64(teid) || f.GNBAddress != "198.51.100.12" || f.GNBTEID != 0x777 {
			return fmt.Errorf("3GPP leg %+v, indirectForwarding %+v", leg, leg.IndirectForwarding)
		}
		return nil
	})

	// Three forwarded G-PDUs: none leaves the data plane at once (each goes up to the operator),
	// and each is then sent on, in order.
	upf := r.upf.Name
	relayed0 := forwardedFrames(t, upf, "relayed")
	sent0 := r.u.sent.count()
	var in [][]byte
	for i := range 3 {
		f := forwardedGPDU(ue, source, teid, byte(i))
		in = append(in, f)
		if out := r.u.forward(t, f); len(out) != 0 {
			t.Fatalf("forwarded G-PDU %d left the data plane on port %d without the operator", i, out[0].port)
		}
	}
	var sent []sentFrame
	eventually(t, programTimeout, "3 G-PDUs relayed", func() error {
		if sent = r.u.sent.since(sent0); len(sent) < 3 {
			return fmt.Errorf("%d sent", len(sent))
		}
		return nil
	})
	if len(sent) != 3 || forwardedFrames(t, upf, "relayed")-relayed0 != 3 {
		t.Fatalf("%d frames sent, %v counted relayed; want the 3 forwarded", len(sent), forwardedFrames(t, upf, "relayed")-relayed0)
	}
	gtpuOff := wire.EthernetHeaderLen + wire.IPv4HeaderLen + wire.UDPHeaderLen
	for i, s := range sent {
		var f wire.Frame
		if err := f.Parse(s.frame); err != nil {
			t.Fatalf("relayed frame %d does not parse: %v\n%x", i, err, s.frame)
		}
		// The rig's UPF routes 198.51.100.0/24 by port 1, MAC 02:00:00:00:01:01, to next hop
		// 02:00:00:00:02:01; a G-PDU it sends comes from its N3 address, UDP 2152 both ways.
		switch {
		case s.port != 1 || f.Ethernet.Dst != [6]byte{2, 0, 0, 0, 2, 1} || f.Ethernet.Src != [6]byte{2, 0, 0, 0, 1, 1}:
			t.Errorf("relayed frame %d left on port %d from %x to %x, want port 1 from 020000000101 to 020000000201", i, s.port, f.Ethernet.Src, f.Ethernet.Dst)
		case f.IPv4.Src != addr4("192.0.2.1") || f.IPv4.Dst != target.As4() || f.UDP.SrcPort != wire.GTPUPort || f.UDP.DstPort != wire.GTPUPort:
			t.Errorf("relayed frame %d: %v:%d -> %v:%d, want 192.0.2.1:2152 -> %v:2152", i, f.IPv4.Src, f.UDP.SrcPort, f.IPv4.Dst, f.UDP.DstPort, target)
		case f.Has&wire.HasGTPU == 0 || f.GTPU.Type != wire.GTPUTypeGPDU || f.GTPU.TEID != 0x777:
			t.Errorf("relayed frame %d is not a G-PDU on the target's TEID 0x777: %+v", i, f.GTPU)
		case !bytes.Equal(s.frame[gtpuOff+8:], in[i][gtpuOff+8:]) || !bytes.Equal(s.frame[gtpuOff:gtpuOff+4], in[i][gtpuOff:gtpuOff+4]):
			t.Errorf("relayed frame %d: the GTP-U message differs beyond its TEID\n%x\nwant\n%x", i, s.frame[gtpuOff:], in[i][gtpuOff:])
		}
	}
	// The End Marker that ended the old path, which the source gNB forwards last (TS 23.502
	// §4.9.1.3.3), follows them: the same 8 bytes on the target's TEID.
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	endMarker := wiretest.Build(eth, wire.IPv4{Src: source.As4(), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{Flags: wire.GTPUFlags, Type: wire.GTPUTypeEndMarker, TEID: teid})
	if out := r.u.forward(t, endMarker); len(out) != 0 {
		t.Fatalf("the forwarded End Marker left the data plane on port %d without the operator", out[0].port)
	}
	eventually(t, programTimeout, "the End Marker relayed", func() error {
		if sent = r.u.sent.since(sent0); len(sent) < 4 {
			return fmt.Errorf("%d sent", len(sent))
		}
		return nil
	})
	if em := sent[3]; len(sent) != 4 || em.port != 1 || !bytes.Equal(em.frame[gtpuOff:], []byte{0x30, 0xfe, 0, 0, 0, 0, 0x07, 0x77}) {
		t.Errorf("relayed after the G-PDUs: %d frames, the last on port %d ending %x; want one End Marker, 30fe0000 00000777 after the outer header, on port 1", len(sent)-3, em.port, em.frame[gtpuOff:])
	}

	// The session's own traffic goes on as before.
	if out := r.u.forward(t, downlinkFrames(ue, 1)[0]); len(out) != 1 || !bytes.Contains(out[0].frame, []byte{0, 0, 0x01, 0x00}) {
		t.Fatalf("the UE's downlink during the handover: %d frames, want one G-PDU to the source gNB's TEID 0x100", len(out))
	}

	// The handover done, the SMF removes the tunnel: its TEID is unknown again.
	if m, err := r.smf.Modify(ctx, est, ie.NewRemovePDR(ie.NewPDRID(fwdPDR)), ie.NewRemoveFAR(ie.NewFARID(fwdFAR)), ie.NewRemoveQER(ie.NewQERID(fwdQER))); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("removing the forwarding tunnel: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	eventually(t, programTimeout, "the forwarding tunnel gone", func() error {
		unknown := packets(t, r, "drops", int64(contract.DropUnknownTEID))
		if out := r.u.forward(t, forwardedGPDU(ue, source, teid, 9)); len(out) != 0 {
			return fmt.Errorf("a G-PDU on the old TEID left on port %d", out[0].port)
		}
		if packets(t, r, "drops", int64(contract.DropUnknownTEID)) <= unknown {
			return fmt.Errorf("a G-PDU on the old TEID was not dropped as UNKNOWN_TEID")
		}
		return nil
	})
	eventually(t, programTimeout, "the object without its forwarding tunnel", func() error {
		if leg := r.awaitN4Sessions(t, 1)[0].Spec.AccessLegs.ThreeGPP; leg.IndirectForwarding != nil {
			return fmt.Errorf("indirectForwarding %+v", leg.IndirectForwarding)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	if n := r.u.sent.count(); n != sent0+4 {
		t.Fatalf("%d frames sent after the tunnel went, want none", n-sent0-4)
	}
}

// TestN4RefusesForwardingItCannotDo: what the relay cannot do is refused with the cause and IE
// docs/n4.md names, and the session keeps its rules.
func TestN4RefusesForwardingItCannotDo(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.12")
	r, est := idleUE(t, ue)
	rules := func(edit func([]*ie.IE) []*ie.IE) []*ie.IE {
		return edit(forwardingRules(handoverTarget.String(), 0x777))
	}
	for _, c := range []struct {
		name  string
		ies   []*ie.IE
		cause uint8
		why   string
	}{
		{"a URR on the forwarding PDR", rules(func(x []*ie.IE) []*ie.IE {
			x[2] = ie.NewCreatePDR(ie.NewPDRID(fwdPDR), ie.NewPrecedence(4096), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x0f, 0, nil, nil, fwdChooseID)),
				ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(fwdFAR), ie.NewURRID(idleURR))
			return x
		}), ie.CauseServiceNotSupported, fmt.Sprintf("offending IE %d", ie.URRID)},
		{"a forwarding FAR that drops", rules(func(x []*ie.IE) []*ie.IE {
			x[1] = ie.NewCreateFAR(ie.NewFARID(fwdFAR), ie.NewApplyAction(0x01), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess)))
			return x
		}), ie.CauseRuleCreationModificationFailure, fmt.Sprintf("failed rule type 1 id %x", []byte{0, 0, 0, fwdFAR})},
		{"a closed gate on the forwarding PDR", rules(func(x []*ie.IE) []*ie.IE {
			x[0] = ie.NewCreateQER(ie.NewQERID(fwdQER), ie.NewGateStatus(1, 1), ie.NewQFI(1))
			return x
		}), ie.CauseServiceNotSupported, fmt.Sprintf("offending IE %d", ie.GateStatus)},
		{"two forwarding PDRs to different targets", append(rules(func(x []*ie.IE) []*ie.IE { return x }),
			ie.NewCreateFAR(ie.NewFARID(fwdFAR+1), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewOuterHeaderCreation(0x0100, 0x778, "198.51.100.13", "", 0, 0, 0))),
			ie.NewCreatePDR(ie.NewPDRID(fwdPDR+1), ie.NewPrecedence(4096), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x0f, 0, nil, nil, fwdChooseID)),
				ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(fwdFAR+1))),
			ie.CauseRuleCreationModificationFailure, fmt.Sprintf("failed rule type 0 id %x", []byte{0, fwdPDR + 1})},
	} {
		m, err := r.smf.Modify(ctx, est, c.ies...)
		if err != nil || m.Cause() != c.cause || why(m) != c.why {
			t.Errorf("%s: %v, cause %d (%s); want cause %d (%s)", c.name, err, m.Cause(), why(m), c.cause, c.why)
		}
	}
	entries, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e, "forward_indirect") {
			t.Errorf("a refused forwarding tunnel left entry %s", e)
		}
	}
}

// BenchmarkIndirectForwarding: what the operator relays of a handover's forwarded downlink
// (docs/n4.md, "Indirect data forwarding"), offered at fixed rates for 2 s each into the software
// UPF's pipeline, beside the same pipeline taking the session's own uplink G-PDUs apart in the
// same run (decap_gtpu, no controller): the relay's price. Every G-PDU goes up the P4Runtime
// stream as a packet-in and comes back as a packet-out; what the queues on the way (the UPF's
// stream, the operator's packet-ins) cannot take is lost and counted here.
func BenchmarkIndirectForwarding(b *testing.B) {
	ue := netip.MustParseAddr("10.60.0.13")
	r, _, teid := handoverRig(b, ue)
	frame := forwardedGPDU(ue, handoverSource, teid, 1)

	// The reference: the session's uplink through the pipeline alone, as fast as it goes.
	entries, err := r.u.entries(r.sch)
	if err != nil {
		b.Fatal(err)
	}
	var ulTEID uint32
	for _, e := range entries {
		if strings.HasPrefix(e, "uplink_tunnels teid=") && strings.Contains(e, "-> decap_gtpu(") {
			if _, err := fmt.Sscanf(e, "uplink_tunnels teid=%x", &ulTEID); err != nil {
				b.Fatal(err)
			}
		}
	}
	uplink := oaiGPDU(ue, handoverSource, ulTEID)
	const pipelineFrames = 200_000
	start := time.Now()
	for range pipelineFrames {
		if out := r.u.forward(b, uplink); len(out) != 1 {
			b.Fatalf("the session's uplink: %d frames out, want 1", len(out))
		}
	}
	pipelineRate := pipelineFrames / time.Since(start).Seconds()

	var tbl strings.Builder
	fmt.Fprintf(&tbl, "\nthe pipeline alone (decap_gtpu, the same UPF, in process): %.0f G-PDUs/s\n\n", pipelineRate)
	tbl.WriteString("| offered G-PDUs/s | for | sent | relayed to the target gNB | lost | relayed /s | of the pipeline's rate |\n|---|---|---|---|---|---|---|\n")
	for _, rate := range []int{1_000, 10_000, 50_000, 100_000, 200_000} {
		sent0, n := r.u.sent.count(), rate*2
		start := time.Now()
		for i := 0; i < n; i++ {
			if due := start.Add(time.Duration(i) * time.Second / time.Duration(rate)); time.Until(due) > time.Millisecond {
				time.Sleep(time.Until(due))
			}
			r.u.forward(b, frame)
		}
		// Until nothing more comes for half a second: what is still queued arrives by then.
		relayed, last := 0, time.Now()
		for time.Since(last) < 500*time.Millisecond {
			time.Sleep(50 * time.Millisecond)
			if got := r.u.sent.count() - sent0; got > relayed {
				relayed, last = got, time.Now()
			}
		}
		took := last.Sub(start).Seconds()
		fmt.Fprintf(&tbl, "| %d | 2 s | %d | %d | %d | %.0f | %.1f%% |\n", rate, n, relayed, n-relayed, float64(relayed)/took, 100*float64(relayed)/took/pipelineRate)
	}
	b.Log(tbl.String())
}

// TestN4RefusesForwardingThePipelineCannotDo: a UPF whose P4 program has no forward_indirect (an
// older one) refuses the forwarding tunnel with 76, naming the Destination Interface, and the
// session goes on as before it.
func TestN4RefusesForwardingThePipelineCannotDo(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, func(info *p4configv1.P4Info) { testenv.WithoutAction(t, info, "forward_indirect") })
	r.associate(t)
	ue := netip.MustParseAddr("10.60.0.14")
	est := establishIdle(t, r, ue)
	connectAt(t, r, est, handoverSource)
	m, err := r.smf.Modify(ctx, est, forwardingRules(handoverTarget.String(), 0x777)...)
	if err != nil || m.Cause() != ie.CauseServiceNotSupported || why(m) != fmt.Sprintf("offending IE %d", ie.DestinationInterface) {
		t.Fatalf("a forwarding tunnel on a pipeline that cannot relay: %v, cause %d (%s); want 76, offending IE %d (Destination Interface)", err, m.Cause(), why(m), ie.DestinationInterface)
	}
	if out := r.u.forward(t, downlinkFrames(ue, 1)[0]); len(out) != 1 || !bytes.Contains(out[0].frame, []byte{0, 0, 0x01, 0x00}) {
		t.Fatalf("the UE's downlink after the refusal: %d frames, want one G-PDU to the source gNB's TEID 0x100", len(out))
	}
}
