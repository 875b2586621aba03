package tun

// Downlink coalescing, the receive side of the offloads (what GRO does for a NIC): a run of TCP
// segments of one flow, in order, with identical headers but for the sequence number, goes to
// the kernel as one GSO super-packet with a virtio-net header, so the local TCP stack handles one
// 64 KiB skb instead of ~45. Each segment's TCP checksum is verified before it joins a run (the
// super-packet is handed over with CHECKSUM_PARTIAL, which the kernel trusts); a segment that
// fails, or does not fit a run, is written on its own and the kernel judges it.

import (
	"bytes"
	"encoding/binary"

	"github.com/junction-atsss/junction/internal/wire"
)

// maxCoalesced bounds a super-packet: IPv4's total length.
const maxCoalesced = 65535

// tcpSeg is what a segment's coalescing needs, read once.
type tcpSeg struct {
	pkt     []byte
	ihl     int
	thl     int
	seq     uint32
	flags   byte
	payload int
}

// parseTCPSeg reports whether pkt is a coalescable IPv4/TCP segment: no IP options or
// fragments, an ACK with data and no flags but PSH, and a valid TCP checksum.
func parseTCPSeg(pkt []byte) (tcpSeg, bool) {
	if len(pkt) < 40 || pkt[0] != 0x45 || pkt[9] != ipProtoTCP ||
		int(binary.BigEndian.Uint16(pkt[2:])) != len(pkt) || binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0 {
		return tcpSeg{}, false
	}
	thl := int(pkt[32]>>4) * 4
	s := tcpSeg{pkt: pkt, ihl: 20, thl: thl, seq: binary.BigEndian.Uint32(pkt[24:]), flags: pkt[33], payload: len(pkt) - 20 - thl}
	if thl < 20 || s.payload <= 0 || s.flags&^tcpFlagPS != 0x10 {
		return tcpSeg{}, false
	}
	if wire.Fold(wire.Sum(pkt[20:], wire.PseudoSum(pkt[12:16], pkt[16:20], ipProtoTCP, len(pkt)-20))) != 0xffff {
		return tcpSeg{}, false
	}
	return s, true
}

// follows reports whether next can join a run that starts with first and ends with last.
func follows(first, last, next tcpSeg, total int) bool {
	return last.flags&tcpFlagPS == 0 && // PSH ends a run
		last.payload == first.payload && next.payload <= first.payload &&
		next.seq == last.seq+uint32(last.payload) &&
		total+next.payload <= maxCoalesced &&
		next.thl == first.thl &&
		bytes.Equal(next.pkt[1:2], first.pkt[1:2]) && // TOS
		bytes.Equal(next.pkt[6:7], first.pkt[6:7]) && // DF
		bytes.Equal(next.pkt[8:9], first.pkt[8:9]) && // TTL
		bytes.Equal(next.pkt[12:24], first.pkt[12:24]) && // addresses, ports
		bytes.Equal(next.pkt[28:32], first.pkt[28:32]) && // ack
		bytes.Equal(next.pkt[34:36], first.pkt[34:36]) && // window
		bytes.Equal(next.pkt[40:20+next.thl], first.pkt[40:20+first.thl]) // options (timestamps)
}

// WriteCoalesced writes the packets bufs[i][offset:], in order; with offloads, runs of
// coalescable TCP segments go as one super-packet each. It needs VirtioHeaderRoom before offset.
// It returns how many packets the device refused (a refused run counts all its segments) and
// the first error.
func (d *Device) WriteCoalesced(bufs [][]byte, offset int) (lost int, err error) {
	if !d.offload {
		n, err := d.Write(bufs, offset)
		return len(bufs) - n, err
	}
	for i := 0; i < len(bufs); {
		first, ok := parseTCPSeg(bufs[i][offset:])
		j := i + 1
		if ok {
			last, total := first, len(first.pkt)
			for j < len(bufs) {
				next, ok := parseTCPSeg(bufs[j][offset:])
				if !ok || !follows(first, last, next, total) {
					break
				}
				last, total = next, total+next.payload
				j++
			}
		}
		var e error
		if j-i == 1 {
			_, e = d.Write(bufs[i:i+1], offset)
		} else {
			e = d.writeRun(bufs[i:j], offset, first)
		}
		if e != nil {
			lost += j - i
			if err == nil {
				err = e
			}
		}
		i = j
	}
	return lost, err
}

// writeRun writes segments (all parsed and following each other) as one TCPv4 GSO packet.
func (d *Device) writeRun(bufs [][]byte, offset int, first tcpSeg) error {
	hdr := first.ihl + first.thl
	w := d.wbuf[:virtioHdrLen]
	binary.NativeEndian.PutUint16(w[2:], uint16(hdr))
	w[0], w[1] = virtioFlagNeedsCsum, virtioGSOTCPv4
	binary.NativeEndian.PutUint16(w[4:], uint16(first.payload))
	binary.NativeEndian.PutUint16(w[6:], uint16(first.ihl))
	binary.NativeEndian.PutUint16(w[8:], 16)
	w = append(w, first.pkt[:hdr]...)
	var flags byte
	for _, b := range bufs {
		seg := b[offset:]
		thl := int(seg[32]>>4) * 4
		flags |= seg[33]
		w = append(w, seg[20+thl:]...)
	}
	ip := w[virtioHdrLen:]
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4Checksum(ip))
	tcp := ip[20:]
	tcp[13] = flags // PSH if the last segment had it
	// CHECKSUM_PARTIAL: the field holds the pseudo-header sum, not complemented.
	binary.BigEndian.PutUint16(tcp[16:], wire.Fold(wire.PseudoSum(ip[12:16], ip[16:20], ipProtoTCP, len(tcp))))
	_, err := d.f.Write(w)
	return err
}
