// Package wiretest builds frames for tests and packet vectors: layers of the wire package
// composed into bytes with the lengths, ports, protocol numbers and checksums filled in. It
// allocates freely; the data path never uses it.
//
// A frame's way through Build: the layers are encoded from the last to the first, each one
// seeing the bytes after it (for its length and checksums) and the next layer (for the fields
// that name it: EtherType, IPv4 protocol, UDP ports).
package wiretest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	"github.com/junction-atsss/junction/internal/wire"
)

// TCP is a 20-byte TCP header for user packets in tests; its checksum is computed by the IPv4
// layer in front of it.
type TCP struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8 // e.g. 0x02 SYN, 0x10 ACK
	Window           uint16
}

// Build encodes layers, outermost first, into one frame. A layer is one of wire.Ethernet,
// wire.IPv4, wire.UDP, wire.GTPU, wire.Header (Junction), wire.Control, TCP, or []byte (raw
// bytes, e.g. a payload). Zero fields are filled in:
//
//   - wire.Ethernet: Type = IPv4.
//   - wire.IPv4: TotalLen from the bytes that follow, TTL 64, Proto from the next layer (UDP,
//     TCP, or 4 for IPv4 in IPv4); the header checksum is always computed, and so is the TCP
//     checksum of a TCP layer right after it. (Patch the bytes to test a bad checksum or TTL 0.)
//   - wire.UDP: Length from the bytes that follow; both ports, when both are 0, are 2152 before
//     wire.GTPU and 2153 before wire.Header. The checksum stays as given (0: none).
//   - wire.GTPU: Flags 0x30 (0x34 with NextExt 0x85), Type G-PDU, Length from what follows.
//   - wire.Header: Length from the bytes that follow.
//
// Build panics on any other layer type: it is for tests.
func Build(layers ...any) []byte {
	var b []byte
	for i := len(layers) - 1; i >= 0; i-- {
		var next any
		if i+1 < len(layers) {
			next = layers[i+1]
		}
		b = encode(layers[i], next, b)
	}
	return b
}

func encode(layer, next any, payload []byte) []byte {
	switch l := layer.(type) {
	case []byte:
		return append(append([]byte{}, l...), payload...)
	case wire.Ethernet:
		if l.Type == 0 {
			l.Type = wire.EtherTypeIPv4
		}
		return prepend(wire.EthernetHeaderLen, payload, l.Put)
	case wire.IPv4:
		if l.TotalLen == 0 {
			l.TotalLen = uint16(wire.IPv4HeaderLen + len(payload))
		}
		if l.TTL == 0 {
			l.TTL = 64
		}
		if l.Proto == 0 {
			switch next.(type) {
			case wire.UDP:
				l.Proto = wire.ProtoUDP
			case TCP:
				l.Proto = wire.ProtoTCP
			case wire.IPv4:
				l.Proto = wire.ProtoIPv4
			}
		}
		if _, ok := next.(TCP); ok && len(payload) >= 20 {
			binary.BigEndian.PutUint16(payload[16:18], 0)
			binary.BigEndian.PutUint16(payload[16:18], TransportChecksum(l.Src, l.Dst, wire.ProtoTCP, payload))
		}
		return prepend(wire.IPv4HeaderLen, payload, l.Put)
	case wire.UDP:
		if l.Length == 0 {
			l.Length = uint16(wire.UDPHeaderLen + len(payload))
		}
		if l.SrcPort == 0 && l.DstPort == 0 {
			switch next.(type) {
			case wire.GTPU:
				l.SrcPort, l.DstPort = wire.GTPUPort, wire.GTPUPort
			case wire.Header:
				l.SrcPort, l.DstPort = wire.JunctionPort, wire.JunctionPort
			}
		}
		return prepend(wire.UDPHeaderLen, payload, l.Put)
	case wire.GTPU:
		if l.Flags == 0 {
			l.Flags = wire.GTPUFlags
			if l.NextExt == wire.GTPUExtPDUSession {
				l.Flags |= wire.GTPUFlagExtension
			}
		}
		if l.Type == 0 {
			l.Type = wire.GTPUTypeGPDU
		}
		if l.Length == 0 {
			l.Length = uint16(l.HeaderLen() - wire.GTPUHeaderLen + len(payload))
		}
		return prepend(l.HeaderLen(), payload, l.Put)
	case wire.Header:
		if l.Length == 0 {
			l.Length = uint16(len(payload))
		}
		return prepend(wire.HeaderLen, payload, l.Put)
	case wire.Control:
		return prepend(wire.ControlLen, payload, l.Put)
	case TCP:
		return prepend(20, payload, l.put)
	}
	panic(fmt.Sprintf("wiretest.Build: unsupported layer %T", layer))
}

func prepend(n int, payload []byte, put func([]byte)) []byte {
	b := make([]byte, n+len(payload))
	put(b[:n])
	copy(b[n:], payload)
	return b
}

func (t TCP) put(b []byte) {
	binary.BigEndian.PutUint16(b[0:2], t.SrcPort)
	binary.BigEndian.PutUint16(b[2:4], t.DstPort)
	binary.BigEndian.PutUint32(b[4:8], t.Seq)
	binary.BigEndian.PutUint32(b[8:12], t.Ack)
	b[12] = 5 << 4 // data offset: 5 words, no options
	b[13] = t.Flags
	binary.BigEndian.PutUint16(b[14:16], t.Window)
	// b[16:18] checksum (IPv4 layer), b[18:20] urgent pointer: 0
}

// TransportChecksum is the TCP or UDP checksum of segment (checksum field zeroed) with the IPv4
// pseudo-header (RFC 793, RFC 768). A UDP result of 0 is sent as 0xffff.
func TransportChecksum(src, dst [4]byte, proto uint8, segment []byte) uint16 {
	var s uint32
	add := func(b []byte) {
		for len(b) >= 2 {
			s += uint32(b[0])<<8 | uint32(b[1])
			b = b[2:]
		}
		if len(b) == 1 {
			s += uint32(b[0]) << 8
		}
	}
	add(src[:])
	add(dst[:])
	s += uint32(proto) + uint32(len(segment))
	add(segment)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	c := ^uint16(s)
	if c == 0 && proto == wire.ProtoUDP {
		c = 0xffff
	}
	return c
}

// IP parses a dotted IPv4 address; it panics on anything else (test input).
func IP(s string) [4]byte {
	a := netip.MustParseAddr(s)
	if !a.Is4() {
		panic("wiretest.IP: not IPv4: " + s)
	}
	return a.As4()
}

// MAC parses a colon-separated MAC address; it panics on anything else (test input).
func MAC(s string) [6]byte {
	b := Hex(strings.ReplaceAll(s, ":", ""))
	if len(b) != 6 {
		panic("wiretest.MAC: not 6 bytes: " + s)
	}
	return [6]byte(b)
}

// Hex decodes hex written for people: spaces, newlines and "|" separators are ignored, so that
// tests can write a header field by field. It panics on bad input (test input).
func Hex(s string) []byte {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\t' || r == '|' {
			return -1
		}
		return r
	}, s)
	b, err := hex.DecodeString(s)
	if err != nil {
		panic("wiretest.Hex: " + err.Error())
	}
	return b
}

// Payload returns n bytes of a recognisable pattern (0x00, 0x01, …, 0xff, 0x00, …).
func Payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
