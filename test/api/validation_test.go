package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// edit is one change to a sample; a nil value removes the field.
type edit struct {
	path  string
	value any
}

// invalidCase breaks exactly one rule of the API. want are substrings the API server's error must
// contain: the field's path, and the rule's message where the rule has one.
type invalidCase struct {
	name       string
	kind, base string
	edits      []edit
	want       []string
}

const (
	upf     = "UserPlaneFunction"
	policy  = "SteeringPolicy"
	session = "ATSSSSession"
	pool    = "AddressPool"
	target  = "P4RuntimeTarget"
)

var invalidCases = []invalidCase{
	// UserPlaneFunction
	{"a P4Runtime address without a port is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.address", "tofino-1.lab"}}, []string{"spec.p4runtime.address"}},
	{"a P4Runtime port above 65535 is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.address", "tofino-1.lab:99999"}}, []string{"spec.p4runtime.address", "port must be 1 to 65535"}},
	{"0.0.0.0 as a tunnel endpoint address is rejected", upf, "edge-upf-1",
		[]edit{{"spec.tunnelEndpoints[0].junctionAddress", "0.0.0.0"}},
		[]string{"spec.tunnelEndpoints[0].junctionAddress", "must be a unicast IPv4 address"}},
	{"0.0.0.0 as an N3 address is rejected", upf, "edge-upf-1",
		[]edit{{"spec.tunnelEndpoints[0].n3Address", "0.0.0.0"}},
		[]string{"spec.tunnelEndpoints[0].n3Address", "must be a unicast IPv4 address"}},
	{"a route prefix with host bits set is rejected", upf, "edge-upf-1",
		[]edit{{"spec.routes[0].destination", "198.51.100.7/24"}},
		[]string{"spec.routes[0].destination", "no host bits set"}},
	{"a route prefix with leading zeros is rejected", upf, "edge-upf-1",
		[]edit{{"spec.routes[0].destination", "198.051.100.0/24"}},
		[]string{"spec.routes[0].destination", "without leading zeros"}},
	{"a negative device ID is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.deviceID", int64(-1)}}, []string{"spec.p4runtime.deviceID"}},
	{"a TLS mode other than TLS or MutualTLS is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.tls", map[string]any{"mode": "Insecure", "secretRef": map[string]any{"name": "certs"}}}},
		[]string{"spec.p4runtime.tls.mode", "Unsupported value"}},
	{"a UPF with neither TLS nor insecure is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.tls", nil}},
		[]string{"spec.p4runtime", "set exactly one of spec.p4runtime.tls", "spec.p4runtime.insecure: true"}},
	{"a UPF with insecure: false and no TLS is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.tls", nil}, {"spec.p4runtime.insecure", false}},
		[]string{"spec.p4runtime", "set exactly one of spec.p4runtime.tls"}},
	{"a UPF with both TLS and insecure is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.insecure", true}},
		[]string{"spec.p4runtime", "set exactly one of spec.p4runtime.tls"}},
	{"a TLS block without its Secret is rejected", upf, "edge-upf-1",
		[]edit{{"spec.p4runtime.tls", map[string]any{"mode": "MutualTLS"}}},
		[]string{"spec.p4runtime.tls.secretRef", "Required value"}},
	{"a pipeline without its ConfigMap is rejected", upf, "edge-upf-1",
		[]edit{{"spec.pipeline.configMapRef", nil}}, []string{"spec.pipeline.configMapRef", "Required value"}},
	{"an unknown push policy is rejected", upf, "edge-upf-1",
		[]edit{{"spec.pipeline.pushPolicy", "Sometimes"}}, []string{"spec.pipeline.pushPolicy", "Unsupported value"}},
	{"a UPF without tunnel endpoints is rejected", upf, "edge-upf-1",
		[]edit{{"spec.tunnelEndpoints", []any{}}}, []string{"spec.tunnelEndpoints"}},
	{"a tunnel endpoint address that is not IPv4 is rejected", upf, "edge-upf-1",
		[]edit{{"spec.tunnelEndpoints[0].n3Address", "192.0.2.300"}}, []string{"spec.tunnelEndpoints[0].n3Address"}},
	{"a port number beyond 9 bits is rejected", upf, "edge-upf-1",
		[]edit{{"spec.ports[0].number", int64(512)}}, []string{"spec.ports[0].number"}},
	{"a malformed port MAC address is rejected", upf, "edge-upf-1",
		[]edit{{"spec.ports[0].mac", "02:00:00:00:01"}}, []string{"spec.ports[0].mac"}},
	{"an unknown port role is rejected", upf, "edge-upf-1",
		[]edit{{"spec.ports[0].role", "N9"}}, []string{"spec.ports[0].role", "Unsupported value"}},
	{"two ports with one name are rejected", upf, "edge-upf-1",
		[]edit{{"spec.ports[1].name", "n3"}}, []string{"spec.ports[1]", "Duplicate value"}},
	{"a route through an undeclared port is rejected", upf, "edge-upf-1",
		[]edit{{"spec.routes[0].port", "n9"}}, []string{"spec", "every route's port must name an entry of ports"}},
	{"a route prefix longer than 32 bits is rejected", upf, "edge-upf-1",
		[]edit{{"spec.routes[0].destination", "198.51.100.0/33"}}, []string{"spec.routes[0].destination"}},
	{"an IPv6 route prefix is rejected", upf, "edge-upf-1",
		[]edit{{"spec.routes[0].destination", "2001:db8::/32"}}, []string{"spec.routes[0].destination", "must be an IPv4 prefix"}},

	// SteeringPolicy
	{"a precedence above 65534 is rejected", policy, "video-streaming",
		[]edit{{"spec.precedence", int64(70000)}}, []string{"spec.precedence"}},
	{"an unknown steering mode is rejected", policy, "cloud-gaming",
		[]edit{{"spec.steering.mode", "Fastest"}}, []string{"spec.steering.mode", "Unsupported value"}},
	{"LoadBalance without its parameters is rejected", policy, "video-streaming",
		[]edit{{"spec.steering.loadBalance", nil}}, []string{"spec.steering", "loadBalance must be set exactly when mode is LoadBalance"}},
	{"parameters of another mode are rejected", policy, "cloud-gaming",
		[]edit{{"spec.steering.activeStandby", map[string]any{"active": "3GPP"}}},
		[]string{"spec.steering", "activeStandby must be set exactly when mode is ActiveStandby"}},
	{"redundant parameters under another mode are rejected", policy, "cloud-gaming",
		[]edit{{"spec.steering.redundant", map[string]any{}}}, []string{"spec.steering", "redundant may only be set when mode is Redundant"}},
	{"PriorityBased without its parameters is rejected", policy, "voice",
		[]edit{{"spec.steering.priorityBased", nil}}, []string{"spec.steering", "priorityBased must be set exactly when mode is PriorityBased"}},
	{"a load balance with both a percentage and autonomous is rejected", policy, "video-streaming",
		[]edit{{"spec.steering.loadBalance.autonomous", true}},
		[]string{"spec.steering.loadBalance", "set exactly one of threeGPPPercent or autonomous"}},
	{"a 3GPP share above 100 percent is rejected", policy, "video-streaming",
		[]edit{{"spec.steering.loadBalance.threeGPPPercent", int64(101)}}, []string{"spec.steering.loadBalance.threeGPPPercent"}},
	{"a standby equal to the active access is rejected", policy, "default-internet",
		[]edit{{"spec.steering.activeStandby.standby", "Non3GPP"}},
		[]string{"spec.steering.activeStandby", "standby must differ from active"}},
	{"an access that is neither 3GPP nor Non3GPP is rejected", policy, "default-internet",
		[]edit{{"spec.steering.activeStandby.active", "WiFi"}}, []string{"spec.steering.activeStandby.active", "Unsupported value"}},
	{"a priority threshold below 1ms is rejected", policy, "voice",
		[]edit{{"spec.steering.priorityBased.rttThreshold", "500us"}},
		[]string{"spec.steering.priorityBased.rttThreshold", "rttThreshold must be between 1ms and 10s"}},
	{"a priority threshold that is not a duration is rejected", policy, "voice",
		[]edit{{"spec.steering.priorityBased.rttThreshold", "fast"}}, []string{"spec.steering.priorityBased.rttThreshold"}},
	{"a priority-based mode without a priority access is rejected", policy, "voice",
		[]edit{{"spec.steering.priorityBased.priorityAccess", nil}},
		[]string{"spec.steering.priorityBased.priorityAccess", "Required value"}},
	{"a DSCP above 63 is rejected", policy, "voice",
		[]edit{{"spec.trafficDescriptor.dscp", int64(64)}}, []string{"spec.trafficDescriptor.dscp"}},
	{"a port range that ends before it starts is rejected", policy, "cloud-gaming",
		[]edit{{"spec.trafficDescriptor.destinationPorts[0].to", int64(3000)}},
		[]string{"spec.trafficDescriptor.destinationPorts[0]", "to must not be less than from"}},
	{"a port above 65535 is rejected", policy, "video-streaming",
		[]edit{{"spec.trafficDescriptor.destinationPorts[0].from", int64(70000)}},
		[]string{"spec.trafficDescriptor.destinationPorts[0].from"}},
	{"ports with a protocol that has none are rejected", policy, "video-streaming",
		[]edit{{"spec.trafficDescriptor.protocol", "ICMP"}},
		[]string{"spec", "trafficDescriptor ports need protocol TCP or UDP"}},
	{"an unknown protocol is rejected", policy, "video-streaming",
		[]edit{{"spec.trafficDescriptor.protocol", "QUIC"}}, []string{"spec.trafficDescriptor.protocol", "Unsupported value"}},
	{"a destination prefix that is not CIDR is rejected", policy, "video-streaming",
		[]edit{{"spec.trafficDescriptor.destinationPrefixes[0]", "198.18.10.0"}},
		[]string{"spec.trafficDescriptor.destinationPrefixes[0]"}},
	{"a source prefix with leading zeros is rejected", policy, "video-streaming",
		[]edit{{"spec.trafficDescriptor.sourcePrefixes", []any{"010.0.0.0/8"}}},
		[]string{"spec.trafficDescriptor.sourcePrefixes[0]", "without leading zeros"}},
	{"an IPv6 destination prefix is rejected", policy, "video-streaming",
		[]edit{{"spec.trafficDescriptor.destinationPrefixes[0]", "2001:db8::/32"}},
		[]string{"spec.trafficDescriptor.destinationPrefixes[0]", "IPv4 prefix"}},
	{"a loss threshold above 100 percent is rejected", policy, "voice",
		[]edit{{"spec.thresholds.packetLossPercent", int64(150)}}, []string{"spec.thresholds.packetLossPercent"}},
	{"an RTT threshold above 10s is rejected", policy, "bulk-download",
		[]edit{{"spec.thresholds.rtt", "20s"}}, []string{"spec.thresholds.rtt", "rtt must be between 1ms and 10s"}},
	{"empty thresholds are rejected", policy, "bulk-download",
		[]edit{{"spec.thresholds", map[string]any{}}}, []string{"spec.thresholds", "set rtt, packetLossPercent or both"}},

	// ATSSSSession
	{"a SUPI that is neither IMSI nor NAI is rejected", session, "bob-internet",
		[]edit{{"spec.ue.supi", "001010000000002"}}, []string{"spec.ue.supi"}},
	{"a node name that is not a DNS name is rejected", session, "bob-internet",
		[]edit{{"spec.ue.nodeName", "UE_Node"}}, []string{"spec.ue.nodeName"}},
	{"a session address with leading zeros is rejected", session, "bob-internet",
		[]edit{{"spec.sessionAddress", "10.60.0.02"}}, []string{"spec.sessionAddress", "without leading zeros"}},
	{"a policy selector with an unknown operator is rejected", session, "alice-internet",
		[]edit{{"spec.policySelector.matchExpressions", []any{map[string]any{"key": "junction.dev/profile", "operator": "Near", "values": []any{"consumer"}}}}},
		[]string{"spec.policySelector", "matchExpressions operators must be In, NotIn, Exists or DoesNotExist"}},
	{"0.0.0.0 as a session address is rejected", session, "bob-internet",
		[]edit{{"spec.sessionAddress", "0.0.0.0"}}, []string{"spec.sessionAddress", "must be a unicast IPv4 address"}},
	{"0.0.0.0 as a gNB address is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.threeGPP.gnbAddress", "0.0.0.0"}},
		[]string{"spec.accessLegs.threeGPP.gnbAddress", "must be a unicast IPv4 address"}},
	{"the broadcast address as a UE address is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.nonThreeGPP.ueAddress", "255.255.255.255"}},
		[]string{"spec.accessLegs.nonThreeGPP.ueAddress", "must be a unicast IPv4 address"}},
	{"a multicast UE address is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.threeGPP.ueAddress", "224.0.0.1"}},
		[]string{"spec.accessLegs.threeGPP.ueAddress", "must be a unicast IPv4 address"}},
	{"a session address that is not IPv4 is rejected", session, "bob-internet",
		[]edit{{"spec.sessionAddress", "10.60.0"}}, []string{"spec.sessionAddress"}},
	{"a session without access legs is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs", map[string]any{}}}, []string{"spec.accessLegs", "at least one access leg"}},
	{"an uplink TEID of 0 is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.threeGPP.uplinkTEID", int64(0)}}, []string{"spec.accessLegs.threeGPP.uplinkTEID"}},
	{"a downlink TEID beyond 32 bits is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.threeGPP.downlinkTEID", int64(1) << 32}}, []string{"spec.accessLegs.threeGPP.downlinkTEID"}},
	{"a QFI of 64 is rejected (6 bits, TS 23.501 §5.7.1.1)", session, "bob-internet",
		[]edit{{"spec.qfi", int64(64)}}, []string{"spec.qfi"}},
	{"a QFI of 0 is rejected (unset means none)", session, "bob-internet",
		[]edit{{"spec.qfi", int64(0)}}, []string{"spec.qfi"}},
	{"an MBR of 0 kbit/s is rejected (unset means none)", session, "bob-internet",
		[]edit{{"spec.maxBitRate", map[string]any{"downlinkKbps": int64(0)}}}, []string{"spec.maxBitRate.downlinkKbps"}},
	{"an MBR beyond PFCP's 40 bits is rejected (TS 29.244 §8.2.8)", session, "bob-internet",
		[]edit{{"spec.maxBitRate", map[string]any{"uplinkKbps": int64(1) << 40}}}, []string{"spec.maxBitRate.uplinkKbps"}},
	{"a downlink TEID without a gNB address is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.threeGPP.gnbAddress", nil}}, []string{"spec.accessLegs.threeGPP", "gnbAddress and downlinkTEID go together"}},
	{"an unknown non-3GPP access type is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.nonThreeGPP.type", "Satellite"}}, []string{"spec.accessLegs.nonThreeGPP.type", "Unsupported value"}},
	{"a non-3GPP leg with TEIDs but no gateway address is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.nonThreeGPP.uplinkTEID", int64(8193)}, {"spec.accessLegs.nonThreeGPP.downlinkTEID", int64(8194)}},
		[]string{"spec.accessLegs.nonThreeGPP.gatewayAddress", "gatewayAddress is required for a leg over N3"}},
	{"a non-3GPP leg with an uplink TEID and no downlink TEID is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.nonThreeGPP.uplinkTEID", int64(8193)}, {"spec.accessLegs.nonThreeGPP.gatewayAddress", "198.51.100.20"}},
		[]string{"spec.accessLegs.nonThreeGPP", "uplinkTEID and downlinkTEID go together"}},
	{"a non-3GPP leg over N3 on the 3GPP leg's uplink TEID is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.nonThreeGPP.uplinkTEID", int64(4099)}, {"spec.accessLegs.nonThreeGPP.downlinkTEID", int64(8194)},
			{"spec.accessLegs.nonThreeGPP.gatewayAddress", "198.51.100.20"}},
		[]string{"spec.accessLegs.nonThreeGPP.uplinkTEID", "the legs' uplink TEIDs must differ"}},
	{"a non-3GPP uplink TEID of 0 is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.nonThreeGPP.uplinkTEID", int64(0)}}, []string{"spec.accessLegs.nonThreeGPP.uplinkTEID"}},
	{"a load-balance override on a single-leg session is rejected", session, "dave-5g-only",
		[]edit{{"spec.modeOverride", map[string]any{"mode": "LoadBalance", "loadBalance": map[string]any{"threeGPPPercent": int64(50)}}}},
		[]string{"spec", "modeOverride LoadBalance, PriorityBased and Redundant need both access legs"}},
	{"a mode override with the wrong parameters is rejected", session, "carol-branch",
		[]edit{{"spec.modeOverride.mode", "SmallestDelay"}},
		[]string{"spec.modeOverride", "loadBalance must be set exactly when mode is LoadBalance"}},
	{"a policy steering for a policy the session does not reference is rejected", session, "bob-internet",
		[]edit{{"spec.policySteering", []any{map[string]any{"name": "absent", "steering": map[string]any{"mode": "SmallestDelay"}}}}},
		[]string{"spec", "every policySteering name must be in policyRefs"}},
	{"a load-balance policy steering on a single-leg session is rejected", session, "dave-5g-only",
		[]edit{{"spec.policyRefs", []any{map[string]any{"name": "cloud-gaming"}}},
			{"spec.policySteering", []any{map[string]any{"name": "cloud-gaming", "steering": map[string]any{"mode": "LoadBalance", "loadBalance": map[string]any{"threeGPPPercent": int64(50)}}}}}},
		[]string{"spec", "policySteering LoadBalance, PriorityBased and Redundant need both access legs"}},
	{"override thresholds without an override are rejected", session, "bob-internet",
		[]edit{{"spec.modeOverrideThresholds", map[string]any{"rtt": "20ms"}}},
		[]string{"spec", "modeOverrideThresholds needs modeOverride"}},
	{"an N4 endpoint without a node ID is rejected", upf, "edge-upf-1",
		[]edit{{"spec.n4", map[string]any{"listen": "0.0.0.0:8805"}}}, []string{"spec.n4.nodeID", "Required value"}},
	{"an N4 listen address without a port is rejected", upf, "edge-upf-1",
		[]edit{{"spec.n4", map[string]any{"nodeID": "upf.example", "listen": "0.0.0.0"}}}, []string{"spec.n4.listen"}},
	{"an N4 access gateway of an unknown access is rejected", upf, "edge-upf-1",
		[]edit{{"spec.n4", map[string]any{"nodeID": "upf.example", "accessGateways": []any{map[string]any{"address": "198.51.100.20", "type": "Satellite"}}}}},
		[]string{"spec.n4.accessGateways[0].type", "Unsupported value"}},
	{"an N4 access gateway listed twice is rejected", upf, "edge-upf-1",
		[]edit{{"spec.n4", map[string]any{"nodeID": "upf.example", "accessGateways": []any{
			map[string]any{"address": "198.51.100.20", "type": "Wireline"}, map[string]any{"address": "198.51.100.20", "type": "WiFi"}}}}},
		[]string{"spec.n4.accessGateways[1]", "Duplicate value"}},
	{"a single-access session with a non-3GPP leg is rejected", session, "bob-internet",
		[]edit{{"spec.type", "SingleAccess"}, {"spec.policyRefs", nil}, {"spec.accessLegs.threeGPP.ueAddress", "10.60.0.2"}},
		[]string{"spec", "a SingleAccess session has a 3GPP leg only"}},
	{"a single-access session whose 3GPP address is not its session address is rejected", session, "dave-5g-only",
		[]edit{{"spec.type", "SingleAccess"}, {"spec.policyRefs", nil}},
		[]string{"spec", "whose ueAddress is the sessionAddress"}},
	{"a single-access session with policies is rejected", session, "dave-5g-only",
		[]edit{{"spec.type", "SingleAccess"}, {"spec.accessLegs.threeGPP.ueAddress", "10.60.0.4"}},
		[]string{"spec", "and no steering"}},
	{"a 3GPP leg without its gNB is rejected unless its downlink buffers or drops", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.gnbAddress", nil}, {"spec.accessLegs.threeGPP.downlinkTEID", nil}},
		[]string{"spec.accessLegs.threeGPP.gnbAddress", "required unless bufferDownlink or dropDownlink is set"}},
	{"a 3GPP leg without an uplink TEID is rejected unless its downlink drops", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.uplinkTEID", nil}},
		[]string{"spec.accessLegs.threeGPP.uplinkTEID", "uplinkTEID is required unless dropDownlink is set"}},
	{"an SMF to associate with named other than by an IPv4 address or a DNS name, with a port or not, is rejected", upf, "edge-upf-1",
		[]edit{{"spec.n4", map[string]any{"nodeID": "upf.example", "associateWith": []any{"10.0.0.5", "smf.example:8806", "SMF_1"}}}},
		[]string{"spec.n4.associateWith[2]", "should match"}},
	{"an N4 endpoint's SMF restart detection other than Heartbeat or Association is rejected", upf, "edge-upf-1",
		[]edit{{"spec.n4", map[string]any{"nodeID": "upf.example", "smfRestartDetection": "Never"}}},
		[]string{"spec.n4.smfRestartDetection", "Unsupported value"}},
	{"a 3GPP leg whose downlink buffers and drops is rejected", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.bufferDownlink", true}, {"spec.accessLegs.threeGPP.dropDownlink", true}},
		[]string{"spec.accessLegs.threeGPP.dropDownlink", "bufferDownlink and dropDownlink exclude each other"}},
	{"an indirect forwarding tunnel on the uplink's TEID is rejected", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.indirectForwarding", map[string]any{"teid": int64(4100), "gnbAddress": "198.51.100.12", "gnbTEID": int64(9000)}},
			{"spec.accessLegs.threeGPP.uplinkTEID", int64(4100)}},
		[]string{"spec.accessLegs.threeGPP.indirectForwarding.teid", "must differ from uplinkTEID"}},
	{"an indirect forwarding tunnel without the target's TEID is rejected", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.indirectForwarding", map[string]any{"teid": int64(4200), "gnbAddress": "198.51.100.12"}}},
		[]string{"spec.accessLegs.threeGPP.indirectForwarding.gnbTEID", "Required value"}},
	{"an indirect forwarding tunnel to TEID 0 is rejected", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.indirectForwarding", map[string]any{"teid": int64(4200), "gnbAddress": "198.51.100.12", "gnbTEID": int64(0)}}},
		[]string{"spec.accessLegs.threeGPP.indirectForwarding.gnbTEID", "should be greater than or equal to 1"}},
	{"a gNB address without a downlink TEID is rejected", session, "dave-5g-only",
		[]edit{{"spec.accessLegs.threeGPP.downlinkTEID", nil}},
		[]string{"spec.accessLegs.threeGPP", "gnbAddress and downlinkTEID go together"}},
	{"an MA PDU session whose 3GPP leg buffers while its non-3GPP leg is active is rejected", session, "bob-internet",
		[]edit{{"spec.accessLegs.threeGPP.bufferDownlink", true}},
		[]string{"spec.accessLegs.threeGPP.bufferDownlink", "needs its non-3GPP leg absent or inactive"}},
	{"QoS flows without the session's QFI are rejected", session, "bob-internet",
		[]edit{{"spec.qfi", nil}, {"spec.qosFlows", []any{qosFlow("video", 2)}}}, []string{"spec.qosFlows", "qosFlows need the session's qfi"}},
	{"a QoS flow with the session's QFI is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(2)}, {"spec.qosFlows", []any{qosFlow("video", 2)}}}, []string{"spec.qosFlows", "every flow a QFI of its own"}},
	{"two QoS flows with one QFI are rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{qosFlow("video", 2), qosFlow("voice", 2)}}}, []string{"spec.qosFlows", "every flow a QFI of its own"}},
	{"one QoS flow more than a session's block holds is rejected; the CRD's maxItems is junctionv1.MaxQoSFlows", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", qosFlows(junctionv1.MaxQoSFlows + 1)}},
		[]string{"spec.qosFlows", fmt.Sprintf("must have at most %d items", junctionv1.MaxQoSFlows)}},
	{"a QoS flow matching the UE's side is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "video", "qfi": int64(2),
			"trafficDescriptor": map[string]any{"sourcePrefixes": []any{"10.60.0.2/32"}}}}}},
		[]string{"spec.qosFlows[0]", "sourcePrefixes and dscp are not matched"}},
	{"a QoS flow's QFI of 64 is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{qosFlow("video", 64)}}}, []string{"spec.qosFlows[0].qfi"}},
	{"a QoS flow's precedence of 65534 is rejected (the default flow's entries are under 65533's)", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "video", "qfi": int64(2), "precedence": int64(65534),
			"trafficDescriptor": map[string]any{"destinationPrefixes": []any{"198.51.100.0/24"}}}}}},
		[]string{"spec.qosFlows[0].precedence", "less than or equal to 65533"}},
	{"a QoS flow's gate other than Open or Closed is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "video", "qfi": int64(2), "gates": map[string]any{"uplink": "Shut"},
			"trafficDescriptor": map[string]any{"destinationPrefixes": []any{"198.51.100.0/24"}}}}}},
		[]string{"spec.qosFlows[0].gates.uplink", "Unsupported value"}},
	{"a QoS flow's GBR of 0 kbit/s is rejected (leave the direction out)", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "voice", "qfi": int64(2), "guaranteedBitRate": map[string]any{"uplinkKbps": int64(0)},
			"trafficDescriptor": map[string]any{"destinationPrefixes": []any{"198.51.100.20/32"}}}}}},
		[]string{"spec.qosFlows[0].guaranteedBitRate.uplinkKbps", "greater than or equal to 1"}},
	{"a QoS flow with a trafficDescriptor and filters is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "voice", "qfi": int64(2),
			"trafficDescriptor": map[string]any{"destinationPrefixes": []any{"198.51.100.20/32"}},
			"filters":           []any{map[string]any{"direction": "Downlink", "trafficDescriptor": map[string]any{"destinationPrefixes": []any{"198.51.100.21/32"}}}}}}}},
		[]string{"spec.qosFlows[0]", "a trafficDescriptor (both directions) or filters, not both"}},
	{"a QoS flow of one filter more than a QoS rule holds (TS 24.501) is rejected; the CRD's maxItems is junctionv1.MaxQoSFlowFilters", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "voice", "qfi": int64(2), "filters": downlinkFilters(junctionv1.MaxQoSFlowFilters + 1)}}}},
		[]string{"spec.qosFlows[0].filters", fmt.Sprintf("must have at most %d items", junctionv1.MaxQoSFlowFilters)}},
	{"a QoS flow filter's direction other than Bidirectional, Downlink or Uplink is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "voice", "qfi": int64(2),
			"filters": []any{map[string]any{"direction": "Sideways", "trafficDescriptor": map[string]any{}}}}}}},
		[]string{"spec.qosFlows[0].filters[0].direction", "Unsupported value"}},
	{"a QoS flow filter matching the UE's side is rejected", session, "bob-internet",
		[]edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "voice", "qfi": int64(2),
			"filters": []any{map[string]any{"direction": "Uplink", "trafficDescriptor": map[string]any{"sourcePrefixes": []any{"10.60.0.0/16"}}}}}}}},
		[]string{"spec.qosFlows[0].filters[0]", "sourcePrefixes and dscp are not matched"}},
	{"a gate other than Open or Closed is rejected", session, "bob-internet",
		[]edit{{"spec.gates", map[string]any{"downlink": "Ajar"}}}, []string{"spec.gates.downlink", "Unsupported value"}},
	{"a session type other than MultiAccess or SingleAccess is rejected", session, "dave-5g-only",
		[]edit{{"spec.type", "Roaming"}}, []string{"spec.type", "Unsupported value"}},
	{"a policy referenced twice is rejected", session, "bob-internet",
		[]edit{{"spec.policyRefs[1].name", "cloud-gaming"}}, []string{"spec.policyRefs[1]", "Duplicate value"}},
	{"a session without a UPF is rejected", session, "bob-internet",
		[]edit{{"spec.upfRef", nil}}, []string{"spec.upfRef", "Required value"}},
	// AddressPool
	{"an address pool prefix with host bits is rejected", pool, "samples",
		[]edit{{"spec.sessionAddresses[0]", "10.60.0.1/16"}}, []string{"spec.sessionAddresses[0]", "no host bits set"}},
	{"an address pool for no namespace is rejected", pool, "samples",
		[]edit{{"spec.namespace", nil}}, []string{"spec.namespace", "Required value"}},
	{"an address pool prefix given twice is rejected", pool, "samples",
		[]edit{{"spec.ueAddresses[1]", "10.45.0.0/24"}}, []string{"spec.ueAddresses[1]", "Duplicate value"}},
	// P4RuntimeTarget: the address as a UserPlaneFunction's (one type, P4RuntimeAddress).
	{"a P4Runtime target without a port is rejected", target, "edge-upf-1",
		[]edit{{"spec.address", "tofino-1.lab"}}, []string{"spec.address"}},
	{"a P4Runtime target's port above 65535 is rejected", target, "edge-upf-1",
		[]edit{{"spec.address", "tofino-1.lab:99999"}}, []string{"spec.address", "port must be 1 to 65535"}},
	{"a P4Runtime target without an address is rejected", target, "edge-upf-1",
		[]edit{{"spec.address", nil}}, []string{"spec.address", "Required value"}},
	{"a P4Runtime target for no namespace is rejected", target, "edge-upf-1",
		[]edit{{"spec.namespace", nil}}, []string{"spec.namespace", "Required value"}},
	{"a P4Runtime target for a namespace that is no DNS label is rejected", target, "edge-upf-1",
		[]edit{{"spec.namespace", "Tenant_A"}}, []string{"spec.namespace"}},
	{"a P4Runtime target's negative device ID is rejected", target, "edge-upf-1",
		[]edit{{"spec.deviceID", int64(-1)}}, []string{"spec.deviceID"}},
	{"a P4Runtime target's role longer than 63 is rejected", target, "edge-upf-1",
		[]edit{{"spec.role", strings.Repeat("r", 64)}}, []string{"spec.role", "Too long"}},
	{"a P4Runtime target's TLS server name that is no host name is rejected", target, "edge-upf-1",
		[]edit{{"spec.tlsServerName", "switch a"}}, []string{"spec.tlsServerName"}},
}

