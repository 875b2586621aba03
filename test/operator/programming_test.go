package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// TestSessionsAndPoliciesAreProgrammedExactly creates, updates and deletes policies and sessions
// and checks after each step that the UPF holds exactly the entries the objects call for.
func TestSessionsAndPoliciesAreProgrammedExactly(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	grantDevice(t, upf)
	create(t, cm, upf)
	startOperator(t, ns, operatorOptions{})
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	lb := loadBalancePolicy(ns, "video", 10, 30, "198.18.10.0/24")
	as := activeStandbyPolicy(ns, "voice", 20, "198.18.20.0/24")
	create(t, lb, as)
	waitCondition(t, programTimeout, lb, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, programTimeout, as, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	// Two sessions of one UE (one user index), one of another UE behind the same gNB (one
	// tunnel peer), the first an exception (a load-balance policy needs a sequence counter).
	a1 := session(ns, "a1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10", "video")
	a2 := session(ns, "a2", "imsi-001010000000001", "10.60.0.2", "upf", "n", "", "voice")
	b1 := session(ns, "b1", "imsi-001010000000002", "10.60.0.3", "upf", "3n", "198.51.100.10", "voice")
	create(t, a1, a2, b1)
	for _, s := range []*junctionv1.ATSSSSession{a1, a2, b1} {
		waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
		waitCondition(t, programTimeout, s, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	}
	eventually(t, programTimeout, "entries after create", func() error { return sameEntries(u, sch, ns, "upf") })

	get := func(s *junctionv1.ATSSSSession) *junctionv1.ATSSSSession {
		t.Helper()
		out := &junctionv1.ATSSSSession{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ga1, ga2, gb1 := get(a1), get(a2), get(b1)
	if *ga1.Status.UserIndex != *ga2.Status.UserIndex {
		t.Errorf("sessions of one SUPI have user indexes %d and %d, want one", *ga1.Status.UserIndex, *ga2.Status.UserIndex)
	}
	if *ga1.Status.UserIndex == *gb1.Status.UserIndex {
		t.Errorf("two SUPIs share user index %d", *ga1.Status.UserIndex)
	}
	if ga1.Status.TunnelPeerIndex == nil || gb1.Status.TunnelPeerIndex == nil || *ga1.Status.TunnelPeerIndex != *gb1.Status.TunnelPeerIndex {
		t.Errorf("sessions behind one gNB have tunnel peers %v and %v, want one", ga1.Status.TunnelPeerIndex, gb1.Status.TunnelPeerIndex)
	}
	if ga1.Status.Lookup != junctionv1.LookupException || ga1.Status.SequenceIndex == nil {
		t.Errorf("load-balanced session: lookup %q, sequence index %v; want Exception with an index", ga1.Status.Lookup, ga1.Status.SequenceIndex)
	}
	if ga2.Status.Lookup != junctionv1.LookupSummarized || ga2.Status.SequenceIndex != nil {
		t.Errorf("active-standby session: lookup %q, sequence index %v; want Summarized without one", ga2.Status.Lookup, ga2.Status.SequenceIndex)
	}
	entries := mustEntries(t, u, sch)
	if n := countTable(entries, "tunnel_peers"); n != 1 {
		t.Errorf("%d tunnel_peers entries for one gNB", n)
	}
	if n := countTable(entries, "applications"); n != 2 {
		t.Errorf("%d applications entries for two one-prefix policies (shared by all sessions)", n)
	}
	// Initial path state: 0 (docs/pipeline.md: both legs unavailable until the UE reports them, not
	// suspended), what a pipeline the operator pushed itself starts with; nothing written.
	for _, reg := range pathStateRegisters {
		if v, err := u.register(sch, reg, int64(*ga1.Status.UserIndex)); err != nil || v != 0 {
			t.Errorf("%s[%d] = %d (%v), want 0 (unavailable until reported; not suspended)", reg, *ga1.Status.UserIndex, v, err)
		}
	}
	// The count follows the sessions within a second (sessionCountDelay).
	eventually(t, 10*time.Second, "policy voice counting its 2 sessions", func() error {
		var gp junctionv1.SteeringPolicy
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(as), &gp); err != nil {
			return err
		}
		if gp.Status.Sessions != 2 || gp.Status.ApplicationID == nil {
			return fmt.Errorf("%d sessions, application ID %v; want 2 and an ID", gp.Status.Sessions, gp.Status.ApplicationID)
		}
		return nil
	})

	// Update: a2 moves to the load-balance policy (becomes an exception); the policy's split
	// changes (its applications entry and every override are modified in place).
	patchSession(t, a2, func(s *junctionv1.ATSSSSession) {
		s.Spec.PolicyRefs = []junctionv1.LocalObjectReference{{Name: "video"}}
	})
	eventually(t, programTimeout, "a2 becomes an exception", func() error {
		s := get(a2)
		if s.Status.Lookup != junctionv1.LookupException || s.Status.SequenceIndex == nil || s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("lookup %q, sequence index %v", s.Status.Lookup, s.Status.SequenceIndex)
		}
		return nil
	})
	if *get(a2).Status.SequenceIndex == *get(a1).Status.SequenceIndex {
		t.Errorf("two exception sessions share sequence index %d", *get(a1).Status.SequenceIndex)
	}
	eventually(t, programTimeout, "entries after a2 moved", func() error { return sameEntries(u, sch, ns, "upf") })
	writesBefore := u.writes()
	patchPolicy(t, lb, func(p *junctionv1.SteeringPolicy) { p.Spec.Steering.LoadBalance.ThreeGPPPercent = ptr(int32(75)) })
	eventually(t, programTimeout, "entries after the split changed", func() error {
		if err := sameEntries(u, sch, ns, "upf"); err != nil {
			return err
		}
		for _, e := range mustEntries(t, u, sch) {
			if strings.HasPrefix(e, "session_overrides ") && !strings.Contains(e, "ratio_3gpp=60") {
				return fmt.Errorf("override not modified to 75%% (ratio 96 = 0x60): %s", e)
			}
		}
		return nil
	})
	if u.writes() == writesBefore {
		t.Error("a policy change wrote nothing")
	}

	// Delete: a1 (its gNB is still used by b1), then b1 (the tunnel peer goes), then a policy
	// (its entries go; a2 references it and reports it).
	if err := k8s.Delete(ctx, a1); err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "a1 gone", func() error { return gone(a1) })
	// Junction's finalizer was the last: the status went with the object, the event stays.
	eventually(t, programTimeout, "an EntriesRemoved event for a1", func() error { return findEvent(ns, "a1", "Normal", "EntriesRemoved") })
	eventually(t, programTimeout, "entries after deleting a1", func() error { return sameEntries(u, sch, ns, "upf") })
	if n := countTable(mustEntries(t, u, sch), "tunnel_peers"); n != 1 {
		t.Errorf("%d tunnel_peers entries while b1 still uses its gNB", n)
	}
	// b1 has another finalizer too (a GitOps tool's, say): once its entries are gone it stays
	// with Programmed=False EntriesRemoved until that one goes.
	const hold = "test.junction.dev/hold"
	patchSession(t, b1, func(s *junctionv1.ATSSSSession) { s.Finalizers = append(s.Finalizers, hold) })
	if err := k8s.Delete(ctx, b1); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, b1, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "EntriesRemoved")
	patchSession(t, b1, func(s *junctionv1.ATSSSSession) {
		s.Finalizers = slices.DeleteFunc(s.Finalizers, func(f string) bool { return f == hold })
	})
	eventually(t, programTimeout, "b1 gone and its gNB's tunnel peer removed", func() error {
		if err := gone(b1); err != nil {
			return err
		}
		if n := countTable(mustEntries(t, u, sch), "tunnel_peers"); n != 0 {
			return fmt.Errorf("%d tunnel_peers entries without sessions", n)
		}
		return sameEntries(u, sch, ns, "upf")
	})
	if err := k8s.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "policy video gone", func() error { return gone(lb) })
	eventually(t, programTimeout, "an EntriesRemoved event for the policy", func() error { return findEvent(ns, lb.Name, "Normal", "EntriesRemoved") })
	waitCondition(t, programTimeout, a2, junctionv1.ConditionReady, metav1.ConditionFalse, "PolicyNotFound")
	waitCondition(t, programTimeout, a2, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries after deleting the policy", func() error { return sameEntries(u, sch, ns, "upf") })
	if n := countTable(mustEntries(t, u, sch), "session_overrides"); n != 0 {
		t.Errorf("%d session_overrides left after the load-balance policy went", n)
	}
	eventually(t, programTimeout, "a PolicyNotFound event", func() error { return findEvent(ns, "a2", "Warning", "PolicyNotFound") })
}

func gone(obj client.Object) error {
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err == nil {
		return fmt.Errorf("%s still exists (finalizers %v)", obj.GetName(), obj.GetFinalizers())
	}
	return client.IgnoreNotFound(err)
}

func patchSession(t *testing.T, s *junctionv1.ATSSSSession, f func(*junctionv1.ATSSSSession)) {
	t.Helper()
	cur := &junctionv1.ATSSSSession{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	f(cur)
	if err := k8s.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
}

func patchPolicy(t *testing.T, p *junctionv1.SteeringPolicy, f func(*junctionv1.SteeringPolicy)) {
	t.Helper()
	cur := &junctionv1.SteeringPolicy{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	f(cur)
	if err := k8s.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
}
