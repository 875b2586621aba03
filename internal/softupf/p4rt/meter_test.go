package p4rt

import (
	"context"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Indirect meters (P4Runtime spec v1.4 section 9.5). Expected codes and results come from the
// spec: MODIFY only, INSERT and DELETE are INVALID_ARGUMENT; an unset config means the default
// (every packet green); an unset index means every cell; negative index INVALID_ARGUMENT,
// beyond the array OUT_OF_RANGE; counter_data unsupported is UNIMPLEMENTED; the MeterConfig
// rules per meter type; and RFC 2698 (a trTCM's PIR is at least its CIR).

// trtcm is a valid two-rate three-color config: 1 MB/s committed, 2 MB/s peak.
func trtcm() *p4v1.MeterConfig {
	return &p4v1.MeterConfig{Cir: 1_000_000, Cburst: 10_000, Pir: 2_000_000, Pburst: 20_000}
}

func TestMeterWriteRefusalsFollowTheSpec(t *testing.T) {
	h, _ := ready(t, Options{})
	cfg := func(cir, cburst, pir, pburst, eburst int64) *p4v1.MeterConfig {
		return &p4v1.MeterConfig{Cir: cir, Cburst: cburst, Pir: pir, Pburst: pburst, Eburst: eburst}
	}
	withCounterData := meterEnt(mtrMBR, idx(0), trtcm())
	withCounterData.GetMeterEntry().CounterData = &p4v1.MeterCounterData{Green: &p4v1.CounterData{}}

	cases := []struct {
		name     string
		up       *p4v1.Update
		code     codes.Code
		mentions []string // the message names the meter and the offending field
	}{
		{"insert", ins(meterEnt(mtrMBR, idx(0), trtcm())), codes.InvalidArgument, []string{`"mbr"`}},
		{"delete", del(meterEnt(mtrMBR, idx(0), nil)), codes.InvalidArgument, []string{`"mbr"`}},
		{"unknown meter id", mod(meterEnt(0x14000fff, idx(0), trtcm())), codes.InvalidArgument, []string{"meter id"}},
		{"meter id 0", mod(meterEnt(0, idx(0), trtcm())), codes.InvalidArgument, []string{"meter id 0"}},
		{"negative index", mod(meterEnt(mtrMBR, idx(-1), trtcm())), codes.InvalidArgument, []string{`"mbr"`, "negative index"}},
		{"index at size", mod(meterEnt(mtrMBR, idx(8), trtcm())), codes.OutOfRange, []string{`"mbr"`, "index 8"}},
		{"index far beyond size", mod(meterEnt(mtrMBR, idx(1<<40), nil)), codes.OutOfRange, []string{`"mbr"`}},
		{"pir below cir", mod(meterEnt(mtrMBR, idx(0), cfg(2000, 100, 1000, 100, 0))), codes.InvalidArgument, []string{`"mbr"`, "pir"}},
		{"negative cir", mod(meterEnt(mtrMBR, idx(0), cfg(-1, 100, 1000, 100, 0))), codes.InvalidArgument, []string{`"mbr"`, "cir", "negative"}},
		{"negative cburst", mod(meterEnt(mtrMBR, idx(0), cfg(1000, -1, 1000, 100, 0))), codes.InvalidArgument, []string{`"mbr"`, "cburst", "negative"}},
		{"negative pir", mod(meterEnt(mtrMBR, idx(0), cfg(0, 100, -5, 100, 0))), codes.InvalidArgument, []string{`"mbr"`, "pir", "negative"}},
		{"negative pburst", mod(meterEnt(mtrMBR, idx(0), cfg(1000, 100, 1000, -1, 0))), codes.InvalidArgument, []string{`"mbr"`, "pburst", "negative"}},
		{"eburst on a trTCM", mod(meterEnt(mtrMBR, idx(0), cfg(1000, 100, 2000, 200, 50))), codes.InvalidArgument, []string{`"mbr"`, "eburst"}},
		{"srTCM with pir != cir", mod(meterEnt(mtrSR3, idx(0), cfg(1000, 100, 2000, 100, 50))), codes.InvalidArgument, []string{`"sr3c"`, "pir"}},
		{"srTCM with pburst != cburst", mod(meterEnt(mtrSR3, idx(0), cfg(1000, 100, 1000, 200, 50))), codes.InvalidArgument, []string{`"sr3c"`, "pburst"}},
		{"srTCM negative eburst", mod(meterEnt(mtrSR3, idx(0), cfg(1000, 100, 1000, 100, -1))), codes.InvalidArgument, []string{`"sr3c"`, "eburst", "negative"}},
		{"two-color with eburst", mod(meterEnt(mtrSR2, idx(0), cfg(1000, 100, 1000, 100, 50))), codes.InvalidArgument, []string{`"sr2c"`, "eburst"}},
		{"two-color with pir != cir", mod(meterEnt(mtrSR2, idx(0), cfg(1000, 100, 3000, 100, 0))), codes.InvalidArgument, []string{`"sr2c"`, "pir"}},
		{"counter_data set", mod(withCounterData), codes.Unimplemented, []string{`"mbr"`, "counter_data"}},
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
			for _, m := range c.mentions {
				if !strings.Contains(errs[0].Message, m) {
					t.Errorf("message %q does not mention %q", errs[0].Message, m)
				}
			}
		})
	}
	if calls := h.target.callsOf("meter"); len(calls) != 0 {
		t.Fatalf("refused meter writes reached the target: %+v", calls)
	}
}

