package steer

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/wire"
)

func ptr[T any](v T) *T { return &v }

// Steering modes as the API spells them.
var (
	apiActive3GPP = junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby, ActiveStandby: &junctionv1.ActiveStandby{Active: junctionv1.Access3GPP}}
	apiActiveWiFi = junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby, ActiveStandby: &junctionv1.ActiveStandby{Active: junctionv1.AccessNon3GPP}}
	apiSmallest   = junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay}
	apiRedundant  = junctionv1.SteeringMode{Mode: junctionv1.ModeRedundant}
	apiLB30       = junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptr[int32](30)}}
	apiAutoLB     = junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}
	apiPriority   = junctionv1.SteeringMode{Mode: junctionv1.ModePriorityBased, PriorityBased: &junctionv1.PriorityBased{PriorityAccess: junctionv1.Access3GPP, RTTThreshold: "40ms"}}
)

func pol(name string, app uint16, precedence int32, td junctionv1.TrafficDescriptor, m junctionv1.SteeringMode) desired.Policy {
	return desired.Policy{Name: name, AppID: app, Spec: junctionv1.SteeringPolicySpec{Precedence: precedence, TrafficDescriptor: td, Steering: m}}
}

func prefixes(s ...string) []junctionv1.IPv4Prefix {
	out := make([]junctionv1.IPv4Prefix, len(s))
	for i := range s {
		out[i] = junctionv1.IPv4Prefix(s[i])
	}
	return out
}

func ports(from, to int32) []junctionv1.PortRange {
	return []junctionv1.PortRange{{From: from, To: ptr(to)}}
}

// pkt is an uplink user packet: src is the UE side, dst the server. Its L4 bytes start with
// the two ports (whatever the protocol) and are 8 bytes long.
type pkt struct {
	src, dst     string
	proto        uint8
	sport, dport uint16
	tos          uint8
	frag         uint16 // flags and offset
}

func (p pkt) bytes() []byte {
	b := make([]byte, 28)
	wire.IPv4{TOS: p.tos, TotalLen: 28, Frag: p.frag, TTL: 64, Proto: p.proto,
		Src: netip.MustParseAddr(p.src).As4(), Dst: netip.MustParseAddr(p.dst).As4()}.Put(b)
	binary.BigEndian.PutUint16(b[20:], p.sport)
	binary.BigEndian.PutUint16(b[22:], p.dport)
	return b
}

const (
	ue     = "10.45.0.7"
	server = "198.51.100.20"
	tcp    = wire.ProtoTCP
	udp    = wire.ProtoUDP
	icmp   = 1
)

// Expected steerings, written from docs/pipeline.md's encodings.
var (
	defaultApp     = desired.Steering{Mode: 1, Access: 1} // set_default_application
	steerSmallest  = desired.Steering{Mode: 2}
	steerActiveN3G = desired.Steering{Mode: 1, Access: 2}
	steerRedundant = desired.Steering{Mode: 5}
	steerLB30      = desired.Steering{Mode: 3, Ratio3GPP: 38} // round(30*128/100)
)

