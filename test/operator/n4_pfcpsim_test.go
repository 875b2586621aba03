package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/omec-project/pfcpsim/pkg/pfcpsim"
	pfcprules "github.com/omec-project/pfcpsim/pkg/pfcpsim/session"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/test/pfcpsimpeer"
)

// TestN4SingleAccessSessionsFromPfcpsim: omec-project/pfcpsim's PFCP client, a peer written
// apart from Junction (it drives omec-project/upf in its CI), associates, establishes ordinary
// PDU sessions built with its own rule builders (an uplink PDR on the UPF's F-TEID, a downlink
// PDR for the UE address, a FAR to Core and a FAR into GTP-U toward the gNB), moves one to
// another gNB with a Session Modification (a handover), and deletes them. The entries read
// back are plain GTP-U (docs/pipeline.md: uplink_tunnels, downlink_tunnels, tunnel_peers), no
// sessions entry, each with the QFI and the MBR of the QER its PDRs name (pfcpsim's builders put
// a QER on every PDR; its QERs carry a QFI and open gates, and here an MBR, the session AMBR,
// which Junction polices; not a GBR, which Junction refuses on a session's default flow).
func TestN4SingleAccessSessionsFromPfcpsim(t *testing.T) {
	r := newN4Rig(t, nil, nil)
	c := pfcpsim.NewPFCPClient("127.0.0.2") // it binds port 8805 of its address
	if err := c.ConnectN4(r.n4.String()); err != nil {
		t.Fatal(err)
	}
	defer c.DisconnectN4()
	if err := c.SetupAssociation(); err != nil {
		t.Fatal(err)
	}

	const n = 3
	upSEIDs := make([]uint64, n)
	for i := range n {
		pdrs := []*ie.IE{
			pfcprules.NewPDRBuilder().WithID(1).WithMethod(pfcprules.Create).WithPrecedence(100).WithTEID(uint32(0x100 + i)).
				WithN3Address("192.0.2.1").WithFARID(1).AddQERID(1).MarkAsUplink().BuildPDR(),
			pfcprules.NewPDRBuilder().WithID(2).WithMethod(pfcprules.Create).WithPrecedence(100).WithUEAddress(fmt.Sprintf("10.61.0.%d", 1+i)).
				WithFARID(2).AddQERID(1).MarkAsDownlink().BuildPDR(),
		}
		qers := []*ie.IE{pfcprules.NewQERBuilder().WithID(1).WithMethod(pfcprules.Create).WithQFI(uint8(5 + i)).
			WithUplinkMBR(uint64(1000 * (i + 1))).WithDownlinkMBR(uint64(8000 * (i + 1))).Build()}
		fars := []*ie.IE{
			pfcprules.NewFARBuilder().WithID(1).WithMethod(pfcprules.Create).WithAction(pfcprules.ActionForward).WithDstInterface(ie.DstInterfaceCore).BuildFAR(),
			pfcprules.NewFARBuilder().WithID(2).WithMethod(pfcprules.Create).WithAction(pfcprules.ActionForward).WithDstInterface(ie.DstInterfaceAccess).
				WithTEID(uint32(0x200 + i)).WithDownlinkIP("198.51.100.10").BuildFAR(),
		}
		if err := c.SendSessionEstablishmentRequest(pdrs, fars, qers, nil); err != nil {
			t.Fatal(err)
		}
		resp := pfcpsimpeer.Accepted[*message.SessionEstablishmentResponse](t, c, fmt.Sprintf("establishment %d", i))
		f, err := resp.UPFSEID.FSEID()
		if err != nil {
			t.Fatal(err)
		}
		upSEIDs[i] = f.SEID
	}
	sessions := r.awaitN4Sessions(t, n)
	for i := range sessions {
		s := &sessions[i]
		if s.Spec.Type != junctionv1.SessionSingleAccess || s.Spec.AccessLegs.NonThreeGPP != nil || s.Spec.AccessLegs.ThreeGPP == nil ||
			string(s.Spec.AccessLegs.ThreeGPP.UEAddress) != string(s.Spec.SessionAddress) || s.Spec.QFI < 5 || s.Spec.QFI > 5+n {
			t.Errorf("session %s: %+v, want SingleAccess with its 3GPP leg on the session address and its QER's QFI", s.Name, s.Spec)
		}
		waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
		waitCondition(t, programTimeout, s, junctionv1.ConditionDegraded, metav1.ConditionFalse, "SingleAccess")
	}
	// docs/pipeline.md: uplink_tunnels (teid) -> decap_gtpu(access 1 = 3GPP, usage_idx); downlink_tunnels
	// (ue_addr) -> encap_gtpu(teid, peer_idx, endpoint_idx, usage_idx), both with the session's
	// usage cell; the gNB in tunnel_peers, shared; tunnel_qfis (gNB, downlink TEID) -> set_qfi.
	usage := map[string]uint64{} // session address → usage cell
	for i := range sessions {
		s := &sessions[i]
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s); err != nil {
			t.Fatal(err)
		}
		usage[string(s.Spec.SessionAddress)] = uint64(*s.Status.UsageIndex)
	}
	var want []string
	for i := range n {
		u := hx(usage[fmt.Sprintf("10.61.0.%d", 1+i)], 4)
		want = append(want, fmt.Sprintf("uplink_tunnels teid=%s -> decap_gtpu(access=01,usage_idx=%s)", hx(uint64(0x100+i), 4), u),
			fmt.Sprintf("downlink_tunnels ue_addr=0a3d00%02x -> encap_gtpu(endpoint_idx=00,peer_idx=01,teid=%s,usage_idx=%s)", 1+i, hx(uint64(0x200+i), 4), u),
			fmt.Sprintf("tunnel_qfis peer_addr=c633640a teid=%s -> set_qfi(qfi=%02x)", hx(uint64(0x200+i), 4), 5+i))
	}
	want = append(want, "tunnel_peers peer_idx=01 -> set_tunnel_peer(peer_addr=c633640a)")
	wantEntries(t, r, want...)
	// Session i's policers at its usage cell (docs/pipeline.md, "MBR policer"): (i+1) × 1,000
	// kbit/s up is (i+1) × 125,000 bytes/s, 8,000 down is 1,000,000, each with 100 ms of bucket.
	for i := range n {
		idx := int64(usage[fmt.Sprintf("10.61.0.%d", 1+i)])
		for meter, rate := range map[string]int64{"uplink_mbr": 125_000 * int64(i+1), "downlink_mbr": 1_000_000 * int64(i+1)} {
			c, err := r.u.meter(r.sch, meter, idx)
			if err != nil {
				t.Fatal(err)
			}
			if c == nil || c.Pir != rate || c.Cir != rate || c.Pburst != rate/10 || c.Cburst != rate/10 {
				t.Errorf("session %d: %s[%d] = %v, want rates %d and bursts %d", i, meter, idx, c, rate, rate/10)
			}
		}
	}
	if got := mustEntries(t, r.u, r.sch); countTable(got, "sessions") != 0 {
		t.Errorf("%d sessions entries for single-access sessions, want none", countTable(got, "sessions"))
	}

	// Handover of session 0 to gNB 198.51.100.11 with a new downlink TEID.
	far := pfcprules.NewFARBuilder().WithID(2).WithMethod(pfcprules.Update).WithAction(pfcprules.ActionForward).WithDstInterface(ie.DstInterfaceAccess).
		WithTEID(0x300).WithDownlinkIP("198.51.100.11").BuildFAR()
	if err := c.SendSessionModificationRequest(upSEIDs[0], nil, nil, []*ie.IE{far}, nil); err != nil {
		t.Fatal(err)
	}
	pfcpsimpeer.Accepted[*message.SessionModificationResponse](t, c, "modification")
	wantEntries(t, r, fmt.Sprintf("downlink_tunnels ue_addr=0a3d0001 -> encap_gtpu(endpoint_idx=00,peer_idx=02,teid=0300,usage_idx=%s)", hx(usage["10.61.0.1"], 4)),
		"tunnel_qfis peer_addr=c633640b teid=0300 -> set_qfi(qfi=05)",
		"tunnel_peers peer_idx=02 -> set_tunnel_peer(peer_addr=c633640b)")

	for i, seid := range upSEIDs {
		if err := c.SendSessionDeletionRequest(uint64(i+1), seid); err != nil {
			t.Fatal(err)
		}
		pfcpsimpeer.Accepted[*message.SessionDeletionResponse](t, c, fmt.Sprintf("deletion %d", i))
	}
	eventually(t, programTimeout, "no tunnel entries after the deletions", func() error {
		for _, e := range mustEntries(t, r.u, r.sch) {
			if strings.HasPrefix(e, "downlink_tunnels") || strings.HasPrefix(e, "uplink_tunnels") {
				return fmt.Errorf("left: %s", e)
			}
		}
		return nil
	})
}
