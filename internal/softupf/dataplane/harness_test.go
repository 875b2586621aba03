package dataplane

// Test harness: a Pipeline committed with a P4Info, entries installed through p4rt.Target by
// name, frames pushed through Process, and everything the data plane sends recorded.

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/p4bytes"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/p4"
)

// events records digests and packet-ins.
type events struct {
	mu       sync.Mutex
	digests  [][][]byte
	ids      []uint32
	packetIn []packetIn
}

type packetIn struct {
	port  uint32
	frame []byte
}

func (e *events) Digest(id uint32, members [][]byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ids = append(e.ids, id)
	e.digests = append(e.digests, members)
}

func (e *events) PacketIn(port uint32, frame []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.packetIn = append(e.packetIn, packetIn{port, frame})
}

// wantPacketIns checks that the pipeline sent frames up, in order, each as from port.
func (h *harness) wantPacketIns(t *testing.T, port uint32, frames ...[]byte) {
	t.Helper()
	if len(h.ev.packetIn) != len(frames) {
		t.Fatalf("got %d packet-ins, want %d", len(h.ev.packetIn), len(frames))
	}
	for i, f := range frames {
		if pi := h.ev.packetIn[i]; pi.port != port || !bytes.Equal(pi.frame, f) {
			t.Errorf("packet-in %d: port %d %x, want port %d %x", i, pi.port, pi.frame, port, f)
		}
	}
}

// sink records what the pipeline transmits outside Process.
type sink struct {
	pool *Pool
	mu   sync.Mutex
	sent []output
}

type output struct {
	port  uint32
	frame []byte
}

func (s *sink) Transmit(pkts []*Packet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pkts {
		s.sent = append(s.sent, output{p.OutPort, slices.Clone(p.Frame())})
		s.pool.Put(p)
	}
}

func (s *sink) HasPort(port uint32) bool { return port >= 1 && port <= 4 }

type harness struct {
	t    testing.TB
	info *p4configv1.P4Info
	pool *Pool
	p    *Pipeline
	ev   *events
	sink *sink
	now  uint32
}

const cpuPort = 255

func newHarness(t testing.TB, opts ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, info: testP4Info(t), pool: NewPool(256), ev: &events{}}
	h.sink = &sink{pool: h.pool}
	cfg := Config{Pool: h.pool, Sink: h.sink, CPUPort: cpuPort, Now: func() uint32 { return h.now },
		MaxHeldPerUser: 8, MaxHeld: 16}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	p.SetEvents(h.ev)
	if err := p.CheckPipeline(h.info, nil); err != nil {
		t.Fatalf("CheckPipeline: %v", err)
	}
	if err := p.CommitPipeline(h.info, nil); err != nil {
		t.Fatalf("CommitPipeline: %v", err)
	}
	return h
}

func ip4(s string) uint64 {
	a := netip.MustParseAddr(s).As4()
	return uint64(binary.BigEndian.Uint32(a[:]))
}

func addr(s string) [4]byte { return netip.MustParseAddr(s).As4() }

func macV(m [6]byte) uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}

// Match values for entry().
type (
	tv struct{ v, m uint64 }   // ternary
	rv struct{ lo, hi uint64 } // range
	lv struct {
		v   uint64
		len int32
	} // lpm
)

func (h *harness) table(name string) *p4configv1.Table {
	for _, t := range h.info.GetTables() {
		if t.GetPreamble().GetName() == name {
			return t
		}
	}
	h.t.Fatalf("no table %q", name)
	return nil
}

func (h *harness) action(name string, params map[string]uint64) *p4v1.Action {
	for _, a := range h.info.GetActions() {
		if a.GetPreamble().GetName() != name {
			continue
		}
		pa := &p4v1.Action{ActionId: a.GetPreamble().GetId()}
		for _, p := range a.GetParams() {
			v, ok := params[p.GetName()]
			if !ok {
				h.t.Fatalf("action %q: param %q not given", name, p.GetName())
			}
			pa.Params = append(pa.Params, &p4v1.Action_Param{ParamId: p.GetId(), Value: p4bytes.Uint(v)})
		}
		return pa
	}
	h.t.Fatalf("no action %q", name)
	return nil
}

