package v1alpha1

// SteeringModeName names an ATSSS steering mode (3GPP TS 23.501 5.32.8, TS 24.193).
// +kubebuilder:validation:Enum=ActiveStandby;SmallestDelay;LoadBalance;PriorityBased;Redundant
type SteeringModeName string

const (
	// ModeActiveStandby sends on the active access while it is available, else on the standby.
	ModeActiveStandby SteeringModeName = "ActiveStandby"
	// ModeSmallestDelay sends on the access with the smaller measured RTT.
	ModeSmallestDelay SteeringModeName = "SmallestDelay"
	// ModeLoadBalance splits packets across both accesses by a ratio.
	ModeLoadBalance SteeringModeName = "LoadBalance"
	// ModePriorityBased sends on the priority access until its RTT passes a threshold, then
	// overflows to the other access.
	ModePriorityBased SteeringModeName = "PriorityBased"
	// ModeRedundant duplicates every packet on both accesses (Rel-17); the UE drops duplicates.
	ModeRedundant SteeringModeName = "Redundant"
)

// SteeringMode is how an application's traffic is spread over the two accesses. Exactly the
// parameters of the chosen mode may be set.
// +kubebuilder:validation:XValidation:rule="self.mode == 'ActiveStandby' ? has(self.activeStandby) : !has(self.activeStandby)",message="activeStandby must be set exactly when mode is ActiveStandby"
// +kubebuilder:validation:XValidation:rule="self.mode == 'LoadBalance' ? has(self.loadBalance) : !has(self.loadBalance)",message="loadBalance must be set exactly when mode is LoadBalance"
// +kubebuilder:validation:XValidation:rule="self.mode == 'PriorityBased' ? has(self.priorityBased) : !has(self.priorityBased)",message="priorityBased must be set exactly when mode is PriorityBased"
// +kubebuilder:validation:XValidation:rule="self.mode == 'SmallestDelay' || !has(self.smallestDelay)",message="smallestDelay may only be set when mode is SmallestDelay"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Redundant' || !has(self.redundant)",message="redundant may only be set when mode is Redundant"
type SteeringMode struct {
	// mode selects the steering mode; the field of the same name carries its parameters.
	// +required
	Mode SteeringModeName `json:"mode"`

	// activeStandby: parameters of ActiveStandby.
	// +optional
	ActiveStandby *ActiveStandby `json:"activeStandby,omitempty"`

	// smallestDelay: SmallestDelay has no parameters; {} may be given for symmetry.
	// +optional
	SmallestDelay *SmallestDelay `json:"smallestDelay,omitempty"`

	// loadBalance: parameters of LoadBalance.
	// +optional
	LoadBalance *LoadBalance `json:"loadBalance,omitempty"`

	// priorityBased: parameters of PriorityBased.
	// +optional
	PriorityBased *PriorityBased `json:"priorityBased,omitempty"`

	// redundant: Redundant has no parameters; {} may be given for symmetry.
	// +optional
	Redundant *Redundant `json:"redundant,omitempty"`
}

// ActiveStandby sends on one access and switches to the other when it becomes unavailable.
// +kubebuilder:validation:XValidation:rule="!has(self.standby) || self.standby != self.active",message="standby must differ from active"
type ActiveStandby struct {
	// active is the access used while it is available.
	// +required
	Active Access `json:"active"`

	// standby is the access used while the active one is unavailable; unset means the other access.
	// +optional
	Standby Access `json:"standby,omitempty"`
}

// SmallestDelay has no parameters: the access with the smaller RTT wins, ties go to 3GPP.
type SmallestDelay struct{}

// Redundant has no parameters: every packet is sent on both accesses.
type Redundant struct{}

// LoadBalance splits packets across both accesses, either by a fixed share or autonomously
// (the UPF, and the UE for the uplink, move the share toward the access with the smaller RTT
// at each probe, so it settles where both delays are equal).
// +kubebuilder:validation:XValidation:rule="has(self.threeGPPPercent) != (has(self.autonomous) && self.autonomous)",message="set exactly one of threeGPPPercent or autonomous: true"
type LoadBalance struct {
	// threeGPPPercent is the share of packets sent on 3GPP, 0 to 100; the rest go on non-3GPP.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ThreeGPPPercent *int32 `json:"threeGPPPercent,omitempty"`

	// autonomous lets the UPF pick the split from the measured RTTs (Rel-17 autonomous load-balancing).
	// +optional
	Autonomous bool `json:"autonomous,omitempty"`
}

// PriorityBased sends on the priority access and overflows to the other one while the
// priority access's RTT is above the threshold (the paper's congestion signal).
type PriorityBased struct {
	// priorityAccess is the access used while it is not congested.
	// +required
	PriorityAccess Access `json:"priorityAccess"`

	// rttThreshold is the RTT above which the priority access counts as congested, 1ms to 10s.
	// +required
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('10s')",message="rttThreshold must be between 1ms and 10s"
	RTTThreshold Duration `json:"rttThreshold"`
}

// Thresholds are the Rel-17 ATSSS thresholds: an access whose measurements exceed them is used
// only when the other access is unavailable.
// +kubebuilder:validation:XValidation:rule="has(self.rtt) || has(self.packetLossPercent)",message="set rtt, packetLossPercent or both"
type Thresholds struct {
	// rtt is the largest acceptable round-trip time, 1ms to 10s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('10s')",message="rtt must be between 1ms and 10s"
	RTT Duration `json:"rtt,omitempty"`

	// packetLossPercent is the largest acceptable packet loss rate, 0 to 100 percent, measured
	// by the UE agents on each leg over its last 20 probes (status.agent.legs[].lossPercent of
	// the sessions) and reported to the UPF with the probes; the UPF (downlink) and the UE agent
	// (uplink) both steer by it. Like rtt, it is read by ActiveStandby, PriorityBased and
	// LoadBalance; SmallestDelay and Redundant read no threshold (a Warning event,
	// ThresholdNotEnforced, says so).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PacketLossPercent *int32 `json:"packetLossPercent,omitempty"`
}
