package p4rt

import (
	"context"
	"errors"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func te(table uint32, prio int32, a *p4v1.TableAction, m ...*p4v1.FieldMatch) *p4v1.Entity {
	return tableEnt(&p4v1.TableEntry{TableId: table, Priority: prio, Action: a, Match: m})
}

func TestWriteRejectsEachErrorClassWithItsCode(t *testing.T) {
	h, _ := ready(t, Options{})
	// Existing entries the NOT_FOUND / ALREADY_EXISTS cases refer to.
	h.mustWrite(ins(exactEntry(1, 1)), ins(te(tblLPM, 0, action(actDrop), lpmM(1, 8, 10, 0, 0, 0))))
	drop := action(actDrop)
	directMeter := &p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: &p4v1.DirectMeterEntry{}}}

	cases := []struct {
		name    string
		up      *p4v1.Update
		code    codes.Code
		mention string // the message names the object
	}{
		{"unknown table", ins(te(0x0200ffff, 0, drop, exactM(1, 1))), codes.InvalidArgument, "table id"},
		{"exact field missing", ins(te(tblExact, 0, setPort(1, 1))), codes.InvalidArgument, `"addr"`},
		{"unknown field id", ins(te(tblExact, 0, setPort(1, 1), exactM(1, 2), exactM(9, 1))), codes.InvalidArgument, "field id 9"},
		{"field given twice", ins(te(tblExact, 0, setPort(1, 1), exactM(1, 2), exactM(1, 3))), codes.InvalidArgument, "twice"},
		{"wrong match kind", ins(te(tblExact, 0, setPort(1, 1), lpmM(1, 8, 10, 0, 0, 0))), codes.InvalidArgument, "exact field given a lpm match"},
		{"value wider than field", ins(te(tblExact, 0, setPort(1, 1), exactM(1, 1, 0, 0, 0, 0))), codes.OutOfRange, `"addr"`},
		{"empty value", ins(te(tblExact, 0, setPort(1, 1), exactM(1))), codes.OutOfRange, "empty"},
		{"lpm prefix 0", ins(te(tblLPM, 0, drop, lpmM(1, 0, 0))), codes.InvalidArgument, "don't-care"},
		{"lpm prefix too long", ins(te(tblLPM, 0, drop, lpmM(1, 33, 10, 0, 0, 0))), codes.InvalidArgument, "prefix_len 33"},
		{"lpm bits past prefix", ins(te(tblLPM, 0, drop, lpmM(1, 8, 10, 0, 0, 1))), codes.InvalidArgument, "beyond prefix_len"},
		{"ternary mask 0", ins(te(tblTernary, 1, drop, ternaryM(1, []byte{0}, []byte{0}))), codes.InvalidArgument, "don't-care"},
		{"ternary value outside mask", ins(te(tblTernary, 1, drop, ternaryM(1, []byte{0x0a, 1}, []byte{0xff, 0}))), codes.InvalidArgument, "outside mask"},
		{"range low above high", ins(te(tblRange, 1, drop, rangeM(1, []byte{9}, []byte{8}), exactM(2, 1))), codes.InvalidArgument, "above high"},
		{"range covering everything", ins(te(tblRange, 1, drop, rangeM(1, []byte{0}, []byte{0xff, 0xff}), exactM(2, 1))), codes.InvalidArgument, "full range"},
		{"range high too wide", ins(te(tblRange, 1, drop, rangeM(1, []byte{0}, []byte{1, 0, 0}), exactM(2, 1))), codes.OutOfRange, "high"},
		{"priority missing", ins(te(tblTernary, 0, drop, ternaryM(1, []byte{1}, []byte{1}))), codes.InvalidArgument, "priority must be > 0"},
		{"negative priority", ins(te(tblOptional, -3, drop, optionalM(1, 1))), codes.InvalidArgument, "priority"},
		{"priority on exact table", ins(te(tblExact, 5, setPort(1, 1), exactM(1, 2))), codes.InvalidArgument, "priority must be 0"},
		{"action not in table", ins(te(tblExact, 0, action(actSetValue, []byte{1}), exactM(1, 2))), codes.InvalidArgument, "not one of the table's actions"},
		{"default-only action in entry", ins(te(tblExact, 0, action(actMiss), exactM(1, 2))), codes.PermissionDenied, "@defaultonly"},
		{"param missing", ins(te(tblExact, 0, action(actSetPort, []byte{1}), exactM(1, 2))), codes.InvalidArgument, `"mac"`},
		{"param unknown", ins(te(tblExact, 0, action(actSetPort, []byte{1}, []byte{1}, []byte{1}), exactM(1, 2))), codes.InvalidArgument, "param id 3"},
		{"param too wide", ins(te(tblExact, 0, action(actSetPort, []byte{2, 0}, []byte{1}), exactM(1, 2))), codes.OutOfRange, `"port"`},
		{"insert without action", ins(te(tblExact, 0, nil, exactM(1, 2))), codes.InvalidArgument, "needs an action"},
		{"action profile member on direct table", ins(te(tblExact, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}, exactM(1, 2))), codes.InvalidArgument, "direct table"},
		{"insert existing", ins(exactEntry(1, 2)), codes.AlreadyExists, "exact_t"},
		{"modify missing", mod(exactEntry(99, 2)), codes.NotFound, "exact_t"},
		{"delete missing", del(exactEntry(99, 2)), codes.NotFound, "exact_t"},
		{"is_const set", ins(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsConst: true, Match: []*p4v1.FieldMatch{exactM(1, 2)}, Action: drop})), codes.InvalidArgument, "is_const"},
		{"default entry insert", ins(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true, Action: drop})), codes.InvalidArgument, "default entry"},
		{"default entry with match", mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true, Action: drop, Match: []*p4v1.FieldMatch{exactM(1, 1)}})), codes.InvalidArgument, "default entry"},
		{"table-only default action", mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true, Action: action(actFwdOnly)})), codes.PermissionDenied, "@tableonly"},
		{"constant default action", mod(tableEnt(&p4v1.TableEntry{TableId: tblConstDef, IsDefaultAction: true, Action: drop})), codes.PermissionDenied, "constant default"},
		{"update type unspecified", &p4v1.Update{Entity: exactEntry(3, 1)}, codes.InvalidArgument, "UNSPECIFIED"},
		{"entity unset", &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{}}, codes.InvalidArgument, "no type"},
		{"direct meter unsupported", mod(directMeter), codes.Unimplemented, "direct_meter_entry"},
		{"register insert", ins(registerEnt(regRTT, idx(0), []byte{1})), codes.InvalidArgument, `"rtt"`},
		{"register unknown", mod(registerEnt(0x16000fff, idx(0), []byte{1})), codes.InvalidArgument, "register id"},
		{"register negative index", mod(registerEnt(regRTT, idx(-1), []byte{1})), codes.InvalidArgument, "negative index"},
		{"register index past end", mod(registerEnt(regRTT, idx(16), []byte{1})), codes.OutOfRange, "index 16"},
		{"register value too wide", mod(registerEnt(regSmall, idx(0), []byte{1, 0})), codes.OutOfRange, `"small"`},
		{"register without data", mod(registerEnt(regRTT, idx(0), nil)), codes.InvalidArgument, "bitstring"},
		{"counter delete", del(counterEnt(ctrDrops, idx(0), nil)), codes.InvalidArgument, `"drops"`},
		{"counter index past end", mod(counterEnt(ctrDrops, idx(32), &p4v1.CounterData{})), codes.OutOfRange, "index 32"},
		{"counter negative", mod(counterEnt(ctrDrops, idx(1), &p4v1.CounterData{PacketCount: -1})), codes.InvalidArgument, "negative"},
		{"clone session 0", ins(cloneEnt(0, replica(1, 0))), codes.InvalidArgument, "session_id 0"},
		{"clone session duplicate replicas", ins(cloneEnt(5, replica(1, 0), replica(1, 0))), codes.InvalidArgument, "twice"},
		{"clone session without replicas", ins(cloneEnt(5)), codes.InvalidArgument, "at least one replica"},
		{"clone session missing", mod(cloneEnt(6, replica(1, 0))), codes.NotFound, "clone session 6"},
		{"multicast group 0", ins(mcastEnt(0, replica(1, 0))), codes.InvalidArgument, "multicast_group_id 0"},
		{"digest modify before insert", mod(digestEnt(dgReport, &p4v1.DigestEntry_Config{})), codes.NotFound, `"reports"`},
		{"digest insert without config", ins(digestEnt(dgReport, nil)), codes.InvalidArgument, "config is required"},
		{"digest negative timeout", ins(digestEnt(dgReport, &p4v1.DigestEntry_Config{MaxTimeoutNs: -1})), codes.InvalidArgument, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := h.write(1, c.up)
			errs := BatchErrors(err)
			if status.Code(err) != codes.Unknown || len(errs) != 1 {
				t.Fatalf("got %v with %d details, want UNKNOWN with one p4.v1.Error", err, len(errs))
			}
			if got := codes.Code(errs[0].CanonicalCode); got != c.code {
				t.Errorf("code %v (%s), want %v", got, errs[0].Message, c.code)
			}
			if !strings.Contains(errs[0].Message, c.mention) {
				t.Errorf("message %q does not mention %q", errs[0].Message, c.mention)
			}
		})
	}
}

