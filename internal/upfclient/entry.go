package upfclient

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/junction-atsss/junction/internal/p4bytes"
	"github.com/junction-atsss/junction/internal/p4schema"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Entry is a table entry by names, turned into a *p4v1.TableEntry by Schema.Build:
//
//	Entry{
//		Table:  "sessions",
//		Match:  []Match{Exact("session_addr", IPv4(addr))},
//		Action: "set_session",
//		Params: map[string][]byte{"user_idx": Uint(7), ...},
//	}
//
// Values may have leading zero bytes; Build sends them in canonical form (spec 8.4).
type Entry struct {
	Table string
	// Match lists the key fields. Exact fields are required; a ternary, lpm, range or optional
	// field that is left out (or given as a don't-care: mask 0, prefix 0, full range) matches
	// anything.
	Match []Match
	// Action names one of the table's actions; Params gives every one of its parameters.
	Action string
	Params map[string][]byte
	// Priority is required (> 0, higher wins) for tables with ternary, range or optional
	// fields and must be 0 otherwise.
	Priority int32
	// Default makes this the table's default entry (no Match, no Priority; MODIFY only).
	Default bool
}

// Match is one key field; build it with Exact, LPM, Ternary, Range or Optional.
type Match struct {
	Field     string
	Kind      p4configv1.MatchField_MatchType
	Value     []byte // exact, lpm, ternary, optional
	Mask      []byte // ternary
	PrefixLen int32  // lpm
	Low, High []byte // range
}

// Exact matches a field equal to v.
func Exact(field string, v []byte) Match {
	return Match{Field: field, Kind: p4configv1.MatchField_EXACT, Value: v}
}

// LPM matches the top prefixLen bits of v; bits of v beyond the prefix are cleared.
func LPM(field string, v []byte, prefixLen int32) Match {
	return Match{Field: field, Kind: p4configv1.MatchField_LPM, Value: v, PrefixLen: prefixLen}
}

// Ternary matches v under mask; bits of v outside the mask are cleared.
func Ternary(field string, v, mask []byte) Match {
	return Match{Field: field, Kind: p4configv1.MatchField_TERNARY, Value: v, Mask: mask}
}

// Range matches low <= field <= high.
func Range(field string, low, high []byte) Match {
	return Match{Field: field, Kind: p4configv1.MatchField_RANGE, Low: low, High: high}
}

// Optional matches a field equal to v (an optional field left out matches anything).
func Optional(field string, v []byte) Match {
	return Match{Field: field, Kind: p4configv1.MatchField_OPTIONAL, Value: v}
}

// Insert, Modify and Delete wrap a table entry in an Update.
func Insert(te *p4v1.TableEntry) *p4v1.Update { return tableUpdate(p4v1.Update_INSERT, te) }

// Modify wraps a table entry in a MODIFY Update.
func Modify(te *p4v1.TableEntry) *p4v1.Update { return tableUpdate(p4v1.Update_MODIFY, te) }

// Delete wraps a table entry in a DELETE Update (only the key matters).
func Delete(te *p4v1.TableEntry) *p4v1.Update { return tableUpdate(p4v1.Update_DELETE, te) }

func tableUpdate(t p4v1.Update_Type, te *p4v1.TableEntry) *p4v1.Update {
	return &p4v1.Update{Type: t, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
}

// CloneSession builds an update of a clone session of the packet replication engine, one
// replica per egress port: the redundant steering mode needs REDUNDANT_CLONE_SESSION
// (docs/pipeline.md). Use INSERT, MODIFY or DELETE (DELETE needs no ports).
func CloneSession(t p4v1.Update_Type, sessionID uint32, ports ...uint32) *p4v1.Update {
	cs := &p4v1.CloneSessionEntry{SessionId: sessionID}
	for _, p := range ports {
		// egress_port rather than the 1.4 bytes "port": older BMv2 and Stratum builds only
		// know this one, and every 1.4 server still accepts it.
		cs.Replicas = append(cs.Replicas, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: p}, Instance: 1})
	}
	return &p4v1.Update{Type: t, Entity: &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
		PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs},
		},
	}}}
}

