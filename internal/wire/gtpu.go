// GTP-U version 1 G-PDUs (3GPP TS 29.281), with the 5G PDU Session Container (TS 38.415), and
// the Echo Request a peer sends for path management (§7.2.1), which the UPF answers.
//
// A packet's way: UDP:2152 payload ──ParseGTPU──> GTPU (v1, PT 1, G-PDU, length within the
// datagram; the 4 option bytes when E, S or PN is set; with E, the one extension the pipeline
// accepts, the PDU Session Container of length 1) ──> T-PDU b[HeaderLen():8+Length].
// An Echo Request (S set, E clear) ──> its IEs b[12:8+Length], which the UPF does not read.
// An End Marker ──> nothing after its header is read (the UPF relays it on a forwarding tunnel).
// Encapsulating: GTPU.Prepend (flags 0x30 as the pipeline writes them) in front of the T-PDU.

package wire

import "encoding/binary"

// GTP-U constants.
const (
	// GTPUFlags is version 1, protocol type GTP (PT 1), no optional fields: what the pipeline writes.
	GTPUFlags = 0x30
	// Flag bits of the first byte.
	GTPUFlagExtension = 0x04 // E: a next extension header type is meaningful
	GTPUFlagSequence  = 0x02 // S
	GTPUFlagNPDU      = 0x01 // PN
	gtpuFlagPT        = 0x10
	gtpuOptionFlags   = GTPUFlagExtension | GTPUFlagSequence | GTPUFlagNPDU
	gtpuOptionsLen    = 4 // sequence (2), N-PDU number (1), next extension type (1)

	// GTPUTypeGPDU is the message type of a G-PDU.
	GTPUTypeGPDU = 0xff
	// GTPUTypeEndMarker is the End Marker's (TS 29.281): no payload, the last packet of a
	// tunnel a UPF has stopped sending on.
	GTPUTypeEndMarker = 0xfe
	// GTPUTypeEchoRequest and GTPUTypeEchoResponse are path management's (TS 29.281 §7.2).
	GTPUTypeEchoRequest  = 0x01
	GTPUTypeEchoResponse = 0x02
	// GTPUIERecovery is the Recovery IE (type 14, one byte of restart counter, which GTP-U
	// sends as 0 and receivers ignore), the one IE an Echo Response must carry.
	GTPUIERecovery = 14
	// GTPUExtPDUSession is the PDU Session Container extension type, the one real gNBs send.
	GTPUExtPDUSession = 0x85
	gtpuPSCLen        = 4 // length 1 in 4-byte units: length, 2 content bytes, next type
	// GTPUPSCOverhead is what the option bytes and a PDU Session Container add to a G-PDU.
	GTPUPSCOverhead = gtpuOptionsLen + gtpuPSCLen
)

// GTPU is a GTP-U v1 header with its optional fields and at most one extension, the PDU
// Session Container.
type GTPU struct {
	Flags  uint8  // version (3 bits), PT, spare, E, S, PN
	Type   uint8  // message type, 0xff for a G-PDU
	Length uint16 // bytes after the first 8: options, extensions and T-PDU
	TEID   uint32
	// Present when any of E, S, PN is set.
	Seq     uint16
	NPDU    uint8
	NextExt uint8 // next extension header type; meaningful with E: 0 none, or 0x85
	// PSC holds the PDU Session Container's two content bytes when E is set and NextExt is
	// 0x85: the PDU type in the high nibble of PSC[0], the QFI in the low 6 bits of PSC[1].
	PSC [2]byte
}

// HasOptions reports whether the 4 option bytes follow the mandatory header.
func (g GTPU) HasOptions() bool { return g.Flags&gtpuOptionFlags != 0 }

// HasPSC reports whether a PDU Session Container follows the options.
func (g GTPU) HasPSC() bool { return g.Flags&GTPUFlagExtension != 0 && g.NextExt == GTPUExtPDUSession }

// QFI returns the QoS flow identifier of the PDU Session Container, 0 without one.
func (g GTPU) QFI() uint8 {
	if !g.HasPSC() {
		return 0
	}
	return g.PSC[1] & 0x3f
}

// HeaderLen returns the bytes before the T-PDU: 8, 12 with options, 16 with the container.
func (g GTPU) HeaderLen() int {
	n := GTPUHeaderLen
	if g.HasOptions() {
		n += gtpuOptionsLen
		if g.HasPSC() {
			n += gtpuPSCLen
		}
	}
	return n
}

// ParseGTPU decodes the header at the start of b (the UDP payload) and walks its extensions.
// The T-PDU is b[g.HeaderLen() : 8+g.Length]; Length must fit in b. Rejected: a version other
// than 1, PT 0 (GTP'), a message type other than G-PDU, Echo Request or End Marker, an Echo
// Request without S or with E, and any extension but one PDU Session Container of length 1
// (docs/pipeline.md). An End Marker's optional fields and extensions are not read, only its
// length checked against them. The caller tells the messages apart by Type.
func ParseGTPU(b []byte) (GTPU, error) {
	var g GTPU
	err := g.decode(b)
	return g, err
}

