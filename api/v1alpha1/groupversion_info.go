// Package v1alpha1 holds the Junction API: UserPlaneFunction (a P4Runtime switch running the
// JUNCTION-UPF pipeline), SteeringPolicy (one application's traffic and how it is steered across
// 3GPP and non-3GPP access) and ATSSSSession (one MA PDU session of one UE).
//
// +kubebuilder:object:generate=true
// +groupName=atsss.junction.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every Junction kind.
	GroupVersion = schema.GroupVersion{Group: "atsss.junction.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Junction kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Junction kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
