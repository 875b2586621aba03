package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// A header with a known checksum (the well-known example from the IPv4 checksum literature):
// 192.168.0.1 -> 192.168.0.199, UDP, TTL 64, DF, total length 0x73, checksum 0xb861.
const exampleIPv4 = "45 00 0073 0000 4000 40 11 b861 c0a80001 c0a800c7"

var exampleIPv4Header = wire.IPv4{
	TotalLen: 0x73, Frag: wire.IPv4DontFragment, TTL: 64, Proto: wire.ProtoUDP, Checksum: 0xb861,
	Src: [4]byte{192, 168, 0, 1}, Dst: [4]byte{192, 168, 0, 199},
}

func TestIPv4Bytes(t *testing.T) {
	want := wiretest.Hex(exampleIPv4)
	t.Run("ParseIPv4 reads every field from its place", func(t *testing.T) {
		pkt := append(append([]byte{}, want...), make([]byte, 0x73-20)...)
		h, err := wire.ParseIPv4(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if h != exampleIPv4Header {
			t.Errorf("ParseIPv4 = %+v, want %+v", h, exampleIPv4Header)
		}
	})
	t.Run("Put writes every field to its place and computes the checksum", func(t *testing.T) {
		h := exampleIPv4Header
		h.Checksum = 0x1234 // ignored
		got := make([]byte, 20)
		h.Put(got)
		if !bytes.Equal(got, want) {
			t.Errorf("Put = % x, want % x", got, want)
		}
	})
	t.Run("TOS, identification and fragment fields land in bytes 1 and 4 to 7", func(t *testing.T) {
		h := wire.IPv4{TOS: 0xb8, TotalLen: 20, ID: 0xbeef, Frag: wire.IPv4MoreFragments | 0x0123, TTL: 1, Proto: 6,
			Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}}
		got := make([]byte, 20)
		h.Put(got)
		if want := wiretest.Hex("45 b8 0014 beef 2123 01 06"); !bytes.Equal(got[:10], want) {
			t.Errorf("Put = % x, want % x…", got[:10], want)
		}
		if h.DSCP() != 46 || h.FragmentOffset() != 0x123 {
			t.Errorf("DSCP %d FragmentOffset %#x", h.DSCP(), h.FragmentOffset())
		}
	})
	t.Run("Prepend sets the total length from the payload", func(t *testing.T) {
		buf := make([]byte, 20+0x73-20)
		off := wire.IPv4{Frag: wire.IPv4DontFragment, TTL: 64, Proto: wire.ProtoUDP,
			Src: [4]byte{192, 168, 0, 1}, Dst: [4]byte{192, 168, 0, 199}}.Prepend(buf, 20)
		if off != 0 || !bytes.Equal(buf[:20], want) {
			t.Errorf("Prepend = %d % x, want 0 % x", off, buf[:20], want)
		}
	})
}