func TestMeterModifyReadsBackAndUnsetConfigResets(t *testing.T) {
	h, _ := ready(t, Options{})
	entry := func(id uint32, i int64, c *p4v1.MeterConfig) *p4v1.Entity { return meterEnt(id, idx(i), c) }
	readOne := func(id uint32, i int64) *p4v1.Entity {
		t.Helper()
		got := h.mustRead(meterEnt(id, idx(i), nil))
		if len(got) != 1 {
			t.Fatalf("read of %#x[%d]: %d entities, want 1", id, i, len(got))
		}
		return got[0]
	}

	// Before any write every cell has the default config: the entry comes back without one.
	if got := readOne(mtrMBR, 3); !proto.Equal(got, entry(mtrMBR, 3, nil)) {
		t.Fatalf("untouched cell reads %v, want no config", got)
	}

	h.mustWrite(mod(entry(mtrMBR, 3, trtcm())))
	if got := readOne(mtrMBR, 3); !proto.Equal(got, entry(mtrMBR, 3, trtcm())) {
		t.Fatalf("after modify: %v, want %v", got, entry(mtrMBR, 3, trtcm()))
	}
	calls := h.target.callsOf("meter")
	if len(calls) != 1 || calls[0].id != mtrMBR || calls[0].index != 3 || !proto.Equal(calls[0].meter, trtcm()) {
		t.Fatalf("target meter calls %+v, want one write of mbr[3]", calls)
	}
	if got := readOne(mtrMBR, 2); got.GetMeterEntry().Config != nil {
		t.Fatalf("the neighbour cell changed: %v", got)
	}

	// A config of zeros is a config (bursts of 0: every packet red), not the default.
	zero := &p4v1.MeterConfig{}
	h.mustWrite(mod(entry(mtrMBR, 4, zero)))
	if got := readOne(mtrMBR, 4); got.GetMeterEntry().Config == nil {
		t.Fatalf("an all-zero config read back as the default: %v", got)
	}

	// The other meter types accept the configs the spec allows them.
	sr3 := &p4v1.MeterConfig{Cir: 500, Cburst: 50, Pir: 500, Pburst: 50, Eburst: 80}
	sr2 := &p4v1.MeterConfig{Cir: 700, Cburst: 70, Pir: 700, Pburst: 70}
	h.mustWrite(mod(entry(mtrSR3, 1, sr3)), mod(entry(mtrSR2, 0, sr2)))
	if got := readOne(mtrSR3, 1); !proto.Equal(got, entry(mtrSR3, 1, sr3)) {
		t.Fatalf("srTCM: %v", got)
	}
	if got := readOne(mtrSR2, 0); !proto.Equal(got, entry(mtrSR2, 0, sr2)) {
		t.Fatalf("single-rate two-color: %v", got)
	}

	// MODIFY without config resets the cell to the default; the target is told with nil.
	h.mustWrite(mod(entry(mtrMBR, 3, nil)))
	if got := readOne(mtrMBR, 3); !proto.Equal(got, entry(mtrMBR, 3, nil)) {
		t.Fatalf("after reset: %v, want no config", got)
	}
	calls = h.target.callsOf("meter")
	if last := calls[len(calls)-1]; last.id != mtrMBR || last.index != 3 || last.meter != nil {
		t.Fatalf("reset reached the target as %+v, want mbr[3] with nil", last)
	}
	if c, _ := h.target.ReadMeter(mtrMBR, 3); c != nil {
		t.Fatalf("target mbr[3] = %v after reset", c)
	}
}

