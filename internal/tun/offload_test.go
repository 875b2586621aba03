package tun

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// csumOK verifies an Internet checksum the RFC 1071 way: the one's-complement sum of the data,
// checksum field included, is 0xffff.
func csumOK(b []byte, pseudo uint32) bool {
	s := pseudo
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return s == 0xffff
}

// superPacket is what a TSO-capable TUN hands over: one IPv4/TCP header (total length of the
// whole, checksums partial or stale) and n bytes of payload.
func superPacket(payload []byte, flags byte) []byte {
	p := make([]byte, 40, 40+len(payload))
	p[0], p[8], p[9] = 0x45, 64, ipProtoTCP
	binary.BigEndian.PutUint16(p[2:], uint16(40+len(payload)))
	binary.BigEndian.PutUint16(p[4:], 1000) // IP ID
	copy(p[12:16], []byte{10, 60, 0, 1})
	copy(p[16:20], []byte{198, 18, 0, 10})
	tcp := p[20:]
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 5201)
	binary.BigEndian.PutUint32(tcp[4:], 0xfffff000) // near wrap-around
	tcp[12], tcp[13] = 5<<4, flags
	binary.BigEndian.PutUint16(tcp[14:], 512)
	return append(p, payload...)
}

func TestSplitTSO(t *testing.T) {
	payload := make([]byte, 4000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	const mss = 1448
	h := virtioHdr{flags: virtioFlagNeedsCsum, gsoType: virtioGSOTCPv4, hdrLen: 40, gsoSize: mss, csumStart: 20, csumOffset: 16}
	bufs := make([][]byte, 4)
	for i := range bufs {
		bufs[i] = make([]byte, 16+1500)
	}
	sizes := make([]int, len(bufs))
	n, err := split(&h, superPacket(payload, tcpFlagCWR|tcpFlagPS|tcpFlagFIN|0x10), bufs, sizes, 16)
	if err != nil || n != 3 {
		t.Fatalf("split: %d segments, %v; want 3 (4000 bytes at MSS 1448)", n, err)
	}
	var got []byte
	wantLens := []int{40 + 1448, 40 + 1448, 40 + 1104}
	for i := 0; i < n; i++ {
		seg := bufs[i][16 : 16+sizes[i]]
		if len(seg) != wantLens[i] || int(binary.BigEndian.Uint16(seg[2:])) != wantLens[i] {
			t.Fatalf("segment %d: %d bytes, total length %d; want %d", i, len(seg), binary.BigEndian.Uint16(seg[2:]), wantLens[i])
		}
		if id := binary.BigEndian.Uint16(seg[4:]); id != 1000+uint16(i) {
			t.Errorf("segment %d: IP ID %d, want %d", i, id, 1000+i)
		}
		if !csumOK(seg[:20], 0) {
			t.Errorf("segment %d: bad IPv4 header checksum", i)
		}
		tcp := seg[20:]
		pseudo := uint32(10<<8|60) + uint32(0<<8|1) + uint32(198<<8|18) + uint32(0<<8|10) + ipProtoTCP + uint32(len(tcp))
		if !csumOK(tcp, pseudo) {
			t.Errorf("segment %d: bad TCP checksum", i)
		}
		if seq := binary.BigEndian.Uint32(tcp[4:]); seq != 0xfffff000+uint32(i*mss) {
			t.Errorf("segment %d: seq %#x, want %#x", i, seq, 0xfffff000+uint32(i*mss))
		}
		wantFlags := byte(0x10)
		if i == 0 {
			wantFlags |= tcpFlagCWR
		}
		if i == n-1 {
			wantFlags |= tcpFlagPS | tcpFlagFIN
		}
		if tcp[13] != wantFlags {
			t.Errorf("segment %d: flags %#x, want %#x", i, tcp[13], wantFlags)
		}
		got = append(got, tcp[20:]...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("the segments' payloads do not add up to the super-packet's")
	}
}

func TestSplitPlainPacketCompletesChecksum(t *testing.T) {
	pkt := superPacket([]byte("hello"), 0x18)
	// CHECKSUM_PARTIAL: the TCP checksum field holds the folded pseudo-header sum only.
	tcpLen := uint32(len(pkt) - 20)
	pseudo := uint32(10<<8|60) + uint32(0<<8|1) + uint32(198<<8|18) + uint32(0<<8|10) + ipProtoTCP + tcpLen
	binary.BigEndian.PutUint16(pkt[36:], uint16(pseudo>>16+pseudo&0xffff))
	h := virtioHdr{flags: virtioFlagNeedsCsum, gsoType: virtioGSONone, csumStart: 20, csumOffset: 16}
	bufs, sizes := [][]byte{make([]byte, 100)}, []int{0}
	n, err := split(&h, pkt, bufs, sizes, 4)
	if err != nil || n != 1 || sizes[0] != len(pkt) {
		t.Fatalf("split: %d packets of %d bytes, %v", n, sizes[0], err)
	}
	// The completed checksum verifies against the pseudo header, as the receiver checks it.
	tcp := bufs[0][4+20 : 4+sizes[0]]
	if !csumOK(tcp, pseudo) {
		t.Fatal("checksum not completed over the TCP segment")
	}
}

// TestSplitRejects: a super-packet Read cannot deliver is an ErrBadPacket, which callers count
// and read on from (the device stays usable); too many segments is also ErrTooManySegments.
func TestSplitRejects(t *testing.T) {
	bufs, sizes := [][]byte{make([]byte, 2000)}, []int{0}
	big := superPacket(make([]byte, 3000), 0x10)
	if _, err := split(&virtioHdr{gsoType: virtioGSOTCPv4, gsoSize: 1000}, big, bufs, sizes, 0); !errors.Is(err, ErrTooManySegments) || !errors.Is(err, ErrBadPacket) {
		t.Errorf("3 segments into 1 buffer: %v, want ErrTooManySegments, an ErrBadPacket", err)
	}
	for _, c := range []struct {
		name string
		h    virtioHdr
		pkt  []byte
	}{
		{"a GSO type not offered", virtioHdr{gsoType: 4 /* UDP */, gsoSize: 1000}, big},
		{"a TSO packet cut inside its TCP header", virtioHdr{gsoType: virtioGSOTCPv4, gsoSize: 1000}, big[:30]},
		{"a checksum offset beyond the packet", virtioHdr{flags: virtioFlagNeedsCsum, csumStart: 20, csumOffset: 200}, big[:100]},
		{"a packet larger than the buffer", virtioHdr{}, make([]byte, 2001)},
	} {
		if _, err := split(&c.h, c.pkt, bufs, sizes, 0); !errors.Is(err, ErrBadPacket) {
			t.Errorf("%s: %v, want an ErrBadPacket", c.name, err)
		}
	}
}

// segment is one complete, checksummed IPv4/TCP segment of the flow superPacket describes, with
// a 12-byte timestamp option, at sequence seq.
func segment(seq uint32, payload []byte, flags byte) []byte {
	p := make([]byte, 52, 52+len(payload))
	p[0], p[8], p[9] = 0x45, 64, ipProtoTCP
	binary.BigEndian.PutUint16(p[2:], uint16(52+len(payload)))
	p[6] = 0x40 // DF
	copy(p[12:16], []byte{198, 18, 0, 10})
	copy(p[16:20], []byte{10, 60, 0, 1})
	binary.BigEndian.PutUint16(p[10:], wire.IPv4Checksum(p))
	tcp := p[20:]
	binary.BigEndian.PutUint16(tcp[0:], 5201)
	binary.BigEndian.PutUint16(tcp[2:], 40000)
	binary.BigEndian.PutUint32(tcp[4:], seq)
	binary.BigEndian.PutUint32(tcp[8:], 777) // ack
	tcp[12], tcp[13] = 8<<4, flags
	binary.BigEndian.PutUint16(tcp[14:], 512)
	copy(tcp[20:], []byte{1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 5}) // NOP NOP TS
	p = append(p, payload...)
	binary.BigEndian.PutUint16(p[36:], tcpChecksum(p))
	return p
}

// tcpChecksum is the TCP checksum of the IPv4 packet p (no options, checksum field zero), by
// wiretest's own sum rather than the code under test's.
func tcpChecksum(p []byte) uint16 {
	return wiretest.TransportChecksum([4]byte(p[12:16]), [4]byte(p[16:20]), ipProtoTCP, p[20:])
}

func TestCoalesceRuns(t *testing.T) {
	const mss = 1000
	data := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, mss) }
	a0, a1, a2 := segment(100, data(0), 0x10), segment(100+mss, data(1), 0x10), segment(100+2*mss, data(2)[:500], 0x18)
	gap := segment(100+5*mss, data(5), 0x10) // not next in sequence: starts a new run
	bad := segment(100+6*mss, data(6), 0x10)
	bad[60] ^= 0xff // corrupted payload: the checksum fails, never merged
	var first tcpSeg
	var ok bool
	if first, ok = parseTCPSeg(a0); !ok {
		t.Fatal("a valid segment was not coalescable")
	}
	last := first
	total := len(a0)
	for i, next := range [][]byte{a1, a2} {
		s, ok := parseTCPSeg(next)
		if !ok || !follows(first, last, s, total) {
			t.Fatalf("segment %d does not follow", i+1)
		}
		last, total = s, total+s.payload
	}
	if s, _ := parseTCPSeg(gap); follows(first, last, s, total) {
		t.Error("a segment after a PSH and a sequence gap joined the run")
	}
	if _, ok := parseTCPSeg(bad); ok {
		t.Error("a segment with a bad checksum was accepted for coalescing")
	}
	syn := segment(1, data(0)[:10], 0x12)
	if _, ok := parseTCPSeg(syn); ok {
		t.Error("a SYN-ACK was accepted for coalescing")
	}
	other := segment(100+mss, data(1), 0x10)
	other[35] ^= 1 // another window
	binary.BigEndian.PutUint16(other[36:], 0)
	binary.BigEndian.PutUint16(other[36:], tcpChecksum(other))
	if s, ok := parseTCPSeg(other); !ok || follows(first, first, s, len(a0)) {
		t.Error("a segment with another window joined the run")
	}
}

