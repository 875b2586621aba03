// UDP, and the TCP/UDP ports that classify user packets.
//
// A packet's way: IPv4 payload ──ParseUDP──> UDP (length within the payload) ──> destination
// port 2152: GTP-U, 2153: Junction, else a user datagram. ParsePorts reads the two ports that
// the applications and filters tables match on.

package wire

import "encoding/binary"

// UDP is a UDP header. The pipeline writes checksum 0 (none) on the headers it adds.
type UDP struct {
	SrcPort, DstPort uint16
	Length           uint16 // header and payload, bytes
	Checksum         uint16
}

// ParseUDP decodes the header at the start of b (the IPv4 payload). Length must cover the header
// and fit in b; bytes past Length are not part of the datagram.
func ParseUDP(b []byte) (UDP, error) {
	if len(b) < UDPHeaderLen {
		return UDP{}, truncated(LayerUDP, "header", len(b), UDPHeaderLen)
	}
	u := UDP{
		SrcPort:  binary.BigEndian.Uint16(b[0:2]),
		DstPort:  binary.BigEndian.Uint16(b[2:4]),
		Length:   binary.BigEndian.Uint16(b[4:6]),
		Checksum: binary.BigEndian.Uint16(b[6:8]),
	}
	if u.Length < UDPHeaderLen {
		return u, invalid(LayerUDP, "length", int(u.Length), ">= 8 (the header)")
	}
	if int(u.Length) > len(b) {
		return u, tooLong(LayerUDP, "length", int(u.Length), len(b))
	}
	return u, nil
}

// Put writes u into b[:8] as it is.
func (u UDP) Put(b []byte) {
	_ = b[7]
	binary.BigEndian.PutUint16(b[0:2], u.SrcPort)
	binary.BigEndian.PutUint16(b[2:4], u.DstPort)
	binary.BigEndian.PutUint16(b[4:6], u.Length)
	binary.BigEndian.PutUint16(b[6:8], u.Checksum)
}

// Prepend writes u into b[off-8:off] with Length = 8 + the len(b)-off bytes that follow, and
// returns off-8. The checksum is written as given (the pipeline's 0).
func (u UDP) Prepend(b []byte, off int) int {
	u.Length = uint16(UDPHeaderLen + len(b) - off)
	u.Put(b[off-UDPHeaderLen : off])
	return off - UDPHeaderLen
}

// TunnelUDP returns the UDP header the pipeline adds: both ports equal, checksum 0.
func TunnelUDP(port uint16) UDP { return UDP{SrcPort: port, DstPort: port} }

// Ports are a user packet's transport ports, as the applications and filters tables see them.
type Ports struct{ Src, Dst uint16 }

// ParsePorts returns the source and destination ports of the TCP or UDP segment at the start of
// l4, the payload of ip. Other protocols, and fragments after the first (which carry no
// transport header), have zero ports. A TCP or UDP payload too short for the two ports is
// truncated.
func ParsePorts(ip IPv4, l4 []byte) (Ports, error) {
	if (ip.Proto != ProtoTCP && ip.Proto != ProtoUDP) || ip.FragmentOffset() != 0 {
		return Ports{}, nil
	}
	if len(l4) < 4 {
		return Ports{}, truncated(LayerTransport, "ports", len(l4), 4)
	}
	return Ports{binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])}, nil
}
