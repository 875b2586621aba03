package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the lookups that reach the mapper under the memo.
type countingMapper struct {
	meta.RESTMapper
	calls int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.calls++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// A kind's mapping is asked of the dynamic mapper once per restMappingTTL; a kind it does not
// know is asked each time (it may be a CRD installed since); callers cannot change what is kept.
func TestMemoRESTMapper(t *testing.T) {
	gv := schema.GroupVersion{Group: "atsss.junction.dev", Version: "v1alpha1"}
	base := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	base.Add(gv.WithKind("ATSSSSession"), meta.RESTScopeNamespace)
	under := &countingMapper{RESTMapper: base}
	now := time.Unix(0, 0)
	m := &memoRESTMapper{RESTMapper: under, ttl: time.Minute, now: func() time.Time { return now }, kept: map[mappingKey]keptMapping{}}
	session := schema.GroupKind{Group: gv.Group, Kind: "ATSSSSession"}

	for i := range 3 {
		got, err := m.RESTMapping(session)
		if err != nil || got.Scope.Name() != meta.RESTScopeNameNamespace || got.Resource.Resource != "atssssessions" {
			t.Fatalf("lookup %d: %+v, %v; want the namespaced resource atssssessions", i, got, err)
		}
		got.Resource.Resource = "changed by a caller"
	}
	if under.calls != 1 {
		t.Errorf("%d lookups reached the mapper within the TTL, want 1", under.calls)
	}
	now = now.Add(time.Minute)
	if _, err := m.RESTMapping(session); err != nil || under.calls != 2 {
		t.Errorf("after the TTL: %v, %d lookups reached the mapper, want 2", err, under.calls)
	}
	unknown := schema.GroupKind{Group: gv.Group, Kind: "Unknown"}
	for range 2 {
		if _, err := m.RESTMapping(unknown); !meta.IsNoMatchError(err) {
			t.Errorf("an unknown kind: %v, want a no-match error", err)
		}
	}
	if under.calls != 4 {
		t.Errorf("%d lookups reached the mapper, want 4 (an unknown kind is not kept)", under.calls)
	}
}
