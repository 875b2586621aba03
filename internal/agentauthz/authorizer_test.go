package agentauthz

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases the API server of test/chart's TestAgentReadsOnlyItsNodesSessions cannot send
// (a raw selector beside none parsed, namespaces limited, other verbs and resources), each with
// what the package's rule says: list and watch of the token's node's sessions, in the agents'
// namespaces, by a parsed spec.ue.nodeName=<node>; nothing else.
func TestDecide(t *testing.T) {
	const agent = "system:serviceaccount:junction-system:junction-ue-agent"
	nodeIs := func(op metav1.FieldSelectorOperator, v ...string) *authorizationv1.FieldSelectorAttributes {
		return &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.ue.nodeName", Operator: op, Values: v}}}
	}
	review := func(edit func(*authorizationv1.SubjectAccessReviewSpec)) authorizationv1.SubjectAccessReviewSpec {
		s := authorizationv1.SubjectAccessReviewSpec{
			User:  agent,
			Extra: map[string]authorizationv1.ExtraValue{NodeNameExtra: {"node-a"}},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "tenant", Verb: "list", Group: "atsss.junction.dev", Resource: "atssssessions",
				FieldSelector: nodeIs(metav1.FieldSelectorOpIn, "node-a"),
			},
		}
		edit(&s)
		return s
	}
	limited := Authorizer{Users: []string{agent}, Namespaces: []string{"tenant"}}
	for _, tc := range []struct {
		name string
		a    Authorizer
		spec authorizationv1.SubjectAccessReviewSpec
		want bool
	}{
		{"its node's sessions, list", limited, review(func(*authorizationv1.SubjectAccessReviewSpec) {}), true},
		{"its node's sessions, watch", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Verb = "watch" }), true},
		{"with a second requirement (ANDed)", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes.FieldSelector.Requirements = append(s.ResourceAttributes.FieldSelector.Requirements,
				metav1.FieldSelectorRequirement{Key: "metadata.name", Operator: metav1.FieldSelectorOpIn, Values: []string{"x"}})
		}), true},
		{"every namespace, when not limited", Authorizer{Users: []string{agent}}, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Namespace = "" }), true},
		{"every namespace, when limited", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Namespace = "" }), false},
		{"a namespace the agents do not serve", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Namespace = "other" }), false},
		{"another user", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.User = "system:serviceaccount:tenant:default" }), false},
		{"no node in the token", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.Extra = nil }), false},
		{"two nodes in the token", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.Extra[NodeNameExtra] = []string{"node-a", "node-b"}
		}), false},
		{"another node", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes.FieldSelector = nodeIs(metav1.FieldSelectorOpIn, "node-b")
		}), false},
		{"its node among others", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes.FieldSelector = nodeIs(metav1.FieldSelectorOpIn, "node-a", "node-b")
		}), false},
		{"not another node", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes.FieldSelector = nodeIs(metav1.FieldSelectorOpNotIn, "node-b")
		}), false},
		{"a raw selector only", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes.FieldSelector = &authorizationv1.FieldSelectorAttributes{RawSelector: "spec.ue.nodeName=node-a"}
		}), false},
		{"a raw selector beside the parsed one", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes.FieldSelector.RawSelector = "spec.ue.nodeName=node-a"
		}), false},
		{"no selector", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.FieldSelector = nil }), false},
		{"get", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Verb = "get" }), false},
		{"delete", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Verb = "delete" }), false},
		{"the status subresource", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Subresource = "status" }), false},
		{"policies", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Resource = "steeringpolicies" }), false},
		{"another group's atssssessions", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) { s.ResourceAttributes.Group = "example.com" }), false},
		{"a non-resource request", limited, review(func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.ResourceAttributes, s.NonResourceAttributes = nil, &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}
		}), false},
	} {
		if got, reason := tc.a.Decide(tc.spec); got != tc.want {
			t.Errorf("%s: allowed=%v (%s), want %v", tc.name, got, reason, tc.want)
		}
	}
}
