package desired

import (
	"fmt"
	"net/netip"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/wire"
)

// EndMarker is the frame of a GTP-U End Marker on the downlink tunnel (peer, teid) of tunnel
// endpoint endpoint (its index in spec), and the port to send it on: what a UPF sends on a
// tunnel it has stopped using, when the SMF asks (SNDEM, docs/n4.md), so that the gNB the
// tunnel ends at knows no downlink comes after it. The frame is built as the pipeline builds a
// downlink G-PDU toward peer: from the endpoint's N3 address, UDP 2152 both ways, checksum 0, out
// of the port of the route with the longest prefix that holds peer, with its MAC addresses.
func EndMarker(spec junctionv1.UserPlaneFunctionSpec, endpoint int, peer netip.Addr, teid uint32) (frame []byte, port int32, err error) {
	if endpoint < 0 || endpoint >= len(spec.TunnelEndpoints) {
		return nil, 0, fmt.Errorf("no tunnel endpoint %d", endpoint)
	}
	src, err := parseAddr(fmt.Sprintf("tunnelEndpoints[%d].n3Address", endpoint), string(spec.TunnelEndpoints[endpoint].N3Address))
	if err != nil {
		return nil, 0, err
	}
	var route *junctionv1.Route
	bits := -1
	for i := range spec.Routes {
		pfx, err := parsePrefix(fmt.Sprintf("routes[%d].destination", i), string(spec.Routes[i].Destination))
		if err != nil {
			return nil, 0, err
		}
		if pfx.Contains(peer) && pfx.Bits() > bits {
			route, bits = &spec.Routes[i], pfx.Bits()
		}
	}
	if route == nil {
		return nil, 0, fmt.Errorf("no route to %s", peer)
	}
	var eth wire.Ethernet
	for _, p := range spec.Ports {
		if p.Name != route.Port {
			continue
		}
		s, err := mac(string(p.MAC))
		if err != nil {
			return nil, 0, fmt.Errorf("ports[%s].mac: %w", p.Name, err)
		}
		d, err := mac(string(route.NextHopMAC))
		if err != nil {
			return nil, 0, fmt.Errorf("the route to %s: nextHopMAC: %w", peer, err)
		}
		eth = wire.Ethernet{Dst: [6]byte(d), Src: [6]byte(s), Type: wire.EtherTypeIPv4}
		port = p.Number
		break
	}
	if eth.Type == 0 {
		return nil, 0, fmt.Errorf("the route to %s: no port named %q", peer, route.Port)
	}
	b := make([]byte, wire.EthernetHeaderLen+wire.GTPUOverhead)
	off := wire.GTPU{Flags: wire.GTPUFlags, Type: wire.GTPUTypeEndMarker, TEID: teid}.Prepend(b, len(b))
	off = wire.TunnelUDP(wire.GTPUPort).Prepend(b, off)
	off = wire.TunnelIPv4(src.As4(), peer.As4()).Prepend(b, off)
	eth.Prepend(b, off)
	return b, port, nil
}
