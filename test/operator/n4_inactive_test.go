package operator

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// TestN4MASessionAccessGoesIdleAndBack: the UE of an MA PDU session goes idle on 3GPP while it
// stays on WiFi, so the SMF modifies the MAR's 3GPP FAR to buffer (BUFF|NOCP, TS 29.244
// §5.2.3), and later, the UE paged, to forward into the new gNB tunnel. Junction takes both
// (docs/n4.md, "An access not active"): while the FAR buffers the 3GPP leg is inactive, so the
// downlink that smallest delay put on 3GPP goes over WiFi, while the uplink PDR, which the SMF
// left forwarding, still takes what the UE sends on 3GPP (a UE back on 3GPP sends before the
// SMF's modification with the new tunnel reaches the UPF: TS 23.502 §4.2.3.2, steps 14 and 17);
// once the FAR forwards the leg comes back with the new tunnel. Before this the modification was
// refused (76), and an SMF would have had to release the session.
func TestN4MASessionAccessGoesIdleAndBack(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	s := alice() // the default traffic on smallest delay
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	obj := &r.awaitN4Sessions(t, 1)[0]
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	usage := uint64(*obj.Status.UsageIndex)
	uplink := fmt.Sprintf("uplink_tunnels teid=%x -> decap_gtpu(access=01,usage_idx=%s)", est.UplinkTEID, hx(usage, 4))
	// The UE reports both legs, 3GPP the faster: smallest delay sends the downlink on 3GPP.
	r.u.probeAck(t, obj, contract.Access3GPP, 5*time.Millisecond)
	r.u.probeAck(t, obj, contract.AccessNon3GPP, 30*time.Millisecond)
	// A UDP packet from outside the traffic class of alice's second MAR: the default traffic.
	down := downlinkFrames(netip.MustParseAddr("10.60.0.7"), 1)[0]
	leavesOn := func(what string, want func([]byte) bool) {
		t.Helper()
		eventually(t, programTimeout, what, func() error {
			out := r.u.forward(t, down)
			if len(out) != 1 || !want(out[0].frame) {
				return fmt.Errorf("the downlink left as %d frames: %x", len(out), out)
			}
			return nil
		})
	}
	// A G-PDU toward the gNB: GTP-U (flags 0x30, type 0xff, length, TEID) after Ethernet, IPv4
	// and UDP (14 + 20 + 8 bytes; docs/pipeline.md: the added headers have no options).
	isGTPU := func(teid uint32) func([]byte) bool {
		return func(f []byte) bool {
			return len(f) >= 50 && f[42] == 0x30 && f[43] == 0xff && binary.BigEndian.Uint32(f[46:50]) == teid
		}
	}
	// On WiFi: Junction straight over UDP to port 2153 (not GTP-U's 2152) at the UE's WiFi
	// address 203.0.113.7.
	onWiFi := func(f []byte) bool {
		return len(f) >= 38 && bytes.Equal(f[30:34], []byte{203, 0, 113, 7}) && binary.BigEndian.Uint16(f[36:38]) == 2153
	}
	leavesOn("the downlink on 3GPP, in the gNB's tunnel 0x1234", isGTPU(0x1234))

	// The UE goes idle on 3GPP: the FAR buffers and notifies; its tunnel stays in the FAR.
	r.modify(t, est, "the 3GPP FAR buffers", idle3GPP)
	eventually(t, programTimeout, "the 3GPP leg inactive in the object", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if l := obj.Spec.AccessLegs.ThreeGPP; l == nil || *l != (junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", UplinkTEID: int64(est.UplinkTEID), DropDownlink: true}) {
			return fmt.Errorf("3GPP leg %+v, want the UE's address, its uplink TEID and dropDownlink", l)
		}
		if l := obj.Spec.AccessLegs.NonThreeGPP; l == nil || l.UEAddress != "203.0.113.7" || l.DropDownlink {
			return fmt.Errorf("non-3GPP leg %+v, want it as it was", l)
		}
		return nil
	})
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	// docs/pipeline.md: set_session with the leg's address (the uplink's source is checked
	// against it) but no tunnel peer and no TEID, and the leg's uplink TEID as it was.
	wantEntries(t, r, uplink, fmt.Sprintf("sessions session_addr=0a3c0007 -> set_session(endpoint_idx=00,gateway_non3gpp=00,peer_idx=00,teid=00,teid_non3gpp=00,ue_addr_3gpp=0a2d0007,ue_addr_non3gpp=cb007107,usage_idx=%s,user_idx=%s)",
		hx(usage, 4), hx(uint64(*obj.Status.UserIndex), 4)))
	// The UE sends on 3GPP before the SMF has the new tunnel: a G-PDU on its uplink TEID holding
	// its Junction DATA packet from its 3GPP address. The user's packet leaves for the data
	// network: IPv4 from the session address 10.60.0.7 to the server 203.0.113.200, after
	// Ethernet (docs/pipeline.md: the uplink leaves without Junction's headers).
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	early := wiretest.Build(eth, wire.IPv4{Src: addr4("198.51.100.10"), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: est.UplinkTEID},
		wire.IPv4{Src: addr4("10.45.0.7"), Dst: addr4("192.0.2.2")}, wire.UDP{}, wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4},
		wire.IPv4{Src: addr4("10.60.0.7"), Dst: addr4("203.0.113.200")}, wire.UDP{SrcPort: 40000, DstPort: 443}, make([]byte, 100))
	if out := r.u.forward(t, early); len(out) != 1 || len(out[0].frame) < 34 || !bytes.Equal(out[0].frame[26:34], []byte{10, 60, 0, 7, 203, 0, 113, 200}) {
		t.Fatalf("the UE's uplink on its idle 3GPP leg left as %x, want the user's packet toward 203.0.113.200", out)
	}
	// Its probe on that leg finds no tunnel to answer in (NO_TUNNEL_PEER), so the UE agent takes
	// the leg down as before.
	noPeer := packets(t, r, "drops", int64(contract.DropNoTunnelPeer))
	probe := wiretest.Build(eth, wire.IPv4{Src: addr4("198.51.100.10"), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: est.UplinkTEID},
		wire.IPv4{Src: addr4("10.45.0.7"), Dst: addr4("192.0.2.2")}, wire.UDP{}, wire.Header{Type: wire.TypeProbe},
		wire.Control{Session: addr4("10.60.0.7"), Access: contract.Access3GPP, UETime: 1})
	if out := r.u.forward(t, probe); len(out) != 0 {
		t.Errorf("a PROBE on the idle 3GPP leg was answered: %x", out[0].frame)
	}
	if got := packets(t, r, "drops", int64(contract.DropNoTunnelPeer)); got != noPeer+1 {
		t.Errorf("drops[NO_TUNNEL_PEER] %d -> %d for the PROBE on the idle leg, want one more", noPeer, got)
	}
	// The leg's RTT (5 ms, the smaller) was set back to unavailable when it went idle, so the
	// downlink takes WiFi, not the peerless leg.
	leavesOn("the downlink on WiFi while the UE is idle on 3GPP", onWiFi)

	// Paged, the UE is back on 3GPP through another gNB tunnel.
	r.modify(t, est, "the 3GPP FAR forwards into a new tunnel", forward3GPP(0x4321))
	wantEntries(t, r, uplink)
	want3 := junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", GNBAddress: "198.51.100.10", UplinkTEID: int64(est.UplinkTEID), DownlinkTEID: 0x4321}
	eventually(t, programTimeout, "the 3GPP leg active again in the object", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if l := obj.Spec.AccessLegs.ThreeGPP; l == nil || *l != want3 {
			return fmt.Errorf("3GPP leg %+v, want %+v: the uplink TEID it had and the new tunnel", l, want3)
		}
		return nil
	})
	// A leg that comes back is unavailable until the UE reports it, as a new leg is
	// (docs/pipeline.md, "Autonomous load balance": a new user needs no register write).
	leavesOn("the downlink on WiFi until the UE reports its 3GPP leg", onWiFi)
	r.u.probeAck(t, obj, contract.Access3GPP, 5*time.Millisecond)
	leavesOn("the downlink on 3GPP again, in the new tunnel 0x4321", isGTPU(0x4321))

	// An SMF establishes an MA PDU session while the UE is idle on 3GPP and not on WiFi (or
	// before its access nodes have answered, TS 23.502 §4.22.2): the 3GPP FAR buffers and
	// notifies, the non-3GPP FAR drops, neither with a tunnel. With no access active the UPF
	// holds the downlink and reports its first packet, so that the SMF pages the UE (docs/n4.md,
	// "An access not active"); once the 3GPP FAR forwards, what it held goes into the new tunnel.
	bob := alice()
	bob.IMSI, bob.UEAddr, bob.UE3GPP, bob.UENon3GPP = "001010000000078", netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("10.45.0.8"), netip.MustParseAddr("203.0.113.8")
	bob.Apps = nil // one downlink PDR, the one a report names
	withFAR := func(far uint32, action uint8) iesEdit {
		return replacing(ie.CreateFAR, ie.FARID, u32b(far), ie.NewCreateFAR(ie.NewFARID(far), ie.NewApplyAction(action),
			ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess))))
	}
	ies := withFAR(smf.FARNon3GPP, 0x01)(withFAR(smf.FAR3GPP, 0x0c)(r.smf.EstablishmentIEs(bob, r.smf.NewCPSEID())))
	seq := r.smf.NextSeq()
	b, err := message.NewSessionEstablishmentRequest(0, 0, 0, seq, 0, ies...).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.smf.SendRaw(ctx, seq, b)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("establishment with the 3GPP FAR buffering and the non-3GPP one dropping: cause %d (%s), want 1", c, why(resp))
	}
	bobEst := &smf.Established{CPSEID: resp.Header.SEID}
	if f, err := resp.Find(ie.FSEID).FSEID(); err == nil {
		bobEst.UPSEID = f.SEID
	}
	var bobUplink uint32
	for _, x := range resp.IEs {
		if id, err := x.PDRID(); x.Type == ie.CreatedPDR && err == nil && id == smf.PDRUplink3GPP {
			if f, err := x.FTEID(); err == nil {
				bobUplink = f.TEID
			}
		}
	}
	eventually(t, programTimeout, "bob's session holding its downlink", func() error {
		for _, o := range r.n4Sessions(t) {
			if o.Spec.SessionAddress != "10.60.0.8" {
				continue
			}
			l3, ln := o.Spec.AccessLegs.ThreeGPP, o.Spec.AccessLegs.NonThreeGPP
			if l3 == nil || *l3 != (junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.8", UplinkTEID: int64(bobUplink), BufferDownlink: true}) ||
				ln == nil || *ln != (junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.8", DropDownlink: true}) {
				return fmt.Errorf("legs %+v and %+v, want 3GPP holding (its uplink TEID %#x kept) and non-3GPP inactive", l3, ln, bobUplink)
			}
			if !meta.IsStatusConditionTrue(o.Status.Conditions, junctionv1.ConditionProgrammed) {
				return fmt.Errorf("not Programmed yet")
			}
			// Nothing to measure: Degraded is False, and says why (no active access).
			if c := meta.FindStatusCondition(o.Status.Conditions, junctionv1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "NoActiveAccess" {
				return fmt.Errorf("Degraded %+v, want False with reason NoActiveAccess", c)
			}
			return nil
		}
		return fmt.Errorf("no session at 10.60.0.8 yet")
	})
	wantEntries(t, r, "downlink_tunnels ue_addr=0a3c0008 -> buffer_downlink()")
	upf := r.upf.Name
	held0 := bufferedFrames(t, upf, "held")
	frames := downlinkFrames(netip.MustParseAddr("10.60.0.8"), 3)
	for i, f := range frames {
		if out := r.u.forward(t, f); len(out) != 0 {
			t.Fatalf("bob's downlink packet %d left the UPF with no access active: %x", i, out[0].frame)
		}
	}
	eventually(t, programTimeout, "3 frames held and a downlink data report for PDR 10", func() error {
		if n := bufferedFrames(t, upf, "held") - held0; n != 3 {
			return fmt.Errorf("%v held", n)
		}
		if got := downlinkDataReports(r.smf); len(got) != 1 || got[0] != smf.PDRDownlink {
			return fmt.Errorf("downlink data reports for PDRs %v, want one for PDR %d", got, smf.PDRDownlink)
		}
		return nil
	})
	sent0 := len(r.u.sent.taken())
	r.modify(t, bobEst, "paged, bob's 3GPP FAR forwards", forward3GPP(0x4444))
	eventually(t, programTimeout, "bob's 3 held frames sent into the new tunnel", func() error {
		sent := r.u.sent.taken()[sent0:]
		if len(sent) < 3 {
			return fmt.Errorf("%d sent", len(sent))
		}
		for i, f := range sent[:3] {
			if !isGTPU(0x4444)(f.frame) {
				return fmt.Errorf("released frame %d is not a G-PDU to TEID 0x4444: %x", i, f.frame)
			}
			if !bytes.Contains(f.frame, bytes.Repeat([]byte{byte(i)}, 64)) {
				return fmt.Errorf("released frame %d is not the packet held %d-th: %x", i, i, f.frame)
			}
		}
		return nil
	})
}

// TestN4MASessionUsageAcrossAHold: while an MA PDU session holds its downlink (no access active)
// no entry names its usage cells, and the first entry after zeroes them (docs/pipeline.md, "Usage
// counters"); its URR carries what it measured across, as an idle OAI session's does (docs/n4.md,
// "An access not active"). The deletion's report holds every downlink packet that left the
// data plane, before the hold and after it; without the carry it would hold the last three.
func TestN4MASessionUsageAcrossAHold(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	s := alice()
	s.Apps = nil
	s.URR = &smf.URR{}
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(why(est.Resp), err)
	}
	obj := &r.awaitN4Sessions(t, 1)[0]
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	r.u.probeAck(t, obj, contract.AccessNon3GPP, time.Millisecond) // WiFi available: the downlink goes
	if out := r.u.feed(t, aliceTraffic(s, 0, 2)...); out != 2 {
		t.Fatalf("%d of 2 downlink packets left the data plane", out)
	}

	// Idle on 3GPP, gone from WiFi: the downlink is held.
	r.modify(t, est, "the 3GPP FAR buffers, the non-3GPP one drops", idle3GPP, ie.NewUpdateFAR(ie.NewFARID(smf.FARNon3GPP), ie.NewApplyAction(0x01)))
	wantEntries(t, r, "downlink_tunnels ue_addr=0a3c0007 -> buffer_downlink()")
	// Back on 3GPP, into another tunnel; WiFi still gone.
	r.modify(t, est, "the 3GPP FAR forwards again", forward3GPP(0x4321))
	eventually(t, programTimeout, "the downlink on 3GPP after the hold", func() error {
		out := r.u.forward(t, aliceTraffic(s, 0, 1)[0])
		if len(out) != 1 {
			return fmt.Errorf("%d frames left", len(out))
		}
		return nil
	})
	if out := r.u.feed(t, aliceTraffic(s, 0, 2)...); out != 2 {
		t.Fatalf("%d of 2 more downlink packets left the data plane", out)
	}
	del, err := r.smf.Delete(ctx, est)
	if err != nil || del.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v, cause %d", err, del.Cause())
	}
	final := usageReports(t, del.IEs, 1)[0]
	if final.Downlink != 5*userPacketBytes || final.DLPackets != 5 || final.Uplink != 0 {
		t.Errorf("the deletion's report: %s; want the 5 downlink packets that left (%d B), before and after the hold, and no uplink", final, 5*userPacketBytes)
	}
}

// The SMF's Update FARs of the 3GPP access (smf.FAR3GPP): idle3GPP when the UE goes idle there
// (BUFF|NOCP, the tunnel left in the FAR), forward3GPP once it is paged (FORW into the gNB's
// tunnel teid).
var idle3GPP = ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewApplyAction(0x0c))

func forward3GPP(teid uint32) *ie.IE {
	return ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewApplyAction(0x02),
		ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, teid, "198.51.100.10", "", 0, 0, 0)))
}

// modify sends a Session Modification of est and fails unless the UPF accepts it.
func (r n4Rig) modify(t *testing.T, est *smf.Established, what string, ies ...*ie.IE) {
	t.Helper()
	resp, err := r.smf.Modify(context.Background(), est, ies...)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("%s: cause %d (%s), want 1", what, c, why(resp))
	}
}
