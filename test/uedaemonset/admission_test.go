package uedaemonset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
)

// policyTimeout bounds how long the API server takes to load a new admission policy.
const policyTimeout = 10 * time.Second

// TestAgentWritesOnlyItsNodesAgentStatus installs the base's RBAC and admission policy for real
// and writes as the agent does, with the token the kubelet would give its pod: a TokenRequest
// bound to a pod on node ue-node-a, which carries the node's name. The agent may write
// status.agent and AgentReady of that node's sessions; it is refused another node's session,
// the operator's status fields (the index allocations the operator restores from), other
// conditions, and everything with a token bound to no pod.
func TestAgentWritesOnlyItsNodesAgentStatus(t *testing.T) {
	ctx := context.Background()
	install(t, "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")

	ns := "admission"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	mine, theirs := sessionOn(t, ns, "ue-node-a"), sessionOn(t, ns, "ue-node-b")
	// The operator's allocation, as it records it.
	mine.Status.UserIndex = ptr(int32(3))
	if err := k8s.Status().Update(ctx, mine); err != nil {
		t.Fatal(err)
	}

	agent := agentClient(t, podToken(t, "ue-node-a"))
	unbound := agentClient(t, token(t, nil))

	testenv.Eventually(t, policyTimeout, "the agent refused another node's session", func() error {
		return refused(applyStatus(ctx, agent, theirs, agentStatus("ue-node-a")))
	})
	for _, tc := range []struct {
		name   string
		c      client.Client
		s      *junctionv1.ATSSSSession
		status map[string]any
		want   bool // allowed
	}{
		{"its node's session: status.agent and AgentReady", agent, mine, agentStatus("ue-node-a"), true},
		{"another node's session", agent, theirs, agentStatus("ue-node-a"), false},
		{"its node's session with a token bound to no pod", unbound, mine, agentStatus("ue-node-a"), false},
		{"a user index", agent, mine, with(agentStatus("ue-node-a"), "userIndex", int64(0)), false},
		{"a sequence index", agent, mine, with(agentStatus("ue-node-a"), "sequenceIndex", int64(7)), false},
		{"a usage index", agent, mine, with(agentStatus("ue-node-a"), "usageIndex", int64(7)), false},
		{"a tunnel peer index", agent, mine, with(agentStatus("ue-node-a"), "tunnelPeerIndex", int64(7)), false},
		{"another condition", agent, mine, with(agentStatus("ue-node-a"), "conditions", []any{
			condition(junctionv1.ConditionAgentReady), condition(junctionv1.ConditionProgrammed)}), false},
	} {
		err := applyStatus(ctx, tc.c, tc.s, tc.status)
		if tc.want && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if !tc.want && refused(err) != nil {
			t.Errorf("%s: %v", tc.name, refused(err))
		}
	}

	got := &junctionv1.ATSSSSession{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(mine), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.UserIndex == nil || *got.Status.UserIndex != 3 || got.Status.Agent == nil {
		t.Errorf("status after the agent's writes: userIndex %v, agent %+v; want 3 and the agent's view", got.Status.UserIndex, got.Status.Agent)
	}
	// Its spec, and creating or deleting sessions, RBAC already refuses.
	if err := agent.Delete(ctx, mine); !apierrors.IsForbidden(err) {
		t.Errorf("the agent deleting a session: %v, want Forbidden", err)
	}
}

// sessionOn creates a session of config/samples on node in ns.
func sessionOn(t *testing.T, ns, node string) *junctionv1.ATSSSSession {
	t.Helper()
	objs, err := testenv.Samples(scheme.Scheme, ns, "127.0.0.1:9559")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if s, ok := o.(*junctionv1.ATSSSSession); ok {
			s.Name, s.Spec.UE.NodeName = "on-"+node, node
			create(t, s)
			return s
		}
	}
	t.Fatal("config/samples has no session")
	return nil
}

// podToken is the token the kubelet gets for the agent's pod on node: bound to the pod, so it
// carries the node's name. The node and the pod are only objects here (no kubelet runs them).
func podToken(t *testing.T, node string) string {
	t.Helper()
	create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: agentName + "-" + node},
		Spec: corev1.PodSpec{
			ServiceAccountName: agentName, NodeName: node,
			Containers: []corev1.Container{{Name: "ue-agent", Image: "junction"}},
		},
	}
	create(t, pod)
	return token(t, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
}

// install applies the base's objects of these kinds for real, until the test ends.
func install(t *testing.T, kinds ...string) {
	t.Helper()
	ctx := context.Background()
	objs := build(t)
	for _, kind := range kinds {
		for _, o := range objs {
			if o.GetKind() != kind {
				continue
			}
			obj := o.DeepCopy()
			if err := k8s.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(fieldOwner)); err != nil {
				t.Fatalf("apply %s: %v", kind, err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
		}
	}
}

// token requests a token of the agent's ServiceAccount, bound to obj when not nil.
func token(t *testing.T, obj *authenticationv1.BoundObjectReference) string {
	t.Helper()
	return tokenOf(t, agentName, obj)
}

// tokenOf requests a token of ServiceAccount name in the base's namespace.
func tokenOf(t *testing.T, name string, obj *authenticationv1.BoundObjectReference) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: obj}}
	if err := k8s.SubResource("token").Create(context.Background(), sa, tr); err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	return tr.Status.Token
}

// agentClient talks to the API server with a bearer token and nothing else.
func agentClient(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := &rest.Config{Host: k8sConfig.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: k8sConfig.CAData}}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// agentStatus is what the agent applies (internal/ueagent/report_linux.go): status.agent and the
// AgentReady condition.
func agentStatus(node string) map[string]any {
	return map[string]any{
		"agent":      map[string]any{"nodeName": node, "interface": "jx0a3c0001", "observedGeneration": int64(1)},
		"conditions": []any{condition(junctionv1.ConditionAgentReady)},
	}
}

func condition(typ string) map[string]any {
	return map[string]any{
		"type": typ, "status": "True", "reason": "TunnelUp", "message": "up", "observedGeneration": int64(1),
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}
}

func with(m map[string]any, k string, v any) map[string]any { m[k] = v; return m }

func ptr[T any](v T) *T { return &v }

// applyStatus server-side applies status to s under the agent's field manager, as the agent does.
func applyStatus(ctx context.Context, c client.Client, s *junctionv1.ATSSSSession, status map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": junctionv1.GroupVersion.String(), "kind": "ATSSSSession",
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace},
		"status":   status,
	}}
	return c.Status().Patch(ctx, u, client.Apply, client.FieldOwner(junctionv1.FieldManagerUEAgent), client.ForceOwnership)
}

// refused is nil when err is the admission policy's refusal.
func refused(err error) error {
	if err == nil {
		return fmt.Errorf("allowed, want refused by the admission policy")
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		return fmt.Errorf("refused by something else than the admission policy: %v", err)
	}
	return nil
}

// create creates obj as the cluster admin and deletes it when the test ends.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
}
