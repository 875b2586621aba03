package p4rt

import (
	"slices"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// schema is a P4Info compiled into lookup structures: everything the server checks a request
// against. It is immutable once built and shared by readers without locks.
type schema struct {
	info       *p4configv1.P4Info
	tables     map[uint32]*tableInfo
	tableIDs   []uint32 // sorted, for wildcard reads
	actions    map[uint32]*actionInfo
	registers  map[uint32]*registerInfo
	regIDs     []uint32
	counters   map[uint32]*counterInfo
	counterIDs []uint32
	digests    map[uint32]*digestInfo
	digestIDs  []uint32
	packetIn   *ctrlHeader // nil when the program has no packet_in header
	packetOut  *ctrlHeader
}

type tableInfo struct {
	id            uint32
	name          string
	size          int64 // 0: no limit given
	fields        []fieldInfo
	fieldIndex    map[uint32]int
	needsPriority bool // a ternary, range or optional field
	actions       map[uint32]p4configv1.ActionRef_Scope
	constDefault  uint32
	initDefault   *p4v1.Action // P4 default action, nil when the P4Info names none
	isConst       bool
	indirect      bool
	idleTimeout   bool
	hasDirect     bool // direct counters or meters attached
}

type fieldInfo struct {
	id    uint32
	name  string
	width int
	kind  p4configv1.MatchField_MatchType
}

type actionInfo struct {
	id         uint32
	name       string
	params     []paramInfo
	paramIndex map[uint32]int
}

type paramInfo struct {
	id    uint32
	name  string
	width int
}

type registerInfo struct {
	id    uint32
	name  string
	size  int64
	width int
}

type counterInfo struct {
	id   uint32
	name string
	size int64
	unit p4configv1.CounterSpec_Unit
}

type digestInfo struct {
	id       uint32
	name     string
	members  []string // struct member names, or one name for a bit<W> digest
	widths   []int
	isStruct bool
}

// ctrlHeader is a @controller_header (packet_in or packet_out).
type ctrlHeader struct {
	fields []paramInfo
	index  map[uint32]int
	byName map[string]int
}

// compileP4Info checks a P4Info for what this server needs to serve it and builds its schema.
// Errors are INVALID_ARGUMENT and name the offending object.
func compileP4Info(info *p4configv1.P4Info) (*schema, error) {
	s := &schema{
		info:      info,
		tables:    map[uint32]*tableInfo{},
		actions:   map[uint32]*actionInfo{},
		registers: map[uint32]*registerInfo{},
		counters:  map[uint32]*counterInfo{},
		digests:   map[uint32]*digestInfo{},
	}
	seen := map[uint32]string{}
	claim := func(kind string, p *p4configv1.Preamble) error {
		if p == nil || p.Id == 0 {
			return errf(codes.InvalidArgument, "p4info: %s %q has no id", kind, p.GetName())
		}
		if prev, ok := seen[p.Id]; ok {
			return errf(codes.InvalidArgument, "p4info: %s %q reuses id %d of %s", kind, p.Name, p.Id, prev)
		}
		seen[p.Id] = kind + " " + p.Name
		return nil
	}

	for _, a := range info.GetActions() {
		if err := claim("action", a.Preamble); err != nil {
			return nil, err
		}
		ai := &actionInfo{id: a.Preamble.Id, name: a.Preamble.Name, paramIndex: map[uint32]int{}}
		for _, p := range a.Params {
			if p.Bitwidth <= 0 {
				return nil, errf(codes.InvalidArgument, "p4info: action %q param %q: bitwidth %d", ai.name, p.Name, p.Bitwidth)
			}
			if _, dup := ai.paramIndex[p.Id]; dup {
				return nil, errf(codes.InvalidArgument, "p4info: action %q: param id %d used twice", ai.name, p.Id)
			}
			ai.paramIndex[p.Id] = 0
			ai.params = append(ai.params, paramInfo{id: p.Id, name: p.Name, width: int(p.Bitwidth)})
		}
		slices.SortFunc(ai.params, func(x, y paramInfo) int { return cmpU32(x.id, y.id) })
		for i, p := range ai.params {
			ai.paramIndex[p.id] = i
		}
		s.actions[ai.id] = ai
	}

	for _, t := range info.GetTables() {
		if err := claim("table", t.Preamble); err != nil {
			return nil, err
		}
		ti, err := compileTable(t, s.actions)
		if err != nil {
			return nil, err
		}
		s.tables[ti.id] = ti
		s.tableIDs = append(s.tableIDs, ti.id)
	}

	for _, r := range info.GetRegisters() {
		if err := claim("register", r.Preamble); err != nil {
			return nil, err
		}
		w := bitWidth(r.TypeSpec)
		if w <= 0 {
			return nil, errf(codes.InvalidArgument, "p4info: register %q: only bit<W> elements are supported", r.Preamble.Name)
		}
		if r.Size <= 0 {
			return nil, errf(codes.InvalidArgument, "p4info: register %q: size %d", r.Preamble.Name, r.Size)
		}
		s.registers[r.Preamble.Id] = &registerInfo{id: r.Preamble.Id, name: r.Preamble.Name, size: int64(r.Size), width: w}
		s.regIDs = append(s.regIDs, r.Preamble.Id)
	}

	for _, c := range info.GetCounters() {
		if err := claim("counter", c.Preamble); err != nil {
			return nil, err
		}
		if c.Size <= 0 {
			return nil, errf(codes.InvalidArgument, "p4info: counter %q: size %d", c.Preamble.Name, c.Size)
		}
		s.counters[c.Preamble.Id] = &counterInfo{id: c.Preamble.Id, name: c.Preamble.Name, size: c.Size, unit: c.GetSpec().GetUnit()}
		s.counterIDs = append(s.counterIDs, c.Preamble.Id)
	}

	for _, d := range info.GetDigests() {
		if err := claim("digest", d.Preamble); err != nil {
			return nil, err
		}
		di, err := compileDigest(d, info.GetTypeInfo())
		if err != nil {
			return nil, err
		}
		s.digests[di.id] = di
		s.digestIDs = append(s.digestIDs, di.id)
	}

	for _, h := range info.GetControllerPacketMetadata() {
		if err := claim("controller header", h.Preamble); err != nil {
			return nil, err
		}
		ch := &ctrlHeader{index: map[uint32]int{}, byName: map[string]int{}}
		for i, m := range h.Metadata {
			if m.Bitwidth <= 0 {
				return nil, errf(codes.InvalidArgument, "p4info: controller header %q field %q: bitwidth %d", h.Preamble.Name, m.Name, m.Bitwidth)
			}
			if _, dup := ch.index[m.Id]; dup {
				return nil, errf(codes.InvalidArgument, "p4info: controller header %q: metadata id %d used twice", h.Preamble.Name, m.Id)
			}
			ch.fields = append(ch.fields, paramInfo{id: m.Id, name: m.Name, width: int(m.Bitwidth)})
			ch.index[m.Id] = i
			ch.byName[m.Name] = i
		}
		switch h.Preamble.Name {
		case "packet_in":
			s.packetIn = ch
		case "packet_out":
			s.packetOut = ch
		}
	}

	for _, ids := range [][]uint32{s.tableIDs, s.regIDs, s.counterIDs, s.digestIDs} {
		slices.Sort(ids)
	}
	return s, nil
}

func compileTable(t *p4configv1.Table, actions map[uint32]*actionInfo) (*tableInfo, error) {
	ti := &tableInfo{
		id:           t.Preamble.Id,
		name:         t.Preamble.Name,
		size:         t.Size,
		fieldIndex:   map[uint32]int{},
		actions:      map[uint32]p4configv1.ActionRef_Scope{},
		constDefault: t.ConstDefaultActionId,
		isConst:      t.IsConstTable,
		indirect:     t.ImplementationId != 0,
		idleTimeout:  t.IdleTimeoutBehavior == p4configv1.Table_NOTIFY_CONTROL,
		hasDirect:    len(t.DirectResourceIds) > 0,
	}
	for _, f := range t.MatchFields {
		kind := f.GetMatchType()
		switch kind {
		case p4configv1.MatchField_EXACT, p4configv1.MatchField_LPM, p4configv1.MatchField_TERNARY,
			p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
		default:
			return nil, errf(codes.InvalidArgument, "p4info: table %q field %q: match kind %v%s is not supported",
				ti.name, f.Name, kind, f.GetOtherMatchType())
		}
		if f.Bitwidth <= 0 {
			return nil, errf(codes.InvalidArgument, "p4info: table %q field %q: bitwidth %d", ti.name, f.Name, f.Bitwidth)
		}
		if _, dup := ti.fieldIndex[f.Id]; dup || f.Id == 0 {
			return nil, errf(codes.InvalidArgument, "p4info: table %q: match field id %d is zero or used twice", ti.name, f.Id)
		}
		ti.fieldIndex[f.Id] = 0
		ti.fields = append(ti.fields, fieldInfo{id: f.Id, name: f.Name, width: int(f.Bitwidth), kind: kind})
		if kind == p4configv1.MatchField_TERNARY || kind == p4configv1.MatchField_RANGE || kind == p4configv1.MatchField_OPTIONAL {
			ti.needsPriority = true
		}
	}
	slices.SortFunc(ti.fields, func(x, y fieldInfo) int { return cmpU32(x.id, y.id) })
	for i, f := range ti.fields {
		ti.fieldIndex[f.id] = i
	}
	for _, ref := range t.ActionRefs {
		if _, ok := actions[ref.Id]; !ok {
			return nil, errf(codes.InvalidArgument, "p4info: table %q refers to unknown action id %d", ti.name, ref.Id)
		}
		ti.actions[ref.Id] = ref.Scope
	}
	if d := t.InitialDefaultAction; d != nil && d.ActionId != 0 {
		a := &p4v1.Action{ActionId: d.ActionId}
		for _, arg := range d.Arguments {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: arg.ParamId, Value: arg.Value})
		}
		ti.initDefault = a
	} else if t.ConstDefaultActionId != 0 {
		ti.initDefault = &p4v1.Action{ActionId: t.ConstDefaultActionId}
	}
	return ti, nil
}

