package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UE identifies the user equipment of a session and where its agent runs.
type UE struct {
	// supi is the UE's Subscription Permanent Identifier: imsi-<5 to 15 digits> or nai-<NAI>.
	// All sessions of one SUPI share one user index, so one set of path state (the paper's
	// unified traffic steering structure).
	// +kubebuilder:validation:Pattern=`^(imsi-[0-9]{5,15}|nai-[^\s]{1,240})$`
	// +kubebuilder:validation:MaxLength=256
	// +required
	SUPI string `json:"supi"`

	// nodeName is the Kubernetes node whose Junction UE agent (DaemonSet pod) serves this UE.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	NodeName string `json:"nodeName,omitempty"`
}

// ThreeGPPLeg is the session's 5G leg: a GTP-U tunnel between the gNB and the UPF.
// +kubebuilder:validation:XValidation:rule="has(self.gnbAddress) == has(self.downlinkTEID)",message="gnbAddress and downlinkTEID go together: the downlink tunnel toward the gNB"
// +kubebuilder:validation:XValidation:rule="has(self.gnbAddress) || (has(self.bufferDownlink) && self.bufferDownlink) || (has(self.dropDownlink) && self.dropDownlink)",message="gnbAddress and downlinkTEID are required unless bufferDownlink or dropDownlink is set (an idle UE, or one whose gNB is not known yet, has no downlink tunnel)",fieldPath=".gnbAddress"
// +kubebuilder:validation:XValidation:rule="!(has(self.bufferDownlink) && self.bufferDownlink && has(self.dropDownlink) && self.dropDownlink)",message="bufferDownlink and dropDownlink exclude each other: the downlink is held or dropped",fieldPath=".dropDownlink"
// +kubebuilder:validation:XValidation:rule="has(self.uplinkTEID) || (has(self.dropDownlink) && self.dropDownlink)",message="uplinkTEID is required unless dropDownlink is set (an idle UE whose SMF removed every rule has no uplink tunnel)",fieldPath=".uplinkTEID"
// +kubebuilder:validation:XValidation:rule="!has(self.indirectForwarding) || !has(self.uplinkTEID) || self.indirectForwarding.teid != self.uplinkTEID",message="indirectForwarding.teid must differ from uplinkTEID: the TEID tells the UPF whether a G-PDU is the UE's uplink or forwarded downlink",fieldPath=".indirectForwarding.teid"
type ThreeGPPLeg struct {
	// ueAddress is the UE's address on its 3GPP PDU session (inside GTP-U).
	// +required
	UEAddress IPv4Address `json:"ueAddress"`

	// gnbAddress is the gNB's N3 address, the outer destination of downlink GTP-U. Unset only
	// while the downlink buffers or drops.
	// +optional
	GNBAddress IPv4Address `json:"gnbAddress,omitempty"`

	// uplinkTEID is the TEID the gNB puts on uplink GTP-U toward the UPF, 1 to 4294967295. Unset
	// only while the downlink drops and the session has no uplink either (over N4, an idle UE's
	// session whose SMF removed every rule, as OAI's does: docs/n4.md).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	UplinkTEID int64 `json:"uplinkTEID,omitempty"`

	// downlinkTEID is the TEID the UPF puts on downlink GTP-U toward the gNB, 1 to 4294967295.
	// Unset only while the downlink buffers or drops.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	DownlinkTEID int64 `json:"downlinkTEID,omitempty"`

	// bufferDownlink, for a SingleAccess session whose UE is idle (its SMF's FAR says BUFF), has
	// the UPF hold the session's downlink instead of tunnelling it, and report the first packet
	// to the SMF; when it is cleared the held packets go to the gNB in order (docs/n4.md,
	// "Buffering"). On a MultiAccess session it needs the non-3GPP leg absent or inactive: the
	// UE is idle on 3GPP and reachable on no other access, so the UPF holds the whole downlink
	// and installs nothing else for the session until a leg is active again.
	// +optional
	BufferDownlink bool `json:"bufferDownlink,omitempty"`

	// dropDownlink, for a SingleAccess session whose SMF's downlink FAR says DROP (free5GC
	// establishes every session so until the gNB has given its tunnel) or that has no downlink
	// PDR (OAI's SMF sends it with the gNB's tunnel), has the UPF drop the session's downlink,
	// counted as FILTERED; the uplink still goes, if the session has an uplink TEID (docs/n4.md).
	// On a MultiAccess session it marks the leg inactive: no downlink goes on it, and with an
	// uplink TEID its uplink still goes, as for a UE back on 3GPP before its SMF has given the
	// gNB's tunnel (docs/n4.md, "An access not active").
	// +optional
	DropDownlink bool `json:"dropDownlink,omitempty"`

	// indirectForwarding is an N2 handover's indirect data forwarding tunnel (TS 23.502
	// §4.9.1.3): while the UE moves to a gNB that the source gNB has no direct path to, the
	// source gNB forwards the session's downlink to the UPF on this tunnel, and the UPF sends it
	// on to the target gNB's. An SMF sets it over N4 for the handover and removes it after
	// (docs/n4.md, "Indirect data forwarding").
	// +optional
	IndirectForwarding *IndirectForwarding `json:"indirectForwarding,omitempty"`
}