// entry builds a table entry by names; match values are uint64 (exact), tv, rv or lv.
func (h *harness) entry(table string, match map[string]any, prio int32, action string, params map[string]uint64) *p4v1.TableEntry {
	t := h.table(table)
	e := &p4v1.TableEntry{TableId: t.GetPreamble().GetId(), Priority: prio}
	for _, f := range t.GetMatchFields() {
		v, ok := match[f.GetName()]
		if !ok {
			continue
		}
		fm := &p4v1.FieldMatch{FieldId: f.GetId()}
		switch v := v.(type) {
		case uint64:
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: p4bytes.Uint(v)}}
		case tv:
			fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: p4bytes.Uint(v.v), Mask: p4bytes.Uint(v.m)}}
		case rv:
			fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: p4bytes.Uint(v.lo), High: p4bytes.Uint(v.hi)}}
		case lv:
			if v.len == 0 {
				continue // P4Runtime omits a zero-length prefix, as a controller sends it
			}
			fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: p4bytes.Uint(v.v), PrefixLen: v.len}}
		default:
			h.t.Fatalf("match %q: unsupported %T", f.GetName(), v)
		}
		e.Match = append(e.Match, fm)
	}
	if action != "" {
		e.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: h.action(action, params)}}
	}
	return e
}

func (h *harness) write(op p4v1.Update_Type, e *p4v1.TableEntry) {
	h.t.Helper()
	if err := h.p.WriteTableEntry(op, e); err != nil {
		h.t.Fatalf("WriteTableEntry: %v", err)
	}
}

func (h *harness) insert(table string, match map[string]any, prio int32, action string, params map[string]uint64) {
	h.t.Helper()
	h.write(p4v1.Update_INSERT, h.entry(table, match, prio, action, params))
}

func (h *harness) registerID(name string) uint32 {
	for _, r := range h.info.GetRegisters() {
		if r.GetPreamble().GetName() == name {
			return r.GetPreamble().GetId()
		}
	}
	h.t.Fatalf("no register %q", name)
	return 0
}

