package ports

// TCP segmentation offload on transmit, the uplink's counterpart of the UDP runs (gso_linux.go):
// after decapsulation a UE's upload leaves the N6 port as TCP segments of one flow, one after
// the other in a batch. A run of them (same Ethernet, IPv4 and TCP headers but for the IPv4
// identification, length and checksum and the sequence number, in sequence, payloads of one size
// but the last, no flag but ACK and a PSH on the last) leaves as one frame of up to 64 KiB with a
// virtio-net header asking for TCP segmentation (VIRTIO_NET_HDR_GSO_TCPV4), on the same socket,
// where the interface has tx-tcp-segmentation on (a veth, a NIC with TSO). A receiving host's
// TCP then takes the run whole, as after GRO, and a NIC or a forwarding hop cuts it again.
//
// What segmentation writes anew in each segment: the IPv4 identification (the first's, counted
// up, as Linux's TCP sends them), the lengths and both checksums. The frame asks the kernel to
// complete the TCP checksums (CHECKSUM_PARTIAL), which a host receiving it on a veth then takes
// as verified: so each segment's own checksum is verified before it joins a run, and a segment
// that fails leaves on its own, for the receiver to judge, as a router would forward it.

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/wire"
)

const (
	tcpFlagACK = 0x10
	tcpFlagPSH = 0x08
	// tsoMaxHeaders: Ethernet, IPv4 without options, TCP with the most options.
	tsoMaxHeaders = 14 + 20 + 60
	// vnetGSOTCPv4 is VIRTIO_NET_HDR_GSO_TCPV4.
	vnetGSOTCPv4 = 1
)

// tcpSegment is what a run needs of a frame, read once.
type tcpSegment struct {
	f       []byte
	headers int // Ethernet, IPv4 and TCP
	seq     uint32
	flags   byte
	payload int
}

// parseTCPSegment reports whether f is a frame a TCP run may hold: IPv4/TCP without a VLAN tag
// or IPv4 options, not a fragment, lengths as the headers say, an ACK with data and no other
// flag but PSH, and a valid TCP checksum.
func parseTCPSegment(f []byte) (tcpSegment, bool) {
	if len(f) < 14+20+20 || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[23] != unix.IPPROTO_TCP ||
		f[20]&0x3f != 0 || f[21] != 0 || int(binary.BigEndian.Uint16(f[16:])) != len(f)-14 {
		return tcpSegment{}, false
	}
	thl := int(f[46]>>4) * 4
	s := tcpSegment{f: f, headers: 14 + 20 + thl, seq: binary.BigEndian.Uint32(f[38:]), flags: f[47]}
	s.payload = len(f) - s.headers
	if thl < 20 || s.payload <= 0 || s.flags&^tcpFlagPSH != tcpFlagACK {
		return tcpSegment{}, false
	}
	if wire.Fold(wire.Sum(f[34:], wire.PseudoSum(f[26:30], f[30:34], unix.IPPROTO_TCP, len(f)-34))) != 0xffff {
		return tcpSegment{}, false
	}
	return s, true
}

// tcpRun returns how many of pkts, from the first, form one TCP run, at least 1; at most
// gsoMaxSegs frames and 64 KiB of IPv4.
func tcpRun(pkts []*dataplane.Packet) int {
	first, ok := parseTCPSegment(pkts[0].Frame())
	if !ok || len(pkts) < 2 {
		return 1
	}
	f0 := first.f
	n, last, total := 1, first, len(f0)-14 // IPv4 length
	for _, p := range pkts[1:min(len(pkts), gsoMaxSegs)] {
		next, ok := parseTCPSegment(p.Frame())
		f := next.f
		if !ok || last.flags&tcpFlagPSH != 0 || last.payload != first.payload || next.payload > first.payload ||
			next.seq != last.seq+uint32(last.payload) || next.headers != first.headers ||
			total+next.payload > 65535 ||
			!bytes.Equal(f[:14], f0[:14]) || f[15] != f0[15] || // Ethernet, TOS
			!bytes.Equal(f[20:24], f0[20:24]) || // flags, fragment offset, TTL, protocol
			!bytes.Equal(f[26:38], f0[26:38]) || // addresses, ports
			!bytes.Equal(f[42:46], f0[42:46]) || // acknowledgment
			!bytes.Equal(f[48:50], f0[48:50]) || // window
			!bytes.Equal(f[54:next.headers], f0[54:first.headers]) { // options (timestamps)
			break
		}
		n, last, total = n+1, next, total+next.payload
	}
	return n
}

// sendTCP writes run (tcpRun's) on tx as one frame.
func (g *gsoScratch) sendTCP(tx *gsoTX, run []*dataplane.Packet) error {
	first := run[0].Frame()
	headers := 14 + 20 + int(first[46]>>4)*4
	payload := 0
	var flags byte
	for i, p := range run {
		f := p.Frame()
		flags |= f[47]
		g.iovs[i+1].Base = unsafe.SliceData(f[headers:])
		g.iovs[i+1].SetLen(len(f) - headers)
		payload += len(f) - headers
	}
	h := g.head[:vnetHdrLen+headers]
	clear(h[:vnetHdrLen])
	h[0] = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
	h[1] = vnetGSOTCPv4
	binary.LittleEndian.PutUint16(h[2:], uint16(headers))            // hdr_len
	binary.LittleEndian.PutUint16(h[4:], uint16(len(first)-headers)) // gso_size: the first's payload
	binary.LittleEndian.PutUint16(h[6:], 14+20)                      // csum_start: the TCP header
	binary.LittleEndian.PutUint16(h[8:], 16)                         // csum_offset: its checksum
	copy(h[vnetHdrLen:], first[:headers])
	ip, tcp := h[vnetHdrLen+14:vnetHdrLen+34], h[vnetHdrLen+34:]
	binary.BigEndian.PutUint16(ip[2:], uint16(headers-14+payload))
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4Checksum(ip))
	tcp[13] = flags // PSH if the last had it
	// CHECKSUM_PARTIAL: the field holds the pseudo-header's sum, each segment's is completed.
	binary.BigEndian.PutUint16(tcp[16:], wire.Fold(wire.PseudoSum(ip[12:16], ip[16:20], unix.IPPROTO_TCP, headers-34+payload)))
	return g.write(tx, h, len(run))
}