// IndirectForwarding is a GTP-U tunnel the UPF relays: what arrives on teid (from the source
// gNB, to the UPF's N3 address) leaves toward gnbAddress with gnbTEID, its content unchanged.
type IndirectForwarding struct {
	// teid is the TEID on the UPF's N3 address that the source gNB forwards to, 1 to 4294967295.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +required
	TEID int64 `json:"teid"`

	// gnbAddress is the target gNB's N3 address.
	// +required
	GNBAddress IPv4Address `json:"gnbAddress"`

	// gnbTEID is the TEID the target gNB gave for the forwarded downlink, 1 to 4294967295.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +required
	GNBTEID int64 `json:"gnbTEID"`
}

// Buffers reports whether the leg is there and its downlink buffers.
func (l *ThreeGPPLeg) Buffers() bool { return l != nil && l.BufferDownlink }

// Tunnels reports whether the leg is there and its downlink goes into its GTP-U tunnel (it
// neither buffers nor drops).
func (l *ThreeGPPLeg) Tunnels() bool { return l != nil && !l.BufferDownlink && !l.DropDownlink }

// NonThreeGPPType is the kind of non-3GPP access.
// +kubebuilder:validation:Enum=WiFi;Wireline
type NonThreeGPPType string

const (
	// NonThreeGPPWiFi is untrusted or trusted WLAN access.
	NonThreeGPPWiFi NonThreeGPPType = "WiFi"
	// NonThreeGPPWireline is fixed access (5G-RG/FN-RG through a W-AGF, paper 001).
	NonThreeGPPWireline NonThreeGPPType = "Wireline"
)

// NonThreeGPPLeg is the session's WiFi or wireline leg: Junction over plain IP from the UE, or,
// as a 5G core builds it, over N3: GTP-U between the UPF and the access gateway the access ends
// at (N3IWF for untrusted WiFi, TNGF for trusted WiFi, W-AGF for wireline), carrying the same
// Junction packets (docs/pipeline.md, "The non-3GPP leg over N3").
// +kubebuilder:validation:XValidation:rule="has(self.uplinkTEID) == has(self.downlinkTEID)",message="uplinkTEID and downlinkTEID go together: both for a leg over N3, neither for plain IP"
// +kubebuilder:validation:XValidation:rule="!has(self.uplinkTEID) || has(self.gatewayAddress)",message="gatewayAddress is required for a leg over N3 (uplinkTEID and downlinkTEID set): downlink GTP-U goes to it",fieldPath=".gatewayAddress"
type NonThreeGPPLeg struct {
	// type is WiFi or Wireline.
	// +required
	Type NonThreeGPPType `json:"type"`

	// ueAddress is the UE's address on that access, where the UPF sends downlink Junction packets.
	// +required
	UEAddress IPv4Address `json:"ueAddress"`

	// gatewayAddress is the access gateway (N3IWF, TNGF, W-AGF or router) in front of the UE. For
	// a leg over N3 it is the gateway's N3 address, the outer destination of downlink GTP-U;
	// for a plain leg it is documentation (the UPF routes by its routes table).
	// +optional
	GatewayAddress IPv4Address `json:"gatewayAddress,omitempty"`

	// uplinkTEID, set for a leg over N3, is the TEID the access gateway puts on uplink GTP-U
	// toward the UPF, 1 to 4294967295. Unset: Junction over plain IP from the UE.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	UplinkTEID int64 `json:"uplinkTEID,omitempty"`

	// downlinkTEID, set for a leg over N3, is the TEID the UPF puts on downlink GTP-U toward the
	// access gateway, 1 to 4294967295.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	DownlinkTEID int64 `json:"downlinkTEID,omitempty"`

	// dropDownlink marks the leg inactive: its SMF has not given its tunnel, or the UE is not
	// reachable on that access for now (over N4, a MAR's FAR for this access that buffers, drops
	// or has no Outer Header Creation). The UPF installs nothing for it, so the downlink goes
	// over the other access and uplink on this one is not taken (docs/n4.md, "An access not
	// active").
	// +optional
	DropDownlink bool `json:"dropDownlink,omitempty"`
}

