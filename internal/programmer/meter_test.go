package programmer

import (
	"context"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
)

// A session's MBR policer cells (meter.go): configured as the session wants, rewritten when the
// MBR changes, reset when it goes or the session does, reset when a session without one takes a
// usage cell that held another's, and written again by a replay.

// mbrMeters are the meter cells of a session at usage cell 7 with these rates (kbit/s, 0: unset).
func mbrMeters(ul, dl int64) []desired.MeterCell {
	r := &junctionv1.BitRate{}
	if ul > 0 {
		r.UplinkKbps = &ul
	}
	if dl > 0 {
		r.DownlinkKbps = &dl
	}
	return desired.SessionMeters(desired.Session{UsageIndex: 7, Spec: junctionv1.ATSSSSessionSpec{MaxBitRate: r}})
}

// meterCell reads one meter cell from the device: nil when it has no configuration.
func (r *progRig) meterCell(t *testing.T, meter string, idx int64) *p4v1.MeterConfig {
	t.Helper()
	id := uint32(0)
	for _, m := range r.dev.Schema().P4Info().GetMeters() {
		if m.GetPreamble().GetName() == meter {
			id = m.GetPreamble().GetId()
		}
	}
	if id == 0 {
		t.Fatalf("no meter %q in the P4Info", meter)
	}
	got, err := r.dev.Read(context.Background(), []*p4v1.Entity{{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: idx}}}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("reading %s[%d]: %v entities, %v", meter, idx, len(got), err)
	}
	return got[0].GetMeterEntry().GetConfig()
}

// wantCell checks a cell against a rate in bytes/s and a burst in bytes (nil: no configuration).
func (r *progRig) wantCell(t *testing.T, meter string, rate, burst int64) {
	t.Helper()
	c := r.meterCell(t, meter, 7)
	switch {
	case rate == 0 && c != nil:
		t.Errorf("%s[7] = %v, want no configuration", meter, c)
	case rate != 0 && (c == nil || c.Cir != rate || c.Pir != rate || c.Cburst != burst || c.Pburst != burst):
		t.Errorf("%s[7] = %v, want rates %d and bursts %d", meter, c, rate, burst)
	}
}

func (r *progRig) applyChange(t *testing.T, c Change) {
	t.Helper()
	res, err := r.prog.Apply(context.Background(), c)
	if err != nil || res[c.Owner] != nil {
		t.Fatalf("apply %s: %v, %v", c.Owner, err, res[c.Owner])
	}
}

func TestProgrammerWritesASessionsMBR(t *testing.T) {
	r := newProgRig(t, nil)
	es := usageSession(t, "s1", 0x80000001)
	// 8,000 kbit/s is 1,000,000 bytes/s; the bucket 100 ms of it.
	r.applyChange(t, Change{Owner: "s1", Entries: es, Meters: mbrMeters(8000, 16000)})
	r.wantCell(t, MeterUplinkMBR, 1_000_000, 100_000)
	r.wantCell(t, MeterDownlinkMBR, 2_000_000, 200_000)

	// A changed MBR is rewritten; a direction that loses its rate is reset.
	r.applyChange(t, Change{Owner: "s1", Entries: es, Meters: mbrMeters(0, 800)})
	r.wantCell(t, MeterUplinkMBR, 0, 0)
	r.wantCell(t, MeterDownlinkMBR, 100_000, 10_000)

	// A replay after the device lost it writes it again.
	u, err := r.dev.Schema().MeterUpdate(MeterDownlinkMBR, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := r.dev.Write(context.Background(), []*p4v1.Update{u}); errs != nil {
		t.Fatal(errs[0])
	}
	r.replay(t)
	r.wantCell(t, MeterDownlinkMBR, 100_000, 10_000)

	// The session gone, its cells are reset.
	r.applyChange(t, Change{Owner: "s1"})
	r.wantCell(t, MeterDownlinkMBR, 0, 0)
}

// A tiny MBR keeps a bucket of two full-size packets.
func TestMBRBucketFloor(t *testing.T) {
	r := newProgRig(t, nil)
	r.applyChange(t, Change{Owner: "s1", Entries: usageSession(t, "s1", 0x80000001), Meters: mbrMeters(64, 0)})
	r.wantCell(t, MeterUplinkMBR, 8_000, 3_000)
}

// A cell that holds another session's policer (written while nobody watched: an operator that
// stopped before it reset it) is reset when a session without an MBR starts to use it.
func TestProgrammerResetsAStalePolicerForANewSession(t *testing.T) {
	r := newProgRig(t, nil)
	u, err := r.dev.Schema().MeterUpdate(MeterUplinkMBR, 7, &p4v1.MeterConfig{Cir: 10, Cburst: 10, Pir: 10, Pburst: 10})
	if err != nil {
		t.Fatal(err)
	}
	if errs := r.dev.Write(context.Background(), []*p4v1.Update{u}); errs != nil {
		t.Fatal(errs[0])
	}
	r.applyChange(t, Change{Owner: "s2", Entries: usageSession(t, "s2", 0x80000002)})
	r.wantCell(t, MeterUplinkMBR, 0, 0)
}

// A policer the pipeline cannot hold (here a meter of 4 cells and a session at cell 7) is the
// session's error, not a write that silently did not happen.
func TestAPolicerThePipelineCannotHoldIsTheOwnersError(t *testing.T) {
	r := newProgRig(t, func(info *p4configv1.P4Info) {
		for _, m := range info.GetMeters() {
			m.Size = 4
		}
	})
	res, err := r.prog.Apply(context.Background(), Change{Owner: "s1", Entries: usageSession(t, "s1", 0x80000001), Meters: mbrMeters(8000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if res["s1"] == nil {
		t.Error("a session whose policer has no cell was told it is written")
	}
}
