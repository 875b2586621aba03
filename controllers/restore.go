package controllers

// Restoring a UPF's allocations and desired state from what the API server records, before
// the runtime is used: a restarted or newly elected operator then neither leaks nor
// duplicates an index, and its first replay finds the device as it wants it (zero writes).

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/programmer"
)

func sessionKey(ns, name string) string { return ns + "/" + name }

func splitKey(k string) types.NamespacedName {
	ns, name, _ := strings.Cut(k, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

// parseOwner splits an owner name into its kind and object.
func parseOwner(o string) (kind string, key types.NamespacedName, ok bool) {
	if o == ownerUPF {
		return ownerUPF, key, true
	}
	kind, rest, found := strings.Cut(o, "/")
	if !found || (kind != "session" && kind != "policy") {
		return "", key, false
	}
	return kind, splitKey(rest), true
}

// restore rebuilds rt's pools from the sessions' status and seeds its programmer with the
// desired entries of the UPF, its policies, tunnel peers and sessions.
func (f *Fleet) restore(ctx context.Context, rt *upfRuntime, upf *junctionv1.UserPlaneFunction) error {
	var sessions junctionv1.ATSSSSessionList
	if err := f.Reader.List(ctx, &sessions, client.InNamespace(upf.Namespace)); err != nil {
		return fmt.Errorf("listing ATSSSSessions: %w", err)
	}
	var policies junctionv1.SteeringPolicyList
	if err := f.Reader.List(ctx, &policies, client.InNamespace(upf.Namespace)); err != nil {
		return fmt.Errorf("listing SteeringPolicies: %w", err)
	}
	var changes []programmer.Change
	// An object whose entries cannot be built is left out of the seed (the first replay deletes
	// what it had on the device) and reconciled again, which reports why on the object itself.
	var unbuilt []string
	var unbuiltSessions, unbuiltPolicies []types.NamespacedName
	if es, err := desired.UPFEntries(upf.Spec); err == nil {
		changes = append(changes, programmer.Change{Owner: ownerUPF, Entries: es})
	} else {
		unbuilt = append(unbuilt, fmt.Sprintf("UserPlaneFunction %s: %v", upf.Name, err))
		f.enqueueUPF(client.ObjectKeyFromObject(upf))
	}
	for i := range policies.Items {
		p := &policies.Items[i]
		if p.DeletionTimestamp != nil || p.Status.ApplicationID == nil {
			continue
		}
		es, err := desired.ApplicationEntries(desired.Policy{Name: p.Name, AppID: uint16(*p.Status.ApplicationID), Spec: p.Spec})
		if err != nil {
			unbuilt = append(unbuilt, fmt.Sprintf("SteeringPolicy %s: %v", p.Name, err))
			unbuiltPolicies = append(unbuiltPolicies, client.ObjectKeyFromObject(p))
			continue
		}
		changes = append(changes, programmer.Change{Owner: policyOwner(p.Namespace, p.Name), Entries: es})
	}
	restored := 0
	for i := range sessions.Items {
		s := &sessions.Items[i]
		if s.Spec.UPFRef.Name != upf.Name {
			continue
		}
		a := rt.restoreSession(s)
		restored++
		if s.DeletionTimestamp != nil {
			continue // its entries go; the delete gate frees its indexes
		}
		sel, _, _ := desired.SelectPolicies(s, policies.Items)
		n, err := sessionNeeds(s, sel)
		if err != nil || !a.complete(n) {
			continue // the reconcile allocates what is missing
		}
		ds, err := buildSession(s, upf, a, sel)
		var es []desired.Entry
		if err == nil {
			es, err = desired.SessionEntries(ds)
		}
		if err != nil {
			unbuilt = append(unbuilt, fmt.Sprintf("ATSSSSession %s: %v", s.Name, err))
			unbuiltSessions = append(unbuiltSessions, client.ObjectKeyFromObject(s))
			continue
		}
		changes = append(changes, programmer.Change{Owner: sessionOwner(s.Namespace, s.Name), Entries: es, Meters: desired.SessionMeters(ds)})
		rt.startBuffering(sessionKey(s.Namespace, s.Name), s) // what it held before the restart is lost
		if err := rt.setForwarding(sessionKey(s.Namespace, s.Name), s, upf); err != nil {
			rt.log.Error(err, "A recorded session's forwarding tunnel is not relayed", "session", s.Name)
		}
		if reads, _ := desired.ReadsRTTComparison(ds); reads && a.supi != "" {
			rt.setReadsComparison(ctx, sessionKey(s.Namespace, s.Name), a.user, true)
		}
	}
	for gnb, idx := range rt.peerIndexes() {
		changes = append(changes, programmer.Change{Owner: peerOwner(gnb), Entries: []desired.Entry{desired.TunnelPeerEntry(idx, netip.MustParseAddr(gnb))}})
	}
	if err := rt.prog.Seed(changes...); err != nil {
		rt.log.Error(err, "Some recorded entries conflict; their objects are reconciled again")
	}
	if len(unbuilt) > 0 {
		rt.log.Error(fmt.Errorf("%s", strings.Join(unbuilt, "; ")), "Recorded objects whose entries cannot be built; reconciling them again", "objects", len(unbuilt))
		f.enqueueSessions(unbuiltSessions)
		f.enqueuePolicies(unbuiltPolicies)
	}
	rt.log.Info("Restored allocations", "sessions", restored, "users", rt.users.Used(), "tunnelPeers", rt.peers.Used(), "sequenceIndexes", rt.seqs.Used(), "owners", len(changes))
	return nil
}

// need is what indexes a session needs on its UPF.
type need struct {
	supi      string
	gnb       string // the gNB address when the session has a 3GPP leg
	exception bool   // a session_overrides entry, so a sequence index
	flows     int    // len(spec.qosFlows): a block of QoS flow cells when any
}

func sessionNeeds(s *junctionv1.ATSSSSession, policies []desired.Policy) (need, error) {
	n := need{supi: s.Spec.UE.SUPI}
	// A session whose downlink buffers or drops may have no gNB yet (its UE is idle, or its
	// gNB has not answered): no tunnel peer.
	if leg := s.Spec.AccessLegs.ThreeGPP; leg != nil && (leg.GNBAddress != "" || leg.Tunnels()) {
		a, err := netip.ParseAddr(string(leg.GNBAddress))
		if err != nil || !a.Is4() {
			return n, fmt.Errorf("accessLegs.threeGPP.gnbAddress: %q is not an IPv4 address", leg.GNBAddress)
		}
		n.gnb = a.String()
	}
	kind, err := desired.Lookup(s.Spec, policies)
	if err != nil {
		return n, err
	}
	n.exception = kind == junctionv1.LookupException
	n.flows = len(s.Spec.QoSFlows)
	return n, nil
}

// complete reports whether the allocation has every index n needs.
func (a sessionAlloc) complete(n need) bool {
	return a.supi == n.supi && a.gnb == n.gnb && (a.gnb == "" || a.peer != 0) && (!n.exception || a.seq != nil) && (n.flows == 0 || a.flows != nil)
}

// buildSession gathers a session's inputs for desired.SessionEntries.
func buildSession(s *junctionv1.ATSSSSession, upf *junctionv1.UserPlaneFunction, a sessionAlloc, policies []desired.Policy) (desired.Session, error) {
	ep, err := upf.TunnelEndpointIndex(s.Spec.TunnelEndpoint)
	if err != nil {
		return desired.Session{}, err
	}
	return desired.Session{
		Name: s.Name, Spec: s.Spec, UserIndex: a.user, EndpointIndex: uint8(ep), // at most 16 endpoints
		PeerIndex: a.peer, SequenceIndex: a.seq, UsageIndex: a.usage, QoSFlowIndex: a.flows, Policies: policies,
	}, nil
}
