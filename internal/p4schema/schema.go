// Package p4schema compiles a P4Info into the lookup structures every part that speaks
// P4Runtime needs: objects by name (full name, alias, or the name without p4c's leading dot) and
// by ID, match fields and action params by name and by ID, and the bit widths values are fitted
// to (by the bytestring rules of internal/p4bytes). The operator's client (internal/upfclient), the
// software UPF's P4Runtime server (internal/softupf/p4rt) and data plane, and the packet vector
// runner (test/vectors) all resolve the P4Info through it, so that they agree on what a name
// means and reject the same P4Infos.
package p4schema

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Schema is a compiled P4Info. It is immutable and safe to share.
type Schema struct {
	Info *p4configv1.P4Info
	// Tables, Registers, Counters, Meters and Digests in ID order (the order of wildcard reads).
	Tables    []*Table
	Registers []*Register
	Counters  []*Counter
	Meters    []*Meter
	Digests   []*Digest
	// PacketIn and PacketOut are the controller headers; nil when the program has none.
	PacketIn, PacketOut *ControllerHeader

	tables    index[*Table]
	actions   index[*Action]
	registers index[*Register]
	counters  index[*Counter]
	meters    index[*Meter]
	digests   index[*Digest]
}

// Table is a table and what a write or read is checked against.
type Table struct {
	ID   uint32
	Name string
	Size int64 // 0: none given
	// Fields are the match fields in ID order; FieldIndex maps an ID to its position.
	Fields     []Field
	FieldIndex map[uint32]int
	fieldNames map[string]int
	// Actions are the table's action references and their scope.
	Actions map[uint32]p4configv1.ActionRef_Scope
	// NeedsPriority: a ternary, range or optional field (P4Runtime spec 9.1).
	NeedsPriority bool
	// ConstDefault is the constant default action's ID (0: none); InitialDefault the program's
	// default action, nil when the P4Info names none.
	ConstDefault   uint32
	InitialDefault *p4v1.Action
	IsConst        bool
	Indirect       bool // an action profile or selector
	IdleTimeout    bool // NOTIFY_CONTROL
	HasDirect      bool // direct counters or meters attached
}

// Field is one match field.
type Field struct {
	ID    uint32
	Name  string
	Width int
	Kind  p4configv1.MatchField_MatchType
}

// Field returns the match field called name.
func (t *Table) Field(name string) (*Field, error) {
	if i, ok := t.fieldNames[name]; ok {
		return &t.Fields[i], nil
	}
	return nil, fmt.Errorf("table %q has no match field %q (have %s)", t.Name, name, joinNames(t.Fields, func(f Field) string { return f.Name }))
}

// Action is an action and its parameters.
type Action struct {
	ID   uint32
	Name string
	// Params are in ID order; ParamIndex maps an ID to its position.
	Params     []Param
	ParamIndex map[uint32]int
	paramNames map[string]int
}

// Param is an action parameter or a controller header field.
type Param struct {
	ID    uint32
	Name  string
	Width int
}

// Param returns the parameter called name.
func (a *Action) Param(name string) (*Param, error) {
	if p, ok := a.LookupParam(name); ok {
		return p, nil
	}
	return nil, fmt.Errorf("action %q has no parameter %q (have %s)", a.Name, name, joinNames(a.Params, func(p Param) string { return p.Name }))
}

// LookupParam is Param for callers that expect misses (a mirror asking every entry for its usage
// cell): no error is built.
func (a *Action) LookupParam(name string) (*Param, bool) {
	i, ok := a.paramNames[name]
	if !ok {
		return nil, false
	}
	return &a.Params[i], true
}

// Register is a register array of bit<Width> cells.
type Register struct {
	ID    uint32
	Name  string
	Size  int64
	Width int
}

// Counter is an indexed counter.
type Counter struct {
	ID   uint32
	Name string
	Size int64
	Unit p4configv1.CounterSpec_Unit
}

// Meter is an indexed meter.
type Meter struct {
	ID   uint32
	Name string
	Size int64
	Unit p4configv1.MeterSpec_Unit
	Type p4configv1.MeterSpec_Type // which configurations it takes (P4Runtime spec 9.5)
}

// Digest is a digest and its members: a struct's members in order, or one member named after
// the digest for a bit<W> digest.
type Digest struct {
	ID       uint32
	Name     string
	Members  []Member
	IsStruct bool
}

// Member is a digest member.
type Member struct {
	Name  string
	Width int
}

// ControllerHeader is a @controller_header (packet_in or packet_out): its fields in P4Info order.
type ControllerHeader struct {
	Fields []Param
	Index  map[uint32]int // field ID -> position
	ByName map[string]int
}

