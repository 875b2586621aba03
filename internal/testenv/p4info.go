package testenv

import (
	"slices"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// WithoutAction takes action name out of info and out of every table that offers it, as a P4
// program older than the action would have it; the test fails if info has no such action.
func WithoutAction(t testing.TB, info *p4configv1.P4Info, name string) {
	t.Helper()
	var id uint32
	info.Actions = slices.DeleteFunc(info.Actions, func(a *p4configv1.Action) bool {
		if a.GetPreamble().GetName() == name {
			id = a.GetPreamble().GetId()
			return true
		}
		return false
	})
	if id == 0 {
		t.Fatalf("the P4Info has no action %s to take out", name)
	}
	for _, tb := range info.Tables {
		tb.ActionRefs = slices.DeleteFunc(tb.ActionRefs, func(r *p4configv1.ActionRef) bool { return r.GetId() == id })
	}
}
