package operator

import (
	"bytes"
	"context"
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
)

// TestN4MASessionAccessGoesIdleAndBack: the UE of an MA PDU session goes idle on 3GPP while it
// stays on WiFi, so the SMF modifies the MAR's 3GPP FAR to buffer (BUFF|NOCP, TS 29.244
// §5.2.3), and later, the UE paged, to forward into the new gNB tunnel. Junction takes both
// (docs/n4.md, "An access not active"): while the FAR buffers the 3GPP leg is inactive, so the
// UPF holds nothing for it and the downlink that smallest delay put on 3GPP goes over WiFi;
// once it forwards the leg comes back with its uplink TEID and the new tunnel. Before this the
// modification was refused (76), and an SMF would have had to release the session.
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
	gtpu := func(teid uint32) []byte { // a G-PDU's GTP-U header toward the gNB: flags, type, then the TEID
		return append([]byte{0x30, 0xff}, append(make([]byte, 2), byte(teid>>24), byte(teid>>16), byte(teid>>8), byte(teid))[2:]...)
	}
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
	isGTPU := func(teid uint32) func([]byte) bool {
		return func(f []byte) bool {
			return bytes.Contains(f, gtpu(teid)[:2]) && bytes.Contains(f, []byte{byte(teid >> 24), byte(teid >> 16), byte(teid >> 8), byte(teid)})
		}
	}
	// On WiFi: Junction over plain UDP (port 2153) to the UE's WiFi address 203.0.113.7, no GTP-U.
	onWiFi := func(f []byte) bool {
		return len(f) > 34 && bytes.Equal(f[30:34], []byte{203, 0, 113, 7}) && f[36] == 0x08 && f[37] == 0x69 && !bytes.Contains(f, []byte{0x30, 0xff})
	}
	leavesOn("the downlink on 3GPP, in the gNB's tunnel 0x1234", isGTPU(0x1234))

	// The UE goes idle on 3GPP: the FAR buffers and notifies; its tunnel stays in the FAR.
	resp, err := r.smf.Modify(ctx, est, ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewApplyAction(0x0c)))
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Session Modification (3GPP FAR BUFF|NOCP): cause %d (%s), want 1", c, why(resp))
	}
	eventually(t, programTimeout, "the 3GPP leg inactive in the object", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if l := obj.Spec.AccessLegs.ThreeGPP; l == nil || *l != (junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", DropDownlink: true}) {
			return fmt.Errorf("3GPP leg %+v, want the UE's address and dropDownlink alone", l)
		}
		if l := obj.Spec.AccessLegs.NonThreeGPP; l == nil || l.UEAddress != "203.0.113.7" || l.DropDownlink {
			return fmt.Errorf("non-3GPP leg %+v, want it as it was", l)
		}
		return nil
	})
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	// docs/pipeline.md: set_session with ue_addr_3gpp 0 (the leg absent), no peer and no TEID,
	// and no uplink TEID for the leg.
	wantEntries(t, r, fmt.Sprintf("sessions session_addr=0a3c0007 -> set_session(endpoint_idx=00,gateway_non3gpp=00,peer_idx=00,teid=00,teid_non3gpp=00,ue_addr_3gpp=00,ue_addr_non3gpp=cb007107,usage_idx=%s,user_idx=%s)",
		hx(usage, 4), hx(uint64(*obj.Status.UserIndex), 4)))
	got, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if e == uplink {
			t.Errorf("the inactive leg's uplink TEID is still on the UPF: %s", e)
		}
	}
	leavesOn("the downlink on WiFi while the UE is idle on 3GPP", onWiFi)

	// Paged, the UE is back on 3GPP through another gNB tunnel.
	resp, err = r.smf.Modify(ctx, est, ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewApplyAction(0x02),
		ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x4321, "198.51.100.10", "", 0, 0, 0))))
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Session Modification (3GPP FAR FORW, new tunnel): cause %d (%s), want 1", c, why(resp))
	}
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

	// An SMF establishes an MA PDU session before its access nodes have given their tunnels
	// (TS 23.502 §4.22.2: the AN tunnel info comes after the N4 establishment): both MAR FARs
	// buffer, with no Outer Header Creation. Taken, with both legs inactive and no TEID in the
	// object; the UPF drops the downlink (no path) until a leg forwards.
	bob := alice()
	bob.IMSI, bob.UEAddr, bob.UE3GPP, bob.UENon3GPP = "001010000000078", netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("10.45.0.8"), netip.MustParseAddr("203.0.113.8")
	buffering := func(far uint32) iesEdit {
		return replacing(ie.CreateFAR, ie.FARID, u32b(far), ie.NewCreateFAR(ie.NewFARID(far), ie.NewApplyAction(0x0c),
			ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess))))
	}
	ies := buffering(smf.FARNon3GPP)(buffering(smf.FAR3GPP)(r.smf.EstablishmentIEs(bob, r.smf.NewCPSEID())))
	seq := r.smf.NextSeq()
	b, err := message.NewSessionEstablishmentRequest(0, 0, 0, seq, 0, ies...).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := r.smf.SendRaw(ctx, seq, b); err != nil || resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("establishment with both MAR FARs buffering: %v, cause %d (%s); want 1", err, resp.Cause(), why(resp))
	}
	eventually(t, programTimeout, "bob's session with both legs inactive", func() error {
		for _, o := range r.n4Sessions(t) {
			if o.Spec.SessionAddress != "10.60.0.8" {
				continue
			}
			l3, ln := o.Spec.AccessLegs.ThreeGPP, o.Spec.AccessLegs.NonThreeGPP
			if l3 == nil || *l3 != (junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.8", DropDownlink: true}) ||
				ln == nil || *ln != (junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.8", DropDownlink: true}) {
				return fmt.Errorf("legs %+v and %+v, want both inactive with the UE's addresses alone", l3, ln)
			}
			if !meta.IsStatusConditionTrue(o.Status.Conditions, junctionv1.ConditionProgrammed) {
				return fmt.Errorf("not Programmed yet")
			}
			return nil
		}
		return fmt.Errorf("no session at 10.60.0.8 yet")
	})
	if out := r.u.forward(t, downlinkFrames(netip.MustParseAddr("10.60.0.8"), 1)[0]); len(out) != 0 {
		t.Errorf("bob's downlink with no active leg left as %x, want it dropped (NO_PATH)", out)
	}
}