func TestInvalidManifestsAreRejectedNamingTheField(t *testing.T) {
	if len(invalidCases) < 30 {
		t.Fatalf("only %d invalid cases; the API has more rules than that", len(invalidCases))
	}
	createNamespace(t, "invalid")
	for i, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := sample(t, tc.kind, tc.base)
			obj.SetNamespace("invalid")
			obj.SetName(fmt.Sprintf("invalid-%d", i))
			// The sample itself is valid (TestSamplesAreAccepted); only the edits break it.
			for _, e := range tc.edits {
				setPath(t, obj.Object, e.path, e.value)
			}
			err := k8s.Create(context.Background(), obj)
			assertInvalid(t, err, tc.want)
		})
	}
}

func TestImmutableFieldsCannotChange(t *testing.T) {
	createNamespace(t, "immutable")
	for _, tc := range []struct {
		name  string
		edit  edit
		field string
		want  string
	}{
		{"the session address cannot change", edit{"spec.sessionAddress", "10.60.9.9"}, "spec.sessionAddress", "sessionAddress is immutable"},
		{"the UPF of a session cannot change", edit{"spec.upfRef.name", "edge-upf-2"}, "spec.upfRef", "upfRef is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			obj := sample(t, session, "bob-internet")
			obj.SetNamespace("immutable")
			obj.SetName(strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")))
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			setPath(t, obj.Object, tc.edit.path, tc.edit.value)
			assertInvalid(t, k8s.Update(ctx, obj), []string{tc.field, tc.want})

			// Fields that are not immutable still change.
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			setPath(t, obj.Object, "spec.accessLegs.nonThreeGPP.ueAddress", "203.0.113.99")
			if err := k8s.Update(ctx, obj); err != nil {
				t.Fatalf("a mutable field was refused: %v", err)
			}
		})
	}
}

func assertInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted it; want an error containing %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
}

func TestSamplesAreAccepted(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "samples")
	objs := samples(t)
	kinds := map[string]int{}
	for _, obj := range objs {
		obj.SetNamespace("samples")
		if err := k8s.Create(ctx, obj); err != nil {
			t.Errorf("sample %s/%s rejected: %v", obj.GetKind(), obj.GetName(), err)
		}
		kinds[obj.GetKind()]++
	}
	if kinds[upf] < 1 || kinds[target] < 1 || kinds[policy] < 5 || kinds[session] < 3 {
		t.Errorf("samples should hold a UPF and its P4RuntimeTarget, a policy per mode and sessions of several UEs; have %v", kinds)
	}

	// Every steering mode appears in the samples.
	modes := map[string]bool{}
	for _, obj := range objs {
		if obj.GetKind() == policy {
			m, _, _ := unstructured.NestedString(obj.Object, "spec", "steering", "mode")
			modes[m] = true
		}
	}
	for _, m := range []string{"ActiveStandby", "SmallestDelay", "LoadBalance", "PriorityBased", "Redundant"} {
		if !modes[m] {
			t.Errorf("no sample policy uses mode %s", m)
		}
	}

	// Defaults are filled in by the API server.
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(sample(t, upf, "edge-upf-1").GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "samples", Name: "edge-upf-1"}, got); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"spec.pipeline.p4InfoKey":       "p4info.txtpb",
		"spec.pipeline.deviceConfigKey": "device_config",
		"spec.pipeline.pushPolicy":      "IfCookieDiffers",
		// TLS with a client certificate unless a manifest says otherwise.
		"spec.p4runtime.tls.mode": "MutualTLS",
	} {
		v, _, _ := unstructured.NestedString(got.Object, strings.Split(path, ".")...)
		if v != want {
			t.Errorf("%s defaulted to %q, want %q", path, v, want)
		}
	}
}