// Compile checks a P4Info and builds its schema. Errors name the offending object. Match kinds
// other than exact, LPM, ternary, range and optional, and values that are not bit<W> (or a new
// type translated to one), are not supported.
func Compile(info *p4configv1.P4Info) (*Schema, error) {
	if info == nil {
		return nil, fmt.Errorf("no P4Info")
	}
	s := &Schema{Info: info, tables: newIndex[*Table]("table"), actions: newIndex[*Action]("action"),
		registers: newIndex[*Register]("register"), counters: newIndex[*Counter]("counter"), meters: newIndex[*Meter]("meter"), digests: newIndex[*Digest]("digest")}
	seen := map[uint32]string{}
	claim := func(kind string, p *p4configv1.Preamble) error {
		if p.GetId() == 0 {
			return fmt.Errorf("%s %q has no id", kind, p.GetName())
		}
		if prev, ok := seen[p.GetId()]; ok {
			return fmt.Errorf("%s %q reuses id %d of %s", kind, p.GetName(), p.GetId(), prev)
		}
		seen[p.GetId()] = kind + " " + p.GetName()
		return nil
	}

	for _, a := range info.GetActions() {
		if err := claim("action", a.GetPreamble()); err != nil {
			return nil, err
		}
		x := &Action{ID: a.GetPreamble().GetId(), Name: a.GetPreamble().GetName()}
		for _, p := range a.GetParams() {
			if p.GetBitwidth() <= 0 {
				return nil, fmt.Errorf("action %q param %q: bitwidth %d", x.Name, p.GetName(), p.GetBitwidth())
			}
			x.Params = append(x.Params, Param{ID: p.GetId(), Name: p.GetName(), Width: int(p.GetBitwidth())})
		}
		var err error
		if x.ParamIndex, x.paramNames, err = byIDOrder(x.Params, func(p Param) (uint32, string) { return p.ID, p.Name }); err != nil {
			return nil, fmt.Errorf("action %q: param %w", x.Name, err)
		}
		s.actions.add(a.GetPreamble(), x)
	}

	for _, t := range info.GetTables() {
		if err := claim("table", t.GetPreamble()); err != nil {
			return nil, err
		}
		x, err := compileTable(t, s.actions.byID)
		if err != nil {
			return nil, err
		}
		s.Tables = append(s.Tables, x)
		s.tables.add(t.GetPreamble(), x)
	}

	for _, r := range info.GetRegisters() {
		if err := claim("register", r.GetPreamble()); err != nil {
			return nil, err
		}
		w, err := bitWidth(info, r.GetTypeSpec())
		if err != nil {
			return nil, fmt.Errorf("register %q: %w", r.GetPreamble().GetName(), err)
		}
		if r.GetSize() <= 0 {
			return nil, fmt.Errorf("register %q: size %d", r.GetPreamble().GetName(), r.GetSize())
		}
		x := &Register{ID: r.GetPreamble().GetId(), Name: r.GetPreamble().GetName(), Size: int64(r.GetSize()), Width: w}
		s.Registers = append(s.Registers, x)
		s.registers.add(r.GetPreamble(), x)
	}

	for _, c := range info.GetCounters() {
		if err := claim("counter", c.GetPreamble()); err != nil {
			return nil, err
		}
		if c.GetSize() <= 0 {
			return nil, fmt.Errorf("counter %q: size %d", c.GetPreamble().GetName(), c.GetSize())
		}
		x := &Counter{ID: c.GetPreamble().GetId(), Name: c.GetPreamble().GetName(), Size: c.GetSize(), Unit: c.GetSpec().GetUnit()}
		s.Counters = append(s.Counters, x)
		s.counters.add(c.GetPreamble(), x)
	}

	for _, m := range info.GetMeters() {
		if err := claim("meter", m.GetPreamble()); err != nil {
			return nil, err
		}
		if m.GetSize() <= 0 {
			return nil, fmt.Errorf("meter %q: size %d", m.GetPreamble().GetName(), m.GetSize())
		}
		x := &Meter{ID: m.GetPreamble().GetId(), Name: m.GetPreamble().GetName(), Size: m.GetSize(), Unit: m.GetSpec().GetUnit(), Type: m.GetSpec().GetType()}
		s.Meters = append(s.Meters, x)
		s.meters.add(m.GetPreamble(), x)
	}

	for _, d := range info.GetDigests() {
		if err := claim("digest", d.GetPreamble()); err != nil {
			return nil, err
		}
		x, err := compileDigest(info, d)
		if err != nil {
			return nil, err
		}
		s.Digests = append(s.Digests, x)
		s.digests.add(d.GetPreamble(), x)
	}

	for _, h := range info.GetControllerPacketMetadata() {
		if err := claim("controller header", h.GetPreamble()); err != nil {
			return nil, err
		}
		x := &ControllerHeader{}
		for _, m := range h.GetMetadata() {
			if m.GetBitwidth() <= 0 {
				return nil, fmt.Errorf("controller header %q field %q: bitwidth %d", h.GetPreamble().GetName(), m.GetName(), m.GetBitwidth())
			}
			x.Fields = append(x.Fields, Param{ID: m.GetId(), Name: m.GetName(), Width: int(m.GetBitwidth())})
		}
		var err error
		if x.Index, x.ByName, err = positions(x.Fields, func(p Param) (uint32, string) { return p.ID, p.Name }); err != nil {
			return nil, fmt.Errorf("controller header %q: metadata %w", h.GetPreamble().GetName(), err)
		}
		switch h.GetPreamble().GetName() {
		case "packet_in":
			s.PacketIn = x
		case "packet_out":
			s.PacketOut = x
		}
	}

	slices.SortFunc(s.Tables, func(a, b *Table) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(s.Registers, func(a, b *Register) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(s.Counters, func(a, b *Counter) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(s.Meters, func(a, b *Meter) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(s.Digests, func(a, b *Digest) int { return cmp.Compare(a.ID, b.ID) })
	return s, nil
}

func compileTable(t *p4configv1.Table, actions map[uint32]*Action) (*Table, error) {
	x := &Table{
		ID: t.GetPreamble().GetId(), Name: t.GetPreamble().GetName(), Size: t.GetSize(),
		Actions:      map[uint32]p4configv1.ActionRef_Scope{},
		ConstDefault: t.GetConstDefaultActionId(),
		IsConst:      t.GetIsConstTable(),
		Indirect:     t.GetImplementationId() != 0,
		IdleTimeout:  t.GetIdleTimeoutBehavior() == p4configv1.Table_NOTIFY_CONTROL,
		HasDirect:    len(t.GetDirectResourceIds()) > 0,
	}
	for _, f := range t.GetMatchFields() {
		kind := f.GetMatchType()
		switch kind {
		case p4configv1.MatchField_EXACT, p4configv1.MatchField_LPM:
		case p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
			x.NeedsPriority = true
		default:
			return nil, fmt.Errorf("table %q field %q: match kind %v%s is not supported", x.Name, f.GetName(), kind, f.GetOtherMatchType())
		}
		if f.GetBitwidth() <= 0 {
			return nil, fmt.Errorf("table %q field %q: bitwidth %d", x.Name, f.GetName(), f.GetBitwidth())
		}
		x.Fields = append(x.Fields, Field{ID: f.GetId(), Name: f.GetName(), Width: int(f.GetBitwidth()), Kind: kind})
	}
	var err error
	if x.FieldIndex, x.fieldNames, err = byIDOrder(x.Fields, func(f Field) (uint32, string) { return f.ID, f.Name }); err != nil {
		return nil, fmt.Errorf("table %q: match field %w", x.Name, err)
	}
	for _, ref := range t.GetActionRefs() {
		if _, ok := actions[ref.GetId()]; !ok {
			return nil, fmt.Errorf("table %q refers to unknown action id %d", x.Name, ref.GetId())
		}
		x.Actions[ref.GetId()] = ref.GetScope()
	}
	if d := t.GetInitialDefaultAction(); d.GetActionId() != 0 {
		a := &p4v1.Action{ActionId: d.GetActionId()}
		for _, arg := range d.GetArguments() {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: arg.GetParamId(), Value: arg.GetValue()})
		}
		x.InitialDefault = a
	} else if x.ConstDefault != 0 {
		x.InitialDefault = &p4v1.Action{ActionId: x.ConstDefault}
	}
	return x, nil
}

func compileDigest(info *p4configv1.P4Info, d *p4configv1.Digest) (*Digest, error) {
	x := &Digest{ID: d.GetPreamble().GetId(), Name: d.GetPreamble().GetName()}
	st := d.GetTypeSpec().GetStruct()
	if st == nil {
		w, err := bitWidth(info, d.GetTypeSpec())
		if err != nil {
			return nil, fmt.Errorf("digest %q: %w", x.Name, err)
		}
		x.Members = []Member{{Name: x.Name, Width: w}}
		return x, nil
	}
	spec, ok := info.GetTypeInfo().GetStructs()[st.GetName()]
	if !ok {
		return nil, fmt.Errorf("digest %q: struct %q is not in the P4Info's type_info", x.Name, st.GetName())
	}
	x.IsStruct = true
	for _, m := range spec.GetMembers() {
		w, err := bitWidth(info, m.GetTypeSpec())
		if err != nil {
			return nil, fmt.Errorf("digest %q member %q: %w", x.Name, m.GetName(), err)
		}
		x.Members = append(x.Members, Member{Name: m.GetName(), Width: w})
	}
	return x, nil
}

// bitWidth reads the width of a bit<W> type, or of a new type P4Runtime translates to one.
func bitWidth(info *p4configv1.P4Info, t *p4configv1.P4DataTypeSpec) (int, error) {
	if w := t.GetBitstring().GetBit().GetBitwidth(); w > 0 {
		return int(w), nil
	}
	if nt := t.GetNewType(); nt != nil {
		spec := info.GetTypeInfo().GetNewTypes()[nt.GetName()]
		if tr := spec.GetTranslatedType(); tr != nil && tr.GetSdnBitwidth() > 0 {
			return int(tr.GetSdnBitwidth()), nil
		}
		if orig := spec.GetOriginalType(); orig != nil {
			return bitWidth(info, orig)
		}
	}
	return 0, fmt.Errorf("only bit<W> values are supported, not %v", t)
}

// byIDOrder sorts xs by ID and returns the position of each ID and name; IDs must be nonzero
// and distinct.
func byIDOrder[T any](xs []T, key func(T) (uint32, string)) (map[uint32]int, map[string]int, error) {
	slices.SortFunc(xs, func(a, b T) int {
		ia, _ := key(a)
		ib, _ := key(b)
		return cmp.Compare(ia, ib)
	})
	return positions(xs, key)
}

// positions maps each element's ID and name to its place in xs.
func positions[T any](xs []T, key func(T) (uint32, string)) (map[uint32]int, map[string]int, error) {
	ids, names := make(map[uint32]int, len(xs)), make(map[string]int, len(xs))
	for i, x := range xs {
		id, name := key(x)
		if _, dup := ids[id]; dup || id == 0 {
			return nil, nil, fmt.Errorf("id %d is zero or used twice", id)
		}
		ids[id], names[name] = i, i
	}
	return ids, names, nil
}

// index finds objects by ID and by name: the full name, the alias, and the name without p4c's
// leading dot; the first object to claim a name keeps it.
type index[T any] struct {
	kind   string
	byID   map[uint32]T
	byName map[string]T
	names  []string // full names, for errors
}

func newIndex[T any](kind string) index[T] {
	return index[T]{kind: kind, byID: map[uint32]T{}, byName: map[string]T{}}
}

func (x *index[T]) add(p *p4configv1.Preamble, v T) {
	x.byID[p.GetId()] = v
	x.names = append(x.names, p.GetName())
	for _, n := range []string{p.GetName(), strings.TrimPrefix(p.GetName(), "."), p.GetAlias()} {
		if _, taken := x.byName[n]; n != "" && !taken {
			x.byName[n] = v
		}
	}
}

func (x *index[T]) id(id uint32) (T, bool) {
	v, ok := x.byID[id]
	return v, ok
}

func (x *index[T]) name(n string) (T, error) {
	if v, ok := x.byName[n]; ok {
		return v, nil
	}
	var zero T
	sorted := slices.Clone(x.names)
	sort.Strings(sorted)
	return zero, fmt.Errorf("the P4Info has no %s %q (it has %s)", x.kind, n, strings.Join(sorted, ", "))
}

func joinNames[T any](xs []T, name func(T) string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return strings.Join(out, ", ")
}

// Table returns the table called name.
func (s *Schema) Table(name string) (*Table, error) { return s.tables.name(name) }

// TableByID returns the table with that ID.
func (s *Schema) TableByID(id uint32) (*Table, bool) { return s.tables.id(id) }

// Action returns the action called name.
func (s *Schema) Action(name string) (*Action, error) { return s.actions.name(name) }

// ActionByID returns the action with that ID.
func (s *Schema) ActionByID(id uint32) (*Action, bool) { return s.actions.id(id) }

// Register returns the register called name.
func (s *Schema) Register(name string) (*Register, error) { return s.registers.name(name) }

// RegisterByID returns the register with that ID.
func (s *Schema) RegisterByID(id uint32) (*Register, bool) { return s.registers.id(id) }

// Counter returns the counter called name.
func (s *Schema) Counter(name string) (*Counter, error) { return s.counters.name(name) }

// CounterByID returns the counter with that ID.
func (s *Schema) CounterByID(id uint32) (*Counter, bool) { return s.counters.id(id) }

// Meter returns the meter called name.
func (s *Schema) Meter(name string) (*Meter, error) { return s.meters.name(name) }

// MeterByID returns the meter with that ID.
func (s *Schema) MeterByID(id uint32) (*Meter, bool) { return s.meters.id(id) }

// Digest returns the digest called name.
func (s *Schema) Digest(name string) (*Digest, error) { return s.digests.name(name) }

// DigestByID returns the digest with that ID.
func (s *Schema) DigestByID(id uint32) (*Digest, bool) { return s.digests.id(id) }
