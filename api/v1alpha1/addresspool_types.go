package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddressPoolSpec grants one namespace the addresses its sessions may use (docs/address-pools.md).
type AddressPoolSpec struct {
	// namespace is the namespace whose ATSSSSessions may take addresses from this pool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Namespace string `json:"namespace"`

	// sessionAddresses are the prefixes spec.sessionAddress may come from. A session address
	// is also the address of a TUN on its UE node, so the operator and the UE agent refuse one
	// in the cluster's node, pod or service ranges or the API server's, whatever the pool says.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	SessionAddresses []IPv4Prefix `json:"sessionAddresses,omitempty"`

	// ueAddresses are the prefixes the legs' spec.accessLegs.*.ueAddress may come from: the
	// addresses UEs get from the 5G core and from the WiFi or wireline access.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	UEAddresses []IPv4Prefix `json:"ueAddresses,omitempty"`
}

// AddressPool is cluster-scoped so that only an administrator (who may write cluster-scoped
// objects) grants addresses; a namespace's own objects cannot widen what it may claim.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=jpool,categories=junction
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="argocd.argoproj.io/sync-options=Prune=false,Delete=false"
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`
// +kubebuilder:printcolumn:name="Sessions",type=string,JSONPath=`.spec.sessionAddresses`
// +kubebuilder:printcolumn:name="UEs",type=string,JSONPath=`.spec.ueAddresses`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the pool grants.
	// +required
	Spec AddressPoolSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// AddressPoolList is a list of AddressPools.
type AddressPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddressPool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AddressPool{}, &AddressPoolList{})
}
