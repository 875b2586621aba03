package controllers

import (
	"slices"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// spec.n4.associateWith (api/v1alpha1): IPv4 addresses or DNS names, with a port when not
// PFCP's 8805 (TS 29.244 §4.2.2).
func TestN4ConfigReadsAssociateWith(t *testing.T) {
	u := &junctionv1.UserPlaneFunction{Spec: junctionv1.UserPlaneFunctionSpec{
		TunnelEndpoints: []junctionv1.TunnelEndpoint{{Name: "core", N3Address: "192.0.2.1", JunctionAddress: "192.0.2.2"}},
		N4:              &junctionv1.N4{NodeID: "192.0.2.10", AssociateWith: []string{"10.0.0.5", "10.0.0.6:8806", "smf.core.svc.cluster.local"}},
	}}
	cfg, err := (&N4Endpoints{}).config(u)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.5:8805", "10.0.0.6:8806", "smf.core.svc.cluster.local:8805"}
	if !slices.Equal(cfg.AssociateWith, want) {
		t.Errorf("associateWith read as %v, want %v", cfg.AssociateWith, want)
	}
	for _, bad := range []string{"10.0.0.5:0", "10.0.0.5:70000", "[2001:db8::1]:8805", ":8805"} {
		u.Spec.N4.AssociateWith = []string{bad}
		if _, err := (&N4Endpoints{}).config(u); err == nil {
			t.Errorf("associateWith %q was taken", bad)
		}
	}
}