func TestClassify(t *testing.T) {
	video := pol("video", 7, 10, junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes("198.51.100.0/24"), Protocol: junctionv1.ProtocolTCP, DestinationPorts: ports(443, 443)}, apiSmallest)
	for _, tc := range []struct {
		name     string
		policies []desired.Policy
		override *junctionv1.SteeringMode
		pkt      []byte
		wantApp  uint16
		want     desired.Steering
	}{
		{"a packet no policy describes is the default application, active-standby on 3GPP",
			[]desired.Policy{video}, nil, pkt{src: ue, dst: "203.0.113.1", proto: tcp, sport: 40000, dport: 443}.bytes(), 0, defaultApp},
		{"a session without policies sends everything as the default application",
			nil, nil, pkt{src: ue, dst: server, proto: udp, sport: 1, dport: 2}.bytes(), 0, defaultApp},
		{"the destination address and port are the server's side (remote)",
			[]desired.Policy{video}, nil, pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443}.bytes(), 7, steerSmallest},
		{"a packet from the server's prefix is not the server's side",
			[]desired.Policy{video}, nil, pkt{src: server, dst: ue, proto: tcp, sport: 443, dport: 443}.bytes(), 0, defaultApp},
		{"the server's port as the source port does not match",
			[]desired.Policy{video}, nil, pkt{src: ue, dst: server, proto: tcp, sport: 443, dport: 40000}.bytes(), 0, defaultApp},
		{"the protocol must match: UDP to the TCP application's port is default",
			[]desired.Policy{video}, nil, pkt{src: ue, dst: server, proto: udp, sport: 40000, dport: 443}.bytes(), 0, defaultApp},
		{"the source prefix is the UE's side (local)",
			[]desired.Policy{pol("site", 3, 5, junctionv1.TrafficDescriptor{SourcePrefixes: prefixes("10.45.0.0/16")}, apiActiveWiFi)},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes(), 3, steerActiveN3G},
		{"the source port is the UE's side (local)",
			[]desired.Policy{pol("rtp", 4, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, SourcePorts: ports(5004, 5004)}, apiRedundant)},
			nil, pkt{src: ue, dst: server, proto: udp, sport: 5004, dport: 9}.bytes(), 4, steerRedundant},
		{"a port range includes its first port",
			[]desired.Policy{pol("game", 5, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, DestinationPorts: ports(27000, 27030)}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: udp, sport: 1, dport: 27000}.bytes(), 5, steerSmallest},
		{"a port range includes its last port",
			[]desired.Policy{pol("game", 5, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, DestinationPorts: ports(27000, 27030)}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: udp, sport: 1, dport: 27030}.bytes(), 5, steerSmallest},
		{"a port past the range does not match",
			[]desired.Policy{pol("game", 5, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, DestinationPorts: ports(27000, 27030)}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: udp, sport: 1, dport: 27031}.bytes(), 0, defaultApp},
		{"any of several prefixes matches",
			[]desired.Policy{pol("cdn", 6, 5, junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes("192.0.2.0/24", "198.51.100.0/24")}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes(), 6, steerSmallest},
		{"a protocol without ports has ports 0, which a range from 0 matches",
			[]desired.Policy{pol("low", 8, 5, junctionv1.TrafficDescriptor{DestinationPorts: ports(0, 1023)}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: icmp, sport: 8000, dport: 8000}.bytes(), 8, steerSmallest},
		{"ICMP matches a protocol-only policy",
			[]desired.Policy{pol("ping", 9, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolICMP}, apiRedundant)},
			nil, pkt{src: ue, dst: server, proto: icmp}.bytes(), 9, steerRedundant},
		{"a non-first fragment has no ports",
			[]desired.Policy{video}, nil, pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443, frag: 185}.bytes(), 0, defaultApp},
		{"a non-first fragment matches a port range from 0",
			[]desired.Policy{pol("frag", 10, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolTCP, DestinationPorts: ports(0, 0)}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443, frag: 185}.bytes(), 10, steerSmallest},
		{"a first fragment with more to come has its ports",
			[]desired.Policy{video}, nil, pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443, frag: wire.IPv4MoreFragments}.bytes(), 7, steerSmallest},
		{"DSCP is the six high bits of TOS, whatever the ECN bits",
			[]desired.Policy{pol("voice", 11, 5, junctionv1.TrafficDescriptor{DSCP: ptr[int32](46)}, apiRedundant)},
			nil, pkt{src: ue, dst: server, proto: udp, tos: 46<<2 | 1}.bytes(), 11, steerRedundant},
		{"another DSCP does not match",
			[]desired.Policy{pol("voice", 11, 5, junctionv1.TrafficDescriptor{DSCP: ptr[int32](46)}, apiRedundant)},
			nil, pkt{src: ue, dst: server, proto: udp, tos: 34 << 2}.bytes(), 0, defaultApp},
		{"the lower precedence value wins where policies overlap",
			[]desired.Policy{
				pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiLB30),
				video,
			}, nil, pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443}.bytes(), 7, steerSmallest},
		{"a catch-all policy takes what the specific one does not describe",
			[]desired.Policy{
				video,
				pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiLB30),
			}, nil, pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 80}.bytes(), 1, steerLB30},
		{"equal precedence goes to the lower application ID",
			[]desired.Policy{
				pol("b", 12, 5, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP}, apiRedundant),
				pol("a", 13, 5, junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes("198.51.100.0/24")}, apiSmallest),
			}, nil, pkt{src: ue, dst: server, proto: udp}.bytes(), 12, steerRedundant},
		{"a policy's RTT threshold is carried in microseconds",
			[]desired.Policy{{Name: "th", AppID: 14, Spec: junctionv1.SteeringPolicySpec{Precedence: 5, Steering: apiActive3GPP, Thresholds: &junctionv1.Thresholds{RTT: "150ms"}}}},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes(), 14, desired.Steering{Mode: 1, Access: 1, RTTThresholdUS: 150000}},
		{"a policy's loss threshold is carried as loss_limit_pct",
			[]desired.Policy{{Name: "loss", AppID: 16, Spec: junctionv1.SteeringPolicySpec{Precedence: 5, Steering: apiActive3GPP, Thresholds: &junctionv1.Thresholds{PacketLossPercent: ptr[int32](7)}}}},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes(), 16, desired.Steering{Mode: 1, Access: 1, LossLimitPct: 8}},
		{"priority-based carries its own threshold",
			[]desired.Policy{pol("prio", 15, 5, junctionv1.TrafficDescriptor{}, apiPriority)},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes(), 15, desired.Steering{Mode: 4, Access: 1, RTTThresholdUS: 40000}},
		{"the override replaces a policy's steering and drops its thresholds, keeping its application",
			[]desired.Policy{{Name: "th", AppID: 14, Spec: junctionv1.SteeringPolicySpec{Precedence: 5, Steering: apiActive3GPP, Thresholds: &junctionv1.Thresholds{RTT: "150ms"}}}},
			&apiSmallest, pkt{src: ue, dst: server, proto: udp}.bytes(), 14, steerSmallest},
		{"the override replaces the default application's steering too",
			[]desired.Policy{video}, &apiLB30, pkt{src: ue, dst: "203.0.113.1", proto: udp}.bytes(), 0, steerLB30},
		{"IPv4 with options is the default application even under a catch-all policy",
			[]desired.Policy{pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiSmallest)},
			nil, withOptions(pkt{src: ue, dst: server, proto: udp}.bytes()), 0, defaultApp},
		{"a total length beyond the buffer is the default application",
			[]desired.Policy{pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes()[:27], 0, defaultApp},
		{"a header shorter than 20 bytes is the default application",
			[]desired.Policy{pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiSmallest)},
			nil, pkt{src: ue, dst: server, proto: udp}.bytes()[:19], 0, defaultApp},
		{"UDP without room for its ports is the default application",
			[]desired.Policy{pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiSmallest)},
			nil, truncatedL4(pkt{src: ue, dst: server, proto: udp}.bytes(), 3), 0, defaultApp},
		{"a non-first fragment needs no room for ports",
			[]desired.Policy{pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiSmallest)},
			nil, truncatedL4(pkt{src: ue, dst: server, proto: udp, frag: 100}.bytes(), 0), 1, steerSmallest},
		{"an IPv6 packet is the default application",
			[]desired.Policy{pol("all", 1, 100, junctionv1.TrafficDescriptor{}, apiSmallest)},
			nil, append([]byte{0x60}, make([]byte, 39)...), 0, defaultApp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClassifier(tc.policies, junctionv1.ATSSSSessionSpec{ModeOverride: tc.override})
			if err != nil {
				t.Fatal(err)
			}
			app, s := c.Classify(tc.pkt)
			if app != tc.wantApp || s != tc.want {
				t.Errorf("got app %d %+v, want app %d %+v", app, s, tc.wantApp, tc.want)
			}
		})
	}
}