func TestMeterWriteWithoutIndexAppliesToEveryCell(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(mod(meterEnt(mtrMBR, nil, trtcm())))
	if n := len(h.target.callsOf("meter")); n != 8 {
		t.Fatalf("%d target writes, want 8 (the meter's size)", n)
	}
	for _, i := range []uint32{0, 5, 7} {
		if c, _ := h.target.ReadMeter(mtrMBR, i); !proto.Equal(c, trtcm()) {
			t.Fatalf("target mbr[%d] = %v, want %v", i, c, trtcm())
		}
	}
	if c, _ := h.target.ReadMeter(mtrSR3, 0); c != nil {
		t.Fatalf("another meter changed: sr3c[0] = %v", c)
	}
	all := h.mustRead(meterEnt(mtrMBR, nil, nil))
	if len(all) != 8 {
		t.Fatalf("wildcard read: %d cells, want 8", len(all))
	}
	for i, e := range all {
		if !proto.Equal(e, meterEnt(mtrMBR, idx(int64(i)), trtcm())) {
			t.Fatalf("cell %d reads %v", i, e)
		}
	}

	// And without index or config, every cell goes back to the default.
	h.mustWrite(mod(meterEnt(mtrMBR, nil, nil)))
	for i, e := range h.mustRead(meterEnt(mtrMBR, nil, nil)) {
		if !proto.Equal(e, meterEnt(mtrMBR, idx(int64(i)), nil)) {
			t.Fatalf("cell %d after the wildcard reset: %v", i, e)
		}
	}
	if c, _ := h.target.ReadMeter(mtrMBR, 6); c != nil {
		t.Fatalf("target mbr[6] = %v after the wildcard reset", c)
	}
}

