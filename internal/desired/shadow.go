package desired

import (
	"bytes"
	"slices"
	"sort"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Shadow is a policy a session selects (Policy) whose traffic a policy it does not select (By)
// takes entirely on the UPF.
type Shadow struct{ Policy, By string }

// Shadows finds the policies a session selects that can never steer its downlink. The UPF's
// applications table is shared by every session on it (docs/pipeline.md): traffic an unselected
// policy matches is steered by it whenever it wins (lower precedence, or equal with a lower
// application ID, the order the UPF and the UE agent both apply), while the UE agent, which
// knows only the selected policies, steers the uplink by them. An unselected policy that takes
// part of a selected one's traffic is the usual layering (a specific rule over a catch-all);
// one that takes all of it (two catch-alls for different UEs, say) makes the selected policy
// dead on the downlink, which is what this reports. A policy covered only by several others
// together is not found. all are the namespace's policies; those without an application ID or
// being deleted are not on the UPF.
func Shadows(sel []Policy, all []junctionv1.SteeringPolicy) []Shadow {
	selected := make(map[string]bool, len(sel))
	for _, p := range sel {
		selected[p.Name] = true
	}
	var others []Policy
	for i := range all {
		p := &all[i]
		if !selected[p.Name] && p.Status.ApplicationID != nil && p.DeletionTimestamp == nil {
			others = append(others, Policy{Name: p.Name, AppID: uint16(*p.Status.ApplicationID), Spec: p.Spec})
		}
	}
	if len(others) == 0 {
		return nil
	}
	var out []Shadow
	for _, p := range sel {
		pe, err := ApplicationEntries(p)
		if err != nil {
			continue // the policy's own status says why
		}
		for _, q := range others {
			if !wins(q, p) {
				continue
			}
			qe, err := ApplicationEntries(q)
			if err == nil && coversAll(qe, pe) {
				out = append(out, Shadow{Policy: p.Name, By: q.Name})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Policy != out[j].Policy {
			return out[i].Policy < out[j].Policy
		}
		return out[i].By < out[j].By
	})
	return out
}

// CoveredBy names the policies of all (q excepted) whose every applications entry lies within
// one of q's, whatever their precedence: those q may shadow once it has an application ID, or
// shadowed before it changed. The sessions selecting them are the ones whose shadow note a
// change of q can change.
func CoveredBy(q junctionv1.SteeringPolicy, all []junctionv1.SteeringPolicy) []string {
	qe, err := ApplicationEntries(Policy{Name: q.Name, Spec: q.Spec})
	if err != nil {
		return nil
	}
	var out []string
	for i := range all {
		p := &all[i]
		if p.Name == q.Name {
			continue
		}
		if pe, err := ApplicationEntries(Policy{Name: p.Name, Spec: p.Spec}); err == nil && coversAll(qe, pe) {
			out = append(out, p.Name)
		}
	}
	return out
}

// wins reports whether q's applications entries take precedence over p's.
func wins(q, p Policy) bool {
	if q.Spec.Precedence != p.Spec.Precedence {
		return q.Spec.Precedence < p.Spec.Precedence
	}
	return q.AppID < p.AppID
}

// coversAll reports whether every inner entry lies within one of the outer entries.
func coversAll(outer, inner []Entry) bool {
	for _, x := range inner {
		covered := false
		for _, o := range outer {
			if Covers(o.Match, x.Match) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// Covers reports whether every packet that matches inner also matches outer (match lists of
// one table, with ternary, range or exact fields): each field outer constrains, inner must
// constrain at least as tightly; a field left out is don't-care.
func Covers(outer, inner []Match) bool {
	for _, o := range outer {
		i := slices.IndexFunc(inner, func(m Match) bool { return m.Field == o.Field })
		if i < 0 || !fieldCovers(o, inner[i]) {
			return false
		}
	}
	return true
}

func fieldCovers(o, i Match) bool {
	switch {
	case o.Kind == Ternary && i.Kind == Ternary:
		if len(o.Value) != len(i.Value) || len(o.Mask) != len(i.Mask) {
			return false
		}
		for k := range o.Mask {
			if o.Mask[k]&^i.Mask[k] != 0 || (o.Value[k]^i.Value[k])&o.Mask[k] != 0 {
				return false
			}
		}
		return true
	case o.Kind == Range && i.Kind == Range:
		return bytes.Compare(o.Low, i.Low) <= 0 && bytes.Compare(i.High, o.High) <= 0
	}
	return o.Kind == i.Kind && bytes.Equal(o.Value, i.Value) // exact
}
