package upfclient

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/antoninbas/p4runtime-go-client/pkg/util/conversion"

	"github.com/junction-atsss/junction/internal/p4bytes"
)

// Bytestrings (P4Runtime spec 8.4): values in keys, action params, registers and digests are
// unsigned big-endian byte strings. The canonical form, the one a server returns on reads and
// the one this package always sends, is the shortest string that holds the value, at least one
// byte. Sending it keeps read-back entries byte-for-byte equal to the ones written.

// Uint returns the canonical bytestring of x.
func Uint(x uint64) []byte { return p4bytes.Uint(x) }

// IPv4 returns the canonical bytestring of an IPv4 address (4-in-6 addresses are unmapped).
// It returns nil for anything else, which the entry builder rejects naming the field.
func IPv4(a netip.Addr) []byte {
	a = a.Unmap()
	if !a.Is4() {
		return nil
	}
	b, err := conversion.IpToBinary(a.String())
	if err != nil {
		return nil
	}
	return canonical(b)
}

// MAC returns the canonical bytestring of a 48-bit MAC address; nil if mac is not 6 bytes.
func MAC(mac net.HardwareAddr) []byte {
	if len(mac) != 6 {
		return nil
	}
	b, err := conversion.MacToBinary(mac.String())
	if err != nil {
		return nil
	}
	return canonical(b)
}

// canonical strips leading zero bytes the way p4runtime-go-client does for every value it
// sends, so entries built here and by that client are byte-for-byte the same.
func canonical(b []byte) []byte { return conversion.ToCanonicalBytestring(b) }

// DecodeUint reads a bytestring of at most 8 significant bytes (any length, leading zeros
// allowed) as an unsigned integer.
func DecodeUint(b []byte) (uint64, error) { return p4bytes.DecodeUint(b) }

func isZero(v []byte) bool { return p4bytes.SignificantBits(v) == 0 }

// fit canonicalizes v and checks it holds in width bits. Its errors do not say which value:
// callers name it once it failed, so that building an entry makes no error text.
func fit(v []byte, width int32) ([]byte, error) {
	if len(v) == 0 {
		return nil, errors.New("no value (unset, or not a valid address; zero is Uint(0))")
	}
	c := canonical(v)
	if width > 0 && p4bytes.SignificantBits(c) > int(width) {
		return nil, fmt.Errorf("value 0x%x does not fit in %d bits", c, width)
	}
	return c, nil
}

// prefixMask is the canonical mask of the top plen bits of a width-bit field.
func prefixMask(plen, width int32) []byte {
	n := (width + 7) / 8
	out := make([]byte, n)
	// Bit i (0 = most significant of the width-bit value) sits at position off+i of the
	// byte-aligned string, off being the padding bits in front.
	off := n*8 - width
	for i := int32(0); i < plen; i++ {
		p := off + i
		out[p/8] |= 0x80 >> (p % 8)
	}
	return canonical(out)
}

// and returns a & b for canonical values (as a canonical value).
func and(a, b []byte) []byte {
	n := max(len(a), len(b))
	out := make([]byte, n)
	for i := 0; i < n; i++ {
		var x, y byte
		if j := i - (n - len(a)); j >= 0 {
			x = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			y = b[j]
		}
		out[i] = x & y
	}
	return canonical(out)
}

// equalValue compares canonical values.
func equalValue(a, b []byte) bool {
	return string(canonical(a)) == string(canonical(b))
}