// decode is ParseGTPU into a caller's struct (see IPv4.decode); g must be zero.
func (g *GTPU) decode(b []byte) error {
	if len(b) < GTPUHeaderLen {
		return truncated(LayerGTPU, "header", len(b), GTPUHeaderLen)
	}
	g.Flags = b[0]
	g.Type = b[1]
	g.Length = binary.BigEndian.Uint16(b[2:4])
	g.TEID = binary.BigEndian.Uint32(b[4:8])
	switch {
	case g.Flags>>5 != 1:
		return invalid(LayerGTPU, "version", int(g.Flags>>5), "1")
	case g.Flags&gtpuFlagPT == 0:
		return invalid(LayerGTPU, "protocol type", 0, "1 (GTP; GTP' is not supported)")
	case g.Type != GTPUTypeGPDU && g.Type != GTPUTypeEchoRequest && g.Type != GTPUTypeEndMarker:
		return invalidHex(LayerGTPU, "message type", int(g.Type), "0xff (G-PDU), 0x01 (Echo Request) or 0xfe (End Marker)")
	case int(g.Length) > len(b)-GTPUHeaderLen:
		return tooLong(LayerGTPU, "length", int(g.Length), len(b)-GTPUHeaderLen)
	case g.Type == GTPUTypeEchoRequest && g.Flags&(GTPUFlagSequence|GTPUFlagExtension) != GTPUFlagSequence:
		return invalidHex(LayerGTPU, "flags", int(g.Flags), "S set and E clear on an Echo Request (TS 29.281 §7.2.1)")
	}
	if !g.HasOptions() {
		return nil
	}
	if g.Length < gtpuOptionsLen {
		return invalid(LayerGTPU, "length", int(g.Length), ">= 4 (the optional fields E, S or PN announce)")
	}
	if g.Type == GTPUTypeEndMarker {
		return nil
	}
	g.Seq = binary.BigEndian.Uint16(b[8:10])
	g.NPDU = b[10]
	g.NextExt = b[11]
	if g.Flags&GTPUFlagExtension == 0 || g.NextExt == 0 {
		return nil
	}
	if g.NextExt != GTPUExtPDUSession {
		return invalidHex(LayerGTPU, "extension header type", int(g.NextExt), "0x85 (PDU Session Container), the only extension supported")
	}
	if g.Length < gtpuOptionsLen+gtpuPSCLen {
		return invalid(LayerGTPU, "length", int(g.Length), ">= 8 (options and PDU Session Container)")
	}
	if n := b[12]; n != 1 {
		return invalid(LayerGTPU, "PDU Session Container length", int(n), "1 (4 bytes)")
	}
	g.PSC = [2]byte(b[13:15])
	if next := b[15]; next != 0 {
		return invalidHex(LayerGTPU, "extension header type after the PDU Session Container", int(next), "0 (no further extension)")
	}
	return nil
}

// Put writes g into b[:g.HeaderLen()] as it is: the options when E, S or PN is set, and the PDU
// Session Container when E is set and NextExt is 0x85.
func (g GTPU) Put(b []byte) {
	_ = b[GTPUHeaderLen-1]
	b[0] = g.Flags
	b[1] = g.Type
	binary.BigEndian.PutUint16(b[2:4], g.Length)
	binary.BigEndian.PutUint32(b[4:8], g.TEID)
	if !g.HasOptions() {
		return
	}
	_ = b[11]
	binary.BigEndian.PutUint16(b[8:10], g.Seq)
	b[10] = g.NPDU
	b[11] = g.NextExt
	if g.HasPSC() {
		_ = b[15]
		b[12] = 1
		b[13], b[14] = g.PSC[0], g.PSC[1]
		b[15] = 0
	}
}

// Prepend writes g in front of b[off:] with Length = its options and extension plus the
// len(b)-off bytes that follow, and returns the new start.
func (g GTPU) Prepend(b []byte, off int) int {
	n := g.HeaderLen()
	g.Length = uint16(n - GTPUHeaderLen + len(b) - off)
	g.Put(b[off-n : off])
	return off - n
}

// TunnelGTPU returns the GTP-U header the pipeline adds for a session without a QFI: flags
// 0x30, G-PDU, the given TEID.
func TunnelGTPU(teid uint32) GTPU { return GTPU{Flags: GTPUFlags, Type: GTPUTypeGPDU, TEID: teid} }

// DownlinkGTPU returns the GTP-U header the pipeline adds on a session's downlink: with a QFI
// (1-63), flags 0x34 and the PDU Session Container of PDU type 0 (DL PDU SESSION INFORMATION,
// TS 38.415) carrying it; with 0, TunnelGTPU's.
func DownlinkGTPU(teid uint32, qfi uint8) GTPU {
	g := TunnelGTPU(teid)
	if qfi != 0 {
		g.Flags |= GTPUFlagExtension
		g.NextExt = GTPUExtPDUSession
		g.PSC[1] = qfi & 0x3f
	}
	return g
}