func TestBatchReportsOneErrorPerUpdateInOrder(t *testing.T) {
	h, _ := ready(t, Options{})
	err := h.write(1,
		ins(exactEntry(1, 1)),
		ins(exactEntry(1, 2)), // duplicate of the first
		ins(te(tblLPM, 0, action(actDrop), lpmM(1, 40, 1))),
		ins(exactEntry(2, 1)),
	)
	got := errCodes(t, err)
	want := []codes.Code{codes.OK, codes.AlreadyExists, codes.InvalidArgument, codes.OK}
	if len(got) != len(want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("codes %v, want %v", got, want)
		}
	}
	if ok := BatchErrors(err)[0]; ok.Message != "" {
		t.Errorf("a successful update's error has a message: %q", ok.Message)
	}
	// CONTINUE_ON_ERROR: the good updates stuck.
	if n := len(h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact}))); n != 2 {
		t.Errorf("exact_t holds %d entries, want 2", n)
	}
}

func TestWriteNeedsPipelineAndSupportedAtomicity(t *testing.T) {
	h := newHarness(t, Options{})
	h.primary(1)
	if err := h.write(1, ins(exactEntry(1, 1))); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("write before a pipeline: %v, want FAILED_PRECONDITION", err)
	}
	if _, _, err := h.read(exactEntry(1, 1)); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("read before a pipeline: %v, want FAILED_PRECONDITION", err)
	}
	if err := h.setPipeline(testP4Info(), 1, 1); err != nil {
		t.Fatal(err)
	}
	_, err := h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(1),
		Atomicity: p4v1.WriteRequest_DATAPLANE_ATOMIC, Updates: []*p4v1.Update{ins(exactEntry(1, 1))}})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("DATAPLANE_ATOMIC: %v, want UNIMPLEMENTED", err)
	}
}