func (h *harness) reg(name string, idx uint32) uint64 {
	h.t.Helper()
	v, err := h.p.ReadRegister(h.registerID(name), idx)
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func (h *harness) setReg(name string, idx uint32, v uint64) {
	h.t.Helper()
	if err := h.p.WriteRegister(h.registerID(name), idx, v); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) drops(r DropReason) uint64 {
	h.t.Helper()
	n, _ := h.counter("drops", uint32(r))
	return n
}

func (h *harness) counterID(name string) uint32 {
	for _, c := range h.info.GetCounters() {
		if c.GetPreamble().GetName() == name {
			return c.GetPreamble().GetId()
		}
	}
	h.t.Fatalf("no counter %q", name)
	return 0
}

// setMeter configures one cell of a meter by name (nil resets it).
func (h *harness) setMeter(name string, idx uint32, cfg *p4v1.MeterConfig) {
	h.t.Helper()
	for _, m := range h.info.GetMeters() {
		if m.GetPreamble().GetName() == name {
			if err := h.p.WriteMeter(m.GetPreamble().GetId(), idx, cfg); err != nil {
				h.t.Fatal(err)
			}
			return
		}
	}
	h.t.Fatalf("no meter %q", name)
}

// counter reads one cell of a counter by name.
func (h *harness) counter(name string, idx uint32) (packets, bytes uint64) {
	h.t.Helper()
	n, b, err := h.p.ReadCounter(h.counterID(name), idx)
	if err != nil {
		h.t.Fatal(err)
	}
	return n, b
}

// process pushes one frame received on inPort and returns what Process emitted (copied).
func (h *harness) process(inPort uint32, frame []byte) []output {
	h.t.Helper()
	pkt := h.pool.TryGet()
	if pkt == nil {
		h.t.Fatal("pool empty")
	}
	if !pkt.SetFrame(frame) {
		h.t.Fatal("frame too large")
	}
	pkt.InPort = inPort
	out := h.p.Process([]*Packet{pkt}, nil)
	var res []output
	for _, o := range out {
		res = append(res, output{o.OutPort, slices.Clone(o.Frame())})
		h.pool.Put(o)
	}
	return res
}

// ---- a P4Info for tests ----

// testP4Info is the checked-in P4Info of the P4 program (package p4), as a controller pushes it.
func testP4Info(t testing.TB) *p4configv1.P4Info {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// specP4Info builds a P4Info from the specs of schema.go with IDs unlike the real ones, to show
// that nothing depends on the P4 program's IDs.
func specP4Info() *p4configv1.P4Info {
	info := &p4configv1.P4Info{TypeInfo: &p4configv1.P4TypeInfo{Structs: map[string]*p4configv1.P4StructTypeSpec{}}}
	bitT := func(w int32) *p4configv1.P4DataTypeSpec {
		return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{
			Bitstring: &p4configv1.P4BitstringLikeTypeSpec{TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{
				Bit: &p4configv1.P4BitTypeSpec{Bitwidth: w}}}}}
	}
	actionID := map[actionKind]uint32{}
	for k := numActions - 1; ; k-- {
		spec := actionSpecs[k]
		id := 0x01000100 + uint32(numActions-k)*7
		actionID[k] = id
		a := &p4configv1.Action{Preamble: &p4configv1.Preamble{Id: id, Name: spec.name}}
		for i, p := range spec.params {
			a.Params = append(a.Params, &p4configv1.Action_Param{Id: uint32(len(spec.params) - i), Name: p.name, Bitwidth: p.bits})
		}
		info.Actions = append(info.Actions, a)
		if k == 0 {
			break
		}
	}
	for k, spec := range tableSpecs {
		t := &p4configv1.Table{Preamble: &p4configv1.Preamble{Id: 0x02000100 + uint32(k)*3, Name: spec.name}, Size: 1024}
		for i, f := range spec.keys {
			t.MatchFields = append(t.MatchFields, &p4configv1.MatchField{Id: uint32(i + 1), Name: f.name, Bitwidth: f.bits,
				Match: &p4configv1.MatchField_MatchType_{MatchType: f.kind}})
		}
		for _, a := range spec.actions {
			t.ActionRefs = append(t.ActionRefs, &p4configv1.ActionRef{Id: actionID[a]})
		}
		info.Tables = append(info.Tables, t)
	}
	for k, spec := range registerSpecs {
		size := int32(contract.MaxUsers)
		if k == int(rSessionSeq) {
			size = contract.MaxSessionOverrides
		}
		info.Registers = append(info.Registers, &p4configv1.Register{
			Preamble: &p4configv1.Preamble{Id: 0x10000100 + uint32(k)*5, Name: spec.name}, TypeSpec: bitT(spec.bits), Size: size})
	}
	for k, name := range counterSpecs {
		size := int64(4096)
		if k == int(cDrops) {
			size = 32 // DROP_REASON_COUNT
		}
		info.Counters = append(info.Counters, &p4configv1.Counter{Preamble: &p4configv1.Preamble{Id: 0x12000100 + uint32(k)*3, Name: name},
			Spec: &p4configv1.CounterSpec{Unit: p4configv1.CounterSpec_BOTH}, Size: size})
	}
	for k, name := range meterSpecs {
		info.Meters = append(info.Meters, &p4configv1.Meter{Preamble: &p4configv1.Preamble{Id: 0x14000100 + uint32(k)*3, Name: name},
			Spec: &p4configv1.MeterSpec{Unit: p4configv1.MeterSpec_BYTES}, Size: 4096})
	}
	st := &p4configv1.P4StructTypeSpec{}
	for _, m := range contract.ProbeReportMembers {
		st.Members = append(st.Members, &p4configv1.P4StructTypeSpec_Member{Name: m.Name, TypeSpec: bitT(int32(m.Width))})
	}
	info.TypeInfo.Structs["probe_report_t"] = st
	info.Digests = append(info.Digests, &p4configv1.Digest{Preamble: &p4configv1.Preamble{Id: 0x18000001, Name: "probe_reports"},
		TypeSpec: &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Struct{Struct: &p4configv1.P4NamedType{Name: "probe_report_t"}}}})
	info.ControllerPacketMetadata = append(info.ControllerPacketMetadata, &p4configv1.ControllerPacketMetadata{
		Preamble: &p4configv1.Preamble{Id: 0x40000009, Name: "packet_in"},
		Metadata: []*p4configv1.ControllerPacketMetadata_Metadata{{Id: 1, Name: "ingress_port", Bitwidth: 9}, {Id: 2, Name: "_pad", Bitwidth: 7}}})
	info.ControllerPacketMetadata = append(info.ControllerPacketMetadata, &p4configv1.ControllerPacketMetadata{
		Preamble: &p4configv1.Preamble{Id: 0x4000000a, Name: "packet_out"},
		Metadata: []*p4configv1.ControllerPacketMetadata_Metadata{{Id: 3, Name: "_pad", Bitwidth: 6},
			{Id: 2, Name: "to_ingress", Bitwidth: 1}, {Id: 1, Name: "egress_port", Bitwidth: 9}}})
	return info
}

// chanCtx is a context done when stop is closed.
func chanCtx(stop <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	return ctx
}
