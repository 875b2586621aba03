package upfclient

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/p4bytes"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// kindsP4Info is a small P4Info with one field of every match kind, IDs deliberately out of
// declaration order, so that the builder's use of P4Info IDs (not positions) shows. The
// pipeline's own P4Info has no optional field; the integration tests use that one.
func kindsP4Info() *p4configv1.P4Info {
	mt := func(k p4configv1.MatchField_MatchType) *p4configv1.MatchField_MatchType_ {
		return &p4configv1.MatchField_MatchType_{MatchType: k}
	}
	return &p4configv1.P4Info{
		Tables: []*p4configv1.Table{{
			Preamble: &p4configv1.Preamble{Id: 0x02000007, Name: "ingress.kinds", Alias: "kinds"},
			MatchFields: []*p4configv1.MatchField{
				{Id: 5, Name: "addr", Bitwidth: 32, Match: mt(p4configv1.MatchField_EXACT)},
				{Id: 2, Name: "prefix", Bitwidth: 32, Match: mt(p4configv1.MatchField_LPM)},
				{Id: 3, Name: "tos", Bitwidth: 6, Match: mt(p4configv1.MatchField_TERNARY)},
				{Id: 1, Name: "port", Bitwidth: 16, Match: mt(p4configv1.MatchField_RANGE)},
				{Id: 4, Name: "proto", Bitwidth: 8, Match: mt(p4configv1.MatchField_OPTIONAL)},
			},
			ActionRefs: []*p4configv1.ActionRef{{Id: 0x01000002}, {Id: 0x01000003, Scope: p4configv1.ActionRef_DEFAULT_ONLY}},
			Size:       16,
		}, {
			Preamble:    &p4configv1.Preamble{Id: 0x02000008, Name: "exacts"},
			MatchFields: []*p4configv1.MatchField{{Id: 1, Name: "k", Bitwidth: 9, Match: mt(p4configv1.MatchField_EXACT)}},
			ActionRefs:  []*p4configv1.ActionRef{{Id: 0x01000002}},
		}},
		Actions: []*p4configv1.Action{
			{Preamble: &p4configv1.Preamble{Id: 0x01000002, Name: "set"}, Params: []*p4configv1.Action_Param{
				{Id: 2, Name: "mac", Bitwidth: 48}, {Id: 1, Name: "port", Bitwidth: 9},
			}},
			{Preamble: &p4configv1.Preamble{Id: 0x01000003, Name: "miss"}},
		},
	}
}

func mustSchema(t *testing.T, info *p4configv1.P4Info) *Schema {
	t.Helper()
	s, err := NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildUsesP4InfoIDsAndCanonicalValues(t *testing.T) {
	s := mustSchema(t, kindsP4Info())
	te, err := s.Build(Entry{
		Table: "kinds",
		Match: []Match{
			Optional("proto", []byte{0, 0, 17}),
			Exact("addr", IPv4(netip.MustParseAddr("0.0.1.2"))),
			LPM("prefix", IPv4(netip.MustParseAddr("10.1.2.3")), 8),
			Ternary("tos", []byte{0x3f}, []byte{0x0c}),
			Range("port", Uint(1000), Uint(2000)),
		},
		Action:   "set",
		Params:   map[string][]byte{"port": {0, 0, 3}, "mac": {0, 0, 0, 0, 0xaa, 0xbb}},
		Priority: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &p4v1.TableEntry{
		TableId: 0x02000007,
		Match: []*p4v1.FieldMatch{
			{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: []byte{0x03, 0xe8}, High: []byte{0x07, 0xd0}}}},
			{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 8}}},
			{FieldId: 3, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: []byte{0x0c}, Mask: []byte{0x0c}}}},
			{FieldId: 4, FieldMatchType: &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: []byte{17}}}},
			{FieldId: 5, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{1, 2}}}},
		},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: 0x01000002,
			Params:   []*p4v1.Action_Param{{ParamId: 1, Value: []byte{3}}, {ParamId: 2, Value: []byte{0xaa, 0xbb}}},
		}}},
		Priority: 10,
	}
	if !proto.Equal(te, want) {
		t.Fatalf("built\n%v\nwant\n%v", te, want)
	}

	// Decode names everything back.
	e, err := s.Decode(te)
	if err != nil {
		t.Fatal(err)
	}
	if e.Table != "ingress.kinds" || e.Action != "set" || len(e.Match) != 5 || !bytes.Equal(e.Params["mac"], []byte{0xaa, 0xbb}) {
		t.Fatalf("decoded %+v", e)
	}
	again, err := s.Build(Entry{Table: e.Table, Match: e.Match, Action: e.Action, Params: e.Params, Priority: e.Priority})
	if err != nil || !proto.Equal(again, te) {
		t.Fatalf("rebuilding the decoded entry: %v\n%v", err, again)
	}
}