// Build checks e against the P4Info and returns the table entry with IDs, canonical values,
// match fields sorted by field ID and params by param ID. Errors name the table, field, action
// or param at fault.
func (s *Schema) Build(e Entry) (*p4v1.TableEntry, error) {
	t, err := s.ps.Table(e.Table)
	if err != nil {
		return nil, err
	}
	te := &p4v1.TableEntry{TableId: t.ID, Priority: e.Priority, IsDefaultAction: e.Default}
	if e.Default {
		if len(e.Match) > 0 || e.Priority != 0 {
			return nil, fmt.Errorf("table %q: the default entry has no match and no priority", t.Name)
		}
	} else {
		if te.Match, err = buildMatch(t, e.Match); err != nil {
			return nil, err
		}
		switch {
		case t.NeedsPriority && e.Priority <= 0:
			return nil, fmt.Errorf("table %q: priority must be > 0 (the table has ternary, range or optional fields)", t.Name)
		case !t.NeedsPriority && e.Priority != 0:
			return nil, fmt.Errorf("table %q: priority must be 0 (the table has only exact and lpm fields)", t.Name)
		}
	}
	if e.Action == "" {
		if len(e.Params) > 0 {
			return nil, fmt.Errorf("table %q: params given without an action", t.Name)
		}
		return te, nil // a key for DELETE or a read filter
	}
	a, err := s.buildAction(t, e.Action, e.Params, e.Default)
	if err != nil {
		return nil, err
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	return te, nil
}

func buildMatch(t *p4schema.Table, ms []Match) ([]*p4v1.FieldMatch, error) {
	out := make([]*p4v1.FieldMatch, 0, len(ms))
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		f, err := t.Field(m.Field)
		if err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("table %q field %q: given twice", t.Name, f.Name)
		}
		seen[f.Name] = true
		if m.Kind != f.Kind {
			return nil, fmt.Errorf("table %q field %q: %s match given for a %s field", t.Name, f.Name, p4bytes.MatchKindName(m.Kind), p4bytes.MatchKindName(f.Kind))
		}
		fm, err := buildField(t.Name, f, m)
		if err != nil {
			return nil, err
		}
		if fm != nil {
			out = append(out, fm)
		}
	}
	for _, f := range t.Fields {
		if f.Kind == p4configv1.MatchField_EXACT && !seen[f.Name] {
			return nil, fmt.Errorf("table %q: exact field %q is missing", t.Name, f.Name)
		}
	}
	slices.SortFunc(out, func(a, b *p4v1.FieldMatch) int { return cmp.Compare(a.FieldId, b.FieldId) })
	return out, nil
}

