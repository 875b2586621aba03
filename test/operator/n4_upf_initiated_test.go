package operator

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	corev1 "k8s.io/api/core/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/testenv"
)

// TestN4UPFInitiatedAssociation: the UPF sets up the association with an SMF of
// spec.n4.associateWith itself (TS 29.244 §6.2.6.3), for SMFs that wait for their UPFs; and when
// it leaves N4 it asks the SMF to release the association (§6.2.7.3) rather than dropping it.
//
//   - The SMF refuses at first: the UPF tries again every heartbeat interval, says so in an
//     event, and holds no association; once the SMF accepts, the association is in the UPF's
//     status under the SMF's Node ID, and the SMF establishes a session on it.
//   - The Association Setup Request carries the UPF's Node ID, the Recovery Time Stamp its status
//     shows and the UP Function Features docs/n4.md lists (FTUP, EMPU, MNOP, ATSSS-LL, RTTWP:
//     octets 10 01 10 00 01 01, TS 29.244 §8.2.25).
//   - The SMF restarts (a new Recovery Time Stamp in its heartbeats): its session is released and
//     the UPF sets the association up again, since the SMF lost it.
//   - The UPF leaves N4: an Association Update Request with the PFCP Association Release Request
//     IE, SARR set (§8.2.77); the SMF, which takes it, releases the association, and the UPF has no
//     Association Release Request of its own to send.
//
// Every message the UPF sent the SMF decodes in Wireshark's dissector without a problem.
func TestN4UPFInitiatedAssociation(t *testing.T) {
	ctx := context.Background()
	var sm *smf.Client
	r := newN4Rig(t, func(n *junctionv1.N4) {
		n.HeartbeatInterval = "300ms"
		c, err := smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort(n.Listen), "smf-waits.test.example")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.RefuseSetups(ie.CauseRequestRejected)
		sm = c
		n.AssociateWith = []string{fmt.Sprintf("localhost:%d", c.Addr().Port())} // a name, resolved
	}, nil)
	associated := func() *junctionv1.N4Association {
		for _, a := range r.n4Status(t).Associations {
			if a.NodeID == "smf-waits.test.example" {
				return &a
			}
		}
		return nil
	}
	eventually(t, programTimeout, "the UPF trying again after a refusal", func() error {
		if n := len(sm.SetupRequests()); n < 2 {
			return fmt.Errorf("%d Association Setup Requests", n)
		}
		return nil
	})
	if a := associated(); a != nil {
		t.Fatalf("an association with an SMF that refused it: %+v", a)
	}
	eventually(t, programTimeout, "an SMFAssociationRefused event", func() error {
		return findEvent(r.ns, r.upf.Name, corev1.EventTypeWarning, "SMFAssociationRefused")
	})
	sm.RefuseSetups(0)
	eventually(t, programTimeout, "the association in the UPF's status", func() error {
		if a := associated(); a == nil || a.Address != sm.Addr().String() {
			return fmt.Errorf("associations %+v, want smf-waits.test.example at %s", r.n4Status(t).Associations, sm.Addr())
		}
		return nil
	})
	setup := sm.SetupRequests()[0]
	ts, err := setup.Find(ie.RecoveryTimeStamp).RecoveryTimeStamp()
	if status := r.n4Status(t).RecoveryTimeStamp; err != nil || status == nil || !ts.Equal(status.Time) {
		t.Errorf("the request's Recovery Time Stamp %v (%v), want the status's %v", ts, err, status)
	}
	if id, err := setup.Find(ie.NodeID).NodeID(); err != nil || id != "127.0.0.1" {
		t.Errorf("the request's Node ID %q (%v), want spec.n4.nodeID 127.0.0.1", id, err)
	}
	if f := setup.Find(ie.UPFunctionFeatures); f == nil || !bytes.Equal(f.Payload, []byte{0x30, 0x01, 0x10, 0x00, 0x01, 0x01}) {
		t.Errorf("the request's UP Function Features %v, want 300110000101", f)
	}
	est, err := sm.Establish(ctx, alice())
	if err != nil || est.Resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("an establishment on the association the UPF set up: %v (%s)", err, why(est.Resp))
	}
	r.awaitN4Sessions(t, 1)

	// The SMF restarts: it has lost the association and the session.
	setups := len(sm.SetupRequests())
	sm.Restart()
	r.awaitN4Sessions(t, 0)
	eventually(t, programTimeout, "the association set up again", func() error {
		if n := len(sm.SetupRequests()); n <= setups {
			return fmt.Errorf("no Association Setup Request since the restart")
		}
		if a := associated(); a == nil || !a.SMFRecoveryTimeStamp.Time.Equal(sm.Recovery) {
			return fmt.Errorf("association %+v, want the SMF's new Recovery Time Stamp %v", a, sm.Recovery)
		}
		return nil
	})

	// The UPF leaves N4.
	if _, err := sm.Establish(ctx, alice()); err != nil {
		t.Fatal(err)
	}
	r.awaitN4Sessions(t, 1)
	sm.ReleaseWhenAsked(true)
	r.leaveN4(t)
	eventually(t, programTimeout, "the UPF's request to release, then the SMF's release", func() error {
		u := sm.UpdateRequests()
		if len(u) != 1 || !smf.ReleaseRequested(u[0]) {
			return fmt.Errorf("%d Association Update Requests, want one with SARR", len(u))
		}
		if n := len(r.n4Sessions(t)); n != 0 {
			return fmt.Errorf("%d sessions left", n)
		}
		return nil
	})
	// The endpoint sends whatever it sends while leaving before it stops: once its port is free,
	// there is nothing more to come.
	eventually(t, programTimeout, "the N4 endpoint stopped", func() error {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(r.n4))
		if err != nil {
			return err
		}
		return c.Close()
	})
	for _, b := range sm.Received() {
		if len(b) > 1 && b[1] == message.MsgTypeAssociationReleaseRequest {
			t.Errorf("the UPF sent an Association Release Request though the SMF released the association")
		}
	}

	tshark, err := exec.LookPath("tshark")
	testenv.Require(t, "tshark (hack/tools.sh tshark installs it; make test does, as root)", err)
	got := sm.Received()
	decoded, problems, _ := dissect(t, tshark, got)
	if decoded != len(got) || len(problems) > 0 {
		t.Errorf("tshark decoded %d of %d messages as PFCP, with problems:\n  %s", decoded, len(got), strings.Join(problems, "\n  "))
	}
}