// An SMF establishes an ordinary PDU session of an idle UE with its downlink buffering and no
// tunnel toward a gNB yet (Open5GS does, for every session): the API takes it, and takes the
// tunnel once the UE is paged (docs/n4.md, "Buffering").
func TestAnIdleSingleAccessSessionIsAccepted(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "idle")
	obj := sample(t, session, "dave-5g-only")
	obj.SetNamespace("idle")
	for _, e := range []edit{{"spec.type", "SingleAccess"}, {"spec.policyRefs", nil}, {"spec.accessLegs.threeGPP.ueAddress", "10.60.0.4"},
		{"spec.accessLegs.threeGPP.gnbAddress", nil}, {"spec.accessLegs.threeGPP.downlinkTEID", nil}, {"spec.accessLegs.threeGPP.bufferDownlink", true}} {
		setPath(t, obj.Object, e.path, e.value)
	}
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("an idle UE's session was rejected: %v", err)
	}
	for _, e := range []edit{{"spec.accessLegs.threeGPP.gnbAddress", "198.51.100.11"}, {"spec.accessLegs.threeGPP.downlinkTEID", int64(8197)},
		{"spec.accessLegs.threeGPP.bufferDownlink", false}} {
		setPath(t, obj.Object, e.path, e.value)
	}
	if err := k8s.Update(ctx, obj); err != nil {
		t.Fatalf("the paged UE's tunnel was rejected: %v", err)
	}
}