func TestMeterReadsOfEveryMeterAndRefusals(t *testing.T) {
	h, _ := ready(t, Options{MaxReadChunk: 5})
	sr3 := &p4v1.MeterConfig{Cir: 10, Cburst: 1, Pir: 10, Pburst: 1}
	h.mustWrite(mod(meterEnt(mtrMBR, idx(6), trtcm())), mod(meterEnt(mtrSR3, idx(1), sr3)))

	// meter_id 0: every cell of every meter (8 + 2 + 2), meters by ID, cells by index.
	out, msgs, err := h.read(meterEnt(0, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var want []*p4v1.Entity
	for _, m := range []struct {
		id   uint32
		size int64
	}{{mtrMBR, 8}, {mtrSR3, 2}, {mtrSR2, 2}} {
		for i := int64(0); i < m.size; i++ {
			var c *p4v1.MeterConfig
			switch {
			case m.id == mtrMBR && i == 6:
				c = trtcm()
			case m.id == mtrSR3 && i == 1:
				c = sr3
			}
			want = append(want, meterEnt(m.id, idx(i), c))
		}
	}
	if len(out) != len(want) {
		t.Fatalf("meter_id 0 read %d entities, want %d: %v", len(out), len(want), out)
	}
	for i := range want {
		if !proto.Equal(out[i], want[i]) {
			t.Fatalf("entity %d: %v, want %v", i, out[i], want[i])
		}
	}
	if msgs != 3 {
		t.Fatalf("12 entities in %d messages, want 3 (chunks of 5)", msgs)
	}

	counterData := meterEnt(mtrMBR, idx(0), nil)
	counterData.GetMeterEntry().CounterData = &p4v1.MeterCounterData{}
	out, _, err = h.read(
		meterEnt(mtrMBR, idx(6), nil),
		meterEnt(0, idx(1), nil),
		meterEnt(0x14000fff, nil, nil),
		meterEnt(mtrMBR, idx(-1), nil),
		meterEnt(mtrMBR, idx(8), nil),
		counterData,
	)
	got := errCodes(t, err)
	wantCodes := []codes.Code{codes.OK, codes.InvalidArgument, codes.InvalidArgument, codes.InvalidArgument, codes.OutOfRange, codes.Unimplemented}
	if len(got) != len(wantCodes) {
		t.Fatalf("read codes %v, want %v", got, wantCodes)
	}
	for i := range wantCodes {
		if got[i] != wantCodes[i] {
			t.Fatalf("read codes %v, want %v", got, wantCodes)
		}
	}
	if len(out) != 1 || !proto.Equal(out[0], meterEnt(mtrMBR, idx(6), trtcm())) {
		t.Fatalf("entities before the error status: %v", out)
	}
}

func TestMeterWritesBeforeCommitAreReplayed(t *testing.T) {
	h, _ := ready(t, Options{})
	if err := h.setConfig(verifyAndSave, 1, cfgOf(testP4Info(), "v2", 43)); err != nil {
		t.Fatal(err)
	}
	// Every cell set, then one reset: both only in the saved pipeline until COMMIT.
	h.mustWrite(mod(meterEnt(mtrMBR, nil, trtcm())), mod(meterEnt(mtrMBR, idx(2), nil)))
	if calls := h.target.callsOf("meter"); len(calls) != 0 {
		t.Fatalf("meter writes to a saved pipeline reached the target: %+v", calls)
	}
	if got := h.mustRead(meterEnt(mtrMBR, idx(1), nil)); len(got) != 1 || !proto.Equal(got[0], meterEnt(mtrMBR, idx(1), trtcm())) {
		t.Fatalf("saved meter read %v", got)
	}
	if got := h.mustRead(meterEnt(mtrMBR, idx(2), nil)); len(got) != 1 || got[0].GetMeterEntry().Config != nil {
		t.Fatalf("saved reset cell read %v", got)
	}

	if err := h.setConfig(commitSaved, 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := uint32(0); i < 8; i++ {
		c, _ := h.target.ReadMeter(mtrMBR, i)
		if i == 2 && c != nil || i != 2 && !proto.Equal(c, trtcm()) {
			t.Fatalf("after COMMIT target mbr[%d] = %v", i, c)
		}
	}
	if got := h.mustRead(meterEnt(mtrMBR, idx(2), nil)); len(got) != 1 || got[0].GetMeterEntry().Config != nil {
		t.Fatalf("committed reset cell read %v", got)
	}
}

func TestMeterRollbackRestoresTheConfig(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(exactEntry(1, 1)), mod(meterEnt(mtrMBR, idx(1), trtcm())))
	_, err := h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(1),
		Atomicity: p4v1.WriteRequest_ROLLBACK_ON_ERROR, Updates: []*p4v1.Update{
			mod(meterEnt(mtrMBR, nil, &p4v1.MeterConfig{Cir: 1, Cburst: 1, Pir: 1, Pburst: 1})),
			ins(exactEntry(1, 1)), // fails: exists
		}})
	if got := errCodes(t, err); len(got) != 2 || got[0] != codes.Aborted || got[1] != codes.AlreadyExists {
		t.Fatalf("codes %v, want [ABORTED ALREADY_EXISTS]", got)
	}
	for i, e := range h.mustRead(meterEnt(mtrMBR, nil, nil)) {
		var want *p4v1.MeterConfig
		if i == 1 {
			want = trtcm()
		}
		if !proto.Equal(e, meterEnt(mtrMBR, idx(int64(i)), want)) {
			t.Fatalf("mbr[%d] after rollback: %v", i, e)
		}
	}
}

func TestMeterP4InfoRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	h.primary(1)
	cases := []struct {
		name    string
		change  func(*p4configv1.P4Info)
		mention string
	}{
		{"size 0", func(i *p4configv1.P4Info) { i.Meters[1].Size = 0 }, `"mbr"`},
		{"id 0", func(i *p4configv1.P4Info) { i.Meters[1].Preamble.Id = 0 }, `"mbr"`},
		{"two meters with one id", func(i *p4configv1.P4Info) { i.Meters[0].Preamble.Id = mtrMBR }, "reuses id"},
		{"a counter's id", func(i *p4configv1.P4Info) { i.Meters[1].Preamble.Id = ctrDrops }, "reuses id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := testP4Info()
			c.change(info)
			err := h.setConfig(verifyAndCommit, 1, cfgOf(info, "", 1))
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("got %v, want INVALID_ARGUMENT mentioning %s", err, c.mention)
			}
		})
	}
	if c := h.target.callsOf("commit"); len(c) != 0 {
		t.Fatal("a refused P4Info was committed")
	}
}
