package uedaemonset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// grant is one verb on one resource (with its subresource, as in "atssssessions/status").
type grant struct{ group, resource, verb string }

func (g grant) String() string {
	group := g.group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s.%s", g.verb, g.resource, group)
}

// agentGrants is everything the UE agent may do, as its interface states it: list and watch its
// sessions (its cache never gets one by name, and a get of any session or its status would read
// another node's); read the policies and UPFs they refer to; write its own view into session
// status by server-side apply (a patch); record events; check the token of a metrics scraper.
// Anything the ClusterRole adds to this fails the test.
var agentGrants = func() []grant {
	gs := []grant{{"atsss.junction.dev", "atssssessions", "list"}, {"atsss.junction.dev", "atssssessions", "watch"}}
	for _, r := range []string{"steeringpolicies", "userplanefunctions", "addresspools"} {
		for _, v := range []string{"get", "list", "watch"} {
			gs = append(gs, grant{"atsss.junction.dev", r, v})
		}
	}
	gs = append(gs, grant{"atsss.junction.dev", "atssssessions/status", "patch"})
	for _, g := range []string{"", "events.k8s.io"} {
		for _, v := range []string{"create", "patch"} {
			gs = append(gs, grant{g, "events", v})
		}
	}
	gs = append(gs, grant{"authentication.k8s.io", "tokenreviews", "create"}, grant{"authorization.k8s.io", "subjectaccessreviews", "create"})
	return gs
}()

func TestClusterRoleGrantsExactlyWhatTheAgentNeeds(t *testing.T) {
	role := &rbacv1.ClusterRole{}
	dryRunApply(t, only(t, build(t), "ClusterRole"), role)
	if role.AggregationRule != nil {
		t.Errorf("the ClusterRole aggregates other roles: %+v", role.AggregationRule)
	}
	var got []grant
	for i, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %d has resourceNames %v or nonResourceURLs %v", i, r.ResourceNames, r.NonResourceURLs)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got = append(got, grant{g, res, v}) // a "*" never matches the list: it fails below
				}
			}
		}
	}
	extra, lacking := diff(got, agentGrants), diff(agentGrants, got)
	if len(extra) > 0 {
		t.Errorf("the ClusterRole grants more than the agent needs: %v", extra)
	}
	if len(lacking) > 0 {
		t.Errorf("the ClusterRole lacks what the agent needs: %v", lacking)
	}
}

func TestClusterRoleBindingBindsTheAgentsServiceAccount(t *testing.T) {
	objs := build(t)
	binding := &rbacv1.ClusterRoleBinding{}
	dryRunApply(t, only(t, objs, "ClusterRoleBinding"), binding)
	want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentName}
	if binding.RoleRef != want {
		t.Errorf("roleRef is %+v, want %+v", binding.RoleRef, want)
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: agentName, Namespace: namespace}
	if !slices.Equal(binding.Subjects, []rbacv1.Subject{sa}) {
		t.Errorf("subjects are %+v, want only %+v", binding.Subjects, sa)
	}
	if got := only(t, objs, "ServiceAccount"); got.GetName() != sa.Name || got.GetNamespace() != sa.Namespace {
		t.Errorf("ServiceAccount is %s/%s, the binding names %s/%s", got.GetNamespace(), got.GetName(), sa.Namespace, sa.Name)
	}
}

// TestServiceAccountIsAuthorizedForExactlyThat installs the ClusterRole and its binding for real
// and asks the API server's RBAC authorizer, resource by verb, what the agent's service account
// may do: allowed exactly where agentGrants says, in any namespace, and nowhere else.
func TestServiceAccountIsAuthorizedForExactlyThat(t *testing.T) {
	ctx := context.Background()
	objs := build(t)
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		obj := only(t, objs, kind).DeepCopy()
		if err := k8s.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(fieldOwner)); err != nil {
			t.Fatalf("apply %s: %v", kind, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	}
	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, agentName)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	resources := []grant{
		{"atsss.junction.dev", "atssssessions", ""},
		{"atsss.junction.dev", "atssssessions/status", ""},
		{"atsss.junction.dev", "steeringpolicies", ""},
		{"atsss.junction.dev", "steeringpolicies/status", ""},
		{"atsss.junction.dev", "userplanefunctions", ""},
		{"atsss.junction.dev", "userplanefunctions/status", ""},
		{"atsss.junction.dev", "addresspools", ""},
		{"", "events", ""},
		{"events.k8s.io", "events", ""},
		{"", "pods", ""},
		{"", "nodes", ""},
		{"", "secrets", ""},
		{"", "configmaps", ""},
		{"coordination.k8s.io", "leases", ""},
		{"apps", "daemonsets", ""},
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	for _, ns := range []string{"edge", namespace} {
		for _, r := range resources {
			for _, v := range verbs {
				g := grant{r.group, r.resource, v}
				resource, sub, _ := strings.Cut(r.resource, "/")
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user, Groups: groups,
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Group: r.group, Resource: resource, Subresource: sub, Verb: v,
					},
				}}
				if err := k8s.Create(ctx, sar); err != nil {
					t.Fatalf("SubjectAccessReview %s: %v", g, err)
				}
				if want := slices.Contains(agentGrants, g); sar.Status.Allowed != want {
					t.Errorf("in namespace %s, %s: allowed=%v, want %v (%s)", ns, g, sar.Status.Allowed, want, sar.Status.Reason)
				}
			}
		}
	}
}

// diff returns the grants of a that are not in b, in a's order.
func diff(a, b []grant) []grant {
	var out []grant
	for _, g := range a {
		if !slices.Contains(b, g) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}
