package desired

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Policy selection is shared by the operator (which entries a session gets on the UPF) and the
// UE agent (which policies steer the session's uplink): both call these, so that the two ends
// of a session always apply the same policies.

// SelectPolicies returns the policies a session selects (policyRefs and policySelector) that
// exist and have an application ID, sorted by name; the names it references that do not exist
// (or are being deleted); and those that have no application ID yet.
func SelectPolicies(s *junctionv1.ATSSSSession, all []junctionv1.SteeringPolicy) (sel []Policy, missing, pending []string) {
	byName := make(map[string]*junctionv1.SteeringPolicy, len(all))
	for i := range all {
		if all[i].DeletionTimestamp == nil {
			byName[all[i].Name] = &all[i]
		}
	}
	taken := map[string]bool{}
	add := func(p *junctionv1.SteeringPolicy) {
		if taken[p.Name] {
			return
		}
		taken[p.Name] = true
		if p.Status.ApplicationID == nil {
			pending = append(pending, p.Name)
			return
		}
		sel = append(sel, Policy{Name: p.Name, AppID: uint16(*p.Status.ApplicationID), Spec: p.Spec})
	}
	for _, ref := range s.Spec.PolicyRefs {
		if p := byName[ref.Name]; p != nil {
			add(p)
		} else {
			missing = append(missing, ref.Name)
		}
	}
	if s.Spec.PolicySelector != nil {
		if selector, err := metav1.LabelSelectorAsSelector(s.Spec.PolicySelector); err == nil {
			names := make([]string, 0, len(byName))
			for n := range byName {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if selector.Matches(labels.Set(byName[n].Labels)) {
					add(byName[n])
				}
			}
		}
	}
	sort.Slice(sel, func(i, j int) bool { return sel[i].Name < sel[j].Name })
	return sel, missing, pending
}

// Selects reports whether a session selects a policy (for the policy's session count).
func Selects(s *junctionv1.ATSSSSession, p *junctionv1.SteeringPolicy) bool {
	for _, ref := range s.Spec.PolicyRefs {
		if ref.Name == p.Name {
			return true
		}
	}
	if s.Spec.PolicySelector == nil {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(s.Spec.PolicySelector)
	return err == nil && selector.Matches(labels.Set(p.Labels))
}
