package p4rt

import (
	"bytes"
	"testing"

	"github.com/junction-atsss/junction/internal/p4bytes"

	"google.golang.org/grpc/codes"
)

// The examples of P4Runtime spec section 8.4 (valid and invalid encodings of bit<W>).
func TestCanonicalFollowsTheSpecExamples(t *testing.T) {
	valid := []struct {
		width int
		in    []byte
		want  []byte
	}{
		{8, []byte{0x63}, []byte{0x63}},
		{16, []byte{0x00, 0x63}, []byte{0x63}},
		{16, []byte{0x63}, []byte{0x63}},
		{16, []byte{0x30, 0x64}, []byte{0x30, 0x64}},
		{16, []byte{0x00, 0x30, 0x64}, []byte{0x30, 0x64}},
		{12, []byte{0x00, 0x63}, []byte{0x63}},
		{12, []byte{0x00, 0x00, 0x63}, []byte{0x63}},
		{9, []byte{0x01, 0xff}, []byte{0x01, 0xff}},
		{32, []byte{0, 0, 0, 0}, []byte{0}},
		{1, []byte{0, 0, 1}, []byte{1}},
	}
	for _, c := range valid {
		got, err := canonical(c.in, c.width, "v")
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("canonical(%x, bit<%d>) = %x, %v; want %x", c.in, c.width, got, err, c.want)
		}
	}
	invalid := []struct {
		width int
		in    []byte
	}{
		{8, []byte{0x01, 0x63}},
		{8, nil},
		{16, []byte{0x01, 0x00, 0x63}},
		{12, []byte{0x10, 0x63}},
		{12, []byte{0x01, 0x00, 0x63}},
		{12, []byte{0x00, 0x40, 0x63}},
		{9, []byte{0x02, 0x00}},
	}
	for _, c := range invalid {
		_, err := canonical(c.in, c.width, "v")
		if code, _ := codeOf(err); err == nil || code != codes.OutOfRange {
			t.Errorf("canonical(%x, bit<%d>) = %v, want OUT_OF_RANGE", c.in, c.width, err)
		}
	}
}

func TestEncodeUintIsShortest(t *testing.T) {
	for _, c := range []struct {
		x    uint64
		want []byte
	}{{0, []byte{0}}, {1, []byte{1}}, {0x1ff, []byte{1, 0xff}}, {1 << 63, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}}} {
		if got := p4bytes.Uint(c.x); !bytes.Equal(got, c.want) || decodeUint(got) != c.x {
			t.Errorf("p4bytes.Uint(%d) = %x, want %x", c.x, got, c.want)
		}
	}
}

func TestLPMAndTernaryBitRules(t *testing.T) {
	if got := trailingZeroBits([]byte{0x0a, 0, 0, 0}, 32); got != 25 {
		t.Errorf("trailingZeroBits(10.0.0.0) = %d, want 25", got)
	}
	if !maskedZero([]byte{0x0a, 0}, []byte{0xff, 0}) || maskedZero([]byte{0x0a, 1}, []byte{0xff, 0}) {
		t.Error("maskedZero misjudges value & ^mask")
	}
	if maskedZero([]byte{1, 0}, []byte{0xff}) {
		t.Error("a value longer than its mask has bits outside the mask")
	}
	if !bytes.Equal(p4bytes.MaxValue(9), []byte{1, 0xff}) || !bytes.Equal(p4bytes.MaxValue(16), []byte{0xff, 0xff}) {
		t.Error("maxValue")
	}
}
