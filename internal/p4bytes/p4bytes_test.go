package p4bytes

import (
	"bytes"
	"testing"
)

func TestBytestrings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
		bits int
	}{
		{"leading zero bytes are dropped", []byte{0, 0, 1, 2}, []byte{1, 2}, 9},
		{"zero keeps one byte", []byte{0, 0, 0}, []byte{0}, 0},
		{"a full-width value is unchanged", []byte{0xff, 0xff}, []byte{0xff, 0xff}, 16},
		{"a 9-bit port is two bytes", []byte{0x01, 0xff}, []byte{0x01, 0xff}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Canonical(tc.in); !bytes.Equal(got, tc.want) {
				t.Errorf("Canonical = %x, want %x", got, tc.want)
			}
			if got := SignificantBits(tc.in); got != tc.bits {
				t.Errorf("SignificantBits = %d, want %d", got, tc.bits)
			}
		})
	}
	if got := Uint(0x1234); !bytes.Equal(got, []byte{0x12, 0x34}) {
		t.Errorf("Uint = %x", got)
	}
	if got, err := DecodeUint([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1}); err != nil || got != 1 {
		t.Errorf("DecodeUint with leading zeros = %d, %v", got, err)
	}
	if _, err := DecodeUint([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("a 65-bit value decoded")
	}
	if got := MaxValue(9); !bytes.Equal(got, []byte{0x01, 0xff}) {
		t.Errorf("MaxValue(9) = %x", got)
	}
}
