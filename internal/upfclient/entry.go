package upfclient

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/junction-atsss/junction/internal/p4bytes"

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
	t, err := s.table(e.Table)
	if err != nil {
		return nil, err
	}
	te := &p4v1.TableEntry{TableId: t.id, Priority: e.Priority, IsDefaultAction: e.Default}
	if e.Default {
		if len(e.Match) > 0 || e.Priority != 0 {
			return nil, fmt.Errorf("table %q: the default entry has no match and no priority", t.name)
		}
	} else {
		if te.Match, err = t.buildMatch(e.Match); err != nil {
			return nil, err
		}
		switch {
		case t.needsPriority && e.Priority <= 0:
			return nil, fmt.Errorf("table %q: priority must be > 0 (the table has ternary, range or optional fields)", t.name)
		case !t.needsPriority && e.Priority != 0:
			return nil, fmt.Errorf("table %q: priority must be 0 (the table has only exact and lpm fields)", t.name)
		}
	}
	if e.Action == "" {
		if len(e.Params) > 0 {
			return nil, fmt.Errorf("table %q: params given without an action", t.name)
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

func (t *tableSchema) buildMatch(ms []Match) ([]*p4v1.FieldMatch, error) {
	out := make([]*p4v1.FieldMatch, 0, len(ms))
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		f := t.fieldsByName[m.Field]
		if f == nil {
			return nil, fmt.Errorf("table %q has no match field %q (fields: %v)", t.name, m.Field, t.fieldNames())
		}
		if seen[f.name] {
			return nil, fmt.Errorf("table %q field %q: given twice", t.name, f.name)
		}
		seen[f.name] = true
		if m.Kind != f.kind {
			return nil, fmt.Errorf("table %q field %q: %s match given for a %s field", t.name, f.name, p4bytes.MatchKindName(m.Kind), p4bytes.MatchKindName(f.kind))
		}
		fm, err := f.build(t.name, m)
		if err != nil {
			return nil, err
		}
		if fm != nil {
			out = append(out, fm)
		}
	}
	for i := range t.fields {
		if f := &t.fields[i]; f.kind == p4configv1.MatchField_EXACT && !seen[f.name] {
			return nil, fmt.Errorf("table %q: exact field %q is missing", t.name, f.name)
		}
	}
	slices.SortFunc(out, func(a, b *p4v1.FieldMatch) int { return cmpU32(a.FieldId, b.FieldId) })
	return out, nil
}

// build returns the field match, or nil for a don't-care (which P4Runtime wants omitted).
func (f *fieldSchema) build(table string, m Match) (*p4v1.FieldMatch, error) {
	what := fmt.Sprintf("table %q field %q", table, f.name)
	fm := &p4v1.FieldMatch{FieldId: f.id}
	switch f.kind {
	case p4configv1.MatchField_EXACT, p4configv1.MatchField_OPTIONAL:
		v, err := fit(m.Value, f.width, what)
		if err != nil {
			return nil, err
		}
		if f.kind == p4configv1.MatchField_EXACT {
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}
		} else {
			fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v}}
		}
	case p4configv1.MatchField_LPM:
		if m.PrefixLen < 0 || m.PrefixLen > f.width {
			return nil, fmt.Errorf("%s: prefix length %d outside 0..%d", what, m.PrefixLen, f.width)
		}
		if m.PrefixLen == 0 {
			return nil, nil
		}
		v, err := fit(m.Value, f.width, what)
		if err != nil {
			return nil, err
		}
		v = and(v, prefixMask(m.PrefixLen, f.width))
		fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: m.PrefixLen}}
	case p4configv1.MatchField_TERNARY:
		v, err := fit(m.Value, f.width, what+" value")
		if err != nil {
			return nil, err
		}
		mask, err := fit(m.Mask, f.width, what+" mask")
		if err != nil {
			return nil, err
		}
		if isZero(mask) {
			return nil, nil
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: and(v, mask), Mask: mask}}
	case p4configv1.MatchField_RANGE:
		lo, err := fit(m.Low, f.width, what+" low")
		if err != nil {
			return nil, err
		}
		hi, err := fit(m.High, f.width, what+" high")
		if err != nil {
			return nil, err
		}
		if compareValue(lo, hi) > 0 {
			return nil, fmt.Errorf("%s: low 0x%x is above high 0x%x", what, lo, hi)
		}
		if isZero(lo) && equalValue(hi, p4bytes.MaxValue(int(f.width))) {
			return nil, nil
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: lo, High: hi}}
	}
	return fm, nil
}

