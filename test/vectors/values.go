package vectors

// Human values in vectors and their P4Runtime bytestrings. A value is a YAML number, or a string:
// an IPv4 dotted quad, a MAC address, 0x-hex, decimal, or $name (a logical port's number or a
// value captured earlier in the case with ?name). Match fields add "a.b.c.d/len" (lpm),
// "value&&&mask" (ternary), "lo-hi" (range) and "*" (wildcard: the field is left out).

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/junction-atsss/junction/internal/p4schema"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// vars holds the names a vector may refer to with $name: logical ports and captured values.
type vars map[string]uint64

// number turns a scalar into an unsigned integer that fits in bits.
func (v vars) number(x any, bits int) (uint64, error) {
	n, err := v.scalar(x)
	if err != nil {
		return 0, err
	}
	if bits < 64 && n>>uint(bits) != 0 {
		return 0, fmt.Errorf("value %v does not fit in %d bits", x, bits)
	}
	return n, nil
}

func (v vars) scalar(x any) (uint64, error) {
	switch t := x.(type) {
	case json.Number:
		return parseUint(t.String())
	case float64: // values built in Go rather than decoded
		if t < 0 || t != float64(uint64(t)) {
			return 0, fmt.Errorf("value %v is not an unsigned integer", t)
		}
		return uint64(t), nil
	case int:
		if t < 0 {
			return 0, fmt.Errorf("value %d is negative", t)
		}
		return uint64(t), nil
	case uint64:
		return t, nil
	case bool:
		if t {
			return 1, nil
		}
		return 0, nil
	case string:
		s := strings.TrimSpace(t)
		if strings.HasPrefix(s, "$") {
			val, ok := v[s[1:]]
			if !ok {
				return 0, fmt.Errorf("unknown name %s (not a port given to the runner, nor captured earlier with ?%s)", s, s[1:])
			}
			return val, nil
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			return uint64(binary.BigEndian.Uint32(a.AsSlice())), nil
		}
		if strings.Count(s, ":") == 5 {
			mac, err := net.ParseMAC(s)
			if err != nil {
				return 0, fmt.Errorf("bad MAC address %q: %w", s, err)
			}
			var b [8]byte
			copy(b[2:], mac)
			return binary.BigEndian.Uint64(b[:]), nil
		}
		return parseUint(s)
	case nil:
		return 0, fmt.Errorf("missing value")
	}
	return 0, fmt.Errorf("value %v (%T) is not a number, address or $name", x, x)
}

func parseUint(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return n, nil
}

// bytestring encodes n in ceil(bits/8) bytes, the padded form every P4Runtime server accepts
// (BMv2's PI requires it; the spec's canonical form is a server's choice to return).
func bytestring(n uint64, bits int) []byte {
	size := (bits + 7) / 8
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return append([]byte(nil), b[8-size:]...)
}

// fromBytestring decodes a bytestring of any length (canonical or padded).
func fromBytestring(b []byte) uint64 {
	return new(big.Int).SetBytes(b).Uint64()
}