// OverN3 says whether the leg reaches the UPF through an access gateway's GTP-U tunnel.
func (l *NonThreeGPPLeg) OverN3() bool { return l != nil && l.UplinkTEID != 0 }

// AccessLegs are the two legs of an MA PDU session; at least one must be given.
// +kubebuilder:validation:XValidation:rule="has(self.threeGPP) || has(self.nonThreeGPP)",message="at least one access leg (threeGPP or nonThreeGPP) is required"
// +kubebuilder:validation:XValidation:rule="!has(self.threeGPP) || !has(self.nonThreeGPP) || !has(self.nonThreeGPP.uplinkTEID) || self.nonThreeGPP.uplinkTEID != self.threeGPP.uplinkTEID",message="the legs' uplink TEIDs must differ: the TEID tells the UPF which leg a packet came on",fieldPath=".nonThreeGPP.uplinkTEID"
type AccessLegs struct {
	// threeGPP is the 5G leg.
	// +optional
	ThreeGPP *ThreeGPPLeg `json:"threeGPP,omitempty"`

	// nonThreeGPP is the WiFi or wireline leg.
	// +optional
	NonThreeGPP *NonThreeGPPLeg `json:"nonThreeGPP,omitempty"`
}

// SessionType says whether a session is an MA PDU session (Junction's tunnel over one or both
// legs) or an ordinary single-access PDU session (plain GTP-U on N3, what an SMF sends without a
// MAR).
// +kubebuilder:validation:Enum=MultiAccess;SingleAccess
type SessionType string

const (
	// SessionMultiAccess is an MA PDU session: the UE agent's Junction tunnel over its legs.
	SessionMultiAccess SessionType = "MultiAccess"
	// SessionSingleAccess is a PDU session on 3GPP access only: the UE's packets in GTP-U, no
	// Junction header, no steering (the pipeline's uplink_tunnels and downlink_tunnels).
	SessionSingleAccess SessionType = "SingleAccess"
)

