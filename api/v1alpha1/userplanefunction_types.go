package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSMode is how the operator secures its P4Runtime connection.
// +kubebuilder:validation:Enum=TLS;MutualTLS
type TLSMode string

const (
	// TLSServerOnly verifies the switch's certificate against ca.crt; the switch does not learn
	// who the controller is, so it must not accept a controller it cannot authenticate otherwise.
	TLSServerOnly TLSMode = "TLS"
	// TLSMutual also presents tls.crt and tls.key to the switch, which can then refuse every
	// other client (the default).
	TLSMutual TLSMode = "MutualTLS"
)

// P4RuntimeTLS points at a Secret with the connection's certificates.
type P4RuntimeTLS struct {
	// mode is MutualTLS (verify the switch and present the operator's client certificate, the
	// default) or TLS (only verify the switch).
	// +kubebuilder:default=MutualTLS
	// +optional
	Mode TLSMode `json:"mode,omitempty"`

	// secretRef names a Secret in the UPF's namespace with ca.crt, and tls.crt and tls.key for
	// MutualTLS (the layout of a kubernetes.io/tls Secret that cert-manager writes).
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`

	// serverName overrides the name checked in the switch's certificate; default: the host of address.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServerName string `json:"serverName,omitempty"`
}

// P4RuntimeAddress is host:port of a P4Runtime gRPC server: a DNS name or an IP address ([...]
// for IPv6), and a port from 1 to 65535.
// +kubebuilder:validation:Pattern=`^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$`
// +kubebuilder:validation:MaxLength=261
// +kubebuilder:validation:XValidation:rule="int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",message="port must be 1 to 65535"
type P4RuntimeAddress string

// P4RuntimeEndpoint is how to reach one P4Runtime target (a Tofino switch, BMv2, or the
// software UPF). It is secured with tls, or in plaintext only when insecure says so. Its
// election IDs are not the UPF's to choose: the operator derives them from its
// --p4runtime-election-id-high, which the cluster administrator sets, and its leadership epoch.
// (v1alpha1 had a field electionIDHigh, which let whoever may write a UPF outrank the controller
// of a switch; it was removed, and a stored value is pruned.)
// +kubebuilder:validation:XValidation:rule="has(self.tls) != (has(self.insecure) && self.insecure)",message="set exactly one of spec.p4runtime.tls (TLS, mutual by default) and spec.p4runtime.insecure: true (plaintext)"
type P4RuntimeEndpoint struct {
	// address is host:port of the P4Runtime gRPC server, e.g. tofino-1.lab:9559. The operator
	// connects only when a P4RuntimeTarget grants this namespace the device
	// (docs/p4runtime-targets.md).
	// +required
	Address P4RuntimeAddress `json:"address"`

	// deviceID is the P4Runtime device ID of the target.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	DeviceID int64 `json:"deviceID"`

	// tls secures the connection, with a client certificate unless its mode says TLS. Either tls
	// or insecure: true is required. (Before this rule an unset tls meant plaintext; an object
	// stored then is not served until it says which: its Connected condition says TLSRequired.)
	// +optional
	TLS *P4RuntimeTLS `json:"tls,omitempty"`

	// insecure: true speaks P4Runtime in plaintext, for labs and a software UPF on loopback.
	// Whoever can reach the address, or sits on the path, can then read and rewrite every entry,
	// replace the pipeline, or take the primary role: the UPF's Insecure condition and a Warning
	// event say so. Set it or tls, not both.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// role is the P4Runtime role name; empty is the default (full-access) role.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Role string `json:"role,omitempty"`
}

// PushPolicy says when the operator pushes the pipeline to the target.
// +kubebuilder:validation:Enum=IfCookieDiffers;Never
type PushPolicy string

const (
	// PushIfCookieDiffers pushes when the device's pipeline cookie differs from the ConfigMap's.
	PushIfCookieDiffers PushPolicy = "IfCookieDiffers"
	// PushNever only checks that the device runs a pipeline with the same P4Info; someone else pushes it.
	PushNever PushPolicy = "Never"
)

// Pipeline is the JUNCTION-UPF build the target runs, kept in a ConfigMap.
type Pipeline struct {
	// configMapRef names the ConfigMap holding the P4Info and the device config.
	// +required
	ConfigMapRef LocalObjectReference `json:"configMapRef"`

	// p4InfoKey is the ConfigMap key with the P4Info in protobuf text format.
	// +kubebuilder:default=p4info.txtpb
	// +kubebuilder:validation:MaxLength=253
	// +optional
	P4InfoKey string `json:"p4InfoKey,omitempty"`

	// deviceConfigKey is the ConfigMap key (data or binaryData) with the target-specific device
	// config: BMv2 JSON, a Tofino pipeline tarball, or empty for the software UPF.
	// +kubebuilder:default=device_config
	// +kubebuilder:validation:MaxLength=253
	// +optional
	DeviceConfigKey string `json:"deviceConfigKey,omitempty"`

	// pushPolicy is when to push the pipeline.
	// +kubebuilder:default=IfCookieDiffers
	// +optional
	PushPolicy PushPolicy `json:"pushPolicy,omitempty"`
}

// TunnelEndpoint is one pair of the UPF's own addresses that UEs and gNBs send to.
type TunnelEndpoint struct {
	// name identifies the endpoint for sessions' tunnelEndpoint.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// n3Address is the GTP-U (N3) address gNBs send uplink GTP-U to.
	// +required
	N3Address IPv4Address `json:"n3Address"`

	// junctionAddress is the Junction tunnel address UE agents send to on both legs.
	// +required
	JunctionAddress IPv4Address `json:"junctionAddress"`
}

// PortRole says what a switch port faces.
// +kubebuilder:validation:Enum=N3;Non3GPP;N6;Other
type PortRole string

const (
	// PortN3 faces gNBs (the 3GPP access network).
	PortN3 PortRole = "N3"
	// PortNon3GPP faces WiFi or wireline access gateways.
	PortNon3GPP PortRole = "Non3GPP"
	// PortN6 faces the data network.
	PortN6 PortRole = "N6"
	// PortOther is any other port.
	PortOther PortRole = "Other"
)

// Port is one front-panel (or software UPF) port.
type Port struct {
	// name is how routes refer to the port.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// number is the P4Runtime port number (the pipeline's 9-bit port), 0 to 511.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	// +required
	Number int32 `json:"number"`

	// role is what the port faces.
	// +kubebuilder:default=Other
	// +optional
	Role PortRole `json:"role,omitempty"`

	// mac is the source MAC address of frames the UPF sends from this port.
	// +required
	MAC MACAddress `json:"mac"`
}

// Route sends packets for a destination prefix out of a port to a next hop.
type Route struct {
	// destination is the IPv4 prefix the route covers (0.0.0.0/0 for a default route).
	// +required
	Destination IPv4Prefix `json:"destination"`

	// port is the name of the port to send on.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Port string `json:"port"`

	// nextHopMAC is the next hop's MAC address (gNB, access gateway, or data-network router).
	// +required
	NextHopMAC MACAddress `json:"nextHopMAC"`
}

// UserPlaneFunctionSpec says how to reach a P4Runtime switch, which pipeline it runs, and the
// addresses, ports and routes the operator programs into it.
// +kubebuilder:validation:XValidation:rule="!has(self.routes) || self.routes.all(r, has(self.ports) && self.ports.exists(p, p.name == r.port))",message="every route's port must name an entry of ports"
type UserPlaneFunctionSpec struct {
	// p4runtime is how to reach the target.
	// +required
	P4Runtime P4RuntimeEndpoint `json:"p4runtime"`

	// pipeline is the P4 program build the target runs.
	// +required
	Pipeline Pipeline `json:"pipeline"`

	// tunnelEndpoints are the UPF's own GTP-U and Junction addresses, 1 to 16.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +required
	TunnelEndpoints []TunnelEndpoint `json:"tunnelEndpoints"`

	// ports are the switch ports the routes use.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Ports []Port `json:"ports,omitempty"`

	// routes are the next hops toward gNBs, access gateways and the data network.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Routes []Route `json:"routes,omitempty"`

	// n4 opens a PFCP endpoint (TS 29.244) for this UPF: SMFs associate with it and establish,
	// modify and release sessions over N4, which become ATSSSSessions (docs/n4.md). The
	// operator's leader runs it.
	// +optional
	N4 *N4 `json:"n4,omitempty"`
}

// N4 is the UPF's PFCP endpoint.
type N4 struct {
	// nodeID is the UPF's PFCP Node ID, an IPv4 address or an FQDN: what the SMF knows the UPF by,
	// and where it sends N4 (the UP F-SEID carries it when it is an address).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([0-9]{1,3}(\.[0-9]{1,3}){3}|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	// +required
	NodeID string `json:"nodeID"`

	// address is the IPv4 address SMFs reach this endpoint at (the chart's N4 Service, or a
	// load balancer's), which the UP F-SEID of every session carries; unset: nodeID when it is
	// an address, else listen's when that is not 0.0.0.0. An FQDN nodeID with a wildcard listen
	// needs it.
	// +optional
	Address IPv4Address `json:"address,omitempty"`

	// listen is the local IPv4 address and UDP port the endpoint binds, e.g. 0.0.0.0:8805 (the
	// default); each UPF with N4 on one operator needs a port of its own.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(\.[0-9]{1,3}){3}:[0-9]{1,5}$`
	// +optional
	Listen string `json:"listen,omitempty"`

	// tunnelEndpoint names the tunnel endpoint N4 sessions use: TEIDs the UPF chooses are on its
	// n3Address. Unset means the first.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TunnelEndpoint string `json:"tunnelEndpoint,omitempty"`

	// heartbeatInterval is how often the UPF sends each associated SMF a Heartbeat Request;
	// default 10s.
	// +optional
	HeartbeatInterval Duration `json:"heartbeatInterval,omitempty"`

	// gracePeriod is how long the sessions of an SMF that stopped answering heartbeats (three in
	// a row) are kept before they are released; default 60s.
	// +optional
	GracePeriod Duration `json:"gracePeriod,omitempty"`

	// trafficStopAfter is how long the directions a URR measures must carry no packet before
	// the UPF reports the stop of traffic to the SMF (Reporting Trigger STOPT, TS 29.244
	// §8.2.19, whose detection the UPF decides); default 10s. The counters are read once a
	// second, so the report comes up to a second later.
	// +optional
	TrafficStopAfter Duration `json:"trafficStopAfter,omitempty"`

	// smfRestartDetection is what tells the UPF an SMF restarted, and so lost its sessions, which
	// the UPF then releases: Heartbeat (the default, TS 29.244 §19A), a new Recovery Time Stamp
	// in any message that carries one (a heartbeat in either direction, an Association Setup
	// Request); Association, only a new one in an Association Setup Request (an SMF that restarts
	// associates again before it establishes sessions), for SMFs whose heartbeats carry stamps
	// that change without a restart (OAI's stamps every Heartbeat Request with the time it sends
	// it: docs/n4.md).
	// +kubebuilder:validation:Enum=Heartbeat;Association
	// +optional
	SMFRestartDetection SMFRestartDetection `json:"smfRestartDetection,omitempty"`

	// allowedSMFs are the prefixes SMFs may associate from: an Association Setup Request from
	// any other address is refused (cause 64) and reported with an event. Unset: any SMF that
	// reaches the endpoint, which PFCP does not authenticate (docs/threat-model.md, "N4").
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	AllowedSMFs []IPv4Prefix `json:"allowedSMFs,omitempty"`

	// associateWith are SMFs the UPF sets up a PFCP association with itself (UP function
	// initiated, TS 29.244 §6.2.6.3), for SMFs that wait for their UPFs to associate: each an IPv4
	// address or a DNS name (a Service's, resolved to IPv4 at each attempt), with a port when not
	// 8805. The UPF sends its Association Setup Request at once and again every heartbeatInterval
	// while it has no association at that address (the SMF does not answer, refuses, or
	// restarted). These SMFs are associated whatever allowedSMFs says; an SMF may still set up an
	// association itself.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^([0-9]{1,3}(\.[0-9]{1,3}){3}|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)(:[0-9]{1,5})?$`
	// +kubebuilder:validation:items:MaxLength=259
	// +listType=set
	// +optional
	AssociateWith []string `json:"associateWith,omitempty"`

	// accessGateways say which access is behind each N3IWF, TNGF or W-AGF, by its N3 address
	// (only those not WiFi need to be listed). PFCP names a non-3GPP leg's gateway (its FAR's Outer Header Creation) but not
	// whether the access behind it is WLAN or a fixed line: a W-AGF is N3 trusted non-3GPP
	// access as a TNGF is (TS 23.316). An N4 session's leg through a gateway listed here takes
	// its type; a leg through another gateway, or a plain one, is WiFi. A change applies to the
	// sessions an SMF establishes or modifies after it.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=address
	// +optional
	AccessGateways []N4AccessGateway `json:"accessGateways,omitempty"`
}

