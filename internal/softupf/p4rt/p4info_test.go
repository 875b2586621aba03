package p4rt

import (
	"github.com/junction-atsss/junction/internal/p4bytes"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// A small P4Info exercising every match kind, action scopes, a register, a counter, meters of
// each type, a digest and the packet_in / packet_out controller headers. It is not Junction's pipeline: the server
// is generic.

const (
	actSetPort  = 0x01000001 // set_port(port: 9, mac: 48)
	actDrop     = 0x01000002 // drop()
	actMiss     = 0x01000003 // miss(), @defaultonly where referenced
	actSetValue = 0x01000004 // set_value(value: 32)
	actFwdOnly  = 0x01000005 // fwd_only(), @tableonly where referenced

	tblExact    = 0x02000001 // addr: exact 32; size 4
	tblLPM      = 0x02000002 // dst: lpm 32
	tblTernary  = 0x02000003 // src: ternary 32, proto: ternary 8
	tblRange    = 0x02000004 // port: range 16, addr: exact 32
	tblOptional = 0x02000005 // flag: optional 8
	tblBig      = 0x02000006 // key: exact 32; size 1M
	tblConstDef = 0x02000007 // k: exact 8; const default drop

	regRTT   = 0x16000001 // bit<32>[16]
	regSmall = 0x16000002 // bit<8>[4]
	ctrDrops = 0x12000001 // [32], packets and bytes
	mtrMBR   = 0x14000001 // [8], bytes, two-rate three-color (the default type)
	mtrSR3   = 0x14000002 // [2], packets, single-rate three-color
	mtrSR2   = 0x14000003 // [2], bytes, single-rate two-color
	dgReport = 0x17000001 // {addr: 32, kind: 8}

	hdrPacketIn  = 0x04000001
	hdrPacketOut = 0x04000002
)

func preamble(id uint32, name string) *p4configv1.Preamble {
	return &p4configv1.Preamble{Id: id, Name: name, Alias: name}
}

func field(id uint32, name string, width int32, kind p4configv1.MatchField_MatchType) *p4configv1.MatchField {
	return &p4configv1.MatchField{Id: id, Name: name, Bitwidth: width, Match: &p4configv1.MatchField_MatchType_{MatchType: kind}}
}

func bitType(w int32) *p4configv1.P4DataTypeSpec {
	return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{Bitstring: &p4configv1.P4BitstringLikeTypeSpec{
		TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{Bit: &p4configv1.P4BitTypeSpec{Bitwidth: w}},
	}}}
}

func refs(ids ...uint32) []*p4configv1.ActionRef {
	var out []*p4configv1.ActionRef
	for _, id := range ids {
		out = append(out, &p4configv1.ActionRef{Id: id})
	}
	return out
}

func testP4Info() *p4configv1.P4Info {
	exact, lpm, ternary, rng, optional := p4configv1.MatchField_EXACT, p4configv1.MatchField_LPM,
		p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL
	exactRefs := append(refs(actSetPort, actDrop),
		&p4configv1.ActionRef{Id: actMiss, Scope: p4configv1.ActionRef_DEFAULT_ONLY},
		&p4configv1.ActionRef{Id: actFwdOnly, Scope: p4configv1.ActionRef_TABLE_ONLY})
	return &p4configv1.P4Info{
		PkgInfo: &p4configv1.PkgInfo{Arch: "v1model"},
		Actions: []*p4configv1.Action{
			{Preamble: preamble(actSetPort, "set_port"), Params: []*p4configv1.Action_Param{
				{Id: 1, Name: "port", Bitwidth: 9}, {Id: 2, Name: "mac", Bitwidth: 48}}},
			{Preamble: preamble(actDrop, "drop")},
			{Preamble: preamble(actMiss, "miss")},
			{Preamble: preamble(actSetValue, "set_value"), Params: []*p4configv1.Action_Param{{Id: 1, Name: "value", Bitwidth: 32}}},
			{Preamble: preamble(actFwdOnly, "fwd_only")},
		},
		Tables: []*p4configv1.Table{
			{Preamble: preamble(tblExact, "exact_t"), MatchFields: []*p4configv1.MatchField{field(1, "addr", 32, exact)},
				ActionRefs: exactRefs, Size: 4, InitialDefaultAction: &p4configv1.TableActionCall{ActionId: actMiss}},
			{Preamble: preamble(tblLPM, "lpm_t"), MatchFields: []*p4configv1.MatchField{field(1, "dst", 32, lpm)},
				ActionRefs: refs(actSetPort, actDrop), Size: 64},
			{Preamble: preamble(tblTernary, "ternary_t"), MatchFields: []*p4configv1.MatchField{
				field(1, "src", 32, ternary), field(2, "proto", 8, ternary)}, ActionRefs: refs(actDrop, actSetPort), Size: 64},
			{Preamble: preamble(tblRange, "range_t"), MatchFields: []*p4configv1.MatchField{
				field(1, "port", 16, rng), field(2, "addr", 32, exact)}, ActionRefs: refs(actDrop), Size: 64},
			{Preamble: preamble(tblOptional, "optional_t"), MatchFields: []*p4configv1.MatchField{field(1, "flag", 8, optional)},
				ActionRefs: refs(actDrop), Size: 64},
			{Preamble: preamble(tblBig, "big_t"), MatchFields: []*p4configv1.MatchField{field(1, "key", 32, exact)},
				ActionRefs: refs(actSetValue), Size: 1 << 20},
			{Preamble: preamble(tblConstDef, "const_default_t"), MatchFields: []*p4configv1.MatchField{field(1, "k", 8, exact)},
				ActionRefs: refs(actDrop), Size: 8, ConstDefaultActionId: actDrop},
		},
		Registers: []*p4configv1.Register{
			{Preamble: preamble(regRTT, "rtt"), TypeSpec: bitType(32), Size: 16},
			{Preamble: preamble(regSmall, "small"), TypeSpec: bitType(8), Size: 4},
		},
		Counters: []*p4configv1.Counter{
			{Preamble: preamble(ctrDrops, "drops"), Spec: &p4configv1.CounterSpec{Unit: p4configv1.CounterSpec_BOTH}, Size: 32},
		},
		Meters: []*p4configv1.Meter{
			// Listed out of ID order: wildcard reads go by ID.
			{Preamble: preamble(mtrSR2, "sr2c"), Spec: &p4configv1.MeterSpec{Unit: p4configv1.MeterSpec_BYTES, Type: p4configv1.MeterSpec_SINGLE_RATE_TWO_COLOR}, Size: 2},
			{Preamble: preamble(mtrMBR, "mbr"), Spec: &p4configv1.MeterSpec{Unit: p4configv1.MeterSpec_BYTES}, Size: 8},
			{Preamble: preamble(mtrSR3, "sr3c"), Spec: &p4configv1.MeterSpec{Unit: p4configv1.MeterSpec_PACKETS, Type: p4configv1.MeterSpec_SINGLE_RATE_THREE_COLOR}, Size: 2},
		},
		Digests: []*p4configv1.Digest{
			{Preamble: preamble(dgReport, "reports"), TypeSpec: &p4configv1.P4DataTypeSpec{
				TypeSpec: &p4configv1.P4DataTypeSpec_Struct{Struct: &p4configv1.P4NamedType{Name: "report_t"}}}},
		},
		ControllerPacketMetadata: []*p4configv1.ControllerPacketMetadata{
			{Preamble: preamble(hdrPacketIn, "packet_in"), Metadata: []*p4configv1.ControllerPacketMetadata_Metadata{
				{Id: 1, Name: "ingress_port", Bitwidth: 9}, {Id: 2, Name: "_pad", Bitwidth: 7}}},
			{Preamble: preamble(hdrPacketOut, "packet_out"), Metadata: []*p4configv1.ControllerPacketMetadata_Metadata{
				{Id: 1, Name: "egress_port", Bitwidth: 9}, {Id: 2, Name: "_pad", Bitwidth: 6},
				{Id: 3, Name: "to_ingress", Bitwidth: 1}}},
		},
		TypeInfo: &p4configv1.P4TypeInfo{Structs: map[string]*p4configv1.P4StructTypeSpec{
			"report_t": {Members: []*p4configv1.P4StructTypeSpec_Member{
				{Name: "addr", TypeSpec: bitType(32)}, {Name: "kind", TypeSpec: bitType(8)}}},
		}},
	}
}