// An MA PDU session whose SMF has no tunnel for either access yet (its establishment, before the
// gNB and the N3IWF answer) has both legs inactive, with no tunnel and no TEIDs; the API takes it,
// takes each leg's tunnel as it comes, and a 3GPP leg that holds the downlink while the other is
// inactive (docs/n4.md, "An access not active").
func TestAnMASessionWithInactiveLegsIsAccepted(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "inactive")
	obj := sample(t, session, "bob-internet")
	obj.SetNamespace("inactive")
	for _, e := range []edit{{"spec.accessLegs.threeGPP", map[string]any{"ueAddress": "10.45.0.2", "dropDownlink": true}},
		{"spec.accessLegs.nonThreeGPP", map[string]any{"type": "WiFi", "ueAddress": "203.0.113.2", "dropDownlink": true}}} {
		setPath(t, obj.Object, e.path, e.value)
	}
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("an MA PDU session with both legs inactive was rejected: %v", err)
	}
	for _, e := range []edit{{"spec.accessLegs.threeGPP", map[string]any{"ueAddress": "10.45.0.2", "gnbAddress": "198.51.100.11",
		"uplinkTEID": int64(8300), "downlinkTEID": int64(8301)}}} {
		setPath(t, obj.Object, e.path, e.value)
	}
	if err := k8s.Update(ctx, obj); err != nil {
		t.Fatalf("the 3GPP leg's tunnel was rejected: %v", err)
	}
	// The UE idle on 3GPP and on no other access: the 3GPP leg holds the downlink.
	setPath(t, obj.Object, "spec.accessLegs.threeGPP", map[string]any{"ueAddress": "10.45.0.2", "uplinkTEID": int64(8300), "bufferDownlink": true})
	if err := k8s.Update(ctx, obj); err != nil {
		t.Fatalf("the 3GPP leg holding the downlink, the non-3GPP leg inactive, was rejected: %v", err)
	}
}