func TestParseIPv4Rejects(t *testing.T) {
	header := wiretest.Hex(exampleIPv4)
	withTotal := func(n uint16, size int) []byte {
		b := make([]byte, size)
		copy(b, header)
		binary.BigEndian.PutUint16(b[2:4], n)
		return b
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		field string
		value int
	}{
		{"an empty buffer is a truncated header", nil, "header", 0},
		{"nineteen bytes are a truncated header", withTotal(19, 19), "header", 19},
		{"version 6 is not IPv4", wiretest.Hex("60 00 0000 00000000"), "version", 6},
		{"version 6 is reported even on one byte", wiretest.Hex("60"), "version", 6},
		{"IHL 6 means options, which the pipeline does not parse", append(wiretest.Hex("46"), header[1:]...), "ihl", 6},
		{"IHL 4 is shorter than a header", append(wiretest.Hex("44"), header[1:]...), "ihl", 4},
		{"a total length shorter than the header is malformed", withTotal(19, 40), "total length", 19},
		{"a total length longer than the buffer is truncation", withTotal(41, 40), "total length", 41},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseIPv4(tc.b)
			wantError(t, err, wire.LayerIPv4, tc.field, tc.value)
		})
	}
	t.Run("the total length message says how many bytes are present", func(t *testing.T) {
		_, err := wire.ParseIPv4(withTotal(41, 40))
		if want := "ipv4: total length 41 exceeds the 40 bytes present"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("a short buffer is ErrTruncated", func(t *testing.T) {
		if _, err := wire.ParseIPv4(header[:10]); !errors.Is(err, wire.ErrTruncated) {
			t.Errorf("error %v is not ErrTruncated", err)
		}
	})
	t.Run("Ethernet padding after the total length is allowed", func(t *testing.T) {
		if _, err := wire.ParseIPv4(withTotal(20, 46)); err != nil {
			t.Error(err)
		}
	})
}

func TestIPv4Checksum(t *testing.T) {
	b := wiretest.Hex(exampleIPv4)
	if got := wire.IPv4Checksum(b); got != 0xb861 {
		t.Errorf("IPv4Checksum = %#04x, want 0xb861", got)
	}
	if !wire.VerifyIPv4Checksum(b) {
		t.Error("VerifyIPv4Checksum rejects a correct header")
	}
	for i := 0; i < 20*8; i++ {
		c := append([]byte{}, b...)
		c[i/8] ^= 1 << (i % 8)
		if wire.VerifyIPv4Checksum(c) {
			t.Errorf("VerifyIPv4Checksum accepts the header with bit %d flipped", i)
		}
	}
}

// randomHeader returns a valid 20-byte header with random fields and the given TTL.
func randomHeader(r *rand.Rand, ttl uint8) []byte {
	h := wire.IPv4{TOS: uint8(r.Uint32()), TotalLen: uint16(r.Uint32()), ID: uint16(r.Uint32()),
		Frag: uint16(r.Uint32()), TTL: ttl, Proto: uint8(r.Uint32())}
	binary.BigEndian.PutUint32(h.Src[:], r.Uint32())
	binary.BigEndian.PutUint32(h.Dst[:], r.Uint32())
	b := make([]byte, 20)
	h.Put(b)
	return b
}

func TestDecrementTTL(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t.Run("every TTL is decremented and the header's checksum verifies", func(t *testing.T) {
		for ttl := 2; ttl <= 255; ttl++ {
			for range 200 {
				b := randomHeader(r, uint8(ttl))
				if !wire.DecrementTTL(b) {
					t.Fatalf("TTL %d: DecrementTTL reported expiry", ttl)
				}
				if b[8] != uint8(ttl-1) {
					t.Fatalf("TTL %d became %d", ttl, b[8])
				}
				if !wire.VerifyIPv4Checksum(b) {
					t.Fatalf("TTL %d: checksum does not verify (% x)", ttl, b)
				}
			}
		}
	})
	t.Run("a header that arrived with a wrong checksum leaves with a right one, as from a P4 deparser", func(t *testing.T) {
		b := randomHeader(r, 64)
		b[10] ^= 0x80
		if !wire.DecrementTTL(b) || !wire.VerifyIPv4Checksum(b) {
			t.Fatalf("checksum does not verify after the decrement (% x)", b)
		}
	})
	t.Run("a checksum that becomes 0x0000 is not written as 0xffff", func(t *testing.T) {
		// Choose the identification so that the decremented header sums to 0xffff and its
		// checksum is 0x0000: the case where the RFC 1141 update goes wrong and RFC 1624
		// equation 3 does not.
		for range 100 {
			b := randomHeader(r, uint8(2+r.IntN(254)))
			c := append([]byte{}, b...)
			c[8]--
			binary.BigEndian.PutUint16(c[4:6], 0)
			id := wire.IPv4Checksum(c) // the one's complement of the sum without the ID
			binary.BigEndian.PutUint16(b[4:6], id)
			binary.BigEndian.PutUint16(b[10:12], wire.IPv4Checksum(b))
			if !wire.DecrementTTL(b) {
				t.Fatal("DecrementTTL reported expiry")
			}
			if got := binary.BigEndian.Uint16(b[10:12]); got != 0 || !wire.VerifyIPv4Checksum(b) {
				t.Fatalf("checksum %#04x, want 0x0000 (% x)", got, b)
			}
		}
	})
	for _, ttl := range []uint8{0, 1} {
		t.Run("a packet with TTL "+string('0'+ttl)+" expires and is left unchanged", func(t *testing.T) {
			b := randomHeader(r, ttl)
			before := append([]byte{}, b...)
			if wire.DecrementTTL(b) {
				t.Error("DecrementTTL did not report expiry")
			}
			if !bytes.Equal(b, before) {
				t.Errorf("header changed: % x -> % x", before, b)
			}
		})
	}
}

func TestEthernet(t *testing.T) {
	want := wiretest.Hex("020000000002 | 020000000001 | 0800")
	e := wire.Ethernet{Dst: wiretest.MAC("02:00:00:00:00:02"), Src: wiretest.MAC("02:00:00:00:00:01"), Type: wire.EtherTypeIPv4}
	t.Run("destination, source and EtherType are in that order", func(t *testing.T) {
		got := make([]byte, 14)
		e.Put(got)
		if !bytes.Equal(got, want) {
			t.Errorf("Put = % x, want % x", got, want)
		}
		p, err := wire.ParseEthernet(want)
		if err != nil || p != e {
			t.Errorf("ParseEthernet = %+v %v", p, err)
		}
	})
	t.Run("Prepend writes in front of the offset", func(t *testing.T) {
		buf := make([]byte, 20)
		if off := e.Prepend(buf, 16); off != 2 || !bytes.Equal(buf[2:16], want) {
			t.Errorf("Prepend = %d % x", off, buf)
		}
	})
	t.Run("thirteen bytes are a truncated header", func(t *testing.T) {
		_, err := wire.ParseEthernet(want[:13])
		wantError(t, err, wire.LayerEthernet, "header", 13)
	})
}

func TestUDP(t *testing.T) {
	want := wiretest.Hex("0869 0868 0024 abcd")
	u := wire.UDP{SrcPort: wire.JunctionPort, DstPort: wire.GTPUPort, Length: 36, Checksum: 0xabcd}
	t.Run("source port, destination port, length and checksum are in that order", func(t *testing.T) {
		got := make([]byte, 8)
		u.Put(got)
		if !bytes.Equal(got, want) {
			t.Errorf("Put = % x, want % x", got, want)
		}
		p, err := wire.ParseUDP(append(want, make([]byte, 28)...))
		if err != nil || p != u {
			t.Errorf("ParseUDP = %+v %v", p, err)
		}
	})
	t.Run("Prepend sets the length and the tunnel header has equal ports and checksum 0", func(t *testing.T) {
		buf := make([]byte, 8+28)
		if off := wire.TunnelUDP(wire.JunctionPort).Prepend(buf, 8); off != 0 {
			t.Fatalf("Prepend = %d", off)
		}
		if want := wiretest.Hex("0869 0869 0024 0000"); !bytes.Equal(buf[:8], want) {
			t.Errorf("header % x, want % x", buf[:8], want)
		}
	})
	for _, tc := range []struct {
		name  string
		b     []byte
		field string
		value int
	}{
		{"seven bytes are a truncated header", want[:7], "header", 7},
		{"a length shorter than the header is malformed", wiretest.Hex("0869 0869 0007 0000"), "length", 7},
		{"a length longer than the IPv4 payload is truncation", wiretest.Hex("0869 0869 0009 0000"), "length", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseUDP(tc.b)
			wantError(t, err, wire.LayerUDP, tc.field, tc.value)
		})
	}
}

