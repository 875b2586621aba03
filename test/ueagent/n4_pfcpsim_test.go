//go:build linux

package ueagent

import (
	"context"
	"fmt"
	"testing"

	"github.com/omec-project/pfcpsim/pkg/pfcpsim"
	pfcprules "github.com/omec-project/pfcpsim/pkg/pfcpsim/session"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/test/pfcpsimpeer"
	"github.com/junction-atsss/junction/test/topology"
)

// TestN4PfcpsimSessionCarriesTraffic: an ordinary PDU session that omec-project/pfcpsim's PFCP
// client establishes with its own rule builders (an SMF written apart from Junction) carries a
// UE's packets through the testbed: the UE sends from its address on its radio link, the gNB
// emulator tunnels them in GTP-U with the session's uplink TEID to the software UPF, which
// takes the tunnel off and routes them to the data network; the replies come back in the
// downlink tunnel pfcpsim's FAR names, with the QFI of its QER (the gNB emulator takes only
// G-PDUs of the session's QFI). No UE agent runs: a single-access session is plain GTP-U
// (docs/n4.md, "Single-access PDU sessions"). A Session Modification that gives the downlink
// another TEID moves it there (the gNB emulator follows the object), and a Session Deletion
// ends the traffic. The UE and the data network have no other way to each other.
func TestN4PfcpsimSessionCarriesTraffic(t *testing.T) {
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	ue := u.Addr3GPP[0] // the session address: the UE's own on its radio link
	n4 := tb.enableN4()

	// An administrator grants the UE's address as a session address too (docs/address-pools.md).
	pool := &junctionv1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: tb.ns + "-single"}, Spec: junctionv1.AddressPoolSpec{Namespace: tb.ns,
		SessionAddresses: []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(ue.String() + "/32")}}}
	create(t, pool)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pool) })
	// The UE reaches the data network's server through the gNB, and the server the UE through
	// the UPF: no other route joins them.
	if out, err := u.NS.Command("ip", "route", "replace", topology.DNHost.String()+"/32", "via", topology.GNBRadio.String(), "dev", "ran0", "onlink", "src", ue.String()).CombinedOutput(); err != nil {
		t.Fatalf("UE route to the data network: %v: %s", err, out)
	}
	if out, err := tb.DN.Command("ip", "route", "replace", ue.String()+"/32", "via", topology.DNGateway.String(), "dev", "dn0").CombinedOutput(); err != nil {
		t.Fatalf("data network route to the UE: %v: %s", err, out)
	}

	// pfcpsim binds port 8805 of its address: one test/operator does not use. A client whose
	// association timed out (the endpoint not open yet) is not used again.
	var c *pfcpsim.PFCPClient
	eventually(t, readyTimeout, "pfcpsim's N4 association", func() error {
		c = pfcpsim.NewPFCPClient("127.0.0.3")
		if err := c.ConnectN4(n4.String()); err != nil {
			return err
		}
		if err := c.SetupAssociation(); err != nil {
			c.DisconnectN4()
			return err
		}
		return nil
	})
	defer c.DisconnectN4()
	const ulTEID, dlTEID, qfi = 0x5001, 0x6001, 9
	downlinkFAR := func(method pfcprules.IEMethod, teid uint32) *ie.IE {
		return pfcprules.NewFARBuilder().WithID(2).WithMethod(method).WithAction(pfcprules.ActionForward).WithDstInterface(ie.DstInterfaceAccess).
			WithTEID(teid).WithDownlinkIP(topology.GNBN3.String()).BuildFAR()
	}
	pdrs := []*ie.IE{
		pfcprules.NewPDRBuilder().WithID(1).WithMethod(pfcprules.Create).WithPrecedence(100).WithTEID(ulTEID).
			WithN3Address(topology.UPFN3.String()).WithFARID(1).AddQERID(1).MarkAsUplink().BuildPDR(),
		pfcprules.NewPDRBuilder().WithID(2).WithMethod(pfcprules.Create).WithPrecedence(100).WithUEAddress(ue.String()).
			WithFARID(2).AddQERID(1).MarkAsDownlink().BuildPDR(),
	}
	fars := []*ie.IE{
		pfcprules.NewFARBuilder().WithID(1).WithMethod(pfcprules.Create).WithAction(pfcprules.ActionForward).WithDstInterface(ie.DstInterfaceCore).BuildFAR(),
		downlinkFAR(pfcprules.Create, dlTEID),
	}
	qers := []*ie.IE{pfcprules.NewQERBuilder().WithID(1).WithMethod(pfcprules.Create).WithQFI(qfi).Build()}
	if err := c.SendSessionEstablishmentRequest(pdrs, fars, qers, nil); err != nil {
		t.Fatal(err)
	}
	resp := pfcpsimpeer.Accepted[*message.SessionEstablishmentResponse](t, c, "establishment")
	f, err := resp.UPFSEID.FSEID()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("n4-upf-%016x", f.SEID)
	var s *junctionv1.ATSSSSession
	eventually(t, readyTimeout, "the session Programmed", func() error {
		if s, err = getSession(name, tb.ns); err != nil {
			return err
		}
		want := junctionv1.ThreeGPPLeg{UEAddress: junctionv1.IPv4Address(ue.String()), GNBAddress: junctionv1.IPv4Address(topology.GNBN3.String()), UplinkTEID: ulTEID, DownlinkTEID: dlTEID}
		if s.Spec.Type != junctionv1.SessionSingleAccess || s.Spec.QFI != qfi || s.Spec.AccessLegs.ThreeGPP == nil || *s.Spec.AccessLegs.ThreeGPP != want {
			return fmt.Errorf("spec %+v, want SingleAccess with QFI %d and 3GPP leg %+v", s.Spec, qfi, want)
		}
		if !meta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionProgrammed) {
			return fmt.Errorf("not Programmed: %+v", s.Status.Conditions)
		}
		return nil
	})

	allAnswered := func(what string) {
		t.Helper()
		eventually(t, readyTimeout, what, func() error {
			if got := pingFrom(t, u, ue.String(), 10); got != 10 {
				return fmt.Errorf("%d of 10 pings answered", got)
			}
			return nil
		})
	}
	allAnswered("pings through the session pfcpsim established")

	// The gNB gives the session another downlink TEID (pfcpsim's Update FAR, as its CLI's modify
	// sends): the UPF tunnels to it, the gNB emulator takes it.
	if err := c.SendSessionModificationRequest(f.SEID, nil, nil, []*ie.IE{downlinkFAR(pfcprules.Update, dlTEID+1)}, nil); err != nil {
		t.Fatal(err)
	}
	pfcpsimpeer.Accepted[*message.SessionModificationResponse](t, c, "modification")
	eventually(t, readyTimeout, "the new downlink TEID in the object", func() error {
		if s, err = getSession(name, tb.ns); err != nil {
			return err
		}
		if l := s.Spec.AccessLegs.ThreeGPP; l == nil || l.DownlinkTEID != dlTEID+1 {
			return fmt.Errorf("3GPP leg %+v, want downlink TEID %#x", l, dlTEID+1)
		}
		return nil
	})
	allAnswered("pings through the session after the modification")

	if err := c.SendSessionDeletionRequest(1, f.SEID); err != nil {
		t.Fatal(err)
	}
	pfcpsimpeer.Accepted[*message.SessionDeletionResponse](t, c, "deletion")
	eventually(t, readyTimeout, "no ping answered once the session is deleted", func() error {
		if got := pingFrom(t, u, ue.String(), 3); got != 0 {
			return fmt.Errorf("%d of 3 pings answered", got)
		}
		return nil
	})
}
