package v1alpha1

// Access is one of the two access networks an MA PDU session bonds.
// +kubebuilder:validation:Enum="3GPP";"Non3GPP"
type Access string

const (
	// Access3GPP is 5G NR (or LTE) radio access, reached through GTP-U via a gNB.
	Access3GPP Access = "3GPP"
	// AccessNon3GPP is WiFi or wireline access, reached directly over IP.
	AccessNon3GPP Access = "Non3GPP"
)

// Condition types used across the Junction kinds.
const (
	// ConditionReady summarises whether the object does what it asks for.
	ConditionReady = "Ready"
	// ConditionConnected says the operator holds a P4Runtime stream to the UPF as primary.
	ConditionConnected = "Connected"
	// ConditionPipelineReady says the UPF runs the pipeline of the referenced ConfigMap.
	ConditionPipelineReady = "PipelineReady"
	// ConditionProgrammed says the session's table entries are written to its UPF.
	ConditionProgrammed = "Programmed"
	// ConditionDegraded says the session works on fewer accesses than it has legs.
	ConditionDegraded = "Degraded"
	// ConditionAgentReady says the UE agent on the session's node has built the session's tunnel
	// and at least one leg works. Only the agent writes it.
	ConditionAgentReady = "AgentReady"
	// ConditionDeviceConflict says another UserPlaneFunction names the same P4Runtime device
	// (port, device ID and role at a host that resolves to a common address); its message says
	// which one programs it.
	ConditionDeviceConflict = "DeviceConflict"
	// ConditionInsecure says the operator speaks P4Runtime with the UPF in plaintext
	// (spec.p4runtime.insecure): anyone on the path can read and rewrite what it programs.
	// Present only while True.
	ConditionInsecure = "Insecure"

	// ConditionReconciling and ConditionStalled are kstatus's (sigs.k8s.io/cli-utils), which Flux's
	// health checks use and gitops/argocd/health.lua reads the same way. kstatus knows no Junction
	// kind: it calls an object InProgress while status.observedGeneration lags or Reconciling is
	// True, Failed while Stalled is True, and Current otherwise. Both are present only while True.
	// ConditionReconciling says the operator is still working towards Ready (also while an object
	// it names does not exist: the same GitOps sync may apply it next).
	ConditionReconciling = "Reconciling"
	// ConditionStalled says the object cannot become Ready until it, or an object it names,
	// changes (a full table, a conflict, a pipeline or TLS that is invalid).
	ConditionStalled = "Stalled"
)

// Field managers that write ATSSSSession status. Each owns its own fields, so that neither
// erases the other's (server-side apply for the agent; the operator's patches are conflict-checked).
const (
	// FieldManagerUEAgent is the UE agent's field manager: status.agent and the AgentReady condition.
	FieldManagerUEAgent = "junction-ue-agent"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// IPv4Address is the unicast address of one host, in dotted-quad form such as 192.0.2.10: every
// address field of the API is one (a UE's, a gNB's, a session's, the UPF's own), so the one rule
// refuses 0.0.0.0, the broadcast address and multicast. The format check alone lets leading
// zeros through (010.60.0.1), which the data path's parsers refuse later; CEL's isIP does not.
// +kubebuilder:validation:Format=ipv4
// +kubebuilder:validation:MaxLength=15
// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4 && !ip(self).isUnspecified() && self != '255.255.255.255' && !cidr('224.0.0.0/4').containsIP(self)",message="must be a unicast IPv4 address in dotted-quad form without leading zeros (not 0.0.0.0, 255.255.255.255 or multicast)"
type IPv4Address string

// IPv4Prefix is an IPv4 prefix in CIDR notation such as 198.51.100.0/24 (0.0.0.0/0: every
// address). One rule: isCIDR refuses leading zeros, which the format check lets through.
// +kubebuilder:validation:Format=cidr
// +kubebuilder:validation:MaxLength=18
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self).ip().family() == 4 && cidr(self) == cidr(self).masked()",message="must be an IPv4 prefix in CIDR notation without leading zeros and with no host bits set (10.0.0.0/8, not 10.0.0.1/8)"
type IPv4Prefix string

// MACAddress is an Ethernet address such as 02:00:00:00:00:01.
// +kubebuilder:validation:Pattern=`^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$`
type MACAddress string

// Duration is a Go-style duration such as 20ms or 1.5s.
// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
// +kubebuilder:validation:MaxLength=32
type Duration string
