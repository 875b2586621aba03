// IPv4 without options, its header checksum, and the in-place TTL decrement.
//
// A packet's way: bytes ──ParseIPv4──> IPv4 (version 4, IHL 5, total length within the buffer;
// the checksum is not verified here, VerifyIPv4Checksum does that) ──> payload b[20:TotalLen].
// Forwarding: DecrementTTL patches TTL and computes the checksum afresh. Encapsulating:
// IPv4.Prepend writes a fresh header with its checksum in front of the payload.

package wire

import "encoding/binary"

// IPv4 is an IPv4 header without options (version 4 and IHL 5 are implied).
type IPv4 struct {
	TOS      uint8  // DSCP (high 6 bits) and ECN (low 2 bits)
	TotalLen uint16 // header and payload, bytes
	ID       uint16
	Frag     uint16 // flags (high 3 bits: reserved, DF, MF) and fragment offset (8-byte units)
	TTL      uint8
	Proto    uint8
	Checksum uint16 // as found by ParseIPv4; Put and Prepend compute it
	Src, Dst [4]byte
}

// IPv4 flag bits in Frag.
const (
	IPv4DontFragment  = 0x4000
	IPv4MoreFragments = 0x2000
	ipv4OffsetMask    = 0x1fff
)

// DSCP returns the differentiated services code point.
func (h IPv4) DSCP() uint8 { return h.TOS >> 2 }

// FragmentOffset returns the fragment offset in 8-byte units; non-zero means the transport
// header is in an earlier fragment.
func (h IPv4) FragmentOffset() uint16 { return h.Frag & ipv4OffsetMask }

// ParseIPv4 decodes the header at the start of b. It rejects what the pipeline cannot parse:
// a version other than 4, options (IHL != 5), and a total length shorter than the header or
// longer than b. Bytes past TotalLen (Ethernet padding) are the caller's to ignore.
func ParseIPv4(b []byte) (IPv4, error) {
	var h IPv4
	err := h.decode(b)
	return h, err
}

// decode is ParseIPv4 into a caller's struct: Frame decodes straight into its fields, which
// spares a copy of the struct right after its bytes were stored one by one (a store-forwarding
// stall that cost more than the parse itself).
func (h *IPv4) decode(b []byte) error {
	if len(b) < 1 {
		return truncated(LayerIPv4, "header", len(b), IPv4HeaderLen)
	}
	if v := b[0] >> 4; v != 4 {
		return invalid(LayerIPv4, "version", int(v), "4")
	}
	if len(b) < IPv4HeaderLen {
		return truncated(LayerIPv4, "header", len(b), IPv4HeaderLen)
	}
	if ihl := b[0] & 0x0f; ihl != 5 {
		return invalid(LayerIPv4, "ihl", int(ihl), "5 (options are not supported)")
	}
	h.TOS = b[1]
	h.TotalLen = binary.BigEndian.Uint16(b[2:4])
	h.ID = binary.BigEndian.Uint16(b[4:6])
	h.Frag = binary.BigEndian.Uint16(b[6:8])
	h.TTL = b[8]
	h.Proto = b[9]
	h.Checksum = binary.BigEndian.Uint16(b[10:12])
	h.Src = [4]byte(b[12:16])
	h.Dst = [4]byte(b[16:20])
	if h.TotalLen < IPv4HeaderLen {
		return invalid(LayerIPv4, "total length", int(h.TotalLen), ">= 20 (the header)")
	}
	if int(h.TotalLen) > len(b) {
		return tooLong(LayerIPv4, "total length", int(h.TotalLen), len(b))
	}
	return nil
}

// Put writes h into b[:20] as version 4, IHL 5, with a freshly computed checksum (h.Checksum is
// ignored: a header with a wrong checksum is never what a writer wants).
func (h IPv4) Put(b []byte) {
	_ = b[19]
	b[0] = 0x45
	b[1] = h.TOS
	binary.BigEndian.PutUint16(b[2:4], h.TotalLen)
	binary.BigEndian.PutUint16(b[4:6], h.ID)
	binary.BigEndian.PutUint16(b[6:8], h.Frag)
	b[8] = h.TTL
	b[9] = h.Proto
	b[10], b[11] = 0, 0
	copy(b[12:16], h.Src[:])
	copy(b[16:20], h.Dst[:])
	binary.BigEndian.PutUint16(b[10:12], IPv4Checksum(b))
}

// Prepend writes h into b[off-20:off] with TotalLen = 20 + the len(b)-off bytes that follow and
// a fresh checksum, and returns off-20. The payload must be at most 65515 bytes.
func (h IPv4) Prepend(b []byte, off int) int {
	h.TotalLen = uint16(IPv4HeaderLen + len(b) - off)
	h.Put(b[off-IPv4HeaderLen : off])
	return off - IPv4HeaderLen
}

// TunnelIPv4 returns the outer IPv4 header the pipeline adds (docs/pipeline.md): TTL 64,
// identification 0, no flags, UDP.
func TunnelIPv4(src, dst [4]byte) IPv4 {
	return IPv4{TTL: 64, Proto: ProtoUDP, Src: src, Dst: dst}
}

// IPv4Checksum computes the header checksum of the 20-byte header h[:20], treating the checksum
// field as zero.
func IPv4Checksum(h []byte) uint16 {
	_ = h[19]
	var s uint32
	for i := 0; i < 10; i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for i := 12; i < 20; i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	return ^fold(s)
}

// VerifyIPv4Checksum reports whether the 20-byte header h[:20] carries a correct checksum.
func VerifyIPv4Checksum(h []byte) bool {
	_ = h[19]
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	return fold(s) == 0xffff
}

// DecrementTTL decrements the TTL of the IPv4 header at h[:20] in place and computes its
// checksum afresh, as a P4 target's deparser does for every header it emits (so a header that
// arrived with a wrong checksum leaves with a right one; docs/pipeline.md). It reports false,
// changing nothing, when the TTL is 1 or 0.
func DecrementTTL(h []byte) bool {
	_ = h[19]
	ttl := h[8]
	if ttl <= 1 {
		return false
	}
	h[8] = ttl - 1
	binary.BigEndian.PutUint16(h[10:12], IPv4Checksum(h))
	return true
}

// fold adds the carries of a 32-bit one's complement sum back into its low 16 bits.
func fold(s uint32) uint16 {
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}
