package p4rt

import (
	"math/bits"

	"github.com/junction-atsss/junction/internal/p4bytes"

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
	v := p4bytes.Canonical(b)
	if p4bytes.SignificantBits(v) > width {
		return nil, errf(codes.OutOfRange, "%s: value 0x%x does not fit in %d bits", what, v, width)
	}
	return v, nil
}

// isZero reports whether the canonical value v is 0.
func isZero(v []byte) bool { return len(v) == 1 && v[0] == 0 }

// decodeUint reads a canonical value the server has already checked fits in 64 bits.
func decodeUint(v []byte) uint64 {
	x, _ := p4bytes.DecodeUint(v)
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