// An N2 handover's indirect forwarding tunnel (docs/n4.md, "Indirect data forwarding") is taken
// and kept as written, and removed once the handover is done.
func TestAnIndirectForwardingTunnelIsAccepted(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "handover")
	obj := sample(t, session, "dave-5g-only")
	obj.SetNamespace("handover")
	setPath(t, obj.Object, "spec.accessLegs.threeGPP.indirectForwarding", map[string]any{"teid": int64(4102), "gnbAddress": "198.51.100.12", "gnbTEID": int64(9001)})
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("a session with a forwarding tunnel was rejected: %v", err)
	}
	var got junctionv1.ATSSSSession
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &got); err != nil {
		t.Fatal(err)
	}
	if f := got.Spec.AccessLegs.ThreeGPP.IndirectForwarding; f == nil || *f != (junctionv1.IndirectForwarding{TEID: 4102, GNBAddress: "198.51.100.12", GNBTEID: 9001}) {
		t.Fatalf("stored as %+v, want the tunnel as written", f)
	}
	setPath(t, obj.Object, "spec.accessLegs.threeGPP.indirectForwarding", nil)
	if err := k8s.Update(ctx, obj); err != nil {
		t.Fatalf("removing the forwarding tunnel was rejected: %v", err)
	}
}

// A GBR QoS flow described by filters per direction, as an SMF's SDF filters give one (docs/n4.md,
// "QoS flows"), is accepted and kept as written: no field of it pruned.
func TestQoSFlowFiltersAndGBRAreKept(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "flows")
	obj := sample(t, session, "bob-internet")
	obj.SetNamespace("flows")
	udp := func(port int64) map[string]any {
		return map[string]any{"destinationPrefixes": []any{"198.51.100.20/32"}, "protocol": "UDP", "destinationPorts": []any{map[string]any{"from": port}}}
	}
	for _, e := range []edit{{"spec.qfi", int64(1)}, {"spec.qosFlows", []any{map[string]any{"name": "voice", "qfi": int64(2),
		"guaranteedBitRate": map[string]any{"uplinkKbps": int64(64), "downlinkKbps": int64(64)},
		"filters": []any{map[string]any{"direction": "Bidirectional", "trafficDescriptor": udp(30000)},
			map[string]any{"direction": "Downlink", "trafficDescriptor": udp(30001)}}}}}} {
		setPath(t, obj.Object, e.path, e.value)
	}
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("a GBR flow of filters was rejected: %v", err)
	}
	stored := obj.DeepCopy()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		t.Fatal(err)
	}
	var got junctionv1.ATSSSSession
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, &got); err != nil {
		t.Fatal(err)
	}
	f := got.Spec.QoSFlows[0]
	if g := f.GuaranteedBitRate; g == nil || g.DownlinkKbps == nil || *g.DownlinkKbps != 64 || len(f.Filters) != 2 ||
		f.Filters[1].Direction != junctionv1.FlowDownlink || len(f.Filters[1].TrafficDescriptor.DestinationPorts) != 1 || f.Filters[1].TrafficDescriptor.DestinationPorts[0].From != 30001 {
		t.Errorf("stored as %+v, want the GBR and both filters as written", f)
	}
}