// Entity builders.

func ins(e *p4v1.Entity) *p4v1.Update { return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: e} }
func mod(e *p4v1.Entity) *p4v1.Update { return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: e} }
func del(e *p4v1.Entity) *p4v1.Update { return &p4v1.Update{Type: p4v1.Update_DELETE, Entity: e} }

func tableEnt(te *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

func exactM(id uint32, v ...byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

func lpmM(id uint32, plen int32, v ...byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: plen}}}
}

func ternaryM(id uint32, v, mask []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: mask}}}
}

func rangeM(id uint32, lo, hi []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: lo, High: hi}}}
}

func optionalM(id uint32, v ...byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v}}}
}

func action(id uint32, params ...[]byte) *p4v1.TableAction {
	a := &p4v1.Action{ActionId: id}
	for i, p := range params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
}

// setPort is set_port(port, mac) with canonical values.
func setPort(port uint64, mac uint64) *p4v1.TableAction {
	return action(actSetPort, p4bytes.Uint(port), p4bytes.Uint(mac))
}

// exactEntry is an exact_t entry for addr (4 bytes) forwarding to port.
func exactEntry(addr uint32, port uint64) *p4v1.Entity {
	return tableEnt(&p4v1.TableEntry{TableId: tblExact, Match: []*p4v1.FieldMatch{exactM(1, p4bytes.Uint(uint64(addr))...)}, Action: setPort(port, 0xaabbccddeeff)})
}

func bigEntry(key uint32) *p4v1.Entity {
	return tableEnt(&p4v1.TableEntry{TableId: tblBig, Match: []*p4v1.FieldMatch{exactM(1, p4bytes.Uint(uint64(key))...)},
		Action: action(actSetValue, p4bytes.Uint(uint64(key)*7))})
}

func registerEnt(id uint32, index *p4v1.Index, v []byte) *p4v1.Entity {
	re := &p4v1.RegisterEntry{RegisterId: id, Index: index}
	if v != nil {
		re.Data = &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: v}}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: re}}
}

func counterEnt(id uint32, index *p4v1.Index, data *p4v1.CounterData) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: index, Data: data}}}
}

func meterEnt(id uint32, index *p4v1.Index, cfg *p4v1.MeterConfig) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: id, Index: index, Config: cfg}}}
}

func digestEnt(id uint32, cfg *p4v1.DigestEntry_Config) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id, Config: cfg}}}
}

func cloneEnt(id uint32, reps ...*p4v1.Replica) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id, Replicas: reps}},
	}}}
}

func mcastEnt(id uint32, reps ...*p4v1.Replica) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: id, Replicas: reps}},
	}}}
}

func replica(port uint64, instance uint32) *p4v1.Replica {
	return &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: p4bytes.Uint(port)}, Instance: instance}
}

func idx(i int64) *p4v1.Index { return &p4v1.Index{Index: i} }
