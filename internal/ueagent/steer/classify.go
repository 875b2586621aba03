package steer

// The uplink classifier: the UPF's `applications` table (docs/pipeline.md) rebuilt from the
// entries the operator writes for the session's policies, matched on the user packet as the UE
// sends it.
//
// A packet's way: IPv4 header (version 4, IHL 5, total length within the buffer; anything else
// is the default application) ─> addresses, protocol, DSCP, ports (TCP and UDP first fragments
// only) ─> the first rule that matches, rules ordered by priority ─> (app ID, steering).

import (
	"encoding/binary"
	"fmt"
	"sort"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/wire"
)

// defaultAppID is set_default_application's application: traffic no policy describes.
const defaultAppID = 0

// defaultSteering is set_default_application's steering: active-standby on 3GPP.
var defaultSteering = desired.Steering{Mode: contract.ModeActiveStandby, Access: contract.Access3GPP}

// ternary is a ternary match on up to 32 bits; a zero mask matches anything.
type ternary struct{ value, mask uint32 }

func (t ternary) match(x uint32) bool { return x&t.mask == t.value }

// portRange is an inclusive range match on 16 bits.
type portRange struct{ low, high uint16 }

func (r portRange) match(x uint16) bool { return x >= r.low && x <= r.high }

var anyPort = portRange{0, 0xffff}

// rule is one applications entry: its match fields (unset ones match anything), its priority
// and its action data.
type rule struct {
	priority              int32
	remote, local         ternary
	proto, dscp           ternary
	remotePort, localPort portRange
	app                   uint16
	steering              desired.Steering
}

// flow is what a rule matches on: the uplink user packet, seen from the UE.
type flow struct {
	remote, local         uint32 // destination and source address
	remotePort, localPort uint16 // destination and source port, 0 when the packet has none
	proto, dscp           uint8
}

func (r *rule) match(f *flow) bool {
	return r.remote.match(f.remote) && r.local.match(f.local) &&
		r.proto.match(uint32(f.proto)) && r.dscp.match(uint32(f.dscp)) &&
		r.remotePort.match(f.remotePort) && r.localPort.match(f.localPort)
}

// Classifier finds a session's application and steering parameters for an uplink packet. It is
// read-only once built, so goroutines may share it; build a new one when policies change.
type Classifier struct {
	rules    []rule
	fallback desired.Steering // the default application's steering
}

// NewClassifier builds the classifier of a session from the policies it selects
// (desired.SelectPolicies) and its own steering in spec.
//
// The rules are desired.ApplicationEntries of every policy, the very entries the operator writes
// to the UPF, so the expansion of traffic descriptors and the encoding of modes (thresholds
// included) are the operator's. The highest priority wins, as on the UPF. Among rules of equal
// priority the UPF's choice is undefined (P4Runtime leaves overlapping entries of one priority
// to the target); here the policy with the lower application ID wins, which is stable for the
// life of the policies. Policies of equal precedence should not overlap.
//
// With an override (spec.modeOverride), every application's steering, the default
// application's included, becomes the override with spec.modeOverrideThresholds, as the
// operator's session_overrides entries: the policies' thresholds do not apply to the overridden
// mode. A policy the session steers its own way (spec.policySteering) takes that steering ahead
// of the override, as on the UPF. Only those three fields of spec are read.
func NewClassifier(policies []desired.Policy, spec junctionv1.ATSSSSessionSpec) (*Classifier, error) {
	c := &Classifier{fallback: defaultSteering}
	mine, err := desired.PolicySteerings(spec)
	if err != nil {
		return nil, err
	}
	ownApps := map[uint16]desired.Steering{}
	for _, p := range policies {
		if s, ok := mine[p.Name]; ok {
			ownApps[p.AppID] = s
		}
		entries, err := desired.ApplicationEntries(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			r, err := decodeRule(e)
			if err != nil {
				return nil, fmt.Errorf("SteeringPolicy %s: %w", p.Name, err)
			}
			c.rules = append(c.rules, r)
		}
	}
	sort.SliceStable(c.rules, func(i, j int) bool {
		a, b := &c.rules[i], &c.rules[j]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		return a.app < b.app
	})
	if override := spec.ModeOverride; override != nil {
		s, err := desired.EncodeSteering(*override, spec.ModeOverrideThresholds)
		if err != nil {
			return nil, fmt.Errorf("modeOverride: %w", err)
		}
		for i := range c.rules {
			c.rules[i].steering = s
		}
		c.fallback = s
	}
	for i := range c.rules {
		if s, ok := ownApps[c.rules[i].app]; ok {
			c.rules[i].steering = s
		}
	}
	return c, nil
}

// Autonomous reports whether some of the session's traffic is steered by autonomous load
// balance (and so by the share).
func (c *Classifier) Autonomous() bool {
	if c.fallback.Mode == contract.ModeAutonomousLoadBalance {
		return true
	}
	for i := range c.rules {
		if c.rules[i].steering.Mode == contract.ModeAutonomousLoadBalance {
			return true
		}
	}
	return false
}

