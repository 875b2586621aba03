package chart

import (
	"context"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// With ueAgent.namespaces the agents serve those namespaces only: the DaemonSet says so, and
// the API server's RBAC lets the agent's ServiceAccount read and report sessions there and
// nowhere else (the AddressPools it checks addresses against are cluster-scoped and readable, and
// it may review a metrics scraper's token, which is cluster-scoped too).
func TestUEAgentServesChosenNamespacesOnly(t *testing.T) {
	objs := render(t, "--set", "ueAgent.enabled=true", "--set", "ueAgent.namespaces={tenant-a}",
		"--set", "reservedPrefixes={10.244.0.0/16}")
	ds := objs["DaemonSet/j-junction-ue-agent"]
	if ds == nil {
		t.Fatal("DaemonSet/j-junction-ue-agent not rendered")
	}
	containers, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	args, _ := containers[0].(map[string]any)["args"].([]any)
	for _, want := range []string{"--namespace=tenant-a", "--reserved-prefixes=10.244.0.0/16"} {
		if !slices.Contains(args, any(want)) {
			t.Errorf("the agent's args %v lack %s", args, want)
		}
	}
	if objs["ClusterRoleBinding/j-junction-ue-agent"] != nil {
		t.Error("ClusterRoleBinding/j-junction-ue-agent rendered: the agent could read every namespace's sessions")
	}

	k8s := startCluster(t, chart+"/crds").k8s
	ctx := context.Background()
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"ClusterRole/j-junction-ue-agent", "RoleBinding/j-junction-ue-agent", "ClusterRole/j-junction-ue-agent-cluster", "ClusterRoleBinding/j-junction-ue-agent-cluster"} {
		o := objs[key]
		if o == nil {
			t.Fatalf("%s not rendered", key)
		}
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", key, err)
		}
	}
	user := "system:serviceaccount:junction-system:j-junction-ue-agent"
	for _, c := range []struct {
		ns, group, resource, sub, verb string
		allowed                        bool
	}{
		{"tenant-a", "atsss.junction.dev", "atssssessions", "", "list", true},
		{"tenant-a", "atsss.junction.dev", "atssssessions", "status", "patch", true},
		{"tenant-a", "atsss.junction.dev", "steeringpolicies", "", "watch", true},
		{"tenant-b", "atsss.junction.dev", "atssssessions", "", "list", false},
		{"tenant-b", "atsss.junction.dev", "atssssessions", "status", "patch", false},
		{"", "atsss.junction.dev", "atssssessions", "", "list", false}, // every namespace
		{"", "atsss.junction.dev", "addresspools", "", "list", true},
		{"", "atsss.junction.dev", "addresspools", "", "create", false},
		{"", "authentication.k8s.io", "tokenreviews", "", "create", true},
		{"", "authorization.k8s.io", "subjectaccessreviews", "", "create", true},
		{"", "authentication.k8s.io", "tokenreviews", "", "list", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:junction-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Group: c.group, Resource: c.resource, Subresource: c.sub, Verb: c.verb},
		}}
		if err := k8s.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != c.allowed {
			t.Errorf("%s %s/%s in %q: allowed=%v, want %v", c.verb, c.resource, c.sub, c.ns, sar.Status.Allowed, c.allowed)
		}
	}
}