// The columns of kubectl get without -o wide (priority 0), and some of -o wide's. A session's
// Ready is the operator's side, its entries in the UPF; Agent, beside it, says whether its UE
// agent carries traffic, so that Ready is not read as "traffic flows" (issue 28, item 9); its
// gates, in -o wide, whether the UPF drops a direction (a closed gate, a quota used up).
func TestPrinterColumnsShowWhatOperatorsLookFor(t *testing.T) {
	ctx := context.Background()
	wide := map[string][]string{"atssssessions.atsss.junction.dev": {"Gate-UL", "Gate-DL"}}
	for crd, want := range map[string][]string{
		"atssssessions.atsss.junction.dev":      {"UPF", "Mode", "Active", "RTT-3GPP", "RTT-Non3GPP", "Ready", "Reason", "Agent", "Age"},
		"steeringpolicies.atsss.junction.dev":   {"Precedence", "Mode", "App-ID", "Sessions", "Ready", "Reason", "Age"},
		"userplanefunctions.atsss.junction.dev": {"Address", "Connected", "Pipeline", "Sessions", "Ready", "Reason", "Age"},
		"p4runtimetargets.atsss.junction.dev":   {"Namespace", "Address", "Device-ID", "Role", "TLS-Name", "Age"},
	} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("apiextensions.k8s.io/v1")
		obj.SetKind("CustomResourceDefinition")
		if err := k8s.Get(ctx, client.ObjectKey{Name: crd}, obj); err != nil {
			t.Fatalf("%s: %v", crd, err)
		}
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		cols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
		have, haveWide := map[string]bool{}, map[string]bool{}
		for _, c := range cols {
			c := c.(map[string]any)
			if p, _ := c["priority"].(int64); p == 0 {
				have[c["name"].(string)] = true
			} else {
				haveWide[c["name"].(string)] = true
			}
		}
		for _, w := range want {
			if !have[w] {
				t.Errorf("%s has no printer column %q in kubectl get's default output", crd, w)
			}
		}
		for _, w := range wide[crd] {
			if !haveWide[w] {
				t.Errorf("%s has no printer column %q in kubectl get -o wide", crd, w)
			}
		}
		cats, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "names", "categories")
		if len(cats) != 1 || cats[0] != "junction" {
			t.Errorf("%s categories = %v, want [junction]", crd, cats)
		}
	}
}