func compileDigest(d *p4configv1.Digest, types *p4configv1.P4TypeInfo) (*digestInfo, error) {
	di := &digestInfo{id: d.Preamble.Id, name: d.Preamble.Name}
	if w := bitWidth(d.TypeSpec); w > 0 {
		di.members, di.widths = []string{d.Preamble.Name}, []int{w}
		return di, nil
	}
	st := d.GetTypeSpec().GetStruct()
	if st == nil {
		return nil, errf(codes.InvalidArgument, "p4info: digest %q: only struct or bit<W> digests are supported", di.name)
	}
	spec, ok := types.GetStructs()[st.Name]
	if !ok {
		return nil, errf(codes.InvalidArgument, "p4info: digest %q: struct %q is missing from type_info", di.name, st.Name)
	}
	di.isStruct = true
	for _, m := range spec.Members {
		w := bitWidth(m.TypeSpec)
		if w <= 0 {
			return nil, errf(codes.InvalidArgument, "p4info: digest %q member %q: only bit<W> members are supported", di.name, m.Name)
		}
		di.members = append(di.members, m.Name)
		di.widths = append(di.widths, w)
	}
	return di, nil
}

// bitWidth returns W for a bit<W> type spec, 0 otherwise.
func bitWidth(t *p4configv1.P4DataTypeSpec) int {
	return int(t.GetBitstring().GetBit().GetBitwidth())
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