// withOptions turns the 20-byte header into a 24-byte one (IHL 6).
func withOptions(b []byte) []byte {
	out := append(append(append([]byte{}, b[:20]...), 1, 1, 1, 1), b[20:]...)
	out[0] = 0x46
	binary.BigEndian.PutUint16(out[2:4], uint16(len(out)))
	return out
}

// truncatedL4 keeps n bytes after the IPv4 header, with a matching total length.
func truncatedL4(b []byte, n int) []byte {
	out := b[:20+n]
	binary.BigEndian.PutUint16(out[2:4], uint16(len(out)))
	return out
}

func TestNewClassifierErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []desired.Policy
		override *junctionv1.SteeringMode
		want     string
	}{
		{"a bad prefix names the policy and the field",
			[]desired.Policy{pol("bad", 1, 1, junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes("2001:db8::/32")}, apiSmallest)},
			nil, "SteeringPolicy bad: trafficDescriptor.destinationPrefixes"},
		{"a mode without its parameters names the policy",
			[]desired.Policy{pol("bad", 1, 1, junctionv1.TrafficDescriptor{}, junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance})},
			nil, "SteeringPolicy bad"},
		{"a bad override names modeOverride",
			nil, &junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby}, "modeOverride"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClassifier(tc.policies, junctionv1.ATSSSSessionSpec{ModeOverride: tc.override})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestClassifierHoldsOneRulePerApplicationsEntry(t *testing.T) {
	p := pol("cdn", 6, 5, junctionv1.TrafficDescriptor{
		DestinationPrefixes: prefixes("192.0.2.0/24", "198.51.100.0/24"),
		Protocol:            junctionv1.ProtocolTCP,
		DestinationPorts:    []junctionv1.PortRange{{From: 80}, {From: 443}},
	}, apiSmallest)
	c, err := NewClassifier([]desired.Policy{p}, junctionv1.ATSSSSessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 4 { // 2 prefixes x 2 port ranges, as the operator writes them
		t.Errorf("got %d rules, want 4", c.Len())
	}
	for _, dst := range []string{"192.0.2.9", "198.51.100.9"} {
		for _, port := range []uint16{80, 443} {
			if app, _ := c.Classify(pkt{src: ue, dst: dst, proto: tcp, dport: port}.bytes()); app != 6 {
				t.Errorf("%s:%d: got app %d, want 6", dst, port, app)
			}
		}
	}
}

func TestDecodeRuleRefusesWhatIsNotAnApplicationsEntry(t *testing.T) {
	good := func() desired.Entry {
		return desired.Entry{Table: "applications", Action: "set_application", Priority: 1,
			Match:  []desired.Match{{Field: "proto", Kind: desired.Ternary, Value: []byte{6}, Mask: []byte{0xff}}},
			Params: []desired.Param{{Name: "app_id", Value: []byte{0, 1}}, {Name: "mode", Value: []byte{2}}}}
	}
	if _, err := decodeRule(good()); err != nil {
		t.Fatalf("a well-formed entry was refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(e *desired.Entry)
	}{
		{"an entry of another table", func(e *desired.Entry) { e.Table = "filters" }},
		{"an unknown match field", func(e *desired.Entry) { e.Match[0].Field = "ttl" }},
		{"a ternary of the wrong width", func(e *desired.Entry) { e.Match[0].Value = []byte{0, 6} }},
		{"a range where a ternary belongs", func(e *desired.Entry) { e.Match[0].Kind = desired.Range }},
		{"a port range of the wrong width", func(e *desired.Entry) {
			e.Match[0] = desired.Match{Field: "remote_port", Kind: desired.Range, Low: []byte{1}, High: []byte{2}}
		}},
		{"an unknown parameter", func(e *desired.Entry) { e.Params[1].Name = "weight" }},
		{"an empty parameter", func(e *desired.Entry) { e.Params[1].Value = nil }},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			e := good()
			tc.spoil(&e)
			if _, err := decodeRule(e); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// A session's own steering of one policy (spec.policySteering, what an SMF's MAR on one PDR
// becomes) wins over its modeOverride for that policy's traffic, with its own thresholds; the
// other policies and the default application keep the override and its thresholds.
func TestPolicySteeringWinsOverTheOverride(t *testing.T) {
	video := pol("video", 7, 10, junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes("198.51.100.0/24"), Protocol: junctionv1.ProtocolTCP, DestinationPorts: ports(443, 443)}, apiSmallest)
	game := pol("game", 5, 20, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP}, apiSmallest)
	own := []junctionv1.PolicySteering{{Name: "video", Steering: apiRedundant, Thresholds: &junctionv1.Thresholds{RTT: "20ms"}}}
	c, err := NewClassifier([]desired.Policy{video, game}, junctionv1.ATSSSSessionSpec{ModeOverride: &apiLB30, ModeOverrideThresholds: &junctionv1.Thresholds{PacketLossPercent: ptr[int32](9)}, PolicySteering: own})
	if err != nil {
		t.Fatal(err)
	}
	redundant20ms := steerRedundant
	redundant20ms.RTTThresholdUS = 20000
	lb30loss9 := steerLB30
	lb30loss9.LossLimitPct = 10 // docs/pipeline.md: loss_limit_pct is the percentage + 1
	for _, tc := range []struct {
		name    string
		pkt     []byte
		wantApp uint16
		want    desired.Steering
	}{
		{"the policy the session steers itself", pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443}.bytes(), 7, redundant20ms},
		{"another selected policy takes the override with its thresholds", pkt{src: ue, dst: server, proto: udp, sport: 1, dport: 2}.bytes(), 5, lb30loss9},
		{"the default application takes the override with its thresholds", pkt{src: ue, dst: server, proto: icmp}.bytes(), 0, lb30loss9},
	} {
		app, s := c.Classify(tc.pkt)
		if app != tc.wantApp || s != tc.want {
			t.Errorf("%s: got app %d %+v, want app %d %+v", tc.name, app, s, tc.wantApp, tc.want)
		}
	}
	if _, err := NewClassifier([]desired.Policy{video}, junctionv1.ATSSSSessionSpec{PolicySteering: []junctionv1.PolicySteering{{Name: "video", Steering: junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance}}}}); err == nil || !strings.Contains(err.Error(), "policySteering[0] (video)") {
		t.Errorf("a policySteering without its parameters: got %v, want an error naming policySteering[0] (video)", err)
	}
}