func (s *Schema) buildAction(t *tableSchema, name string, params map[string][]byte, asDefault bool) (*p4v1.Action, error) {
	a := s.actions[name]
	if a == nil {
		return nil, fmt.Errorf("table %q: action %q is not in the P4Info", t.name, name)
	}
	scope, ok := t.actions[a.id]
	switch {
	case !ok:
		return nil, fmt.Errorf("table %q: action %q is not one of the table's actions", t.name, a.name)
	case asDefault && scope == p4configv1.ActionRef_TABLE_ONLY:
		return nil, fmt.Errorf("table %q: action %q cannot be the default action (@tableonly)", t.name, a.name)
	case !asDefault && scope == p4configv1.ActionRef_DEFAULT_ONLY:
		return nil, fmt.Errorf("table %q: action %q can only be the default action (@defaultonly)", t.name, a.name)
	}
	return a.build(params)
}

func (a *actionSchema) build(params map[string][]byte) (*p4v1.Action, error) {
	for name := range params {
		if a.paramsName[name] == nil {
			return nil, fmt.Errorf("action %q has no param %q (params: %v)", a.name, name, a.paramNames())
		}
	}
	out := &p4v1.Action{ActionId: a.id, Params: make([]*p4v1.Action_Param, 0, len(a.params))}
	for _, p := range a.params {
		raw, ok := params[p.name]
		if !ok {
			return nil, fmt.Errorf("action %q: param %q is missing", a.name, p.name)
		}
		v, err := fit(raw, p.width, fmt.Sprintf("action %q param %q", a.name, p.name))
		if err != nil {
			return nil, err
		}
		out.Params = append(out.Params, &p4v1.Action_Param{ParamId: p.id, Value: v})
	}
	slices.SortFunc(out.Params, func(x, y *p4v1.Action_Param) int { return cmpU32(x.ParamId, y.ParamId) })
	return out, nil
}

// Decode names the parts of a table entry (as read back from the device).
func (s *Schema) Decode(te *p4v1.TableEntry) (Entry, error) {
	t := s.tablesID[te.GetTableId()]
	if t == nil {
		return Entry{}, fmt.Errorf("table id %d is not in the P4Info", te.GetTableId())
	}
	e := Entry{Table: t.name, Priority: te.GetPriority(), Default: te.GetIsDefaultAction()}
	for _, fm := range te.GetMatch() {
		f := t.fieldsByID[fm.GetFieldId()]
		if f == nil {
			return Entry{}, fmt.Errorf("table %q: match field id %d is not in the P4Info", t.name, fm.GetFieldId())
		}
		m := Match{Field: f.name, Kind: f.kind}
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
			return Entry{}, fmt.Errorf("table %q field %q: unsupported match type %T", t.name, f.name, x)
		}
		e.Match = append(e.Match, m)
	}
	if act := te.GetAction().GetAction(); act != nil {
		a := s.actionsID[act.GetActionId()]
		if a == nil {
			return Entry{}, fmt.Errorf("table %q: action id %d is not in the P4Info", t.name, act.GetActionId())
		}
		e.Action = a.name
		e.Params = make(map[string][]byte, len(act.GetParams()))
		for _, p := range act.GetParams() {
			ps := a.paramsID[p.GetParamId()]
			if ps == nil {
				return Entry{}, fmt.Errorf("action %q: param id %d is not in the P4Info", a.name, p.GetParamId())
			}
			e.Params[ps.name] = p.GetValue()
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
	slices.SortFunc(ms, func(a, b *p4v1.FieldMatch) int { return cmpU32(a.GetFieldId(), b.GetFieldId()) })
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

func (t *tableSchema) fieldNames() []string {
	out := make([]string, len(t.fields))
	for i, f := range t.fields {
		out[i] = f.name
	}
	return out
}

func (a *actionSchema) paramNames() []string {
	return slices.Sorted(maps.Keys(a.paramsName))
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareValue orders two values numerically.
func compareValue(a, b []byte) int {
	a, b = canonical(a), canonical(b)
	if len(a) != len(b) {
		return cmpU32(uint32(len(a)), uint32(len(b)))
	}
	for i := range a {
		if a[i] != b[i] {
			return cmpU32(uint32(a[i]), uint32(b[i]))
		}
	}
	return 0
}