// Whoever may write a UserPlaneFunction cannot choose its P4Runtime election ID (with it, one
// could outrank the controller of a switch): a spec.p4runtime.electionIDHigh, which v1alpha1
// once had, is not stored.
func TestElectionIDIsNotATenantsToChoose(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "election")
	obj := sample(t, upf, "edge-upf-1")
	obj.SetNamespace("election")
	setPath(t, obj.Object, "spec.p4runtime.electionIDHigh", int64(5))
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "p4runtime", "electionIDHigh"); ok {
		t.Errorf("spec.p4runtime.electionIDHigh stored as %v", v)
	}
}

// downlinkFilters are n QoS flow filters, downlink, for UDP ports 30000 on.
func downlinkFilters(n int) []any {
	var out []any
	for i := range n {
		out = append(out, map[string]any{"direction": "Downlink", "trafficDescriptor": map[string]any{"protocol": "UDP", "destinationPorts": []any{map[string]any{"from": int64(30000 + i)}}}})
	}
	return out
}

// qosFlows are n QoS flows with QFIs 2 on (the session's own QFI is 1).
func qosFlows(n int) []any {
	var out []any
	for i := range n {
		out = append(out, qosFlow(fmt.Sprintf("flow-%d", i), int64(2+i)))
	}
	return out
}

// qosFlow is a QoS flow of a session's own for the servers of 198.51.100.0/24.
func qosFlow(name string, qfi int64) map[string]any {
	return map[string]any{"name": name, "qfi": qfi, "trafficDescriptor": map[string]any{"destinationPrefixes": []any{"198.51.100.0/24"}}}
}

// TestN4PFDLimitsAreTheEndpoints: status.n4.pfds takes as many applications, flow descriptions
// and octets as the N4 endpoint keeps (junctionv1.MaxPFD..., which it refuses PFDs beyond with
// cause 75), and the API server refuses one more of each, naming the field.
func TestN4PFDLimitsAreTheEndpoints(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "pfds")
	obj := sample(t, upf, "edge-upf-1")
	obj.SetNamespace("pfds")
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	fd := "permit out 17 from 198.51.100.0/24 to assigned"
	apps := func(n, fds int, id, desc string) []any {
		var out []any
		for i := range n {
			list := []any{}
			for range fds {
				list = append(list, desc)
			}
			out = append(out, map[string]any{"applicationID": fmt.Sprintf("%s-%d", id, i), "flowDescriptions": list})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		pfds  []any
		field string // "": accepted
	}{
		{"the most of each", append(apps(junctionv1.MaxPFDApplications-1, 1, "app", fd),
			apps(1, junctionv1.MaxPFDFlowDescriptions, strings.Repeat("a", junctionv1.MaxApplicationIDLength-2), strings.Repeat(" ", junctionv1.MaxFlowDescriptionLength-len(fd))+fd)...), ""},
		{"one application more", apps(junctionv1.MaxPFDApplications+1, 1, "app", fd), "status.n4.pfds"},
		{"one flow description more", apps(1, junctionv1.MaxPFDFlowDescriptions+1, "app", fd), "status.n4.pfds[0].flowDescriptions"},
		{"a flow description one octet longer", apps(1, 1, "app", strings.Repeat(" ", junctionv1.MaxFlowDescriptionLength+1-len(fd))+fd), "status.n4.pfds[0].flowDescriptions[0]"},
		{"an Application ID one octet longer", apps(1, 1, strings.Repeat("a", junctionv1.MaxApplicationIDLength-1), fd), "status.n4.pfds[0].applicationID"},
	} {
		cur := obj.DeepCopy()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			t.Fatal(err)
		}
		setPath(t, cur.Object, "status.n4.pfds", tc.pfds)
		err := k8s.Status().Update(ctx, cur)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: rejected: %v", tc.name, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s: %v; want a rejection naming %s", tc.name, err, tc.field)
		}
	}
}