// The per-packet work allocates nothing: a TSO split, a coalescing check.
func TestPerPacketWorkDoesNotAllocate(t *testing.T) {
	super := superPacket(make([]byte, 60000), 0x10)
	h := virtioHdr{flags: virtioFlagNeedsCsum, gsoType: virtioGSOTCPv4, hdrLen: 40, gsoSize: 1448, csumStart: 20, csumOffset: 16}
	bufs := make([][]byte, MaxSegments)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	sizes := make([]int, MaxSegments)
	seg := segment(100, make([]byte, 1400), 0x10)
	for name, f := range map[string]func(){
		"split":     func() { split(&h, super, bufs, sizes, 32) },
		"coalesce?": func() { s, _ := parseTCPSeg(seg); follows(s, s, s, len(seg)) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call, want 0", name, n)
		}
	}
}

func BenchmarkSplitTSO(b *testing.B) {
	super := superPacket(make([]byte, 64000), 0x10)
	h := virtioHdr{flags: virtioFlagNeedsCsum, gsoType: virtioGSOTCPv4, hdrLen: 40, gsoSize: 1448, csumStart: 20, csumOffset: 16}
	bufs := make([][]byte, MaxSegments)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	sizes := make([]int, MaxSegments)
	b.ReportAllocs()
	b.SetBytes(int64(len(super)))
	for i := 0; i < b.N; i++ {
		split(&h, super, bufs, sizes, 32)
	}
}