func TestTableFullIsResourceExhausted(t *testing.T) {
	h, _ := ready(t, Options{})
	for i := uint32(1); i <= 4; i++ { // exact_t has size 4
		h.mustWrite(ins(exactEntry(i, 1)))
	}
	err := h.write(1, ins(exactEntry(5, 1)), del(exactEntry(1, 1)), ins(exactEntry(6, 1)))
	got := errCodes(t, err)
	if got[0] != codes.ResourceExhausted || got[1] != codes.OK || got[2] != codes.OK {
		t.Fatalf("codes %v, want [RESOURCE_EXHAUSTED OK OK] (a delete frees a slot)", got)
	}
	if !strings.Contains(BatchErrors(err)[0].Message, `table "exact_t" is full (size 4)`) {
		t.Errorf("message %q", BatchErrors(err)[0].Message)
	}
	// A target that cannot hold an entry says so with RESOURCE_EXHAUSTED; any other refusal is
	// INTERNAL, never mistaken for a full table.
	h.target.failTable = status.Error(codes.ResourceExhausted, "hash bucket full")
	err = h.write(1, ins(te(tblLPM, 0, action(actDrop), lpmM(1, 8, 10, 0, 0, 0))))
	if got := errCodes(t, err); got[0] != codes.ResourceExhausted || !strings.Contains(BatchErrors(err)[0].Message, "hash bucket full") {
		t.Fatalf("target refusal: %v %v", got, BatchErrors(err))
	}
	h.target.failTable = errors.New("entry malformed")
	err = h.write(1, ins(te(tblLPM, 0, action(actDrop), lpmM(1, 8, 10, 0, 0, 0))))
	if got := errCodes(t, err); got[0] != codes.Internal {
		t.Fatalf("plain target error: %v %v", got, BatchErrors(err))
	}
	h.target.failTable = nil
	if n := len(h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblLPM}))); n != 0 {
		t.Errorf("an entry the target refused is stored (%d entries)", n)
	}
}