// SMFRestartDetection names what tells the UPF an SMF restarted (N4.SMFRestartDetection).
type SMFRestartDetection string

const (
	SMFRestartOnHeartbeat   SMFRestartDetection = "Heartbeat"
	SMFRestartOnAssociation SMFRestartDetection = "Association"
)

// N4AccessGateway is an access gateway's N3 address and the access behind it.
type N4AccessGateway struct {
	// address is the gateway's N3 (GTP-U) address, as the FARs toward it name it.
	// +required
	Address IPv4Address `json:"address"`

	// type is the access the gateway serves: Wireline for a W-AGF, WiFi for an N3IWF or TNGF.
	// +required
	Type NonThreeGPPType `json:"type"`
}

// N4Association is one SMF associated with the UPF's N4 endpoint.
type N4Association struct {
	// nodeID is the SMF's PFCP Node ID.
	NodeID string `json:"nodeID"`
	// address is where the SMF's messages come from (IPv4:port).
	Address string `json:"address"`
	// since is when the association was set up.
	Since metav1.Time `json:"since"`
	// smfRecoveryTimeStamp is the SMF's Recovery Time Stamp.
	SMFRecoveryTimeStamp metav1.Time `json:"smfRecoveryTimeStamp"`
}

// N4Status is what the N4 endpoint reports.
type N4Status struct {
	// recoveryTimeStamp is the UPF's PFCP Recovery Time Stamp. It stays across operator restarts
	// and leader changes, which keep the N4 sessions, so SMFs see no restart.
	// +optional
	RecoveryTimeStamp *metav1.Time `json:"recoveryTimeStamp,omitempty"`
	// associations are the SMFs associated now.
	// +listType=map
	// +listMapKey=nodeID
	// +optional
	Associations []N4Association `json:"associations,omitempty"`
	// sessions is how many PFCP sessions the endpoint holds.
	// +optional
	Sessions int32 `json:"sessions,omitempty"`
	// unsavedSince is set while some session the SMFs were told about is not yet written as its
	// ATSSSSession (the endpoint answers once the switch holds a session and writes the object
	// after). An endpoint that starts and finds it set cannot restore every session: it takes a
	// new Recovery Time Stamp, so that the SMFs establish their sessions again.
	// +optional
	UnsavedSince *metav1.Time `json:"unsavedSince,omitempty"`
	// pfds are the Packet Flow Descriptions SMFs provisioned (PFD Management, TS 29.244 §6.2.5):
	// an N4 session's PDR with one of these Application IDs detects its traffic by them, in
	// place of the SteeringPolicy of that name (docs/n4.md).
	// +listType=map
	// +listMapKey=applicationID
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	PFDs []N4ApplicationPFDs `json:"pfds,omitempty"`
}

