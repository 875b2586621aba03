package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
)

// TestN4PFDManagement: an SMF provisions the PFDs of an application (PFD Management, TS 29.244
// §6.2.5) that no SteeringPolicy describes. Before, a session whose PDR names it is refused
// (81); after, it is accepted and its PDR detects the application by the PFD's flow
// description: the session selects a policy with that traffic descriptor. New PFDs move the
// session to them; the PFDs are in status.n4.pfds and outlive an operator restart. PFDs whose
// contents Junction cannot detect are refused (76, PFD Contents), and so is an SMF without an
// association (72).
func TestN4PFDManagement(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	s := alice()
	s.Apps = []smf.App{{ApplicationID: "video", Precedence: 100, Steering: smf.Steering{Mode: smf.LoadBalancing, Weight3GPP: 70}}}
	if _, err := r.smf.Establish(ctx, s); err == nil {
		t.Fatal("a session naming an application nothing describes was accepted")
	}
	provide := func(what string, want uint8, apps map[string][]string) {
		t.Helper()
		m, err := r.smf.ProvidePFDs(ctx, apps)
		if err != nil {
			t.Fatalf("PFDs %s: %v", what, err)
		}
		if m.Cause() != want {
			t.Fatalf("PFDs %s: cause %d (%s), want %d", what, m.Cause(), why(m), want)
		}
	}
	const udpVideo = "permit out 17 from 198.51.100.0/24 to assigned 5000-5100"
	provide("of video", ie.CauseRequestAccepted, map[string][]string{"video": {udpVideo}})
	if got := r.n4Status(t).PFDs; len(got) != 1 || got[0].ApplicationID != "video" || !slices.Equal(got[0].FlowDescriptions, []string{udpVideo}) {
		t.Fatalf("status.n4.pfds %+v after the answer, want video's one flow description", got)
	}
	if _, err := r.smf.Establish(ctx, s); err != nil {
		t.Fatalf("the session naming video once its PFDs are provisioned: %v", err)
	}
	// The policy each of n sessions selects for video: the flow description's traffic
	// descriptor, seen from the UE (docs/api.md): the server's side is the destination.
	selected := func(n int, td junctionv1.TrafficDescriptor) {
		t.Helper()
		want, _ := json.Marshal(td)
		eventually(t, programTimeout, fmt.Sprintf("%d sessions selecting a policy of %s", n, want), func() error {
			objs := r.n4Sessions(t)
			if len(objs) != n {
				return fmt.Errorf("%d sessions", len(objs))
			}
		sessions:
			for _, o := range objs {
				var got []string
				for _, ref := range o.Spec.PolicyRefs {
					var p junctionv1.SteeringPolicy
					if err := k8s.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: ref.Name}, &p); err != nil {
						return err
					}
					b, _ := json.Marshal(p.Spec.TrafficDescriptor)
					if string(b) == string(want) && p.Spec.Precedence == 100 {
						continue sessions
					}
					got = append(got, fmt.Sprintf("%s: %s at %d", ref.Name, b, p.Spec.Precedence))
				}
				return fmt.Errorf("%s selects %v", o.Spec.SessionAddress, got)
			}
			return nil
		})
	}
	to := int32(5100)
	selected(1, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, DestinationPrefixes: []junctionv1.IPv4Prefix{"198.51.100.0/24"},
		SourcePorts: []junctionv1.PortRange{{From: 5000, To: &to}}})

	const tcpVideo = "permit out 6 from 203.0.113.0/24 443 to assigned"
	provide("of video, new", ie.CauseRequestAccepted, map[string][]string{"video": {tcpVideo}})
	tcp := junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolTCP, DestinationPrefixes: []junctionv1.IPv4Prefix{"203.0.113.0/24"},
		DestinationPorts: []junctionv1.PortRange{{From: 443}}}
	selected(1, tcp)
	// What a new leader restores the session from (its object's N4 state) has them too.
	eventually(t, programTimeout, "the session's saved N4 state with the new PFDs", func() error {
		if st := r.n4Sessions(t)[0].Annotations["atsss.junction.dev/n4-session"]; !strings.Contains(st, tcpVideo) || strings.Contains(st, udpVideo) {
			return fmt.Errorf("atsss.junction.dev/n4-session %s", st)
		}
		return nil
	})

	eventually(t, programTimeout, "every session saved", func() error { // else a restart is one the SMFs must hear of
		if u := r.n4Status(t).UnsavedSince; u != nil {
			return fmt.Errorf("status.n4.unsavedSince %s", u)
		}
		return nil
	})
	r.op.stop()
	r.op = startOperator(t, r.ns, operatorOptions{})
	bob := benchSession(5)
	bob.Apps = s.Apps
	eventually(t, programTimeout, "a second session naming video after an operator restart", func() error {
		_, err := r.smf.Establish(ctx, bob)
		return err
	})

	m, err := r.smf.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewPFDManagementRequest(seq, ie.NewNodeIDHeuristic(r.smf.NodeID), ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.NewPFDContents("", "", "video.example", "", "", nil, nil, nil)))).Marshal()
	})
	if err != nil || m.Cause() != ie.CauseServiceNotSupported || why(m) != "offending IE 61" {
		t.Fatalf("PFDs by domain name: %v, cause %d (%s); want 76, offending IE 61 (PFD Contents)", err, m.Cause(), why(m))
	}
	stranger, err := smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), r.n4, "stranger.test.example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Close() })
	if m, err := stranger.ProvidePFDs(ctx, map[string][]string{"video": {udpVideo}}); err != nil || m.Cause() != ie.CauseNoEstablishedPFCPAssociation {
		t.Fatalf("PFDs from an SMF without an association: %v; want cause 72", err)
	}
	if got := r.n4Status(t).PFDs; len(got) != 1 || !slices.Equal(got[0].FlowDescriptions, []string{tcpVideo}) {
		t.Fatalf("status.n4.pfds %+v after two refused requests, want video's TCP flow description", got)
	}
	selected(2, tcp) // bob's too
	provide("of none (every PFD removed)", ie.CauseRequestAccepted, nil)
	if got := r.n4Status(t).PFDs; len(got) != 0 {
		t.Fatalf("status.n4.pfds %+v after every PFD was removed", got)
	}
	// No SteeringPolicy named video to fall back on: both keep the PFDs they had, with an event.
	eventually(t, programTimeout, "an N4PFDsNotApplied event", func() error { return findEvent(r.ns, r.upf.Name, corev1.EventTypeWarning, "N4PFDsNotApplied") })
	selected(2, tcp)
	if _, err := r.smf.Establish(ctx, benchSession(6)); err != nil {
		t.Fatalf("a session naming no application after the PFDs went: %v", err)
	}
	s3 := benchSession(7)
	s3.Apps = s.Apps
	if _, err := r.smf.Establish(ctx, s3); err == nil {
		t.Fatal("a new session naming video was accepted after its PFDs were removed")
	}
}