// ATSSSSessionSpec is one MA PDU session: one UE, one session address, its access legs and the
// policies that steer its traffic.
// +kubebuilder:validation:XValidation:rule="!has(self.modeOverride) || !(self.modeOverride.mode in ['LoadBalance', 'PriorityBased', 'Redundant']) || (has(self.accessLegs.threeGPP) && has(self.accessLegs.nonThreeGPP))",message="modeOverride LoadBalance, PriorityBased and Redundant need both access legs"
// +kubebuilder:validation:XValidation:rule="!has(self.policySteering) || self.policySteering.all(p, !(p.steering.mode in ['LoadBalance', 'PriorityBased', 'Redundant'])) || (has(self.accessLegs.threeGPP) && has(self.accessLegs.nonThreeGPP))",message="policySteering LoadBalance, PriorityBased and Redundant need both access legs"
// +kubebuilder:validation:XValidation:rule="!has(self.modeOverrideThresholds) || has(self.modeOverride)",message="modeOverrideThresholds needs modeOverride"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'SingleAccess' || (has(self.accessLegs.threeGPP) && !has(self.accessLegs.nonThreeGPP) && self.accessLegs.threeGPP.ueAddress == self.sessionAddress && !has(self.policyRefs) && !has(self.policySelector) && !has(self.modeOverride) && !has(self.policySteering))",message="a SingleAccess session has a 3GPP leg only, whose ueAddress is the sessionAddress, and no steering (policies or overrides)"
// +kubebuilder:validation:XValidation:rule="!has(self.policySteering) || self.policySteering.all(p, has(self.policyRefs) && self.policyRefs.exists(r, r.name == p.name))",message="every policySteering name must be in policyRefs"
// +kubebuilder:validation:XValidation:rule="!has(self.accessLegs.threeGPP) || !has(self.accessLegs.threeGPP.bufferDownlink) || !self.accessLegs.threeGPP.bufferDownlink || (has(self.type) && self.type == 'SingleAccess') || !has(self.accessLegs.nonThreeGPP) || (has(self.accessLegs.nonThreeGPP.dropDownlink) && self.accessLegs.nonThreeGPP.dropDownlink)",message="bufferDownlink on an MA PDU session needs its non-3GPP leg absent or inactive (dropDownlink): while that access is active the downlink takes it",fieldPath=".accessLegs.threeGPP.bufferDownlink"
// +kubebuilder:validation:XValidation:rule="!has(self.qosFlows) || (has(self.qfi) && self.qosFlows.all(f, f.qfi != self.qfi && self.qosFlows.exists_one(g, g.qfi == f.qfi)))",message="qosFlows need the session's qfi, and every flow a QFI of its own: neither the session's nor another flow's",fieldPath=".qosFlows"
type ATSSSSessionSpec struct {
	// ue is the user equipment.
	// +required
	UE UE `json:"ue"`

	// type is MultiAccess (the default: an MA PDU session through the UE agent's tunnel) or
	// SingleAccess (an ordinary PDU session: plain GTP-U on its 3GPP leg). Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	// +optional
	Type SessionType `json:"type,omitempty"`

	// sessionAddress is the session's virtual tunnel address, the session ID in the UPF. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sessionAddress is immutable"
	SessionAddress IPv4Address `json:"sessionAddress"`

	// upfRef is the UserPlaneFunction the session lives on. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="upfRef is immutable"
	UPFRef LocalObjectReference `json:"upfRef"`

	// tunnelEndpoint is the name of the UPF tunnel endpoint the UE uses; unset means the first.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TunnelEndpoint string `json:"tunnelEndpoint,omitempty"`

	// accessLegs are the 3GPP and non-3GPP legs.
	// +required
	AccessLegs AccessLegs `json:"accessLegs"`

	// qfi is the QoS Flow Identifier of the session's QoS flow, 1 to 63, as the SMF gave it to
	// the gNB: the UPF marks it in a PDU Session Container on every downlink G-PDU it sends on
	// N3 (to the gNB, and to the gateway of a non-3GPP leg over N3), as TS 29.281 §5.2.2.7
	// asks. Unset: the G-PDUs carry no container (a gNB that maps QFIs to radio bearers drops
	// them).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=63
	// +optional
	QFI int32 `json:"qfi,omitempty"`

	// maxBitRate is the session's maximum bit rate in each direction (its Session-AMBR, TS
	// 23.501 §5.7.2.6; over N4, the MBR of the QERs its PDRs name): the UPF polices the
	// session's user packets, both legs together, and drops what exceeds it (docs/pipeline.md,
	// "MBR policer"); its GBR QoS flows' are outside it. Unset, or a direction unset: not
	// policed.
	// +optional
	MaxBitRate *BitRate `json:"maxBitRate,omitempty"`

	// qosFlows are QoS flows of the session's own beside its default one (qfi, maxBitRate): the
	// user packets a flow's trafficDescriptor matches carry its QFI on N3 in place of the
	// session's and meet its MBR policer before the session's (docs/pipeline.md, "QoS flows").
	// Over N4, the PDRs of a PCC rule whose QoS differs from the session's default (docs/n4.md).
	// They need qfi: a flow's QFI replaces the session's in the container its G-PDUs carry.
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +optional
	QoSFlows []QoSFlow `json:"qosFlows,omitempty"`

	// gates close a direction of the session's default QoS flow: while one is Closed the UPF
	// drops the session's user packets that way, those of its qosFlows excepted, which have
	// gates of their own (over N4, the Gate Status of the QERs its PDRs name, or a URR's quota
	// used up: docs/n4.md). Without qosFlows, by its MBR policer's cell at rate zero
	// (docs/pipeline.md, "MBR policer"); with them, by its default flow's policer cell
	// ("QoS flows"). Probes and link messages still go. Unset, or a direction unset: open.
	// +optional
	Gates *Gates `json:"gates,omitempty"`

	// policyRefs name SteeringPolicies that apply to this session.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	PolicyRefs []LocalObjectReference `json:"policyRefs,omitempty"`

	// policySelector selects further SteeringPolicies by label. (The schema of a LabelSelector
	// leaves the operator free; an unknown one would select nothing, silently.)
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions operators must be In, NotIn, Exists or DoesNotExist"
	// +optional
	PolicySelector *metav1.LabelSelector `json:"policySelector,omitempty"`

	// modeOverride replaces the policies' steering mode for this session only; such a session is
	// an exception entry in the UPF (session_overrides) rather than summarized.
	// +optional
	ModeOverride *SteeringMode `json:"modeOverride,omitempty"`

	// modeOverrideThresholds are the Rel-17 thresholds of modeOverride (the policies' own
	// thresholds never apply to an overridden mode); unset means none.
	// +optional
	ModeOverrideThresholds *Thresholds `json:"modeOverrideThresholds,omitempty"`

	// policySteering replaces the steering of single policies named in policyRefs for this
	// session only (ahead of modeOverride): the policy keeps classifying the traffic, the session
	// steers it its own way, as an SMF's MAR does for one PDR's traffic. Such a session is an
	// exception entry.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	PolicySteering []PolicySteering `json:"policySteering,omitempty"`
}

