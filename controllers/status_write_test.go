package controllers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
)

// TestStaleStatusWriteNeverErasesAgentStatus is the race the operator loses to the UE agent,
// made deterministic: the operator holds a copy of a session read before the agent's status
// write (as its cache may, for a moment) and writes its own condition from it. The operator
// writes the whole status, so an unlocked write would put the agent's AgentReady and
// status.agent back to what the stale copy had (here: nothing). writeStatus must refuse with a
// conflict instead, and a write from a fresh copy must keep the agent's fields, owned by the
// agent's field manager (else the agent's next apply would fight the operator for them). Runs
// against a real API server.
func TestStaleStatusWriteNeverErasesAgentStatus(t *testing.T) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Stop() })
	scheme := runtime.NewScheme()
	if err := junctionv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	s := &junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a1"},
		Spec: junctionv1.ATSSSSessionSpec{
			UE:             junctionv1.UE{SUPI: "imsi-001010000000001", NodeName: "ue-node-a"},
			SessionAddress: "10.60.0.1",
			UPFRef:         junctionv1.LocalObjectReference{Name: "upf"},
			AccessLegs:     junctionv1.AccessLegs{NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.11"}},
		},
	}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	stale := s.DeepCopy() // the operator's view, from before the agent's write

	agent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": junctionv1.GroupVersion.String(), "kind": "ATSSSSession",
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace},
		"status": map[string]any{
			"agent": map[string]any{"nodeName": "ue-node-a", "interface": "jx0a3c0001"},
			"conditions": []any{map[string]any{
				"type": junctionv1.ConditionAgentReady, "status": "True", "reason": "TunnelUp", "message": "both legs up",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
		},
	}}
	if err := c.Status().Patch(ctx, agent, client.Apply, client.FieldOwner(junctionv1.FieldManagerUEAgent), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	agentFieldsIntact := func(what string) {
		t.Helper()
		got := &junctionv1.ATSSSSession{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, junctionv1.ConditionAgentReady)
		if cond == nil || cond.Message != "both legs up" || got.Status.Agent == nil || got.Status.Agent.Interface != "jx0a3c0001" {
			t.Fatalf("%s: AgentReady %+v, status.agent %+v: the agent's fields were erased", what, cond, got.Status.Agent)
		}
	}

	// The operator writes Programmed from its stale copy: refused, nothing erased.
	before := stale.DeepCopy()
	setCondition(&stale.Status.Conditions, stale.Generation, junctionv1.ConditionProgrammed, true, "Programmed", "2 entries")
	err = writeStatus(ctx, c, &before.Status, &stale.Status, stale)
	if !apierrors.IsConflict(err) {
		t.Fatalf("write from a stale copy: %v, want a conflict", err)
	}
	agentFieldsIntact("after the stale write")

	// The retry reads again and succeeds, keeping the agent's fields beside the operator's.
	fresh := &junctionv1.ATSSSSession{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), fresh); err != nil {
		t.Fatal(err)
	}
	before = fresh.DeepCopy()
	setCondition(&fresh.Status.Conditions, fresh.Generation, junctionv1.ConditionProgrammed, true, "Programmed", "2 entries")
	if err := writeStatus(ctx, c, &before.Status, &fresh.Status, fresh); err != nil {
		t.Fatalf("write from a fresh copy: %v", err)
	}
	agentFieldsIntact("after the fresh write")
	got := &junctionv1.ATSSSSession{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, junctionv1.ConditionProgrammed) {
		t.Fatalf("the operator's Programmed condition was not written: %+v", got.Status.Conditions)
	}
	for _, m := range got.ManagedFields {
		if m.Manager != junctionv1.FieldManagerUEAgent && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:agent"`) {
			t.Fatalf("field manager %q (%s) took status.agent from the agent: %s", m.Manager, m.Operation, m.FieldsV1.Raw)
		}
	}
}
