package operator

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// TestChartRBACIsEnoughForTheSamples runs the operator as the chart's ServiceAccount
// (impersonation), with only the roles and bindings the chart renders: with leader election it
// programs config/samples (the UPF over mutual TLS from its Secret, every policy and every
// session), and the ServiceAccount is refused what the operator never does.
func TestChartRBACIsEnoughForTheSamples(t *testing.T) {
	ns := newNamespace(t)
	release := ns // cluster-scoped names (ClusterRole, ClusterRoleBinding) start with it: one per test
	sa, secretNS := applyChartRBAC(t, ns, release)
	if !slices.Equal(secretNS, []string{ns}) { // by default, the release's namespace (upfNamespace) alone
		t.Errorf("the chart tells the operator to read Secrets in %v, want [%s]", secretNS, ns)
	}

	u, sch, objs := samplesUPF(t, ns)
	create(t, objs...)
	startOperator(t, ns, operatorOptions{leaseName: "junction-operator", secretNamespaces: secretNS, impersonate: rest.ImpersonationConfig{
		UserName: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}})

	sessions := waitSamplesDone(t, objs)
	if sessions < 4 {
		t.Fatalf("%d sessions in config/samples", sessions)
	}
	if n := countTable(mustEntries(t, u, sch), "sessions"); n != sessions {
		t.Errorf("%d sessions entries on the UPF for %d sessions", n, sessions)
	}

	for _, tc := range []struct {
		verb, group, resource, subresource, namespace string
		allowed                                       bool
	}{
		// What the operator does.
		{"patch", junctionv1.GroupVersion.Group, "atssssessions", "status", ns, true},
		{"update", junctionv1.GroupVersion.Group, "userplanefunctions", "finalizers", ns, true},
		{"watch", "", "secrets", "", ns, true},
		{"create", "events.k8s.io", "events", "", ns, true},
		{"update", "coordination.k8s.io", "leases", "", ns, true},
		// The administrator's grants, read.
		{"watch", junctionv1.GroupVersion.Group, "p4runtimetargets", "", "", true},
		{"watch", junctionv1.GroupVersion.Group, "addresspools", "", "", true},
		// The N4 endpoint: the sessions SMFs establish and release, their traffic classes.
		{"create", junctionv1.GroupVersion.Group, "atssssessions", "", ns, true},
		{"delete", junctionv1.GroupVersion.Group, "atssssessions", "", ns, true},
		{"create", junctionv1.GroupVersion.Group, "steeringpolicies", "", ns, true},
		// What it never does.
		{"delete", junctionv1.GroupVersion.Group, "userplanefunctions", "", ns, false},
		{"create", junctionv1.GroupVersion.Group, "userplanefunctions", "", ns, false},
		{"update", junctionv1.GroupVersion.Group, "p4runtimetargets", "", "", false},
		{"create", junctionv1.GroupVersion.Group, "addresspools", "", "", false},
		{"update", "", "secrets", "", ns, false},
		{"list", "", "secrets", "", "", false}, // every namespace's: only with upfNamespaces ["*"]
		{"create", "", "configmaps", "", ns, false},
		{"get", "", "pods", "", ns, false},
		{"list", "", "nodes", "", "", false},
		{"update", "coordination.k8s.io", "leases", "", "kube-system", false},
		{"create", "rbac.authorization.k8s.io", "clusterroles", "", "", false},
		{"impersonate", "", "serviceaccounts", "", ns, false},
		{"create", "apiextensions.k8s.io", "customresourcedefinitions", "", "", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tc.namespace, Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.subresource},
		}}
		if err := k8s.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allowed {
			t.Errorf("%s %s.%s/%s in %q: allowed %v, want %v (%s)", tc.verb, tc.resource, tc.group, tc.subresource, tc.namespace, sar.Status.Allowed, tc.allowed, sar.Status.Reason)
		}
	}
}

// TestChartReadsSecretsOnlyInUPFNamespaces: with upfNamespaces the chart lets the operator read
// Secrets in those namespaces and nowhere else, and the operator, told the same namespaces
// (--secret-namespaces, which the chart passes), programs the samples' UPF from its TLS Secret.
func TestChartReadsSecretsOnlyInUPFNamespaces(t *testing.T) {
	ns, other := newNamespace(t), newNamespace(t)
	sa, secretNS := applyChartRBAC(t, ns, ns, "--set", "upfNamespaces={"+ns+"}")
	if !slices.Equal(secretNS, []string{ns}) {
		t.Errorf("the chart tells the operator to read Secrets in %v, want [%s]", secretNS, ns)
	}

	_, _, objs := samplesUPF(t, ns)
	create(t, objs...)
	startOperator(t, ns, operatorOptions{secretNamespaces: secretNS, impersonate: rest.ImpersonationConfig{
		UserName: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}})
	for _, o := range objs {
		if _, ok := o.(*junctionv1.UserPlaneFunction); ok {
			waitCondition(t, programTimeout, o, junctionv1.ConditionReady, "True", "")
		}
	}

	for _, tc := range []struct {
		verb, namespace string
		allowed         bool
	}{
		{"get", ns, true}, {"list", ns, true}, {"watch", ns, true},
		{"get", other, false}, {"list", other, false}, {"watch", other, false},
		{"list", "", false}, // every namespace
		{"update", ns, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tc.namespace, Verb: tc.verb, Resource: "secrets"},
		}}
		if err := k8s.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allowed {
			t.Errorf("%s secrets in %q: allowed %v, want %v (%s)", tc.verb, tc.namespace, sar.Status.Allowed, tc.allowed, sar.Status.Reason)
		}
	}
}

