package p4rt

import (
	"encoding/binary"
	"math/bits"

	"google.golang.org/grpc/codes"
)

// Bytestrings (P4Runtime spec section 8.4). A receiver accepts any length as long as the value
// fits the P4Info bitwidth; the canonical form, which the server stores and returns on reads,
// is the shortest string that holds the value (at least one byte). Only unsigned bit<W> values
// appear in keys, action parameters, controller headers, registers and digests here.

// canonical returns the shortest form of b, a sub-slice of b. It fails with OUT_OF_RANGE when b
// is empty or its value needs more than width bits; what names the value in the message.
func canonical(b []byte, width int, what string) ([]byte, error) {
	if len(b) == 0 {
		return nil, errf(codes.OutOfRange, "%s: empty bytestring (a value needs at least one byte)", what)
	}
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	v := b[i:]
	if significantBits(v) > width {
		return nil, errf(codes.OutOfRange, "%s: value 0x%x does not fit in %d bits", what, v, width)
	}
	return v, nil
}

// significantBits is the number of bits of the canonical (no leading zero bytes) value v.
func significantBits(v []byte) int {
	if len(v) == 0 || (len(v) == 1 && v[0] == 0) {
		return 0
	}
	return (len(v)-1)*8 + bits.Len8(v[0])
}

// isZero reports whether the canonical value v is 0.
func isZero(v []byte) bool { return len(v) == 1 && v[0] == 0 }

// encodeUint returns the canonical bytestring of x.
func encodeUint(x uint64) []byte {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], x)
	i := 0
	for i < 7 && buf[i] == 0 {
		i++
	}
	out := make([]byte, 8-i)
	copy(out, buf[i:])
	return out
}

// decodeUint reads a canonical value of at most 64 bits.
func decodeUint(v []byte) uint64 {
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	return x
}

// compareCanonical orders two canonical values numerically.
func compareCanonical(a, b []byte) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// maxValue is the canonical bytestring of 2^width-1.
func maxValue(width int) []byte {
	n := (width + 7) / 8
	out := make([]byte, n)
	for i := range out {
		out[i] = 0xff
	}
	if r := width % 8; r != 0 {
		out[0] = byte(1<<r - 1)
	}
	return out
}

// alignedBytes left-pads the canonical v with zeros to n bytes (n >= len(v)), into a new slice.
func alignedBytes(v []byte, n int) []byte {
	out := make([]byte, n)
	copy(out[n-len(v):], v)
	return out
}

// trailingZeroBits counts the zero bits at the least significant end of v, width bits wide.
func trailingZeroBits(v []byte, width int) int {
	n := 0
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] == 0 {
			n += 8
			continue
		}
		n += bits.TrailingZeros8(v[i])
		return n
	}
	return width // the value is 0
}
