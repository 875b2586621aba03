package upfclient

import (
	"fmt"
	"slices"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// Schema resolves P4Info names to IDs and widths. The P4Info names are the API between the
// operator and every target (docs/pipeline.md); IDs are never hard-coded, so a recompiled
// program with new IDs needs no code change. A Schema is immutable and safe to share.
//
// p4runtime-go-client resolves names with a linear scan that returns 0 for an unknown name and
// numbers match fields and params by position; this one uses maps, the P4Info's own IDs, and
// errors that name what is missing.
type Schema struct {
	info      *p4configv1.P4Info
	tables    map[string]*tableSchema
	tablesID  map[uint32]*tableSchema
	actions   map[string]*actionSchema
	actionsID map[uint32]*actionSchema
	registers map[string]*registerSchema
	counters  map[string]*counterSchema
	digests   map[string]*digestSchema
	digestsID map[uint32]*digestSchema
	packetIn  map[uint32]metaSchema // controller header "packet_in", by metadata ID
}

type tableSchema struct {
	name          string
	id            uint32
	size          int64
	fields        []fieldSchema // in P4Info order
	fieldsByName  map[string]*fieldSchema
	fieldsByID    map[uint32]*fieldSchema
	actions       map[uint32]p4configv1.ActionRef_Scope
	needsPriority bool // has ternary, range or optional fields (spec 9.1)
}

type fieldSchema struct {
	name  string
	id    uint32
	width int32
	kind  p4configv1.MatchField_MatchType
}

type actionSchema struct {
	name       string
	id         uint32
	params     []paramSchema
	paramsName map[string]*paramSchema
	paramsID   map[uint32]*paramSchema
}

type paramSchema struct {
	name  string
	id    uint32
	width int32
}

type registerSchema struct {
	name  string
	id    uint32
	width int32
	size  int32
}

type counterSchema struct {
	name string
	id   uint32
	size int64
}

type digestSchema struct {
	name    string
	id      uint32
	members []metaSchema // struct members in order; one unnamed member for a plain bitstring
}

type metaSchema struct {
	name  string
	width int32
}

// NewSchema compiles a P4Info. Objects are found by their full name and, when it differs, by
// their alias.
func NewSchema(info *p4configv1.P4Info) (*Schema, error) {
	if info == nil {
		return nil, fmt.Errorf("p4info is nil")
	}
	s := &Schema{
		info:      info,
		tables:    map[string]*tableSchema{},
		tablesID:  map[uint32]*tableSchema{},
		actions:   map[string]*actionSchema{},
		actionsID: map[uint32]*actionSchema{},
		registers: map[string]*registerSchema{},
		counters:  map[string]*counterSchema{},
		digests:   map[string]*digestSchema{},
		digestsID: map[uint32]*digestSchema{},
		packetIn:  map[uint32]metaSchema{},
	}
	for _, a := range info.GetActions() {
		as := &actionSchema{
			name: a.GetPreamble().GetName(), id: a.GetPreamble().GetId(),
			paramsName: map[string]*paramSchema{}, paramsID: map[uint32]*paramSchema{},
		}
		for _, p := range a.GetParams() {
			as.params = append(as.params, paramSchema{name: p.GetName(), id: p.GetId(), width: p.GetBitwidth()})
		}
		for i := range as.params {
			p := &as.params[i]
			as.paramsName[p.name], as.paramsID[p.id] = p, p
		}
		s.actionsID[as.id] = as
		addNamed(s.actions, a.GetPreamble(), as)
	}
	for _, t := range info.GetTables() {
		ts := &tableSchema{
			name: t.GetPreamble().GetName(), id: t.GetPreamble().GetId(), size: t.GetSize(),
			fieldsByName: map[string]*fieldSchema{}, fieldsByID: map[uint32]*fieldSchema{},
			actions: map[uint32]p4configv1.ActionRef_Scope{},
		}
		for _, f := range t.GetMatchFields() {
			kind := f.GetMatchType()
			if kind == p4configv1.MatchField_UNSPECIFIED {
				return nil, fmt.Errorf("table %q field %q: match kind %q is not supported", ts.name, f.GetName(), f.GetOtherMatchType())
			}
			ts.fields = append(ts.fields, fieldSchema{name: f.GetName(), id: f.GetId(), width: f.GetBitwidth(), kind: kind})
			switch kind {
			case p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
				ts.needsPriority = true
			}
		}
		for i := range ts.fields {
			f := &ts.fields[i]
			ts.fieldsByName[f.name], ts.fieldsByID[f.id] = f, f
		}
		for _, r := range t.GetActionRefs() {
			ts.actions[r.GetId()] = r.GetScope()
		}
		s.tablesID[ts.id] = ts
		addNamed(s.tables, t.GetPreamble(), ts)
	}
	for _, r := range info.GetRegisters() {
		w, err := bitWidth(info, r.GetTypeSpec())
		if err != nil {
			return nil, fmt.Errorf("register %q: %w", r.GetPreamble().GetName(), err)
		}
		addNamed(s.registers, r.GetPreamble(), &registerSchema{
			name: r.GetPreamble().GetName(), id: r.GetPreamble().GetId(), width: w, size: r.GetSize(),
		})
	}
	for _, c := range info.GetCounters() {
		addNamed(s.counters, c.GetPreamble(), &counterSchema{
			name: c.GetPreamble().GetName(), id: c.GetPreamble().GetId(), size: c.GetSize(),
		})
	}
	for _, d := range info.GetDigests() {
		ds := &digestSchema{name: d.GetPreamble().GetName(), id: d.GetPreamble().GetId()}
		if st := d.GetTypeSpec().GetStruct(); st != nil {
			spec := info.GetTypeInfo().GetStructs()[st.GetName()]
			if spec == nil {
				return nil, fmt.Errorf("digest %q: struct %q is not in the P4Info type_info", ds.name, st.GetName())
			}
			for _, m := range spec.GetMembers() {
				w, err := bitWidth(info, m.GetTypeSpec())
				if err != nil {
					return nil, fmt.Errorf("digest %q member %q: %w", ds.name, m.GetName(), err)
				}
				ds.members = append(ds.members, metaSchema{name: m.GetName(), width: w})
			}
		} else {
			w, err := bitWidth(info, d.GetTypeSpec())
			if err != nil {
				return nil, fmt.Errorf("digest %q: %w", ds.name, err)
			}
			ds.members = []metaSchema{{width: w}}
		}
		s.digestsID[ds.id] = ds
		addNamed(s.digests, d.GetPreamble(), ds)
	}
	for _, h := range info.GetControllerPacketMetadata() {
		if h.GetPreamble().GetName() != "packet_in" {
			continue
		}
		for _, m := range h.GetMetadata() {
			s.packetIn[m.GetId()] = metaSchema{name: m.GetName(), width: m.GetBitwidth()}
		}
	}
	return s, nil
}

func addNamed[T any](m map[string]T, p *p4configv1.Preamble, v T) {
	m[p.GetName()] = v
	if a := p.GetAlias(); a != "" && a != p.GetName() {
		if _, taken := m[a]; !taken {
			m[a] = v
		}
	}
}

// bitWidth reads the width of a bit<W>/int<W> type, or of a P4Runtime-translated new type.
func bitWidth(info *p4configv1.P4Info, t *p4configv1.P4DataTypeSpec) (int32, error) {
	if bs := t.GetBitstring(); bs != nil {
		switch {
		case bs.GetBit() != nil:
			return bs.GetBit().GetBitwidth(), nil
		case bs.GetInt() != nil:
			return bs.GetInt().GetBitwidth(), nil
		}
	}
	if nt := t.GetNewType(); nt != nil {
		spec := info.GetTypeInfo().GetNewTypes()[nt.GetName()]
		if tr := spec.GetTranslatedType(); tr != nil {
			return tr.GetSdnBitwidth(), nil
		}
		if orig := spec.GetOriginalType(); orig != nil {
			return bitWidth(info, orig)
		}
	}
	return 0, fmt.Errorf("type %v is not a bit<W> bitstring", t)
}

// P4Info returns the P4Info the schema was built from. Do not modify it.
func (s *Schema) P4Info() *p4configv1.P4Info { return s.info }

// TableID resolves a table name.
func (s *Schema) TableID(name string) (uint32, error) {
	t, err := s.table(name)
	if err != nil {
		return 0, err
	}
	return t.id, nil
}

// MatchFieldID resolves a match field of a table.
func (s *Schema) MatchFieldID(table, field string) (uint32, error) {
	t, err := s.table(table)
	if err != nil {
		return 0, err
	}
	f := t.fieldsByName[field]
	if f == nil {
		return 0, fmt.Errorf("table %q has no match field %q", table, field)
	}
	return f.id, nil
}

// TableSize is the table's capacity from the P4Info (0 when unknown).
func (s *Schema) TableSize(name string) (int64, error) {
	t, err := s.table(name)
	if err != nil {
		return 0, err
	}
	return t.size, nil
}

// TableName names a table ID ("" when unknown).
func (s *Schema) TableName(id uint32) string {
	if t := s.tablesID[id]; t != nil {
		return t.name
	}
	return ""
}

// ActionID resolves an action name.
func (s *Schema) ActionID(name string) (uint32, error) {
	a := s.actions[name]
	if a == nil {
		return 0, fmt.Errorf("action %q is not in the P4Info", name)
	}
	return a.id, nil
}

// RegisterID resolves a register name.
func (s *Schema) RegisterID(name string) (uint32, error) {
	r, err := s.register(name)
	if err != nil {
		return 0, err
	}
	return r.id, nil
}

// CounterID resolves a counter name.
func (s *Schema) CounterID(name string) (uint32, error) {
	c := s.counters[name]
	if c == nil {
		return 0, fmt.Errorf("counter %q is not in the P4Info", name)
	}
	return c.id, nil
}

// DigestID resolves a digest name.
func (s *Schema) DigestID(name string) (uint32, error) {
	d := s.digests[name]
	if d == nil {
		return 0, fmt.Errorf("digest %q is not in the P4Info", name)
	}
	return d.id, nil
}

func (s *Schema) table(name string) (*tableSchema, error) {
	t := s.tables[name]
	if t == nil {
		return nil, fmt.Errorf("table %q is not in the P4Info (tables: %v)", name, s.tableNames())
	}
	return t, nil
}

func (s *Schema) register(name string) (*registerSchema, error) {
	r := s.registers[name]
	if r == nil {
		return nil, fmt.Errorf("register %q is not in the P4Info", name)
	}
	return r, nil
}

func (s *Schema) tableNames() []string {
	out := make([]string, 0, len(s.tablesID))
	for _, t := range s.tablesID {
		out = append(out, t.name)
	}
	slices.Sort(out)
	return out
}