// applyChartRBAC creates the chart's ServiceAccount, roles and bindings for a release in ns
// (helm's args added to its values) and returns the ServiceAccount's user name and the
// namespaces the chart's Deployment tells the operator to read Secrets in (--secret-namespaces;
// nil: every namespace), which must match the roles: a watch beyond them never syncs.
func applyChartRBAC(t *testing.T, ns, release string, args ...string) (string, []string) {
	t.Helper()
	root := testenv.RepoRoot()
	out, err := exec.Command(filepath.Join(root, "bin", "helm"), append([]string{"template", release, filepath.Join(root, "charts", "junction"),
		"-n", ns, "--kube-version", "1.33.0"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template (hack/tools.sh helm): %v\n%s", err, out)
	}
	rbac := map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}
	var sa string
	var secretNS []string
	for _, doc := range strings.Split(string(out), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.GetKind() == "Deployment" && strings.HasSuffix(u.GetName(), "-operator") {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for _, a := range containers[0].(map[string]any)["args"].([]any) {
				if v, ok := strings.CutPrefix(a.(string), "--secret-namespaces="); ok {
					secretNS = strings.Split(v, ",")
				}
			}
		}
		if !rbac[u.GetKind()] {
			continue
		}
		for _, r := range rules(u) {
			for _, f := range []string{"apiGroups", "resources", "verbs"} {
				if strings.Contains(fmt.Sprint(r[f]), "*") {
					t.Errorf("%s %s grants a wildcard: %v", u.GetKind(), u.GetName(), r)
				}
			}
		}
		if u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding" {
			u.SetNamespace(ns)
		}
		if u.GetKind() == "ServiceAccount" && strings.HasSuffix(u.GetName(), "-operator") {
			sa = "system:serviceaccount:" + ns + ":" + u.GetName()
		}
		if err := k8s.Create(context.Background(), u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	}
	if sa == "" {
		t.Fatal("the chart renders no operator ServiceAccount")
	}
	return sa, secretNS
}

func rules(u *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	list, _, _ := unstructured.NestedSlice(u.Object, "rules")
	for _, r := range list {
		out = append(out, r.(map[string]any))
	}
	return out
}

// samples is testenv.Samples for a test.
func samples(t *testing.T, ns, addr string) []client.Object {
	t.Helper()
	objs, err := testenv.Samples(k8s.Scheme(), ns, addr)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// waitSamplesDone waits until the operator is done with every sample: the sessions Programmed, the
// UPF and the policies Ready (the grants, AddressPool and P4RuntimeTarget, have no status). It
// returns the number of sessions.
func waitSamplesDone(t *testing.T, objs []client.Object) (sessions int) {
	t.Helper()
	for _, o := range objs {
		switch o.(type) {
		case *junctionv1.ATSSSSession:
			sessions++
			waitCondition(t, programTimeout, o, junctionv1.ConditionProgrammed, "True", "Programmed")
		case *junctionv1.AddressPool, *junctionv1.P4RuntimeTarget:
		default:
			waitCondition(t, programTimeout, o, junctionv1.ConditionReady, "True", "")
		}
	}
	return sessions
}

// samplesUPF starts a software UPF for config/samples in namespace ns, as its UserPlaneFunction
// asks (mutual TLS with the Secret it names, which the chart issues for its software UPF), with
// the pipeline ConfigMap and that Secret in ns; it returns the UPF, its schema and the samples'
// objects, not yet created.
func samplesUPF(t *testing.T, ns string) (*softUPF, *upfclient.Schema, []client.Object) {
	t.Helper()
	pki := testenv.NewPKI(t)
	u := mutualTLSUPF(t, pki)
	cm, sch := pipelineConfigMap(t, ns, "junction-upf-pipeline", nil)
	create(t, cm, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "junction-p4runtime-tls"}, Data: pki.ClientSecretData()})
	return u, sch, samples(t, ns, u.addr)
}
