package desired

import (
	"fmt"
	"net/netip"
	"slices"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Policy is a SteeringPolicy with the application ID the operator gave it.
type Policy struct {
	Name  string
	AppID uint16
	Spec  junctionv1.SteeringPolicySpec
}

// Steering is the policy's mode as pipeline parameters.
func (p Policy) Steering() (Steering, error) {
	s, err := EncodeSteering(p.Spec.Steering, p.Spec.Thresholds)
	if err != nil {
		return s, fmt.Errorf("SteeringPolicy %s: %w", p.Name, err)
	}
	return s, nil
}

var protocolNumbers = map[junctionv1.Protocol]uint8{
	junctionv1.ProtocolICMP: 1, junctionv1.ProtocolTCP: 6, junctionv1.ProtocolUDP: 17, junctionv1.ProtocolSCTP: 132,
}

// ApplicationEntries expands a policy's traffic descriptor into `applications` entries: one per
// combination of its prefixes and port ranges (unset fields are don't-care and add nothing).
// Every session on the UPF shares them.
func ApplicationEntries(p Policy) ([]Entry, error) {
	s, err := p.Steering()
	if err != nil {
		return nil, err
	}
	td := p.Spec.TrafficDescriptor
	remote, err := ternaryPrefixes("remote_addr", td.DestinationPrefixes)
	if err != nil {
		return nil, fmt.Errorf("SteeringPolicy %s: trafficDescriptor.destinationPrefixes: %w", p.Name, err)
	}
	local, err := ternaryPrefixes("local_addr", td.SourcePrefixes)
	if err != nil {
		return nil, fmt.Errorf("SteeringPolicy %s: trafficDescriptor.sourcePrefixes: %w", p.Name, err)
	}
	remotePorts := portRanges("remote_port", td.DestinationPorts)
	localPorts := portRanges("local_port", td.SourcePorts)
	var fixed []Match
	if td.Protocol != "" {
		fixed = append(fixed, Match{Field: "proto", Kind: Ternary, Value: u8(protocolNumbers[td.Protocol]), Mask: u8(0xff)})
	}
	if td.DSCP != nil {
		fixed = append(fixed, Match{Field: "dscp", Kind: Ternary, Value: u8(uint8(*td.DSCP)), Mask: u8(0x3f)})
	}
	action := append([]Param{{"app_id", u16(p.AppID)}}, s.params()...)

	var out []Entry
	for _, r := range remote {
		for _, l := range local {
			for _, rp := range remotePorts {
				for _, lp := range localPorts {
					var ms []Match
					for _, m := range []*Match{r, l} {
						if m != nil {
							ms = append(ms, *m)
						}
					}
					ms = append(ms, fixed...)
					for _, m := range []*Match{rp, lp} {
						if m != nil {
							ms = append(ms, *m)
						}
					}
					out = append(out, Entry{
						Table:    "applications",
						Match:    ms,
						Action:   "set_application",
						Params:   action,
						Priority: maxPriority - p.Spec.Precedence,
					})
				}
			}
		}
	}
	return out, nil
}

// ternaryPrefixes returns one match per prefix, or a single nil (don't care) for none.
func ternaryPrefixes(field string, prefixes []junctionv1.IPv4Prefix) ([]*Match, error) {
	if len(prefixes) == 0 {
		return []*Match{nil}, nil
	}
	out := make([]*Match, 0, len(prefixes))
	for _, s := range prefixes {
		p, err := parsePrefix(field, string(s))
		if err != nil {
			return nil, err
		}
		if p.Bits() == 0 {
			return []*Match{nil}, nil // 0.0.0.0/0 matches anything
		}
		out = append(out, &Match{Field: field, Kind: Ternary, Value: addr(p.Addr()), Mask: prefixMask(p.Bits())})
	}
	return out, nil
}

// portRanges returns one match per range, or a single nil (don't care) for none.
func portRanges(field string, ranges []junctionv1.PortRange) []*Match {
	if len(ranges) == 0 {
		return []*Match{nil}
	}
	out := make([]*Match, 0, len(ranges))
	for _, r := range ranges {
		hi := r.From
		if r.To != nil {
			hi = *r.To
		}
		if r.From == 0 && hi == 65535 {
			return []*Match{nil}
		}
		out = append(out, &Match{Field: field, Kind: Range, Low: u16(uint16(r.From)), High: u16(uint16(hi))})
	}
	return out
}

// UPFEntries are the entries a UserPlaneFunction's own spec implies: its local addresses, its
// tunnel endpoints (indexed by position) and its routes.
func UPFEntries(spec junctionv1.UserPlaneFunctionSpec) ([]Entry, error) {
	var out []Entry
	local := map[netip.Addr]bool{}
	for i, ep := range spec.TunnelEndpoints {
		n3, err := parseAddr(fmt.Sprintf("tunnelEndpoints[%d].n3Address", i), string(ep.N3Address))
		if err != nil {
			return nil, err
		}
		jn, err := parseAddr(fmt.Sprintf("tunnelEndpoints[%d].junctionAddress", i), string(ep.JunctionAddress))
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{
			Table:  "tunnel_endpoints",
			Match:  []Match{{Field: "endpoint_idx", Kind: Exact, Value: u8(uint8(i))}},
			Action: "set_tunnel_endpoint",
			Params: []Param{{"n3_addr", addr(n3)}, {"junction_addr", addr(jn)}},
		})
		for _, a := range []netip.Addr{n3, jn} {
			if !local[a] {
				local[a] = true
				out = append(out, Entry{
					Table:  "local_addresses",
					Match:  []Match{{Field: "dst_addr", Kind: Exact, Value: addr(a)}},
					Action: "accept_local",
				})
			}
		}
	}
	for i := range spec.Routes {
		r, err := resolveRoute(spec, i)
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{
			Table:  "routes",
			Match:  []Match{{Field: "dst_addr", Kind: LPM, Value: addr(r.prefix.Addr()), PrefixLen: int32(r.prefix.Bits())}},
			Action: "route",
			Params: []Param{{"port", port9(r.port)}, {"src_mac", r.srcMAC}, {"dst_mac", r.dstMAC}},
		})
	}
	return out, nil
}