// MaxQoSFlows is how many QoS flows of its own a session may have (spec.qosFlows' MaxItems).
// A session's block of flow policer cells (status.qosFlowIndex) holds a cell for each and one
// for its default flow's gates: QoSFlowBlock cells.
const (
	MaxQoSFlows  = 4
	QoSFlowBlock = MaxQoSFlows + 1
)

// MaxQoSFlowFilters is how many filters a QoS flow may have (spec.qosFlows[].filters' MaxItems):
// the 15 packet filters a QoS rule holds (TS 24.501 §9.11.4.13).
const MaxQoSFlowFilters = 15

// QoSFlow is a QoS flow of a session's own: part of its traffic, marked with the flow's QFI and
// policed at the flow's MBR.
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDescriptor) || (!has(self.trafficDescriptor.sourcePrefixes) && !has(self.trafficDescriptor.dscp))",message="a QoS flow's trafficDescriptor matches the server's side, protocol and ports (the session is its UE side): sourcePrefixes and dscp are not matched"
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDescriptor) || !has(self.trafficDescriptor.protocol) || self.trafficDescriptor.protocol in ['TCP', 'UDP'] || (!has(self.trafficDescriptor.destinationPorts) && !has(self.trafficDescriptor.sourcePorts))",message="trafficDescriptor ports need protocol TCP or UDP"
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDescriptor) || !has(self.filters)",message="a QoS flow has a trafficDescriptor (both directions) or filters, not both"
type QoSFlow struct {
	// name names the flow within the session.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// qfi is the flow's QoS Flow Identifier, 1 to 63, unique in the session.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=63
	// +required
	QFI int32 `json:"qfi"`

	// precedence orders flows whose traffic overlaps: the lowest value wins, 0 to 65533 (the
	// pipeline's lowest priority is the default flow's).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65533
	// +optional
	Precedence int32 `json:"precedence,omitempty"`

	// trafficDescriptor selects the flow's packets both ways, as seen from the UE: destination
	// prefixes and ports are the server's side (a downlink packet's source), sourcePorts the
	// UE's. Unset, and no filters: every packet of the session.
	// +optional
	TrafficDescriptor TrafficDescriptor `json:"trafficDescriptor,omitzero"`

	// filters select the flow's packets in place of trafficDescriptor, where they are several or
	// differ by direction, as an SMF's SDF filters may (one per flow description, on the flow's
	// downlink PDR, its uplink PDR or both): a packet is in the flow when a filter for its
	// direction matches it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=15
	// +optional
	Filters []QoSFlowFilter `json:"filters,omitempty"`

	// maxBitRate is the flow's maximum bit rate in each direction (its MFBR); the session's own
	// (spec.maxBitRate, its Session-AMBR) polices the flow's packets too, unless the flow is a
	// GBR flow. Unset, or a direction unset: only the session's (a GBR flow: none).
	// +optional
	MaxBitRate *BitRate `json:"maxBitRate,omitempty"`

	// guaranteedBitRate makes the flow a GBR flow, with the bit rate the network guarantees it
	// in each direction (its GFBR). A GBR flow is outside its session's Session-AMBR (TS 23.501
	// §5.7.2.6): the UPF polices it at its maxBitRate alone. The guarantee is the RAN's and the
	// transport's to keep, as in every UPF: Junction records it and never polices the flow below
	// its maxBitRate. The rates need not be below maxBitRate's (Open5GS gives 4 Tbit/s for a
	// direction its PCC rule has no GBR for). Unset: a non-GBR flow.
	// +optional
	GuaranteedBitRate *BitRate `json:"guaranteedBitRate,omitempty"`

	// gates close a direction of the flow: while one is Closed the UPF drops the flow's
	// packets that way, by the flow's policer cell at rate zero, whatever the session's gates
	// (over N4, the Gate Status of the QERs its PDRs name, or the quota of a URR that measures
	// it used up). Unset, or a direction unset: open.
	// +optional
	Gates *Gates `json:"gates,omitempty"`
}

