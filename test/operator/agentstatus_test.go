package operator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// applyAgentStatus writes what the UE agent writes (internal/ueagent/report_linux.go): status.agent
// and the AgentReady condition, by server-side apply under the agent's field manager.
func applyAgentStatus(ctx context.Context, s *junctionv1.ATSSSSession, n int) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": junctionv1.GroupVersion.String(),
		"kind":       "ATSSSSession",
		"metadata":   map[string]any{"name": s.Name, "namespace": s.Namespace},
		"status": map[string]any{
			"agent": map[string]any{
				"nodeName": "ue-node-a", "interface": "jx0a3c0001", "observedGeneration": int64(1),
				"legs": []any{map[string]any{"access": "3GPP", "state": "Up", "interface": "ran0", "rtt": fmt.Sprintf("%dus", 400+n)}},
			},
			"conditions": []any{map[string]any{
				"type": junctionv1.ConditionAgentReady, "status": "True", "reason": "TunnelUp",
				"message": fmt.Sprintf("write %d", n), "observedGeneration": int64(1),
				"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
			}},
		},
	}}
	return k8s.Status().Patch(ctx, u, client.Apply, client.FieldOwner(junctionv1.FieldManagerUEAgent), client.ForceOwnership)
}

// agentWrite reads back the number of the agent's last write from the session, -1 when its
// condition or status.agent is gone.
func agentWrite(ctx context.Context, s *junctionv1.ATSSSSession) (int, error) {
	got := &junctionv1.ATSSSSession{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
		return 0, err
	}
	c := meta.FindStatusCondition(got.Status.Conditions, junctionv1.ConditionAgentReady)
	if c == nil || got.Status.Agent == nil || len(got.Status.Agent.Legs) != 1 {
		return -1, nil
	}
	var n int
	if _, err := fmt.Sscanf(c.Message, "write %d", &n); err != nil {
		return 0, err
	}
	if want := junctionv1.Duration(fmt.Sprintf("%dus", 400+n)); got.Status.Agent.Legs[0].RTT != want {
		return -1, nil // the condition is the agent's last but status.agent is not
	}
	return n, nil
}

// agentWriteInterval paces the test's agent: fast enough to race every operator write.
const agentWriteInterval = 20 * time.Millisecond

// TestOperatorNeverErasesAgentStatus runs the real operator against a UE agent that keeps
// writing its status fields while the session's spec changes make the operator rewrite its own
// status (conditions included). Between two agent writes the session must still show the
// agent's last one (an operator write from a stale copy would put an older AgentReady back: the
// operator writes the whole status), and the operator must keep converging: its status writes
// are locked to the version it read (controllers/conditions.go), and a conflict must lead to a
// retry that succeeds, never to a stalled status. The deterministic form of the race, a write
// from a copy known to be stale, is controllers' TestStaleStatusWriteNeverErasesAgentStatus.
func TestOperatorNeverErasesAgentStatus(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	cm, _ := pipelineConfigMap(t, ns, "pipeline", nil)
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	grantDevice(t, upf)
	create(t, cm, upf)
	startOperator(t, ns, operatorOptions{})
	voice := activeStandbyPolicy(ns, "voice", 20, "198.18.20.0/24")
	video := loadBalancePolicy(ns, "video", 10, 30, "198.18.10.0/24")
	create(t, voice, video)
	s := session(ns, "a1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10", "voice")
	create(t, s)
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")

	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		last    atomic.Int64
		failure atomic.Pointer[string]
	)
	last.Store(-1)
	wg.Add(1)
	go func() { // the agent, 50 times faster than its 1 s floor (--min-status-interval)
		defer wg.Done()
		for n := 0; !stop.Load(); n++ {
			time.Sleep(agentWriteInterval)
			// Between two agent writes only the operator writes: the session must still show
			// the agent's last one.
			if got, err := agentWrite(ctx, s); err == nil && n > 0 && got < n-1 {
				msg := fmt.Sprintf("after the agent's write %d the session shows write %d (-1: gone): the operator erased it", n-1, got)
				failure.Store(&msg)
				return
			}
			if err := applyAgentStatus(ctx, s, n); err != nil {
				msg := fmt.Sprintf("agent apply %d: %v", n, err)
				failure.Store(&msg)
				return
			}
			last.Store(int64(n))
		}
	}()

	// The operator rewrites its status on every spec change: policies swap, so the steering,
	// lookup and conditions it reports change each time.
	const changes = 20
	for i := 0; i < changes && failure.Load() == nil; i++ {
		cur := &junctionv1.ATSSSSession{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
			t.Fatal(err)
		}
		p := "video"
		if i%2 == 1 {
			p = "voice"
		}
		base := cur.DeepCopy()
		cur.Spec.PolicyRefs = []junctionv1.LocalObjectReference{{Name: p}}
		if err := k8s.Patch(ctx, cur, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
		gen := cur.Generation
		eventually(t, programTimeout, fmt.Sprintf("operator status for generation %d", gen), func() error {
			got := &junctionv1.ATSSSSession{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
				return err
			}
			if got.Status.ObservedGeneration != gen || !meta.IsStatusConditionTrue(got.Status.Conditions, junctionv1.ConditionProgrammed) {
				return fmt.Errorf("observedGeneration %d, conditions %+v", got.Status.ObservedGeneration, got.Status.Conditions)
			}
			return nil
		})
	}
	stop.Store(true)
	wg.Wait()
	if f := failure.Load(); f != nil {
		t.Fatal(*f)
	}
	if got, err := agentWrite(ctx, s); err != nil || got != int(last.Load()) {
		t.Fatalf("the session shows the agent's write %d (%v), want its last, %d", got, err, last.Load())
	}
	if last.Load() < changes {
		t.Fatalf("the agent wrote only %d times during %d operator rewrites: no race was run", last.Load()+1, changes)
	}
}
