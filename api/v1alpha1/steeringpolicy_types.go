package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Protocol is the IP protocol of an application's traffic.
// +kubebuilder:validation:Enum=TCP;UDP;ICMP;SCTP
type Protocol string

const (
	// ProtocolTCP is IP protocol 6.
	ProtocolTCP Protocol = "TCP"
	// ProtocolUDP is IP protocol 17 (QUIC included).
	ProtocolUDP Protocol = "UDP"
	// ProtocolICMP is IP protocol 1.
	ProtocolICMP Protocol = "ICMP"
	// ProtocolSCTP is IP protocol 132.
	ProtocolSCTP Protocol = "SCTP"
)

// PortRange is an inclusive range of L4 ports.
// +kubebuilder:validation:XValidation:rule="!has(self.to) || self.to >= self.from",message="to must not be less than from"
type PortRange struct {
	// from is the first port of the range.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +required
	From int32 `json:"from"`

	// to is the last port of the range; unset means the range is the single port from.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	To *int32 `json:"to,omitempty"`
}

// TrafficDescriptor selects an application's packets, seen from the UE as in 3GPP ATSSS rules:
// destination is the application server's side, source the UE's side. Unset fields match
// anything; a packet matches when every set field matches (any element of a list).
type TrafficDescriptor struct {
	// destinationPrefixes are the application servers' addresses.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	DestinationPrefixes []IPv4Prefix `json:"destinationPrefixes,omitempty"`

	// sourcePrefixes are the UE-side (session) addresses the policy is limited to.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	SourcePrefixes []IPv4Prefix `json:"sourcePrefixes,omitempty"`

	// destinationPorts are the application servers' ports.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	DestinationPorts []PortRange `json:"destinationPorts,omitempty"`

	// sourcePorts are the UE-side ports.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	SourcePorts []PortRange `json:"sourcePorts,omitempty"`

	// protocol is the IP protocol; ports may only be given for TCP and UDP (the pipeline reads
	// no other protocol's ports).
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`

	// dscp is the DiffServ code point, 0 to 63.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=63
	// +optional
	DSCP *int32 `json:"dscp,omitempty"`
}

// SteeringPolicySpec is one application's traffic and the steering mode it gets. Policies are
// rules of the whole UPF, as in the JUNCTION paper: every session on a UPF shares their table
// entries, and a session deviates from them only through its modeOverride.
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDescriptor.protocol) || self.trafficDescriptor.protocol in ['TCP', 'UDP'] || (!has(self.trafficDescriptor.destinationPorts) && !has(self.trafficDescriptor.sourcePorts))",message="trafficDescriptor ports need protocol TCP or UDP"
type SteeringPolicySpec struct {
	// precedence orders overlapping policies: the lowest value wins, as in 3GPP ATSSS rules.
	// 0 to 65534.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65534
	// +required
	Precedence int32 `json:"precedence"`

	// trafficDescriptor selects the application's packets; {} matches all traffic (a default rule).
	// +required
	TrafficDescriptor TrafficDescriptor `json:"trafficDescriptor"`

	// steering is the steering mode and its parameters.
	// +required
	Steering SteeringMode `json:"steering"`

	// thresholds are optional Rel-17 RTT and packet loss thresholds for the accesses.
	// +optional
	Thresholds *Thresholds `json:"thresholds,omitempty"`
}

// SteeringPolicyStatus is what the operator has made of the policy.
type SteeringPolicyStatus struct {
	// applicationID is the ID the operator gave the policy in the UPF's applications table. It
	// never changes for the life of the object.
	// +optional
	ApplicationID *int32 `json:"applicationID,omitempty"`

	// sessions is how many ATSSSSessions select this policy, counted again within a second of a
	// change to one of them.
	// +optional
	Sessions int32 `json:"sessions"`

	// entries is how many applications-table entries the traffic descriptor expands to on each UPF.
	// +optional
	Entries int32 `json:"entries,omitempty"`

	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready says the policy is written to every UPF with sessions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SteeringPolicy is one application's traffic descriptor and its ATSSS steering mode.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=spol,categories=junction
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="argocd.argoproj.io/sync-options=Prune=false,Delete=false"
// +kubebuilder:printcolumn:name="Precedence",type=integer,JSONPath=`.spec.precedence`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.steering.mode`
// +kubebuilder:printcolumn:name="App-ID",type=integer,JSONPath=`.status.applicationID`
// +kubebuilder:printcolumn:name="Sessions",type=integer,JSONPath=`.status.sessions`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is or is not Ready: the Ready condition's reason"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SteeringPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SteeringPolicySpec   `json:"spec"`
	Status SteeringPolicyStatus `json:"status,omitempty"`
}

// SteeringPolicyList is a list of SteeringPolicy.
// +kubebuilder:object:root=true
type SteeringPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SteeringPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SteeringPolicy{}, &SteeringPolicyList{})
}