// QoSFlowFilter is one of a QoS flow's packet filters: a traffic descriptor, for one direction or
// both (TS 24.501's packet filter direction).
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDescriptor.sourcePrefixes) && !has(self.trafficDescriptor.dscp)",message="a QoS flow's trafficDescriptor matches the server's side, protocol and ports (the session is its UE side): sourcePrefixes and dscp are not matched"
// +kubebuilder:validation:XValidation:rule="!has(self.trafficDescriptor.protocol) || self.trafficDescriptor.protocol in ['TCP', 'UDP'] || (!has(self.trafficDescriptor.destinationPorts) && !has(self.trafficDescriptor.sourcePorts))",message="trafficDescriptor ports need protocol TCP or UDP"
type QoSFlowFilter struct {
	// direction is the packets the filter is for: Downlink (to the UE), Uplink (from the UE) or
	// Bidirectional.
	// +required
	Direction FlowDirection `json:"direction"`

	// trafficDescriptor selects them as a flow's does: the server's side, protocol and ports.
	// +required
	TrafficDescriptor TrafficDescriptor `json:"trafficDescriptor"`
}

// FlowDirection is the direction of a QoS flow's packet filter.
// +kubebuilder:validation:Enum=Bidirectional;Downlink;Uplink
type FlowDirection string

const (
	FlowBidirectional FlowDirection = "Bidirectional"
	FlowDownlink      FlowDirection = "Downlink"
	FlowUplink        FlowDirection = "Uplink"
)

// BitRate is a rate in each direction, in kilobits per second (1,000 bit/s, the unit of PFCP's
// MBR IE, TS 29.244 §8.2.8), up to its 40 bits.
type BitRate struct {
	// uplinkKbps is the rate from the UE.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1099511627775
	// +optional
	UplinkKbps *int64 `json:"uplinkKbps,omitempty"`
	// downlinkKbps is the rate to the UE.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1099511627775
	// +optional
	DownlinkKbps *int64 `json:"downlinkKbps,omitempty"`
}

// GateStatus is whether a gate lets a direction's user packets through.
// +kubebuilder:validation:Enum=Open;Closed
type GateStatus string

const (
	GateOpen   GateStatus = "Open"
	GateClosed GateStatus = "Closed"
)

// Gates are the gates of a QoS flow (a session's default one, or one of its own), one per direction.
type Gates struct {
	// uplink is the gate of the user packets from the UE.
	// +optional
	Uplink GateStatus `json:"uplink,omitempty"`
	// downlink is the gate of the user packets to the UE.
	// +optional
	Downlink GateStatus `json:"downlink,omitempty"`
}

// Closed reports whether the gate of a direction is closed (g may be nil: both open).
func (g *Gates) Closed(uplink bool) bool {
	if g == nil {
		return false
	}
	if uplink {
		return g.Uplink == GateClosed
	}
	return g.Downlink == GateClosed
}

// PolicySteering is one session's own steering for the traffic of one SteeringPolicy.
type PolicySteering struct {
	// name of a SteeringPolicy in policyRefs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// steering replaces the policy's steering mode for this session.
	// +required
	Steering SteeringMode `json:"steering"`

	// thresholds replace the policy's thresholds for this session; unset means none.
	// +optional
	Thresholds *Thresholds `json:"thresholds,omitempty"`
}

// LookupKind says how the UPF finds a session's steering: through shared entries or its own.
// +kubebuilder:validation:Enum=Summarized;Exception
type LookupKind string

const (
	// LookupSummarized sessions use only their sessions entry and the shared applications entries.
	LookupSummarized LookupKind = "Summarized"
	// LookupException sessions also have session_overrides entries (their own sequence counter).
	LookupException LookupKind = "Exception"
)