// Classify returns the application ID and steering parameters of an uplink user IPv4 packet
// (destination: the application server; source: the UE). A packet the UPF's parser would reject
// (not IPv4, options, a total length beyond the buffer, TCP or UDP without its ports) and a
// packet no rule matches are the default application, 0.
func (c *Classifier) Classify(pkt []byte) (appID uint16, s desired.Steering) {
	f, ok := parseFlow(pkt)
	if !ok {
		return defaultAppID, c.fallback
	}
	for i := range c.rules {
		if r := &c.rules[i]; r.match(&f) {
			return r.app, r.steering
		}
	}
	return defaultAppID, c.fallback
}

// Len is the number of rules (applications entries) the classifier holds.
func (c *Classifier) Len() int { return len(c.rules) }

// parseFlow reads the fields the applications table matches on. Ports are the first 4 bytes
// after the IPv4 header for TCP and UDP; other protocols and non-first fragments have none.
func parseFlow(b []byte) (flow, bool) {
	var f flow
	if len(b) < wire.IPv4HeaderLen || b[0] != 0x45 { // version 4, IHL 5
		return f, false
	}
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if total < wire.IPv4HeaderLen || total > len(b) {
		return f, false
	}
	f.dscp = b[1] >> 2
	f.proto = b[9]
	f.local = binary.BigEndian.Uint32(b[12:16])
	f.remote = binary.BigEndian.Uint32(b[16:20])
	fragOffset := binary.BigEndian.Uint16(b[6:8]) & 0x1fff
	if (f.proto == wire.ProtoTCP || f.proto == wire.ProtoUDP) && fragOffset == 0 {
		if total < wire.IPv4HeaderLen+4 {
			return f, false
		}
		f.localPort = binary.BigEndian.Uint16(b[20:22])
		f.remotePort = binary.BigEndian.Uint16(b[22:24])
	}
	return f, true
}

// decodeRule turns an applications entry (set_application) back into a rule.
func decodeRule(e desired.Entry) (rule, error) {
	r := rule{priority: e.Priority, remotePort: anyPort, localPort: anyPort}
	if e.Table != "applications" || e.Action != "set_application" {
		return r, fmt.Errorf("entry of %s/%s is not an applications/set_application entry", e.Table, e.Action)
	}
	for _, m := range e.Match {
		var err error
		switch m.Field {
		case "remote_addr":
			r.remote, err = decodeTernary(m, 4)
		case "local_addr":
			r.local, err = decodeTernary(m, 4)
		case "proto":
			r.proto, err = decodeTernary(m, 1)
		case "dscp":
			r.dscp, err = decodeTernary(m, 1)
		case "remote_port":
			r.remotePort, err = decodeRange(m)
		case "local_port":
			r.localPort, err = decodeRange(m)
		default:
			err = fmt.Errorf("unknown match field %q", m.Field)
		}
		if err != nil {
			return r, err
		}
	}
	for _, p := range e.Params {
		v, err := decodeUint(p.Name, p.Value)
		if err != nil {
			return r, err
		}
		switch p.Name {
		case "app_id":
			r.app = uint16(v)
		case "mode":
			r.steering.Mode = contract.Mode(v)
		case "access":
			r.steering.Access = contract.Access(v)
		case "ratio_3gpp":
			r.steering.Ratio3GPP = uint8(v)
		case "rtt_threshold_us":
			r.steering.RTTThresholdUS = uint32(v)
		case "loss_limit_pct":
			r.steering.LossLimitPct = uint8(v)
		default:
			return r, fmt.Errorf("unknown set_application parameter %q", p.Name)
		}
	}
	return r, nil
}

func decodeTernary(m desired.Match, width int) (ternary, error) {
	if m.Kind != desired.Ternary || len(m.Value) != width || len(m.Mask) != width {
		return ternary{}, fmt.Errorf("match field %s: want a %d-byte ternary value and mask", m.Field, width)
	}
	v, _ := decodeUint(m.Field, m.Value)
	k, _ := decodeUint(m.Field, m.Mask)
	return ternary{value: uint32(v & k), mask: uint32(k)}, nil
}

func decodeRange(m desired.Match) (portRange, error) {
	if m.Kind != desired.Range || len(m.Low) != 2 || len(m.High) != 2 {
		return portRange{}, fmt.Errorf("match field %s: want a 2-byte range", m.Field)
	}
	return portRange{binary.BigEndian.Uint16(m.Low), binary.BigEndian.Uint16(m.High)}, nil
}

// decodeUint reads a big-endian value of at most 4 bytes.
func decodeUint(name string, b []byte) (uint64, error) {
	if len(b) == 0 || len(b) > 4 {
		return 0, fmt.Errorf("%s: %d bytes, want 1 to 4", name, len(b))
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v, nil
}