// route is spec.routes[i] resolved: its prefix, the number of the port it names and the MAC
// addresses a frame leaving by it carries.
type route struct {
	prefix         netip.Prefix
	port           int32
	srcMAC, dstMAC []byte
}

// resolveRoute resolves spec.routes[i], or says which field is wrong.
func resolveRoute(spec junctionv1.UserPlaneFunctionSpec, i int) (route, error) {
	r, field := spec.Routes[i], fmt.Sprintf("routes[%d]", i)
	pfx, err := parsePrefix(field+".destination", string(r.Destination))
	if err != nil {
		return route{}, err
	}
	j := slices.IndexFunc(spec.Ports, func(p junctionv1.Port) bool { return p.Name == r.Port })
	if j < 0 {
		return route{}, fmt.Errorf("%s.port: no port named %q", field, r.Port)
	}
	port := spec.Ports[j]
	src, err := mac(string(port.MAC))
	if err != nil {
		return route{}, fmt.Errorf("ports[%s].mac: %w", port.Name, err)
	}
	dst, err := mac(string(r.NextHopMAC))
	if err != nil {
		return route{}, fmt.Errorf("%s.nextHopMAC: %w", field, err)
	}
	return route{prefix: pfx, port: port.Number, srcMAC: src, dstMAC: dst}, nil
}

// TunnelPeerEntry is the `tunnel_peers` entry of one gNB (Method 2 table split: sessions carry
// a 16-bit index instead of the 32-bit address).
func TunnelPeerEntry(index uint16, gnb netip.Addr) Entry {
	return Entry{
		Table:  "tunnel_peers",
		Match:  []Match{{Field: "peer_idx", Kind: Exact, Value: u16(index)}},
		Action: "set_tunnel_peer",
		Params: []Param{{"peer_addr", addr(gnb)}},
	}
}