func TestEntriesAreCanonicalAndReadBackAsWritten(t *testing.T) {
	h, _ := ready(t, Options{})
	written := []*p4v1.Entity{
		te(tblExact, 0, setPort(3, 0x0a0b0c0d0e0f), exactM(1, 10, 0, 0, 1)),
		te(tblLPM, 0, setPort(0x1ff, 1), lpmM(1, 24, 192, 168, 1, 0)),
		te(tblTernary, 10, action(actDrop), ternaryM(1, []byte{10, 0, 0, 0}, []byte{0xff, 0, 0, 0}), ternaryM(2, []byte{6}, []byte{0xff})),
		te(tblTernary, 11, action(actDrop), ternaryM(2, []byte{17}, []byte{0xff})), // src is don't-care
		te(tblRange, 3, action(actDrop), rangeM(1, []byte{0x04, 0}, []byte{0x08, 0}), exactM(2, 1)),
		te(tblOptional, 2, action(actDrop), optionalM(1, 0)),
		te(tblOptional, 1, action(actDrop)), // all don't-care
	}
	for _, e := range written {
		h.mustWrite(ins(proto.Clone(e).(*p4v1.Entity)))
	}
	// Padded values are accepted and stored in canonical form.
	padded := te(tblExact, 0, action(actSetPort, []byte{0, 0, 5}, []byte{0, 0, 0, 0, 0, 0, 0, 1}), exactM(1, 0, 0, 0, 0, 0, 7))
	h.mustWrite(ins(padded))
	canonicalForm := te(tblExact, 0, action(actSetPort, []byte{5}, []byte{1}), exactM(1, 7))

	// The target received canonical values, match fields sorted by ID.
	last := h.target.callsOf("table")
	if got := last[len(last)-1].entry; !proto.Equal(got, canonicalForm.GetTableEntry()) {
		t.Errorf("target got %v, want %v", got, canonicalForm.GetTableEntry())
	}

	for _, e := range append(written, canonicalForm) {
		q := proto.Clone(e.GetTableEntry()).(*p4v1.TableEntry)
		q.Action = nil
		got := h.mustRead(tableEnt(q))
		if len(got) != 1 || !proto.Equal(got[0], e) {
			t.Errorf("read %v\nwant %v", got, e)
		}
	}
}

func TestModifyDeleteAndDefaultEntry(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(exactEntry(1, 1)))
	h.mustWrite(mod(exactEntry(1, 2)))
	// MODIFY without action keeps the action and updates the metadata.
	h.mustWrite(mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, Match: []*p4v1.FieldMatch{exactM(1, 1)}, Metadata: []byte("m")})))
	got := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact}))
	want := exactEntry(1, 2)
	want.GetTableEntry().Metadata = []byte("m")
	if len(got) != 1 || !proto.Equal(got[0], want) {
		t.Fatalf("after modifies: %v, want %v", got, want)
	}
	h.mustWrite(del(tableEnt(&p4v1.TableEntry{TableId: tblExact, Match: []*p4v1.FieldMatch{exactM(1, 1)}, Action: action(999)})))
	if got := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact})); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	var ops []p4v1.Update_Type
	for _, c := range h.target.callsOf("table") {
		ops = append(ops, c.typ)
	}
	if len(ops) != 4 || ops[0] != p4v1.Update_INSERT || ops[3] != p4v1.Update_DELETE {
		t.Fatalf("target ops %v", ops)
	}

	// Default entry: the P4 default reads back until a client changes it; unset action resets.
	def := &p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true}
	if got := h.mustRead(tableEnt(def)); len(got) != 1 || got[0].GetTableEntry().GetAction().GetAction().GetActionId() != actMiss {
		t.Fatalf("initial default: %v", got)
	}
	h.mustWrite(mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true, Action: action(actDrop)})))
	if got := h.mustRead(tableEnt(def)); got[0].GetTableEntry().GetAction().GetAction().GetActionId() != actDrop {
		t.Fatalf("modified default: %v", got)
	}
	h.mustWrite(mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true})))
	if got := h.mustRead(tableEnt(def)); got[0].GetTableEntry().GetAction().GetAction().GetActionId() != actMiss {
		t.Fatalf("reset default: %v", got)
	}
	defs := h.target.callsOf("default")
	if len(defs) != 2 || string(defs[0].data) == "" || defs[1].data != nil {
		t.Fatalf("target default calls %+v, want set then reset (nil)", defs)
	}
}

