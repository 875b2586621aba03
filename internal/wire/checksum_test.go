package wire

import (
	"math/rand/v2"
	"testing"
)

// rfc1071 is the checksum's definition, a 16-bit word at a time (RFC 1071 §4.1).
func rfc1071(b []byte, init uint32) uint16 {
	s := init
	for ; len(b) >= 2; b = b[2:] {
		s += uint32(b[0])<<8 | uint32(b[1])
		s = s&0xffff + s>>16
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func TestSumIsRFC1071s(t *testing.T) {
	// RFC 1071 §3's example: the words 0001 f203 f4f5 f6f7 sum to ddf2.
	if got := Fold(Sum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0)); got != 0xddf2 {
		t.Errorf("RFC 1071's example: %#04x, want 0xddf2", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	fills := map[string]func() byte{
		"zeros":  func() byte { return 0 },
		"ones":   func() byte { return 0xff }, // every add carries
		"random": func() byte { return byte(r.Uint32()) },
	}
	for name, fill := range fills {
		for k := range 300 {
			n := k // every length up to 100, then any up to 1,600
			if k > 100 {
				n = r.IntN(1600)
			}
			b := make([]byte, n)
			for i := range b {
				b[i] = fill()
			}
			init := uint32(r.IntN(0x10000))
			if got, want := Fold(Sum(b, uint64(init))), rfc1071(b, init); got != want {
				t.Fatalf("%d bytes of %s, from %#04x: %#04x, want %#04x", n, name, init, got, want)
			}
		}
	}
}

func BenchmarkSum(b *testing.B) {
	seg := make([]byte, 1448)
	b.SetBytes(int64(len(seg)))
	for b.Loop() {
		Fold(Sum(seg, 0))
	}
}