// The most status.n4.pfds holds (its markers' values), which the N4 endpoint keeps within.
const (
	MaxPFDApplications       = 1024
	MaxApplicationIDLength   = 255
	MaxPFDFlowDescriptions   = 64
	MaxFlowDescriptionLength = 512
)

// N4ApplicationPFDs are one application's PFDs as an SMF provisioned them.
type N4ApplicationPFDs struct {
	// applicationID is the Application ID PDRs name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	ApplicationID string `json:"applicationID"`
	// flowDescriptions are the application's flows, IPFilterRule as in SDF filters.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=atomic
	// +required
	FlowDescriptions []string `json:"flowDescriptions"`
}

// TableUsage is how full one table of the UPF is.
type TableUsage struct {
	// name is the P4Info table name.
	Name string `json:"name"`
	// used is the number of entries the operator has written.
	Used int64 `json:"used"`
	// size is the table's capacity from the P4Info.
	Size int64 `json:"size"`
}

// UserPlaneFunctionStatus is the state of the connection and the pipeline.
type UserPlaneFunctionStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// pipelineCookie is the cookie of the pipeline the device runs, in hex.
	// +optional
	PipelineCookie string `json:"pipelineCookie,omitempty"`

	// electionID is the election ID the operator holds the stream with, high:low.
	// +optional
	ElectionID string `json:"electionID,omitempty"`

	// lastReplay is when the operator last replayed the whole desired state into the device
	// (after it connected or the device restarted).
	// +optional
	LastReplay *metav1.Time `json:"lastReplay,omitempty"`

	// sessions is how many ATSSSSessions are programmed on this UPF.
	// +optional
	Sessions int32 `json:"sessions,omitempty"`

	// users is how many user indexes (UEs, one per SUPI) are allocated on this UPF.
	// +optional
	Users int32 `json:"users,omitempty"`

	// tunnelPeers is how many gNBs (tunnel_peers entries) the UPF's sessions use.
	// +optional
	TunnelPeers int32 `json:"tunnelPeers,omitempty"`

	// n4 is the N4 endpoint's state, written by the endpoint.
	// +optional
	N4 *N4Status `json:"n4,omitempty"`

	// tables is how full each table is.
	// +listType=map
	// +listMapKey=name
	// +optional
	Tables []TableUsage `json:"tables,omitempty"`

	// conditions: Connected, PipelineReady and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// UserPlaneFunction is one P4Runtime switch running the JUNCTION-UPF pipeline.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=upf,categories=junction
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="argocd.argoproj.io/sync-options=Prune=false,Delete=false"
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.p4runtime.address`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Pipeline",type=string,JSONPath=`.status.conditions[?(@.type=="PipelineReady")].status`
// +kubebuilder:printcolumn:name="Sessions",type=integer,JSONPath=`.status.sessions`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is or is not Ready: the Ready condition's reason"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UserPlaneFunction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UserPlaneFunctionSpec   `json:"spec"`
	Status UserPlaneFunctionStatus `json:"status,omitempty"`
}

// UserPlaneFunctionList is a list of UserPlaneFunction.
// +kubebuilder:object:root=true
type UserPlaneFunctionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UserPlaneFunction `json:"items"`
}

func init() {
	SchemeBuilder.Register(&UserPlaneFunction{}, &UserPlaneFunctionList{})
}
