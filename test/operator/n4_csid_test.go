package operator

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"

	"github.com/junction-atsss/junction/internal/smf"
)

// TestN4SessionSetDeletion: an SMF that tags its sessions with FQ-CSIDs (partial failure
// handling, TS 23.007 and TS 29.244 §7.4.6) gets the UPF's FQ-CSID back on each, and deletes the
// sessions of a failed part of itself with one Session Set Deletion Request: those whose
// FQ-CSID shares a CSID with the request go, objects and entries, and every other stays; a set
// no session is in deletes nothing; an SMF without an association is refused (72), and so is a
// request without an FQ-CSID (67).
func TestN4SessionSetDeletion(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	sets := map[string][]uint16{"a": {1}, "b": {1, 2}, "c": {3}, "untagged": nil}
	est := map[string]*smf.Established{}
	addr := map[string]string{}
	for i, name := range []string{"a", "b", "c", "untagged"} {
		s := benchSession(i)
		s.CSIDs = sets[name]
		e, err := r.smf.Establish(ctx, s)
		if err != nil {
			t.Fatalf("session %s: %v", name, err)
		}
		est[name], addr[name] = e, s.UEAddr.String()
		up := e.Resp.Find(ie.FQCSID)
		if name == "untagged" {
			if up != nil {
				t.Fatal("the UPF answered an FQ-CSID to a session that came without one")
			}
			continue
		}
		if up == nil {
			t.Fatalf("session %s: no UPF FQ-CSID in the Establishment Response", name)
		}
		// The UPF's: its N4 address (the UP F-SEID's), one CSID for the whole UPF.
		if want := ie.NewFQCSID("127.0.0.1", 1); string(up.Payload) != string(want.Payload) {
			t.Fatalf("session %s: UPF FQ-CSID % x, want % x (127.0.0.1, CSID 1)", name, up.Payload, want.Payload)
		}
	}
	r.awaitN4Sessions(t, 4)
	remaining := func(want ...string) {
		t.Helper()
		var wantAddrs []string
		for _, n := range want {
			wantAddrs = append(wantAddrs, addr[n])
		}
		slices.Sort(wantAddrs)
		eventually(t, programTimeout, fmt.Sprintf("sessions %v alone as objects", want), func() error {
			var got []string
			for _, o := range r.n4Sessions(t) {
				got = append(got, string(o.Spec.SessionAddress))
			}
			slices.Sort(got)
			if !slices.Equal(got, wantAddrs) {
				return fmt.Errorf("objects of %v", got)
			}
			return nil
		})
		for name, e := range est {
			m, err := r.smf.Modify(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if gone := !slices.Contains(want, name); (m.Cause() == ie.CauseSessionContextNotFound) != gone {
				t.Errorf("a modification of session %s (deleted: %v): cause %d", name, gone, m.Cause())
			}
		}
	}
	deleteSets := func(what string, want uint8, fqcsids ...*ie.IE) {
		t.Helper()
		m, err := r.smf.DeleteSets(ctx, fqcsids...)
		if err != nil {
			t.Fatalf("Session Set Deletion of %s: %v", what, err)
		}
		if m.Cause() != want {
			t.Fatalf("Session Set Deletion of %s: cause %d (%s); want %d", what, m.Cause(), why(m), want)
		}
		if x := m.Find(ie.NodeID); x == nil {
			t.Fatalf("Session Set Deletion of %s: the response has no Node ID", what)
		}
	}

	deleteSets("CSID 2", ie.CauseRequestAccepted, r.smf.FQCSID(2))
	remaining("a", "c", "untagged")
	deleteSets("CSID 9, which no session is in", ie.CauseRequestAccepted, r.smf.FQCSID(9))
	deleteSets("another node's CSID 3", ie.CauseRequestAccepted, ie.NewFQCSID("192.0.2.99", 3))
	remaining("a", "c", "untagged")
	// Another SMF, at the same address: its sets are its own sessions'.
	other, err := smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), r.n4, "other.test.example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if m, err := other.Associate(ctx); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a second SMF's Association Setup: %v", err)
	}
	if m, err := other.DeleteSets(ctx, other.FQCSID(1, 3)); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a second SMF's Session Set Deletion: %v", err)
	}
	remaining("a", "c", "untagged")
	deleteSets("CSIDs 1 and 3", ie.CauseRequestAccepted, r.smf.FQCSID(1, 3))
	remaining("untagged")

	deleteSets("no FQ-CSID", ie.CauseConditionalIEMissing)
	var m *smf.Response
	var stranger *smf.Client
	stranger, err = smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), r.n4, "stranger.test.example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Close() })
	m, err = stranger.DeleteSets(ctx, stranger.FQCSID(1))
	if err != nil {
		t.Fatal(err)
	}
	if m.Cause() != ie.CauseNoEstablishedPFCPAssociation {
		t.Fatalf("Session Set Deletion from an SMF without an association: cause %d; want 72", m.Cause())
	}
	remaining("untagged")
}
