// The Junction header (8 bytes) and control body (16 bytes), docs/junction-header.md.
//
// A packet's way: UDP payload ──ParseJunction──> Header (rules checked, length matched)
// ──> DATA: the user's IPv4 packet follows; control types: ParseControl on the 16-byte body.
// Sending: Header.Prepend in front of a payload already in the buffer, or Header.Put and
// Control.Put into a fresh buffer.

package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/junction-atsss/junction/internal/contract"
)

// Type is the message type, the high nibble of byte 0.
type Type uint8

const (
	TypeData       Type = 0
	TypeProbe      Type = 1
	TypeProbeReply Type = 2
	TypeProbeAck   Type = 3
	TypeLinkDown   Type = 4
	TypeLinkUp     Type = 5
)

func (t Type) String() string {
	switch t {
	case TypeData:
		return "DATA"
	case TypeProbe:
		return "PROBE"
	case TypeProbeReply:
		return "PROBE_REPLY"
	case TypeProbeAck:
		return "PROBE_ACK"
	case TypeLinkDown:
		return "LINK_DOWN"
	case TypeLinkUp:
		return "LINK_UP"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// IsControl reports whether messages of this type carry the 16-byte control body.
func (t Type) IsControl() bool { return t >= TypeProbe && t <= TypeLinkUp }

// Marks are the uplink reorder flags, the low nibble of byte 0. Only DATA carries them.
type Marks uint8

const (
	MarkExPath      Marks = 0x1 // the EX-PATH marker: nothing more of this epoch on this path
	MarkCurrentPath Marks = 0x2 // data on the new path; seq holds the reorder timeout in µs
	MarkEpoch       Marks = 0x4 // the switch epoch bit
	markReserved    Marks = 0x8 // must be 0
)

func (m Marks) String() string {
	if m == 0 {
		return "none"
	}
	s := ""
	for _, f := range [...]struct {
		m    Marks
		name string
	}{{MarkExPath, "EX_PATH"}, {MarkCurrentPath, "CURRENT_PATH"}, {MarkEpoch, "EPOCH"}, {markReserved, "RESERVED"}} {
		if m&f.m != 0 {
			if s != "" {
				s += "|"
			}
			s += f.name
		}
	}
	if m&^0xf != 0 {
		s += fmt.Sprintf("|%#x", uint8(m&^0xf))
	}
	return s
}

// Epoch returns the switch epoch bit as 0 or 1.
func (m Marks) Epoch() uint8 { return uint8(m&MarkEpoch) >> 2 }

// Header is the 8-byte Junction header. Type and Marks must fit in 4 bits each.
type Header struct {
	Type  Type
	Marks Marks
	// Proto is the IANA protocol of the payload: ProtoIPv4 for DATA with a payload, else 0.
	Proto uint8
	// Length counts the bytes after the header: the user packet or the 16-byte control body.
	Length uint16
	// Seq is the downlink sequence number on DATA (0: unsequenced session), the reorder
	// timeout in microseconds on uplink DATA marked CURRENT_PATH, and 0 otherwise.
	Seq uint32
}

// Put writes h into b[:8] as it is; it checks nothing (Check does). b must hold 8 bytes.
func (h Header) Put(b []byte) {
	_ = b[7]
	b[0] = byte(h.Type)<<4 | byte(h.Marks)&0x0f
	b[1] = h.Proto
	binary.BigEndian.PutUint16(b[2:4], h.Length)
	binary.BigEndian.PutUint32(b[4:8], h.Seq)
}

// Append appends the 8 header bytes to b.
func (h Header) Append(b []byte) []byte {
	var a [HeaderLen]byte
	h.Put(a[:])
	return append(b, a[:]...)
}

// Prepend writes h into b[off-8:off], with Length set to the len(b)-off bytes that follow, and
// returns off-8, the new start of the packet.
func (h Header) Prepend(b []byte, off int) int {
	h.Length = uint16(len(b) - off)
	h.Put(b[off-HeaderLen : off])
	return off - HeaderLen
}

// ParseHeader decodes the header at the start of b and checks the combination rules of
// docs/junction-header.md (Check). Bytes after the header are not looked at; ParseJunction also
// matches Length against them.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, truncated(LayerJunction, "header", len(b), HeaderLen)
	}
	h := Header{
		Type:   Type(b[0] >> 4),
		Marks:  Marks(b[0] & 0x0f),
		Proto:  b[1],
		Length: binary.BigEndian.Uint16(b[2:4]),
		Seq:    binary.BigEndian.Uint32(b[4:8]),
	}
	return h, h.Check()
}

// ParseJunction decodes the header at the start of a UDP payload, checks its rules and that
// Length equals the bytes that follow, and returns the header and those bytes (the user packet
// or the control body).
func ParseJunction(udpPayload []byte) (Header, []byte, error) {
	h, err := ParseHeader(udpPayload)
	if err != nil {
		return h, nil, err
	}
	if err := h.CheckLength(len(udpPayload) - HeaderLen); err != nil {
		return h, nil, err
	}
	return h, udpPayload[HeaderLen:], nil
}

// CheckLength checks Length against the number of bytes that follow the header (the UDP payload
// length minus 8).
func (h Header) CheckLength(following int) error {
	if int(h.Length) != following {
		return mismatch(LayerJunction, "length", int(h.Length), following)
	}
	return nil
}

// Valid DATA mark combinations: none, CURRENT_PATH, CURRENT_PATH|EPOCH carry an IPv4 packet;
// EX_PATH and EX_PATH|EPOCH are the empty marker.
const dataMarksWant = "none, CURRENT_PATH[|EPOCH] or EX_PATH[|EPOCH] on DATA"

