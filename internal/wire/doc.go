// Package wire encodes and decodes the bytes Junction puts on the wire: the Junction header and
// its control body (docs/junction-header.md), and the outer layers the data path parses and
// builds (Ethernet, IPv4, UDP, GTP-U; docs/pipeline.md). The software UPF, the UE agent and the
// tests share it, so that every part reads the same bytes the same way.
//
// Everything here works on a caller's byte slice and allocates nothing on success: parsers
// return small value types, writers fill a buffer, and the Prepend writers build a header in the
// headroom in front of a payload that already sits in the buffer (wireguard-go style), so
// encapsulation happens in place: h.Prepend(b, off) writes h just before b[off:], fills in the
// length fields from len(b)-off (so b must end where the packet ends), and returns the new start. Rejections return *Error, which names the layer, the field and
// the offending value; building that error is the only allocation, and only on bad input.
//
// A packet's way through this package on the UPF:
//
//	frame ──Frame.Parse──> Ethernet → IPv4 → UDP:2152 → GTP-U [→ PDU Session Container] → IPv4
//	                                        └ UDP:2153 → Junction → IPv4 (user) | Control
//	user packet ──DecrementTTL──> Header.Prepend → UDP.Prepend → IPv4.Prepend [→ GTPU.Prepend …]
//	                                                              → Ethernet.Prepend ──> port
package wire

// Specification constants (IANA, IEEE, 3GPP and docs/junction-header.md).
const (
	// JunctionPort is the UDP port of the Junction tunnel, source and destination.
	JunctionPort = 2153
	// GTPUPort is the UDP port of GTP-U (3GPP TS 29.281), source and destination.
	GTPUPort = 2152

	// EtherTypeIPv4 is the only EtherType the pipeline parses further.
	EtherTypeIPv4 = 0x0800

	// ProtoIPv4 is the IANA protocol number of IPv4 (in the Junction proto field).
	ProtoIPv4 = 4
	// ProtoTCP and ProtoUDP are the transports whose ports classify user packets.
	ProtoTCP = 6
	ProtoUDP = 17
)

// Header sizes in bytes.
const (
	EthernetHeaderLen = 14
	IPv4HeaderLen     = 20 // no options: the pipeline rejects IHL != 5
	UDPHeaderLen      = 8
	GTPUHeaderLen     = 8 // mandatory part; options and extensions follow when flagged
	HeaderLen         = 8 // the Junction header
	ControlLen        = 16
)

// Encapsulation overheads, for sizing headroom in packet buffers.
const (
	// JunctionOverhead is what a Junction leg adds around a user packet: IPv4 + UDP + Junction.
	JunctionOverhead = IPv4HeaderLen + UDPHeaderLen + HeaderLen
	// GTPUOverhead is what plain GTP-U encapsulation adds as the pipeline writes it (no options).
	GTPUOverhead = IPv4HeaderLen + UDPHeaderLen + GTPUHeaderLen
	// MaxHeadroom is the most the pipeline prepends to a user packet, Ethernet included: the
	// downlink on the 3GPP leg of a session with a QFI, Ethernet / IPv4 / UDP / GTP-U with its
	// PDU Session Container / IPv4 / UDP / Junction.
	MaxHeadroom = EthernetHeaderLen + GTPUOverhead + GTPUPSCOverhead + JunctionOverhead
)