// buildField returns the field match, or nil for a don't-care (which P4Runtime wants omitted).
func buildField(table string, f *p4schema.Field, m Match) (*p4v1.FieldMatch, error) {
	// The error names the field (and part) once something failed: a good entry makes no text.
	fail := func(part string, err error) error {
		return fmt.Errorf("table %q field %q%s: %w", table, f.Name, part, err)
	}
	fm := &p4v1.FieldMatch{FieldId: f.ID}
	width := int32(f.Width)
	switch f.Kind {
	case p4configv1.MatchField_EXACT, p4configv1.MatchField_OPTIONAL:
		v, err := fit(m.Value, width)
		if err != nil {
			return nil, fail("", err)
		}
		if f.Kind == p4configv1.MatchField_EXACT {
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}
		} else {
			fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v}}
		}
	case p4configv1.MatchField_LPM:
		if m.PrefixLen < 0 || m.PrefixLen > width {
			return nil, fail("", fmt.Errorf("prefix length %d outside 0..%d", m.PrefixLen, width))
		}
		if m.PrefixLen == 0 {
			return nil, nil
		}
		v, err := fit(m.Value, width)
		if err != nil {
			return nil, fail("", err)
		}
		v = and(v, prefixMask(m.PrefixLen, width))
		fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: m.PrefixLen}}
	case p4configv1.MatchField_TERNARY:
		v, err := fit(m.Value, width)
		if err != nil {
			return nil, fail(" value", err)
		}
		mask, err := fit(m.Mask, width)
		if err != nil {
			return nil, fail(" mask", err)
		}
		if isZero(mask) {
			return nil, nil
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: and(v, mask), Mask: mask}}
	case p4configv1.MatchField_RANGE:
		lo, err := fit(m.Low, width)
		if err != nil {
			return nil, fail(" low", err)
		}
		hi, err := fit(m.High, width)
		if err != nil {
			return nil, fail(" high", err)
		}
		if compareValue(lo, hi) > 0 {
			return nil, fail("", fmt.Errorf("low 0x%x is above high 0x%x", lo, hi))
		}
		if isZero(lo) && equalValue(hi, p4bytes.MaxValue(f.Width)) {
			return nil, nil
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: lo, High: hi}}
	}
	return fm, nil
}

func (s *Schema) buildAction(t *p4schema.Table, name string, params map[string][]byte, asDefault bool) (*p4v1.Action, error) {
	a, err := s.ps.Action(name)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", t.Name, err)
	}
	scope, ok := t.Actions[a.ID]
	switch {
	case !ok:
		return nil, fmt.Errorf("table %q: action %q is not one of the table's actions", t.Name, a.Name)
	case asDefault && scope == p4configv1.ActionRef_TABLE_ONLY:
		return nil, fmt.Errorf("table %q: action %q cannot be the default action (@tableonly)", t.Name, a.Name)
	case !asDefault && scope == p4configv1.ActionRef_DEFAULT_ONLY:
		return nil, fmt.Errorf("table %q: action %q can only be the default action (@defaultonly)", t.Name, a.Name)
	}
	for name := range params {
		if _, err := a.Param(name); err != nil {
			return nil, err
		}
	}
	out := &p4v1.Action{ActionId: a.ID, Params: make([]*p4v1.Action_Param, 0, len(a.Params))}
	for _, p := range a.Params { // in ID order
		raw, ok := params[p.Name]
		if !ok {
			return nil, fmt.Errorf("action %q: param %q is missing", a.Name, p.Name)
		}
		v, err := fit(raw, int32(p.Width))
		if err != nil {
			return nil, fmt.Errorf("action %q param %q: %w", a.Name, p.Name, err)
		}
		out.Params = append(out.Params, &p4v1.Action_Param{ParamId: p.ID, Value: v})
	}
	return out, nil
}

