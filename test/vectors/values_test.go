package vectors

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/p4schema"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

func TestHumanValuesBecomePaddedBytestrings(t *testing.T) {
	v := vars{"n6": 2}
	for _, tc := range []struct {
		in   any
		bits int
		want []byte
	}{
		{"192.0.2.1", 32, []byte{192, 0, 2, 1}},
		{"02:00:00:00:01:0a", 48, []byte{2, 0, 0, 0, 1, 0x0a}},
		{json.Number("7"), 32, []byte{0, 0, 0, 7}},
		{json.Number("256"), 9, []byte{1, 0}},
		{"$n6", 9, []byte{0, 2}},
		{"0x200", 32, []byte{0, 0, 2, 0}},
		{"1_000", 16, []byte{0x03, 0xe8}},
	} {
		n, err := v.number(tc.in, tc.bits)
		if err != nil {
			t.Errorf("number(%v): %v", tc.in, err)
			continue
		}
		if got := bytestring(n, tc.bits); !bytes.Equal(got, tc.want) {
			t.Errorf("bytestring(%v, %d) = %x, want %x", tc.in, tc.bits, got, tc.want)
		}
	}
}

func TestBadValuesNameTheProblem(t *testing.T) {
	v := vars{}
	for _, tc := range []struct {
		in   any
		bits int
		want string
	}{
		{json.Number("512"), 9, "does not fit in 9 bits"},
		{"$wifi", 9, "unknown name $wifi"},
		{"10.0.0", 32, "bad number"},
		{nil, 8, "missing value"},
	} {
		_, err := v.number(tc.in, tc.bits)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("number(%v) error = %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestMatchFieldsByKind(t *testing.T) {
	v := vars{}
	field := func(kind p4configv1.MatchField_MatchType, bits int) p4schema.Field {
		return p4schema.Field{ID: 1, Name: "f", Width: bits, Kind: kind}
	}
	lpm, err := v.matchField(field(p4configv1.MatchField_LPM, 32), "198.18.2.0/24")
	if err != nil || lpm.GetLpm().PrefixLen != 24 || !bytes.Equal(lpm.GetLpm().Value, []byte{198, 18, 2, 0}) {
		t.Errorf("lpm = %v, %v", lpm, err)
	}
	if _, err := v.matchField(field(p4configv1.MatchField_LPM, 32), "198.18.2.1/24"); err == nil {
		t.Error("lpm with host bits set was accepted")
	}
	if fm, err := v.matchField(field(p4configv1.MatchField_LPM, 32), "0.0.0.0/0"); err != nil || fm != nil {
		t.Errorf("lpm /0 = %v, %v; want omitted", fm, err)
	}
	tern, err := v.matchField(field(p4configv1.MatchField_TERNARY, 32), "203.0.113.0&&&255.255.255.0")
	if err != nil || !bytes.Equal(tern.GetTernary().Mask, []byte{255, 255, 255, 0}) {
		t.Errorf("ternary = %v, %v", tern, err)
	}
	if _, err := v.matchField(field(p4configv1.MatchField_TERNARY, 8), "7&&&0x3"); err == nil {
		t.Error("ternary value outside its mask was accepted")
	}
	exact, err := v.matchField(field(p4configv1.MatchField_TERNARY, 8), json.Number("17"))
	if err != nil || !bytes.Equal(exact.GetTernary().Mask, []byte{0xff}) {
		t.Errorf("ternary without mask = %v, %v; want an all-ones mask", exact, err)
	}
	rng, err := v.matchField(field(p4configv1.MatchField_RANGE, 16), "40000-40100")
	if err != nil || !bytes.Equal(rng.GetRange().Low, []byte{0x9c, 0x40}) || !bytes.Equal(rng.GetRange().High, []byte{0x9c, 0xa4}) {
		t.Errorf("range = %v, %v", rng, err)
	}
	if _, err := v.matchField(field(p4configv1.MatchField_RANGE, 16), "2000-1000"); err == nil {
		t.Error("inverted range was accepted")
	}
	if fm, err := v.matchField(field(p4configv1.MatchField_RANGE, 16), "0-65535"); err != nil || fm != nil {
		t.Errorf("full range = %v, %v; want omitted", fm, err)
	}
	if fm, err := v.matchField(field(p4configv1.MatchField_TERNARY, 8), "*"); err != nil || fm != nil {
		t.Errorf("* = %v, %v; want omitted", fm, err)
	}
}

func TestMatchersAndCaptures(t *testing.T) {
	v := vars{"x": 5}
	for _, tc := range []struct {
		in  any
		got uint64
		ok  bool
	}{
		{json.Number("1500"), 1500, true},
		{json.Number("1500"), 1501, false},
		{"*", 99, true},
		{"!0", 0, false},
		{"!0", 3, true},
		{"1-10", 10, true},
		{"1-10", 11, false},
		{"$x", 5, true},
	} {
		m, err := v.parseMatcher(tc.in, 32)
		if err != nil {
			t.Fatalf("parseMatcher(%v): %v", tc.in, err)
		}
		if ok := m.check(tc.got, v); ok != tc.ok {
			t.Errorf("%v matches %d = %v, want %v", tc.in, tc.got, ok, tc.ok)
		}
	}
	m, _ := v.parseMatcher("?rtt", 32)
	if !m.check(1234, v) || v["rtt"] != 1234 {
		t.Errorf("capture ?rtt: vars = %v", v)
	}
}
