package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hookArgs returns the helm test Pod's args and the operator's, rendered with args.
func hookArgs(t *testing.T, args ...string) (objs map[string]*unstructured.Unstructured, check, operator []string) {
	t.Helper()
	objs = render(t, args...)
	get := func(name string) []string {
		o := objs[name]
		if o == nil {
			return nil
		}
		path := []string{"spec", "template", "spec", "containers"}
		if o.GetKind() == "Pod" {
			path = []string{"spec", "containers"}
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, path...)
		var out []string
		for _, a := range cs[0].(map[string]any)["args"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}
	return objs, get("Pod/j-junction-check"), get("Deployment/j-junction-operator")
}

// helm test runs /manager check (internal/installcheck) in a Pod hooked to `helm test`, for the
// operator's own Deployment and Lease; with leader election off it checks the Deployment alone.
// The rendered command, run as the hook's ServiceAccount against a real API server with the
// chart installed, fails while no operator leads and passes once one does: the hook's RBAC is
// enough, and its flags are the binary's.
func TestHelmTestChecksTheOperator(t *testing.T) {
	objs, check, operator := hookArgs(t)
	pod := objs["Pod/j-junction-check"]
	if pod == nil {
		t.Fatalf("no helm test Pod; rendered %v", names(objs))
	}
	if pod.GetAnnotations()["helm.sh/hook"] != "test" {
		t.Errorf("the check Pod's annotations %v, want helm.sh/hook: test", pod.GetAnnotations())
	}
	var lease string
	for _, a := range operator {
		if v, ok := strings.CutPrefix(a, "--leader-election-id="); ok {
			lease = v
		}
	}
	for _, want := range []string{"check", "--namespace=junction-system", "--deployment=j-junction-operator", "--lease=" + lease} {
		if lease == "" || !slices.Contains(check, want) {
			t.Errorf("the check's args %v lack %s (the operator's: %v)", check, want, operator)
		}
	}
	if _, noElection, _ := hookArgs(t, "--set", "operator.replicas=1", "--set", "operator.leaderElection=false"); !slices.Contains(noElection, "--lease=") {
		t.Errorf("with leader election off the check's args are %v, want --lease= (the Deployment alone)", noElection)
	}
	if off, _, _ := hookArgs(t, "--set", "helmTest.enabled=false"); off["Pod/j-junction-check"] != nil {
		t.Error("helmTest.enabled=false renders the check Pod")
	}

	manager := filepath.Join(t.TempDir(), "manager")
	if out, err := exec.Command("go", "build", "-o", manager, filepath.Join(root, "cmd", "manager")).CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/manager: %v\n%s", err, out)
	}
	c := startCluster(t, filepath.Join(root, "config", "crd", "bases"))
	ctx := context.Background()
	if err := c.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "junction-system"}}); err != nil {
		t.Fatal(err)
	}
	for name, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] == "test" && o.GetKind() != "Pod" {
			if err := c.k8s.Create(ctx, o); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	// The check passes the restricted Pod Security level, as the operator does: it may run beside it.
	if err := c.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	probe := pod.DeepCopy()
	probe.SetNamespace("restricted")
	unstructured.RemoveNestedField(probe.Object, "spec", "serviceAccountName")
	if err := c.k8s.Create(ctx, probe, client.DryRunAll); err != nil {
		t.Errorf("the check Pod in a restricted namespace: %v", err)
	}

	// The hook Pod's identity: its ServiceAccount, impersonated.
	kc, err := clientcmd.LoadFromFile(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		u.Impersonate = "system:serviceaccount:junction-system:" + pod.Object["spec"].(map[string]any)["serviceAccountName"].(string)
	}
	asHook := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, asHook); err != nil {
		t.Fatal(err)
	}
	runCheck := func() (string, error) {
		cmd := exec.Command(manager, append(check, "--timeout=1s", "--interval=100ms")...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+asHook)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := runCheck(); err == nil || !strings.Contains(out, "no operator has led yet") || strings.Contains(out, "forbidden") {
		t.Errorf("no operator: %v, want a failure naming the missing Lease (and no RBAC refusal):\n%s", err, out)
	}
	// The Lease as a leading operator renews it (internal/installcheck runs a real leader election).
	if err := c.k8s.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "junction-system", Name: lease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("j-junction-operator-0"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := runCheck(); err != nil || !strings.Contains(out, "Junction works") {
		t.Errorf("an operator leading: %v, want success:\n%s", err, out)
	}
}