// TestClassifierAutonomous: the balancer moves the share only for a session some of whose traffic
// steers by autonomous load balance (docs/pipeline.md), by a policy, the session's own steering
// of one, or its modeOverride.
func TestClassifierAutonomous(t *testing.T) {
	video := pol("video", 7, 10, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolTCP}, apiLB30)
	auto := pol("auto", 8, 20, junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP}, apiAutoLB)
	for _, tc := range []struct {
		name     string
		policies []desired.Policy
		spec     junctionv1.ATSSSSessionSpec
		want     bool
	}{
		{"no policy: the default application is active-standby", nil, junctionv1.ATSSSSessionSpec{}, false},
		{"a load-balance policy at a fixed ratio", []desired.Policy{video}, junctionv1.ATSSSSessionSpec{}, false},
		{"an autonomous policy among others", []desired.Policy{video, auto}, junctionv1.ATSSSSessionSpec{}, true},
		{"the session's own autonomous steering of a policy", []desired.Policy{video},
			junctionv1.ATSSSSessionSpec{PolicySteering: []junctionv1.PolicySteering{{Name: "video", Steering: apiAutoLB}}}, true},
		{"an autonomous modeOverride", nil, junctionv1.ATSSSSessionSpec{ModeOverride: &apiAutoLB}, true},
		{"a modeOverride over an autonomous policy", []desired.Policy{auto}, junctionv1.ATSSSSessionSpec{ModeOverride: &apiSmallest}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClassifier(tc.policies, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Autonomous(); got != tc.want {
				t.Errorf("Autonomous() = %v, want %v", got, tc.want)
			}
		})
	}
}