// PathStatus is what the UPF last measured on one access.
type PathStatus struct {
	// available is false when the access is down or was never measured.
	Available bool `json:"available"`

	// rtt is the last RTT measured by the UPF's probe exchange.
	// +optional
	RTT Duration `json:"rtt,omitempty"`
}

// SessionPaths is the per-access state of the session's user (shared by all its sessions).
type SessionPaths struct {
	// threeGPP is the 3GPP access.
	// +optional
	ThreeGPP *PathStatus `json:"threeGPP,omitempty"`

	// nonThreeGPP is the non-3GPP access.
	// +optional
	NonThreeGPP *PathStatus `json:"nonThreeGPP,omitempty"`
}

// ATSSSSessionStatus is what the operator and the UPF report about the session. Path fields are
// refreshed at a bounded rate, never once per probe.
type ATSSSSessionStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// userIndex is the UPF user index of the session's SUPI, shared by all its sessions.
	// +optional
	UserIndex *int32 `json:"userIndex,omitempty"`

	// sequenceIndex is the session's sequence counter (session_seq register index) on its UPF;
	// set only while the session is an exception entry. Recorded before the entries are written.
	// +optional
	SequenceIndex *int32 `json:"sequenceIndex,omitempty"`

	// usageIndex is the session's cell in the uplink_usage and downlink_usage counters on its UPF
	// (docs/pipeline.md, "Usage counters"), which N4 usage reports read. Recorded before the
	// entries are written.
	// +optional
	UsageIndex *int32 `json:"usageIndex,omitempty"`

	// qosFlowIndex is the session's block of QoS flow policer cells (uplink_flow_mbr,
	// downlink_flow_mbr) on its UPF: flow i of spec.qosFlows has cell QoSFlowBlock (5) ×
	// qosFlowIndex + i, the session's default flow the block's last, 5 × qosFlowIndex + 4. Set
	// only while the session has qosFlows; recorded before the entries are written.
	// +optional
	QoSFlowIndex *int32 `json:"qosFlowIndex,omitempty"`

	// tunnelPeerIndex is the tunnel_peers index of the session's gNB on its UPF, shared by every
	// session behind that gNB; set only when the session has a 3GPP leg.
	// +optional
	TunnelPeerIndex *int32 `json:"tunnelPeerIndex,omitempty"`

	// lookup says whether the session is summarized or an exception entry.
	// +optional
	Lookup LookupKind `json:"lookup,omitempty"`

	// steering lists the steering modes in effect, e.g. "SmallestDelay" or "LoadBalance,ActiveStandby".
	// +optional
	Steering string `json:"steering,omitempty"`

	// paths are the per-access availability and RTT.
	// +optional
	Paths SessionPaths `json:"paths,omitempty"`

	// activeAccess is the access that carries most of the downlink now.
	// +optional
	ActiveAccess Access `json:"activeAccess,omitempty"`

	// lastPathSwitch is when activeAccess last changed.
	// +optional
	LastPathSwitch *metav1.Time `json:"lastPathSwitch,omitempty"`

	// pathUpdatesSuspended is true while the operator has suspended in-data-plane path updates
	// for this user because its paths flip-flop.
	// +optional
	PathUpdatesSuspended bool `json:"pathUpdatesSuspended,omitempty"`

	// agent is the UE agent's own view of the session, written by the agent on spec.ue.nodeName
	// by server-side apply under its field manager (junction-ue-agent); the operator never writes it.
	// +optional
	Agent *AgentStatus `json:"agent,omitempty"`

	// conditions: Programmed (entries written to the UPF), Ready, Degraded (fewer accesses work
	// than the session has legs), all written by the operator; AgentReady, written by the UE agent
	// (the session's tunnel is up on its node with at least one working leg).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LegState is what the UE agent knows of one access leg.
// +kubebuilder:validation:Enum=Up;Down;NoAddress
type LegState string

const (
	// LegUp: the leg's address is on the node and its probes are answered.
	LegUp LegState = "Up"
	// LegDown: the link or address went away, or probes went unanswered.
	LegDown LegState = "Down"
	// LegNoAddress: the leg's UE address is not on any interface of the node.
	LegNoAddress LegState = "NoAddress"
)

