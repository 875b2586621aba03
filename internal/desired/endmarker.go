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
	var best route
	found := false
	for i := range spec.Routes {
		r, err := resolveRoute(spec, i)
		if err != nil {
			return nil, 0, err
		}
		if r.prefix.Contains(peer) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	if !found {
		return nil, 0, fmt.Errorf("no route to %s", peer)
	}
	eth := wire.Ethernet{Dst: [6]byte(best.dstMAC), Src: [6]byte(best.srcMAC), Type: wire.EtherTypeIPv4}
	b := make([]byte, wire.EthernetHeaderLen+wire.GTPUOverhead)
	off := wire.GTPU{Flags: wire.GTPUFlags, Type: wire.GTPUTypeEndMarker, TEID: teid}.Prepend(b, len(b))
	off = wire.TunnelUDP(wire.GTPUPort).Prepend(b, off)
	off = wire.TunnelIPv4(src.As4(), peer.As4()).Prepend(b, off)
	eth.Prepend(b, off)
	return b, best.port, nil
}