func TestRollbackOnErrorUndoesTheBatch(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(exactEntry(1, 1)), mod(registerEnt(regRTT, idx(3), []byte{9})))
	_, err := h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(1),
		Atomicity: p4v1.WriteRequest_ROLLBACK_ON_ERROR, Updates: []*p4v1.Update{
			ins(exactEntry(2, 1)),
			mod(exactEntry(1, 7)),
			mod(registerEnt(regRTT, nil, []byte{5})),
			ins(exactEntry(1, 1)), // fails: exists
			ins(exactEntry(3, 1)),
		}})
	got := errCodes(t, err)
	want := []codes.Code{codes.Aborted, codes.Aborted, codes.Aborted, codes.AlreadyExists, codes.Aborted}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("codes %v, want %v", got, want)
		}
	}
	ents := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact}))
	if len(ents) != 1 || !proto.Equal(ents[0], exactEntry(1, 1)) {
		t.Fatalf("after rollback: %v", ents)
	}
	regs := h.mustRead(registerEnt(regRTT, nil, nil))
	for i, r := range regs {
		v := decodeUint(r.GetRegisterEntry().GetData().GetBitstring())
		if (i == 3 && v != 9) || (i != 3 && v != 0) {
			t.Fatalf("register rtt[%d] = %d after rollback", i, v)
		}
	}
	if v, _ := h.target.ReadRegister(regRTT, 0); v != 0 {
		t.Fatalf("target register rtt[0] = %d after rollback", v)
	}
}

func TestRegistersAndCounters(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(mod(registerEnt(regRTT, nil, []byte{0, 0, 1, 0})), mod(registerEnt(regRTT, idx(2), []byte{0xff, 0xff, 0xff, 0xff})))
	all := h.mustRead(registerEnt(regRTT, nil, nil))
	if len(all) != 16 {
		t.Fatalf("wildcard register read returned %d cells, want 16", len(all))
	}
	for i, e := range all {
		want := uint64(256)
		if i == 2 {
			want = 0xffffffff
		}
		r := e.GetRegisterEntry()
		if r.Index.GetIndex() != int64(i) || decodeUint(r.Data.GetBitstring()) != want {
			t.Fatalf("rtt[%d] = %v, want %d", i, r, want)
		}
	}
	if v, _ := h.target.ReadRegister(regRTT, 5); v != 256 {
		t.Fatalf("target rtt[5] = %d", v)
	}
	one := h.mustRead(registerEnt(regRTT, idx(2), nil))
	if len(one) != 1 || string(one[0].GetRegisterEntry().Data.GetBitstring()) != "\xff\xff\xff\xff" {
		t.Fatalf("single register read %v", one)
	}
	// register_id 0 reads every register: 16 + 4 cells.
	if n := len(h.mustRead(registerEnt(0, nil, nil))); n != 20 {
		t.Fatalf("all registers: %d cells, want 20", n)
	}

	h.mustWrite(mod(counterEnt(ctrDrops, idx(4), &p4v1.CounterData{PacketCount: 3, ByteCount: 300})))
	h.target.WriteCounter(ctrDrops, 5, 1, 64) // the data plane counts
	cs := h.mustRead(counterEnt(ctrDrops, nil, nil))
	if len(cs) != 32 {
		t.Fatalf("wildcard counter read: %d cells", len(cs))
	}
	if d := cs[4].GetCounterEntry().Data; d.PacketCount != 3 || d.ByteCount != 300 {
		t.Fatalf("drops[4] = %v", d)
	}
	if d := cs[5].GetCounterEntry().Data; d.PacketCount != 1 || d.ByteCount != 64 {
		t.Fatalf("drops[5] = %v", d)
	}
	if n := len(h.mustRead(counterEnt(0, nil, nil))); n != 32 {
		t.Fatalf("all counters: %d", n)
	}
	if _, _, err := h.read(counterEnt(ctrDrops, idx(40), nil)); status.Code(err) != codes.Unknown || BatchErrors(err)[0].CanonicalCode != int32(codes.OutOfRange) {
		t.Fatalf("counter read past the end: %v", err)
	}
}

func TestReplicationEngineEntries(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(cloneEnt(100, replica(1, 0), &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: 2}, Instance: 1})))
	cl := h.target.callsOf("clone")
	if len(cl) != 1 || cl[0].id != 100 || len(cl[0].reps) != 2 || string(cl[0].reps[1].GetPort()) != "\x02" {
		t.Fatalf("target clone calls %+v", cl)
	}
	h.mustWrite(ins(mcastEnt(3, replica(4, 0), replica(5, 0))))
	got := h.mustRead(cloneEnt(0), mcastEnt(0))
	if len(got) != 2 || got[0].GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetSessionId() != 100 ||
		len(got[1].GetPacketReplicationEngineEntry().GetMulticastGroupEntry().GetReplicas()) != 2 {
		t.Fatalf("PRE read %v", got)
	}
	h.mustWrite(del(cloneEnt(100)))
	if cl := h.target.callsOf("clone"); len(cl) != 2 || cl[1].reps != nil {
		t.Fatalf("clone delete did not reach the target with nil replicas: %+v", cl)
	}
	if got := h.mustRead(cloneEnt(100)); len(got) != 0 {
		t.Fatalf("deleted clone session reads back: %v", got)
	}
}
