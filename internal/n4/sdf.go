package n4

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// parseFlowDescription reads a downlink PDR's Flow Description, an IPFilterRule as TS 29.212
// §5.4.2 restricts it ("permit out <proto> from <addr> [ports] to <addr> [ports]", RFC 6733
// §4.3.1), into a traffic descriptor seen from the UE, as Junction's policies are: the "from"
// side of a downlink packet is the application server (destination*), the "to" side the UE
// (source*). "assigned" and the session's own address mean the UE and add no prefix. Anything
// else the grammar allows (deny, in, options such as frag or established, address lists) is
// refused, since the descriptor could not hold it.
func parseFlowDescription(s string, ue netip.Addr) (junctionv1.TrafficDescriptor, error) {
	var td junctionv1.TrafficDescriptor
	f := strings.Fields(s)
	if len(f) < 6 || f[0] != "permit" || f[1] != "out" {
		return td, fmt.Errorf("%q: want \"permit out <proto> from <addr> [ports] to <addr> [ports]\"", s)
	}
	switch f[2] {
	case "ip":
	case "6":
		td.Protocol = junctionv1.ProtocolTCP
	case "17":
		td.Protocol = junctionv1.ProtocolUDP
	case "1":
		td.Protocol = junctionv1.ProtocolICMP
	case "132":
		td.Protocol = junctionv1.ProtocolSCTP
	default:
		return td, fmt.Errorf("%q: protocol %q is not ip, 1, 6, 17 or 132", s, f[2])
	}
	rest := f[3:]
	side := func(word string) (prefix string, ports []junctionv1.PortRange, err error) {
		if len(rest) < 2 || rest[0] != word {
			return "", nil, fmt.Errorf("%q: %q expected", s, word)
		}
		prefix, rest = rest[1], rest[2:]
		if len(rest) > 0 && rest[0] != "to" && rest[0][0] >= '0' && rest[0][0] <= '9' {
			if ports, err = parsePorts(rest[0]); err != nil {
				return "", nil, fmt.Errorf("%q: %w", s, err)
			}
			rest = rest[1:]
		}
		return prefix, ports, nil
	}
	remote, remotePorts, err := side("from")
	if err != nil {
		return td, err
	}
	local, localPorts, err := side("to")
	if err != nil {
		return td, err
	}
	if len(rest) > 0 {
		return td, fmt.Errorf("%q: options %q are not supported", s, strings.Join(rest, " "))
	}
	if (len(remotePorts) > 0 || len(localPorts) > 0) && td.Protocol != junctionv1.ProtocolTCP && td.Protocol != junctionv1.ProtocolUDP {
		return td, fmt.Errorf("%q: ports need protocol 6 or 17 (the pipeline reads no other protocol's ports)", s)
	}
	if len(remotePorts) > 8 || len(localPorts) > 8 {
		return td, fmt.Errorf("%q: more than 8 port ranges on one side", s)
	}
	if p, ok, err := parsePrefix(remote, netip.Addr{}); err != nil {
		return td, fmt.Errorf("%q: %w", s, err)
	} else if ok {
		td.DestinationPrefixes = []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(p.String())}
	}
	if p, ok, err := parsePrefix(local, ue); err != nil {
		return td, fmt.Errorf("%q: %w", s, err)
	} else if ok {
		td.SourcePrefixes = []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(p.String())}
	}
	td.DestinationPorts, td.SourcePorts = remotePorts, localPorts
	return td, nil
}

// parsePrefix reads "any", "assigned", an address or a prefix; ok is false where the side adds
// no prefix (any, assigned, the UE's own address).
func parsePrefix(s string, ue netip.Addr) (netip.Prefix, bool, error) {
	switch s {
	case "any", "assigned":
		return netip.Prefix{}, false, nil
	}
	if !strings.Contains(s, "/") {
		s += "/32"
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, false, fmt.Errorf("address %q is not any, assigned or an IPv4 prefix", s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, false, fmt.Errorf("prefix %q has host bits set", s)
	}
	if p.Bits() == 0 || (p.Bits() == 32 && p.Addr() == ue) {
		return netip.Prefix{}, false, nil
	}
	return p, true, nil
}

// parsePorts reads "80", "5000-5100" or a comma list of those.
func parsePorts(s string) ([]junctionv1.PortRange, error) {
	var out []junctionv1.PortRange
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		from, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q is not a number from 0 to 65535", lo)
		}
		r := junctionv1.PortRange{From: int32(from)}
		if isRange {
			to, err := strconv.ParseUint(hi, 10, 16)
			if err != nil || to < from {
				return nil, fmt.Errorf("port range %q is not low-high", part)
			}
			t := int32(to)
			r.To = &t
		}
		out = append(out, r)
	}
	return out, nil
}