// matchField builds one FieldMatch from its human value; nil means "*" (left out).
func (v vars) matchField(f p4schema.Field, x any) (*p4v1.FieldMatch, error) {
	bits := f.Width
	s, isString := x.(string)
	s = strings.TrimSpace(s)
	if isString && s == "*" {
		return nil, nil
	}
	fm := &p4v1.FieldMatch{FieldId: f.ID}
	switch f.Kind {
	case p4configv1.MatchField_EXACT:
		n, err := v.number(x, bits)
		if err != nil {
			return nil, err
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: bytestring(n, bits)}}
	case p4configv1.MatchField_OPTIONAL:
		n, err := v.number(x, bits)
		if err != nil {
			return nil, err
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: bytestring(n, bits)}}
	case p4configv1.MatchField_LPM:
		val, plen := x, bits
		if isString && strings.Contains(s, "/") {
			i := strings.LastIndex(s, "/")
			p, err := strconv.Atoi(s[i+1:])
			if err != nil || p < 0 || p > bits {
				return nil, fmt.Errorf("bad prefix length in %q (0..%d)", s, bits)
			}
			val, plen = s[:i], p
		}
		if plen == 0 {
			return nil, nil // a /0 prefix is the wildcard, which P4Runtime writes by omission
		}
		n, err := v.number(val, bits)
		if err != nil {
			return nil, err
		}
		if host := n & (1<<uint(bits-plen) - 1); host != 0 {
			return nil, fmt.Errorf("%q has bits set beyond the /%d prefix", s, plen)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: bytestring(n, bits), PrefixLen: int32(plen)}}
	case p4configv1.MatchField_TERNARY:
		val, mask := x, any(nil)
		if isString && strings.Contains(s, "&&&") {
			parts := strings.SplitN(s, "&&&", 2)
			val, mask = strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		}
		n, err := v.number(val, bits)
		if err != nil {
			return nil, err
		}
		m := uint64(1)<<uint(bits) - 1
		if mask != nil {
			if m, err = v.number(mask, bits); err != nil {
				return nil, err
			}
		}
		if m == 0 {
			return nil, nil
		}
		if n&^m != 0 {
			return nil, fmt.Errorf("%v: value has bits outside the mask", x)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: bytestring(n, bits), Mask: bytestring(m, bits)}}
	case p4configv1.MatchField_RANGE:
		lo, hi := x, x
		if isString && strings.Contains(s, "-") {
			parts := strings.SplitN(s, "-", 2)
			lo, hi = strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		}
		l, err := v.number(lo, bits)
		if err != nil {
			return nil, err
		}
		h, err := v.number(hi, bits)
		if err != nil {
			return nil, err
		}
		if l > h {
			return nil, fmt.Errorf("range %v: low end above high end", x)
		}
		if l == 0 && h == uint64(1)<<uint(bits)-1 {
			return nil, nil // the full range is the wildcard
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: bytestring(l, bits), High: bytestring(h, bits)}}
	default:
		return nil, fmt.Errorf("match kind %v is not supported by the runner", f.Kind)
	}
	return fm, nil
}

// matcher is an expected value: exact, any ("*"), a range ("lo-hi"), non-zero ("!0"), or a
// capture ("?name": any value, remembered for $name later in the case).
type matcher struct {
	any     bool
	capture string
	lo, hi  uint64
}

func (v vars) parseMatcher(x any, bits int) (matcher, error) {
	if s, ok := x.(string); ok {
		s = strings.TrimSpace(s)
		switch {
		case s == "*":
			return matcher{any: true}, nil
		case strings.HasPrefix(s, "?"):
			if len(s) < 2 {
				return matcher{}, fmt.Errorf("capture %q needs a name", s)
			}
			return matcher{any: true, capture: s[1:]}, nil
		case s == "!0":
			return matcher{lo: 1, hi: 1<<uint(bits) - 1}, nil
		case strings.Contains(s, "-") && !strings.HasPrefix(s, "$"):
			parts := strings.SplitN(s, "-", 2)
			lo, err := v.number(strings.TrimSpace(parts[0]), bits)
			if err != nil {
				return matcher{}, err
			}
			hi, err := v.number(strings.TrimSpace(parts[1]), bits)
			if err != nil {
				return matcher{}, err
			}
			return matcher{lo: lo, hi: hi}, nil
		}
	}
	n, err := v.number(x, bits)
	if err != nil {
		return matcher{}, err
	}
	return matcher{lo: n, hi: n}, nil
}

// check reports whether got satisfies m, recording a capture.
func (m matcher) check(got uint64, v vars) bool {
	if m.capture != "" {
		v[m.capture] = got
	}
	return m.any || (got >= m.lo && got <= m.hi)
}

func (m matcher) String() string {
	switch {
	case m.capture != "":
		return "?" + m.capture
	case m.any:
		return "*"
	case m.lo == m.hi:
		return strconv.FormatUint(m.lo, 10)
	}
	return fmt.Sprintf("%d-%d", m.lo, m.hi)
}
