package tun

// TUN offloads (IFF_VNET_HDR + TUNSETOFFLOAD): the kernel hands the reader TCP super-packets of
// up to 64 KiB with a virtio-net header (TSO) and leaves checksums partial (CSUM), so one read
// carries what would be ~45 reads of 1448-byte segments. The reader splits them into segments
// here, with complete IPv4 and TCP headers and checksums, the way a NIC's TSO would. Writes carry
// a zero header: plain, fully checksummed packets.
//
//	read   [virtio_net_hdr 10][IPv4 | TCP | 64 KiB payload] ─split─> [IPv4 | TCP | gso_size] × n

import (
	"encoding/binary"
	"fmt"

	"github.com/junction-atsss/junction/internal/wire"
)

// virtio_net_hdr (include/uapi/linux/virtio_net.h), in the host's byte order (the TUN default).
const (
	virtioHdrLen          = 10
	virtioFlagNeedsCsum   = 1 // checksum from csum_start, stored at csum_start+csum_offset
	virtioGSONone         = 0
	virtioGSOTCPv4        = 1
	virtioGSOECN          = 0x80
	tunFCsum              = 0x01 // TUN_F_CSUM
	tunFTSO4              = 0x02 // TUN_F_TSO4
	ipProtoTCP            = 6
	tcpFlagFIN, tcpFlagPS = 0x01, 0x08
	tcpFlagCWR            = 0x80
)

// ErrTooManySegments: a super-packet had more segments than the caller gave buffers for. The
// packet is dropped (it is an ErrBadPacket); Create caps the device's GSO segments at
// MaxSegments, so it takes a device whose cap was raised by hand.
var ErrTooManySegments = fmt.Errorf("%w: more TSO segments than buffers", ErrBadPacket)

// MaxSegments is the most segments one read can produce: Create sets the device's gso_max_segs
// to it (the sender's MSS, as low as 88 bytes, would otherwise allow 745 in 64 KiB), and callers
// pass at least this many buffers.
const MaxSegments = 128

type virtioHdr struct {
	flags, gsoType                         uint8
	hdrLen, gsoSize, csumStart, csumOffset uint16
}

func (h *virtioHdr) decode(b []byte) {
	h.flags, h.gsoType = b[0], b[1]
	h.hdrLen = binary.NativeEndian.Uint16(b[2:])
	h.gsoSize = binary.NativeEndian.Uint16(b[4:])
	h.csumStart = binary.NativeEndian.Uint16(b[6:])
	h.csumOffset = binary.NativeEndian.Uint16(b[8:])
}

// split turns one read (pkt, after its virtio header h) into packets at bufs[i][offset:], their
// lengths in sizes; it returns how many.
func split(h *virtioHdr, pkt []byte, bufs [][]byte, sizes []int, offset int) (int, error) {
	if h.gsoType&^virtioGSOECN == virtioGSONone {
		if h.flags&virtioFlagNeedsCsum != 0 {
			if err := finishChecksum(pkt, int(h.csumStart), int(h.csumOffset)); err != nil {
				return 0, err
			}
		}
		if len(bufs[0])-offset < len(pkt) {
			return 0, fmt.Errorf("%w: %d-byte packet larger than the buffer", ErrBadPacket, len(pkt))
		}
		sizes[0] = copy(bufs[0][offset:], pkt)
		return 1, nil
	}
	if h.gsoType&^virtioGSOECN != virtioGSOTCPv4 {
		return 0, fmt.Errorf("%w: GSO type %#x not offered", ErrBadPacket, h.gsoType)
	}
	if len(pkt) < 20 || pkt[0]>>4 != 4 || pkt[9] != ipProtoTCP {
		return 0, fmt.Errorf("%w: TSO packet is not IPv4/TCP", ErrBadPacket)
	}
	ihl := int(pkt[0]&0x0f) * 4
	if len(pkt) < ihl+20 {
		return 0, fmt.Errorf("%w: TSO packet shorter than its headers", ErrBadPacket)
	}
	thl := int(pkt[ihl+12]>>4) * 4
	hdr := ihl + thl
	mss := int(h.gsoSize)
	if thl < 20 || len(pkt) < hdr || mss == 0 {
		return 0, fmt.Errorf("%w: TSO packet with bad TCP header or gso_size 0", ErrBadPacket)
	}
	payload := pkt[hdr:]
	n := (len(payload) + mss - 1) / mss
	if n > len(bufs) {
		return 0, ErrTooManySegments
	}
	seq0 := binary.BigEndian.Uint32(pkt[ihl+4:])
	id0 := binary.BigEndian.Uint16(pkt[4:])
	flags := pkt[ihl+13]
	for i := 0; i < n; i++ {
		chunk := payload[i*mss : min((i+1)*mss, len(payload))]
		out := bufs[i][offset:]
		if len(out) < hdr+len(chunk) {
			return 0, fmt.Errorf("%w: segment of %d bytes larger than the buffer", ErrBadPacket, hdr+len(chunk))
		}
		copy(out, pkt[:hdr])
		copy(out[hdr:], chunk)
		seg := out[:hdr+len(chunk)]
		// IPv4: total length, a new ID per segment, header checksum.
		binary.BigEndian.PutUint16(seg[2:], uint16(len(seg)))
		binary.BigEndian.PutUint16(seg[4:], id0+uint16(i))
		seg[10], seg[11] = 0, 0
		binary.BigEndian.PutUint16(seg[10:], ^wire.Fold(wire.Sum(seg[:ihl], 0)))
		// TCP: sequence number, FIN and PSH on the last segment only, CWR on the first only.
		tcp := seg[ihl:]
		binary.BigEndian.PutUint32(tcp[4:], seq0+uint32(i*mss))
		f := flags
		if i != n-1 {
			f &^= tcpFlagFIN | tcpFlagPS
		}
		if i != 0 {
			f &^= tcpFlagCWR
		}
		tcp[13] = f
		tcp[16], tcp[17] = 0, 0
		binary.BigEndian.PutUint16(tcp[16:], ^wire.Fold(wire.Sum(tcp, wire.PseudoSum(seg[12:16], seg[16:20], ipProtoTCP, len(tcp)))))
		sizes[i] = len(seg)
	}
	return n, nil
}

// finishChecksum completes a partial checksum (CHECKSUM_PARTIAL: the field holds the
// pseudo-header sum) over pkt[start:] into pkt[start+off:].
func finishChecksum(pkt []byte, start, off int) error {
	if start+off+2 > len(pkt) {
		return fmt.Errorf("%w: checksum offset beyond the packet", ErrBadPacket)
	}
	binary.BigEndian.PutUint16(pkt[start+off:], ^wire.Fold(wire.Sum(pkt[start:], 0)))
	return nil
}
