// Package p4bytes holds the P4Runtime bytestring rules (spec section 8.4) that the server side
// (internal/softupf/p4rt) and the client side (internal/upfclient) share: values are unsigned
// big-endian strings, and the canonical form is the shortest one that holds the value, at least
// one byte.
package p4bytes

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// Canonical returns b without its leading zero bytes, as a sub-slice, keeping at least one byte
// (empty stays empty).
func Canonical(b []byte) []byte {
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	return b[i:]
}

// SignificantBits is the number of bits the value of b needs (0 for zero).
func SignificantBits(b []byte) int {
	v := Canonical(b)
	if len(v) == 0 || (len(v) == 1 && v[0] == 0) {
		return 0
	}
	return (len(v)-1)*8 + bits.Len8(v[0])
}

// Uint returns the canonical bytestring of x.
func Uint(x uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], x)
	return append([]byte(nil), Canonical(b[:])...)
}

// DecodeUint reads a bytestring (leading zeros allowed) of at most 64 significant bits.
func DecodeUint(b []byte) (uint64, error) {
	v := Canonical(b)
	if len(v) > 8 {
		return 0, fmt.Errorf("value 0x%x does not fit in 64 bits", v)
	}
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	return x, nil
}

// MaxValue is the canonical all-ones value of width bits.
func MaxValue(width int) []byte {
	out := make([]byte, (width+7)/8)
	for i := range out {
		out[i] = 0xff
	}
	if r := width % 8; r != 0 {
		out[0] = byte(1<<r - 1)
	}
	return out
}

// MatchKindName is the P4 name of a match kind, for error messages.
func MatchKindName(k p4configv1.MatchField_MatchType) string {
	switch k {
	case p4configv1.MatchField_EXACT:
		return "exact"
	case p4configv1.MatchField_LPM:
		return "lpm"
	case p4configv1.MatchField_TERNARY:
		return "ternary"
	case p4configv1.MatchField_RANGE:
		return "range"
	case p4configv1.MatchField_OPTIONAL:
		return "optional"
	}
	return k.String()
}