// Check applies the combination rules on type, marks, proto and length. Seq is not checked:
// senders put 0 where it has no meaning, receivers ignore it.
func (h Header) Check() error {
	switch {
	case h.Type > TypeLinkUp:
		return invalid(LayerJunction, "type", int(h.Type), "0..5 (DATA, PROBE, PROBE_REPLY, PROBE_ACK, LINK_DOWN, LINK_UP)")
	case h.Marks&markReserved != 0 || h.Marks > 0xf:
		return invalidHex(LayerJunction, "marks", int(h.Marks), "reserved bit 0x8 clear")
	}
	if h.Type != TypeData {
		switch {
		case h.Marks != 0:
			return invalidHex(LayerJunction, "marks", int(h.Marks), "none on "+h.Type.String())
		case h.Proto != 0:
			return invalid(LayerJunction, "proto", int(h.Proto), "0 on "+h.Type.String())
		case h.Length != ControlLen:
			return invalid(LayerJunction, "length", int(h.Length), "16 (the control body) on "+h.Type.String())
		}
		return nil
	}
	switch h.Marks &^ MarkEpoch {
	case 0, MarkCurrentPath:
		if h.Marks == MarkEpoch {
			return invalidHex(LayerJunction, "marks", int(h.Marks), dataMarksWant)
		}
		if h.Proto != ProtoIPv4 {
			return invalid(LayerJunction, "proto", int(h.Proto), "4 (IPv4) on DATA")
		}
		if h.Length < IPv4HeaderLen {
			return invalid(LayerJunction, "length", int(h.Length), ">= 20 (an IPv4 packet) on DATA")
		}
	case MarkExPath:
		if h.Proto != 0 {
			return invalid(LayerJunction, "proto", int(h.Proto), "0 on the EX-PATH marker")
		}
		if h.Length != 0 {
			return invalid(LayerJunction, "length", int(h.Length), "0 on the EX-PATH marker")
		}
	default:
		return invalidHex(LayerJunction, "marks", int(h.Marks), dataMarksWant)
	}
	return nil
}

// IsExPathMarker reports whether h is the EX-PATH marker (DATA with EX_PATH, no payload).
func (h Header) IsExPathMarker() bool { return h.Type == TypeData && h.Marks&MarkExPath != 0 }

// Control is the 16-byte body of PROBE, PROBE_REPLY, PROBE_ACK, LINK_DOWN and LINK_UP.
//
// The session address is a [4]byte rather than a netip.Addr: it is exactly the wire field, it
// holds no pointer (netip.Addr does, so maps and slices of it are scanned by the GC), and as a
// 4-byte comparable value it is a cheap map key for the UPF's session lookup. netip.AddrFrom4
// converts it without allocating where an Addr is wanted.
type Control struct {
	// Session is the MA PDU session's address, the session ID.
	Session [4]byte
	// contract.Access is the leg a probe is sent on, or the access a link message is about.
	Access contract.Access
	// LossPercent is loss_pct: the UE's measured loss on the access (PROBE_ACK, LINK_UP), 0 in
	// the other messages.
	LossPercent uint8
	// Share is share (7 bits): on PROBE_ACK, the UE's autonomous load-balance split of the user's
	// downlink (the 3GPP share in 1/128, 1..127; 0: none), which the UPF takes as its own; 0 in
	// the other messages.
	Share contract.AutonomousShare
	// UETime is ue_ts on probes (the UE's µs clock, low 32 bits, echoed by the UPF) and rtt_us
	// on link messages (the UE's last RTT for that access on LINK_UP, 0 on LINK_DOWN).
	UETime uint32
	// UPFTime is upf_ts: the UPF's now_us in PROBE_REPLY and PROBE_ACK, 0 in PROBE.
	UPFTime uint32
}

// Put writes c into b[:16], the reserved bits zero. b must hold 16 bytes.
func (c Control) Put(b []byte) {
	_ = b[15]
	copy(b[0:4], c.Session[:])
	b[4], b[5], b[6], b[7] = byte(c.Access), c.LossPercent, byte(c.Share)&0x7f, 0
	binary.BigEndian.PutUint32(b[8:12], c.UETime)
	binary.BigEndian.PutUint32(b[12:16], c.UPFTime)
}

// Append appends the 16 body bytes to b.
func (c Control) Append(b []byte) []byte {
	var a [ControlLen]byte
	c.Put(a[:])
	return append(b, a[:]...)
}

// ParseControl decodes the body at the start of b. contract.Access must be 3GPP or non-3GPP; the
// reserved bits are ignored (senders write 0), so that they can be given a meaning later.
func ParseControl(b []byte) (Control, error) {
	if len(b) < ControlLen {
		return Control{}, truncated(LayerControl, "body", len(b), ControlLen)
	}
	c := Control{
		Session:     [4]byte(b[0:4]),
		Access:      contract.Access(b[4]),
		LossPercent: b[5],
		Share:       contract.AutonomousShare(b[6] & 0x7f),
		UETime:      binary.BigEndian.Uint32(b[8:12]),
		UPFTime:     binary.BigEndian.Uint32(b[12:16]),
	}
	if c.Access != contract.Access3GPP && c.Access != contract.AccessNon3GPP {
		return c, invalid(LayerControl, "access", int(c.Access), "1 (3GPP) or 2 (non-3GPP)")
	}
	return c, nil
}