// AgentLeg is the UE agent's view of one access leg.
type AgentLeg struct {
	// access is the leg: 3GPP or Non3GPP.
	// +required
	Access Access `json:"access"`

	// state is Up, Down or NoAddress.
	// +required
	State LegState `json:"state"`

	// reason says why a leg is not Up, e.g. "LinkDown", "ProbeTimeout" or "AddressNotOnNode".
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// interface is the node interface that holds the leg's UE address.
	// +kubebuilder:validation:MaxLength=15
	// +optional
	Interface string `json:"interface,omitempty"`

	// rtt is the RTT the UE measured with its last answered probe on this leg.
	// +optional
	RTT Duration `json:"rtt,omitempty"`

	// lastProbe is when the UE last received a probe reply on this leg.
	// +optional
	LastProbe *metav1.Time `json:"lastProbe,omitempty"`

	// lossPercent is the share of the leg's last 20 probes that went unanswered, shown once 10
	// have been answered or missed: the measurement policies' packetLossPercent thresholds are
	// compared with.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	LossPercent *int32 `json:"lossPercent,omitempty"`
}

// AgentStatus is the UE agent's view of a session on its node.
type AgentStatus struct {
	// nodeName is the node whose agent wrote this view.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// interface is the session's TUN device on the node.
	// +kubebuilder:validation:MaxLength=15
	// +optional
	Interface string `json:"interface,omitempty"`

	// observedGeneration is the session generation the agent's tunnel is built from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// legs are the per-access states the agent measured.
	// +listType=map
	// +listMapKey=access
	// +kubebuilder:validation:MaxItems=2
	// +optional
	Legs []AgentLeg `json:"legs,omitempty"`
}

// SessionNodeNameField is the selectable field (below) a UE agent's watch is limited by: the
// sessions of its node. The agent authorizer (internal/agentauthz) allows reads by it alone.
const SessionNodeNameField = "spec.ue.nodeName"

// ATSSSSession is one multi-access (MA) PDU session of one UE, programmed into its UPF.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mas;atsss,categories=junction
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="argocd.argoproj.io/sync-options=Prune=false,Delete=false"
// +kubebuilder:selectablefield:JSONPath=`.spec.ue.nodeName`
// +kubebuilder:selectablefield:JSONPath=`.spec.accessLegs.threeGPP.gnbAddress`
// +kubebuilder:selectablefield:JSONPath=`.spec.accessLegs.nonThreeGPP.gatewayAddress`
// +kubebuilder:printcolumn:name="SUPI",type=string,JSONPath=`.spec.ue.supi`,priority=1
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.sessionAddress`
// +kubebuilder:printcolumn:name="UPF",type=string,JSONPath=`.spec.upfRef.name`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.steering`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.activeAccess`
// +kubebuilder:printcolumn:name="RTT-3GPP",type=string,JSONPath=`.status.paths.threeGPP.rtt`
// +kubebuilder:printcolumn:name="RTT-Non3GPP",type=string,JSONPath=`.status.paths.nonThreeGPP.rtt`
// +kubebuilder:printcolumn:name="Lookup",type=string,JSONPath=`.status.lookup`,priority=1
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.ue.nodeName`,priority=1
// +kubebuilder:printcolumn:name="UE-RTT-3GPP",type=string,JSONPath=`.status.agent.legs[?(@.access=="3GPP")].rtt`,priority=1
// +kubebuilder:printcolumn:name="UE-RTT-Non3GPP",type=string,JSONPath=`.status.agent.legs[?(@.access=="Non3GPP")].rtt`,priority=1
// +kubebuilder:printcolumn:name="Gate-UL",type=string,JSONPath=`.spec.gates.uplink`,priority=1,description="Closed: the UPF drops the session's uplink outside its qosFlows, which have gates of their own (an SMF's closed gate, or a quota used up)"
// +kubebuilder:printcolumn:name="Gate-DL",type=string,JSONPath=`.spec.gates.downlink`,priority=1,description="Closed: the UPF drops the session's downlink outside its qosFlows, which have gates of their own (an SMF's closed gate, or a quota used up)"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The operator's side: the session's entries are in the UPF (not that traffic flows: see Agent)"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the object is or is not Ready: the Ready condition's reason"
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.conditions[?(@.type=="AgentReady")].status`,description="The UE's side: whether its UE agent carries the session's traffic (the AgentReady condition)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ATSSSSession struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ATSSSSessionSpec   `json:"spec"`
	Status ATSSSSessionStatus `json:"status,omitempty"`
}

// ATSSSSessionList is a list of ATSSSSession.
// +kubebuilder:object:root=true
type ATSSSSessionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ATSSSSession `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ATSSSSession{}, &ATSSSSessionList{})
}
