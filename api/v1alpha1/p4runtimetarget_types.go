package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// P4RuntimeTargetSpec grants one namespace one P4Runtime device (docs/p4runtime-targets.md).
type P4RuntimeTargetSpec struct {
	// namespace is the namespace whose UserPlaneFunctions may program this device.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Namespace string `json:"namespace"`

	// address is host:port of the device's P4Runtime server. A UserPlaneFunction names this
	// device when its spec.p4runtime has the same port, deviceID and role and a host that
	// resolves to a common address: localhost:9559 and 127.0.0.1:9559 are one device.
	// +required
	Address P4RuntimeAddress `json:"address"`

	// deviceID is the P4Runtime device ID, as the UserPlaneFunction's (default 1).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	DeviceID int64 `json:"deviceID"`

	// role is the P4Runtime role name; empty is the default (full-access) role.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Role string `json:"role,omitempty"`

	// tlsServerName is the name the device's TLS certificate must prove: the device's own
	// answer to who it is, where the address only says where a name resolves. Set, the operator
	// checks the device's certificate for this name whatever the UserPlaneFunction's
	// spec.p4runtime.tls.serverName says (a UPF naming another is not connected), and connects to
	// no UPF of this device in plaintext. Empty: the UPF's own check (its serverName, else the
	// host of its address), and plaintext where the UPF asks for it.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$`
	// +optional
	TLSServerName string `json:"tlsServerName,omitempty"`
}

// P4RuntimeTarget is cluster-scoped so that only an administrator (who may write cluster-scoped
// objects) registers a device and says which namespace may program it: a UserPlaneFunction is
// connected to only when one grants its namespace its device.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=jtarget,categories=junction
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="argocd.argoproj.io/sync-options=Prune=false,Delete=false"
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Device-ID",type=integer,JSONPath=`.spec.deviceID`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="TLS-Name",type=string,JSONPath=`.spec.tlsServerName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type P4RuntimeTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the device and the namespace it is granted to.
	// +required
	Spec P4RuntimeTargetSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// P4RuntimeTargetList is a list of P4RuntimeTargets.
type P4RuntimeTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []P4RuntimeTarget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&P4RuntimeTarget{}, &P4RuntimeTargetList{})
}