func TestParsePorts(t *testing.T) {
	l4 := wiretest.Hex("0050 c350 0000 0000")
	for _, tc := range []struct {
		name string
		ip   wire.IPv4
		want wire.Ports
	}{
		{"TCP ports are the first four bytes", wire.IPv4{Proto: wire.ProtoTCP}, wire.Ports{Src: 80, Dst: 50000}},
		{"UDP ports are the first four bytes", wire.IPv4{Proto: wire.ProtoUDP}, wire.Ports{Src: 80, Dst: 50000}},
		{"the first fragment carries the ports", wire.IPv4{Proto: wire.ProtoUDP, Frag: wire.IPv4MoreFragments}, wire.Ports{Src: 80, Dst: 50000}},
		{"a later fragment has no ports", wire.IPv4{Proto: wire.ProtoUDP, Frag: 185}, wire.Ports{}},
		{"ICMP has no ports", wire.IPv4{Proto: 1}, wire.Ports{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := wire.ParsePorts(tc.ip, l4)
			if err != nil || p != tc.want {
				t.Errorf("ParsePorts = %+v %v, want %+v", p, err, tc.want)
			}
		})
	}
	t.Run("a TCP segment shorter than its ports is truncated", func(t *testing.T) {
		_, err := wire.ParsePorts(wire.IPv4{Proto: wire.ProtoTCP}, l4[:3])
		wantError(t, err, wire.LayerTransport, "ports", 3)
	})
}