func TestBuildOmitsDontCareMatches(t *testing.T) {
	s := mustSchema(t, kindsP4Info())
	te, err := s.Build(Entry{
		Table: "kinds",
		Match: []Match{
			Exact("addr", Uint(1)),
			LPM("prefix", Uint(0xffffffff), 0),
			Ternary("tos", Uint(5), Uint(0)),
			Range("port", Uint(0), Uint(0xffff)),
		},
		Action: "set", Params: map[string][]byte{"port": Uint(1), "mac": Uint(1)}, Priority: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(te.Match) != 1 || te.Match[0].FieldId != 5 {
		t.Fatalf("only the exact field must remain, got %v", te.Match)
	}
}

func TestBuildErrorsNameTheCulprit(t *testing.T) {
	s := mustSchema(t, kindsP4Info())
	params := map[string][]byte{"port": Uint(1), "mac": Uint(1)}
	exact := Exact("addr", Uint(1))
	for _, tc := range []struct {
		name  string
		entry Entry
		want  string
	}{
		{"an unknown table", Entry{Table: "nope"}, `no table "nope"`},
		{"an unknown field", Entry{Table: "kinds", Match: []Match{exact, Exact("dst", Uint(1))}, Action: "set", Params: params, Priority: 1}, `table "ingress.kinds" has no match field "dst"`},
		{"a missing exact field", Entry{Table: "kinds", Action: "set", Params: params, Priority: 1}, `exact field "addr" is missing`},
		{"a field given twice", Entry{Table: "kinds", Match: []Match{exact, exact}, Action: "set", Params: params, Priority: 1}, `field "addr": given twice`},
		{"the wrong match kind", Entry{Table: "kinds", Match: []Match{Exact("addr", Uint(1)), Exact("tos", Uint(1))}, Action: "set", Params: params, Priority: 1}, `field "tos": exact match given for a ternary field`},
		{"a value too wide", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(512))}, Action: "set", Params: params}, `field "k": value 0x0200 does not fit in 9 bits`},
		{"an invalid address", Entry{Table: "exacts", Match: []Match{Exact("k", IPv4(netip.MustParseAddr("::1")))}, Action: "set", Params: params}, `field "k": no value`},
		{"a missing priority", Entry{Table: "kinds", Match: []Match{exact}, Action: "set", Params: params}, `priority must be > 0`},
		{"a needless priority", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(1))}, Action: "set", Params: params, Priority: 3}, `priority must be 0`},
		{"an unknown action", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(1))}, Action: "fly"}, `no action "fly"`},
		{"an action of another table", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(1))}, Action: "miss"}, `action "miss" is not one of the table's actions`},
		{"a default-only action in an entry", Entry{Table: "kinds", Match: []Match{exact}, Action: "miss", Priority: 1}, `@defaultonly`},
		{"an unknown param", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(1))}, Action: "set", Params: map[string][]byte{"port": Uint(1), "mac": Uint(1), "vlan": Uint(1)}}, `action "set" has no parameter "vlan"`},
		{"a missing param", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(1))}, Action: "set", Params: map[string][]byte{"port": Uint(1)}}, `action "set": param "mac" is missing`},
		{"a param too wide", Entry{Table: "exacts", Match: []Match{Exact("k", Uint(1))}, Action: "set", Params: map[string][]byte{"port": Uint(1024), "mac": Uint(1)}}, `param "port": value 0x0400 does not fit in 9 bits`},
		{"a reversed range", Entry{Table: "kinds", Match: []Match{exact, Range("port", Uint(9), Uint(3))}, Action: "set", Params: params, Priority: 1}, `low 0x09 is above high 0x03`},
		{"a prefix too long", Entry{Table: "kinds", Match: []Match{exact, LPM("prefix", Uint(1), 33)}, Action: "set", Params: params, Priority: 1}, `prefix length 33 outside 0..32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Build(tc.entry)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDefaultEntry(t *testing.T) {
	s := mustSchema(t, kindsP4Info())
	te, err := s.Build(Entry{Table: "kinds", Default: true, Action: "miss"})
	if err != nil {
		t.Fatal(err)
	}
	if !te.IsDefaultAction || te.GetAction().GetAction().GetActionId() != 0x01000003 {
		t.Fatalf("default entry %v", te)
	}
	if _, err := s.Build(Entry{Table: "kinds", Default: true, Priority: 2}); err == nil {
		t.Fatal("a default entry with a priority must be refused")
	}
}

func TestEntryKeyAndSameEntry(t *testing.T) {
	s := mustSchema(t, kindsP4Info())
	build := func(k uint64, port uint64) *p4v1.TableEntry {
		te, err := s.Build(Entry{Table: "exacts", Match: []Match{Exact("k", Uint(k))}, Action: "set",
			Params: map[string][]byte{"port": Uint(port), "mac": Uint(1)}})
		if err != nil {
			t.Fatal(err)
		}
		return te
	}
	a, b, c := build(1, 1), build(1, 2), build(2, 1)
	if EntryKey(a) != EntryKey(b) || EntryKey(a) == EntryKey(c) {
		t.Fatal("EntryKey must depend on the key only")
	}
	// A value with leading zeros, as a device that is not canonical might return it.
	padded := proto.Clone(a).(*p4v1.TableEntry)
	padded.Match[0].GetExact().Value = []byte{0, 1}
	padded.GetAction().GetAction().Params[0].Value = []byte{0, 0, 1}
	if EntryKey(padded) != EntryKey(a) || !SameEntry(a, padded) {
		t.Fatal("padded values must compare equal")
	}
	if SameEntry(a, b) {
		t.Fatal("different params must differ")
	}
}

func TestBytestrings(t *testing.T) {
	for _, tc := range []struct {
		got, want []byte
	}{
		{Uint(0), []byte{0}},
		{Uint(1), []byte{1}},
		{Uint(0x1234), []byte{0x12, 0x34}},
		{IPv4(netip.MustParseAddr("10.0.0.1")), []byte{10, 0, 0, 1}},
		{IPv4(netip.MustParseAddr("0.0.0.0")), []byte{0}},
		{IPv4(netip.MustParseAddr("::ffff:0.1.0.2")), []byte{1, 0, 2}},
		{MAC([]byte{0, 0, 0, 0, 0, 5}), []byte{5}},
		{prefixMask(8, 32), []byte{0xff, 0, 0, 0}},
		{prefixMask(3, 9), []byte{0x01, 0xc0}},
		{p4bytes.MaxValue(int(9)), []byte{0x01, 0xff}},
	} {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("got %x, want %x", tc.got, tc.want)
		}
	}
	if v, err := DecodeUint([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 2}); err != nil || v != 0x102 {
		t.Errorf("DecodeUint = %d, %v", v, err)
	}
	if _, err := DecodeUint(bytes.Repeat([]byte{1}, 9)); err == nil {
		t.Error("a 72-bit value must not decode")
	}
}

func TestCookieIsStableAndSensitive(t *testing.T) {
	a := kindsP4Info()
	c := Cookie(a, []byte("cfg"))
	if c == 0 || Cookie(kindsP4Info(), []byte("cfg")) != c {
		t.Fatal("the cookie must be stable and non-zero")
	}
	if Cookie(a, []byte("cfh")) == c {
		t.Fatal("the device config must change the cookie")
	}
	b := kindsP4Info()
	b.Tables[0].Size = 17
	if Cookie(b, []byte("cfg")) == c {
		t.Fatal("the P4Info must change the cookie")
	}
}

func TestBackoffGrowsToMaxWithJitter(t *testing.T) {
	b := Backoff{Initial: 100, Max: 1000, Factor: 2, Jitter: 0.1}.withDefaults()
	for n, want := range map[int]float64{1: 100, 2: 200, 3: 400, 4: 800, 5: 1000, 50: 1000} {
		for range 20 {
			d := float64(b.delay(n))
			if d < want*0.9 || d > want*1.1 {
				t.Fatalf("delay(%d) = %v, want %v ±10%%", n, d, want)
			}
		}
	}
}

func TestParamNamesAreInIDOrder(t *testing.T) {
	s := mustSchema(t, kindsP4Info())
	if got, err := s.ParamNames("set"); err != nil || strings.Join(got, " ") != "port mac" {
		t.Errorf("ParamNames(set) = %v, %v; want port mac (the P4Info's IDs 1, 2)", got, err)
	}
	if _, err := s.ParamNames("fly"); err == nil || !strings.Contains(err.Error(), `no action "fly"`) {
		t.Errorf("an unknown action: %v", err)
	}
}