// Decode names the parts of a table entry (as read back from the device).
func (s *Schema) Decode(te *p4v1.TableEntry) (Entry, error) {
	t, ok := s.ps.TableByID(te.GetTableId())
	if !ok {
		return Entry{}, fmt.Errorf("table id %d is not in the P4Info", te.GetTableId())
	}
	e := Entry{Table: t.Name, Priority: te.GetPriority(), Default: te.GetIsDefaultAction()}
	for _, fm := range te.GetMatch() {
		i, ok := t.FieldIndex[fm.GetFieldId()]
		if !ok {
			return Entry{}, fmt.Errorf("table %q: match field id %d is not in the P4Info", t.Name, fm.GetFieldId())
		}
		f := &t.Fields[i]
		m := Match{Field: f.Name, Kind: f.Kind}
		switch x := fm.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			m.Value = x.Exact.GetValue()
		case *p4v1.FieldMatch_Lpm:
			m.Value, m.PrefixLen = x.Lpm.GetValue(), x.Lpm.GetPrefixLen()
		case *p4v1.FieldMatch_Ternary_:
			m.Value, m.Mask = x.Ternary.GetValue(), x.Ternary.GetMask()
		case *p4v1.FieldMatch_Range_:
			m.Low, m.High = x.Range.GetLow(), x.Range.GetHigh()
		case *p4v1.FieldMatch_Optional_:
			m.Value = x.Optional.GetValue()
		default:
			return Entry{}, fmt.Errorf("table %q field %q: unsupported match type %T", t.Name, f.Name, x)
		}
		e.Match = append(e.Match, m)
	}
	if act := te.GetAction().GetAction(); act != nil {
		a, ok := s.ps.ActionByID(act.GetActionId())
		if !ok {
			return Entry{}, fmt.Errorf("table %q: action id %d is not in the P4Info", t.Name, act.GetActionId())
		}
		e.Action = a.Name
		e.Params = make(map[string][]byte, len(act.GetParams()))
		for _, p := range act.GetParams() {
			i, ok := a.ParamIndex[p.GetParamId()]
			if !ok {
				return Entry{}, fmt.Errorf("action %q: param id %d is not in the P4Info", a.Name, p.GetParamId())
			}
			e.Params[a.Params[i].Name] = p.GetValue()
		}
	}
	return e, nil
}

// EntryKey identifies a table entry on the device: table, match and priority, with values in
// canonical form. Two entries with the same key cannot both be installed, so desired and
// read-back entries can be paired by it.
func EntryKey(te *p4v1.TableEntry) string {
	b := make([]byte, 0, 64)
	b = binary.BigEndian.AppendUint32(b, te.GetTableId())
	b = binary.BigEndian.AppendUint32(b, uint32(te.GetPriority()))
	if te.GetIsDefaultAction() {
		b = append(b, 'd')
	}
	ms := slices.Clone(te.GetMatch())
	slices.SortFunc(ms, func(a, b *p4v1.FieldMatch) int { return cmp.Compare(a.GetFieldId(), b.GetFieldId()) })
	for _, fm := range ms {
		b = binary.BigEndian.AppendUint32(b, fm.GetFieldId())
		switch x := fm.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			b = appendValues(b, 'e', x.Exact.GetValue())
		case *p4v1.FieldMatch_Lpm:
			b = appendValues(b, 'l', x.Lpm.GetValue(), Uint(uint64(x.Lpm.GetPrefixLen())))
		case *p4v1.FieldMatch_Ternary_:
			b = appendValues(b, 't', x.Ternary.GetValue(), x.Ternary.GetMask())
		case *p4v1.FieldMatch_Range_:
			b = appendValues(b, 'r', x.Range.GetLow(), x.Range.GetHigh())
		case *p4v1.FieldMatch_Optional_:
			b = appendValues(b, 'o', x.Optional.GetValue())
		}
	}
	return string(b)
}

// SameEntry reports whether a and b have the same key and the same action and params:
// whether writing a over b would change nothing.
func SameEntry(a, b *p4v1.TableEntry) bool {
	if EntryKey(a) != EntryKey(b) {
		return false
	}
	x, y := a.GetAction().GetAction(), b.GetAction().GetAction()
	if x.GetActionId() != y.GetActionId() || len(x.GetParams()) != len(y.GetParams()) {
		return false
	}
	px := make(map[uint32][]byte, len(x.GetParams()))
	for _, p := range x.GetParams() {
		px[p.GetParamId()] = p.GetValue()
	}
	for _, p := range y.GetParams() {
		v, ok := px[p.GetParamId()]
		if !ok || !equalValue(v, p.GetValue()) {
			return false
		}
	}
	return true
}

func appendValues(b []byte, tag byte, vs ...[]byte) []byte {
	b = append(b, tag)
	for _, v := range vs {
		v = canonical(v)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// compareValue orders two values numerically.
func compareValue(a, b []byte) int {
	a, b = canonical(a), canonical(b)
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return cmp.Compare(a[i], b[i])
		}
	}
	return 0
}
