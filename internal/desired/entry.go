// Package desired decides which P4Runtime state a UPF should hold for a set of Junction objects:
// pure functions of their inputs (the objects and the indexes allocated to them), by P4Info
// names, never IDs. The controllers gather the inputs, call these functions and write the
// difference to the switch; tests call them directly.
package desired

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// MatchKind is a P4 match kind.
type MatchKind int

const (
	Exact MatchKind = iota
	LPM
	Ternary
	Range
)

// Match is one match field of an entry. Values are big-endian and as wide as the field.
type Match struct {
	Field     string
	Kind      MatchKind
	Value     []byte // exact, lpm, ternary
	Mask      []byte // ternary
	PrefixLen int32  // lpm
	Low, High []byte // range
}

// Param is one action parameter, big-endian and as wide as the parameter.
type Param struct {
	Name  string
	Value []byte
}

// Entry is one table entry by P4Info names.
type Entry struct {
	Table    string
	Match    []Match
	Action   string
	Params   []Param
	Priority int32
}

// Key identifies the entry within its table (what P4Runtime matches INSERT/MODIFY/DELETE on):
// "table|field=value/mask/prefix/low-high|...|p<priority>", values in hex. Built by appends, as
// the programmer keys every entry it is given.
func (e Entry) Key() string {
	b := make([]byte, 0, 64)
	b = append(b, e.Table...)
	for _, m := range e.Match {
		b = m.appendKey(append(b, '|'))
	}
	b = strconv.AppendInt(append(b, "|p"...), int64(e.Priority), 10)
	return string(b)
}

// Key identifies the match field's value.
func (m Match) Key() string { return string(m.appendKey(nil)) }

func (m Match) appendKey(b []byte) []byte {
	b = hex.AppendEncode(append(append(b, m.Field...), '='), m.Value)
	b = hex.AppendEncode(append(b, '/'), m.Mask)
	b = strconv.AppendInt(append(b, '/'), int64(m.PrefixLen), 10)
	b = hex.AppendEncode(append(b, '/'), m.Low)
	return hex.AppendEncode(append(b, '-'), m.High)
}

// SameAction reports whether two entries with the same key also carry the same action data,
// i.e. whether writing one over the other would change nothing.
func (e Entry) SameAction(o Entry) bool {
	if e.Action != o.Action || len(e.Params) != len(o.Params) {
		return false
	}
	for i := range e.Params {
		if e.Params[i].Name != o.Params[i].Name || string(e.Params[i].Value) != string(o.Params[i].Value) {
			return false
		}
	}
	return true
}

func u8(v uint8) []byte   { return []byte{v} }
func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func addr(a netip.Addr) []byte {
	b := a.As4()
	return b[:]
}

func port9(n int32) []byte { return u16(uint16(n) & 0x1ff) }

func mac(s string) ([]byte, error) {
	var b [6]byte
	if _, err := fmt.Sscanf(strings.ToLower(s), "%02x:%02x:%02x:%02x:%02x:%02x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]); err != nil {
		return nil, fmt.Errorf("MAC address %q: %w", s, err)
	}
	return b[:], nil
}

func parseAddr(field, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("%s: %q is not an IPv4 address", field, s)
	}
	return a, nil
}

func parsePrefix(field, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s: %q is not an IPv4 prefix", field, s)
	}
	return p.Masked(), nil
}

// prefixMask is the 4-byte netmask of an IPv4 prefix length (a shift by 32 yields 0 in Go).
func prefixMask(bits int) []byte { return u32(^uint32(0) << (32 - bits)) }

// Client is the entry in the P4Runtime client's form, resolved against a P4Info by
// upfclient.Schema.Build: the one conversion from the desired state to the wire.
func (e Entry) Client() upfclient.Entry {
	out := upfclient.Entry{Table: e.Table, Action: e.Action, Priority: e.Priority}
	kinds := [...]p4configv1.MatchField_MatchType{Exact: p4configv1.MatchField_EXACT, LPM: p4configv1.MatchField_LPM,
		Ternary: p4configv1.MatchField_TERNARY, Range: p4configv1.MatchField_RANGE}
	for _, m := range e.Match {
		out.Match = append(out.Match, upfclient.Match{Field: m.Field, Kind: kinds[m.Kind], Value: m.Value, Mask: m.Mask,
			PrefixLen: m.PrefixLen, Low: m.Low, High: m.High})
	}
	if e.Action != "" {
		out.Params = make(map[string][]byte, len(e.Params))
		for _, p := range e.Params {
			out.Params[p.Name] = p.Value
		}
	}
	return out
}
