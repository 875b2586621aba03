package programmer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
	"github.com/junction-atsss/junction/internal/softupf/p4rt/p4rttest"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/p4"
)

// progRig is a programmer on a real software UPF (P4Runtime server and data plane) over gRPC.
type progRig struct {
	srv  *p4rt.Server
	dev  *upfclient.Device
	prog *Programmer
	gen  uint64
	room chan []string
}

func newProgRig(t testing.TB, edit func(*p4configv1.P4Info)) *progRig {
	t.Helper()
	srv, addr := p4rttest.Serve(t)

	dev, err := upfclient.New(upfclient.Config{Address: addr, DeviceID: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = dev.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	st, err := dev.WaitPrimary(wctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(info)
	}
	if _, err := dev.EnsurePipeline(wctx, info, nil, upfclient.Cookie(info, nil), upfclient.PushIfDifferent); err != nil {
		t.Fatal(err)
	}
	r := &progRig{srv: srv, dev: dev, gen: st.Generation, room: make(chan []string, 16)}
	r.prog = New(dev, logr.Discard(), 5*time.Millisecond)
	r.prog.OnRoom = func(o []string) { r.room <- o }
	go r.prog.Run(ctx)
	r.replay(t)
	return r
}

// replay asks for a replay and waits until the programmer is synced again.
func (r *progRig) replay(t testing.TB) { t.Helper(); r.replayAfter(t, false) }

// replayAfter is replay, saying whether the pipeline was just pushed.
func (r *progRig) replayAfter(t testing.TB, pushed bool) {
	t.Helper()
	replayOn(t, r.prog, r.gen, pushed)
}

// replayOn asks p for a replay onto generation gen and waits until it is synced again.
func replayOn(t testing.TB, p *Programmer, gen uint64, pushed bool) {
	t.Helper()
	synced := make(chan struct{}, 1)
	p.OnSynced = func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	p.RequestReplay(gen, pushed)
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("no replay within 10s")
	}
	if st := p.Status(); !st.Synced {
		t.Fatalf("not synced after the replay: %v", st.ReplayErr)
	}
}

func (r *progRig) count(t *testing.T, table string) int {
	t.Helper()
	es, err := r.dev.ReadTable(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// sessionsEntry is the sessions entry of sessionEntries(t, i), built for the rig's device.
func (r *progRig) sessionsEntry(t *testing.T, i int) *p4v1.TableEntry {
	t.Helper()
	te, err := r.dev.Schema().Build(sessionEntries(t, i)[0].Client())
	if err != nil {
		t.Fatal(err)
	}
	return te
}

// sessionEntries are the entries of a WiFi-only session i of user i.
func sessionEntries(t *testing.T, i int) []desired.Entry {
	t.Helper()
	es, err := desired.SessionEntries(desired.Session{
		Name: fmt.Sprintf("s%d", i), UserIndex: uint32(i),
		Spec: junctionv1.ATSSSSessionSpec{
			SessionAddress: junctionv1.IPv4Address(fmt.Sprintf("10.60.%d.%d", i/250, i%250+1)),
			AccessLegs:     junctionv1.AccessLegs{NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.1"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestProgrammerBatchesConcurrentAppliesIntoFewWrites(t *testing.T) {
	r := newProgRig(t, nil)
	before := r.srv.Stats().WriteRequests
	const n = 300
	var wg sync.WaitGroup
	errs := make([]error, n)
	entries := make([][]desired.Entry, n) // built here: t.Fatal only from the test's goroutine
	for i := range entries {
		entries[i] = sessionEntries(t, i)
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("session/ns/s%d", i)
			res, err := r.prog.Apply(context.Background(), Change{Owner: owner, Entries: entries[i]})
			errs[i] = errors.Join(err, res[owner])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := r.count(t, "sessions"); got != n {
		t.Fatalf("%d sessions entries, want %d", got, n)
	}
	writes := r.srv.Stats().WriteRequests - before
	if writes > n/10 {
		t.Errorf("%d concurrent applies took %d WriteRequests, want them batched (at most %d)", n, writes, n/10)
	}
	t.Logf("%d applies, %d WriteRequests", n, writes)

	t.Run("applying the same entries again writes nothing", func(t *testing.T) {
		before := r.srv.Stats().WriteRequests
		res, err := r.prog.Apply(context.Background(), Change{Owner: "session/ns/s1", Entries: sessionEntries(t, 1)})
		if err != nil || res["session/ns/s1"] != nil {
			t.Fatal(err, res)
		}
		if got := r.srv.Stats().WriteRequests - before; got != 0 {
			t.Errorf("%d WriteRequests for an unchanged owner", got)
		}
	})
	t.Run("a replay onto a device that holds everything writes nothing", func(t *testing.T) {
		before := r.srv.Stats().WriteRequests
		r.replay(t)
		if got := r.srv.Stats().WriteRequests - before; got != 0 {
			t.Errorf("%d WriteRequests replaying an unchanged device", got)
		}
	})
}

// The window spaces rounds apart; it does not hold back a change that comes after a quiet
// spell. With an hour's window the first change is written at once and the next waits.
func TestProgrammerWritesAChangeAfterAQuietSpellAtOnce(t *testing.T) {
	rig := newProgRig(t, nil)
	p := New(rig.dev, logr.Discard(), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	replayOn(t, p, rig.gen, false)
	before := rig.count(t, "sessions")

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if res, err := p.Apply(wctx, Change{Owner: "session/ns/s1", Entries: sessionEntries(t, 1)}); err != nil || res["session/ns/s1"] != nil {
		t.Fatalf("the first change after the replay: %v %v, want it written without waiting out the window", err, res)
	}
	if got := rig.count(t, "sessions"); got != before+1 {
		t.Fatalf("%d sessions entries after the first change, want %d", got, before+1)
	}
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if _, err := p.Apply(sctx, Change{Owner: "session/ns/s2", Entries: sessionEntries(t, 2)}); err == nil {
		t.Error("the second change was written within the window of the first")
	}
	if got := rig.count(t, "sessions"); got != before+1 {
		t.Errorf("%d sessions entries within the window, want %d", got, before+1)
	}
}

func TestProgrammerReplayRepairsTheDevice(t *testing.T) {
	r := newProgRig(t, nil)
	for i := 0; i < 3; i++ {
		owner := fmt.Sprintf("session/ns/s%d", i)
		if res, err := r.prog.Apply(context.Background(), Change{Owner: owner, Entries: sessionEntries(t, i)}); err != nil || res[owner] != nil {
			t.Fatal(err, res)
		}
	}
	// Someone else deletes one of ours and adds a stranger.
	ours, stranger := r.sessionsEntry(t, 0), r.sessionsEntry(t, 9)
	if errs := r.dev.Write(context.Background(), []*p4v1.Update{upfclient.Delete(ours), upfclient.Insert(stranger)}); errs != nil {
		t.Fatal(errs)
	}
	r.replay(t)
	es, err := r.dev.ReadTable(context.Background(), "sessions")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, e := range es {
		keys[upfclient.EntryKey(e)] = true
	}
	if !keys[upfclient.EntryKey(ours)] || keys[upfclient.EntryKey(stranger)] || len(es) != 3 {
		t.Errorf("after the replay: ours present %v, stranger present %v, %d entries", keys[upfclient.EntryKey(ours)], keys[upfclient.EntryKey(stranger)], len(es))
	}
}

// The programmer keeps what it wrote as its encoding (entry.go), not as the built entry: what it
// writes from that encoding later (a replay putting back what someone else changed or deleted)
// is what the desired entries say, field for field.
func TestProgrammerWritesFromWhatItKeeps(t *testing.T) {
	r := newProgRig(t, nil)
	ctx := context.Background()
	want := oracle{}
	for i := range 2 {
		owner := fmt.Sprintf("session/ns/s%d", i)
		es := sessionEntries(t, i)
		if res, err := r.prog.Apply(ctx, Change{Owner: owner, Entries: es}); err != nil || res[owner] != nil {
			t.Fatal(err, res)
		}
		want.add(t, r.dev.Schema(), es)
	}
	r.prog.mu.Lock()
	for o, entries := range r.prog.owners {
		for k, be := range entries {
			if be.fresh != nil {
				t.Errorf("%s %s: the built protobuf entry is still held after its write", o, k)
			}
		}
	}
	r.prog.mu.Unlock()

	// Someone else gives session 0 another user and deletes session 1's entry.
	changed, gone := r.sessionsEntry(t, 0), r.sessionsEntry(t, 1)
	changed.Action = r.sessionsEntry(t, 7).Action
	if errs := r.dev.Write(ctx, []*p4v1.Update{upfclient.Modify(changed), upfclient.Delete(gone)}); errs != nil {
		t.Fatal(errs)
	}
	r.replay(t)
	want.onDevice(t, r.dev)
}

// Entries recorded before the programmer knows the device's P4Info (Seed, as at an operator's
// start) are kept as their desired entries' binary form and built from it by the replay.
func TestSeededEntriesAreWrittenAsDesired(t *testing.T) {
	r := newProgRig(t, nil)
	p := New(r.dev, logr.Discard(), 5*time.Millisecond)
	want := oracle{}
	var changes []Change
	for i := range 3 {
		es := sessionEntries(t, i)
		changes = append(changes, Change{Owner: fmt.Sprintf("session/ns/s%d", i), Entries: es})
		want.add(t, r.dev.Schema(), es)
	}
	if err := p.Seed(changes...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go p.Run(ctx)
	replayOn(t, p, r.gen, false)
	want.onDevice(t, r.dev)
}

// oracle is what the device should hold: desired entries built afresh, by key.
type oracle map[string]*p4v1.TableEntry

func (o oracle) add(t *testing.T, sch *upfclient.Schema, es []desired.Entry) {
	t.Helper()
	for _, e := range es {
		te, err := sch.Build(e.Client())
		if err != nil {
			t.Fatal(err)
		}
		o[upfclient.EntryKey(te)] = te
	}
}

// onDevice checks that the device's tables that the oracle names hold exactly its entries.
func (o oracle) onDevice(t *testing.T, dev *upfclient.Device) {
	t.Helper()
	tables := map[string]bool{}
	for _, te := range o {
		tables[dev.Schema().TableName(te.GetTableId())] = true
	}
	got := 0
	for table := range tables {
		es, err := dev.ReadTable(context.Background(), table)
		if err != nil {
			t.Fatal(err)
		}
		for _, te := range es {
			got++
			if w, ok := o[upfclient.EntryKey(te)]; !ok || !upfclient.SameEntry(te, w) {
				t.Errorf("%s on the device: %v; want %v", table, te, w)
			}
		}
	}
	if got != len(o) {
		t.Errorf("%d entries on the device, want %d", got, len(o))
	}
}

func TestProgrammerOwnershipAndDeletion(t *testing.T) {
	r := newProgRig(t, nil)
	ctx := context.Background()
	if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/a", Entries: sessionEntries(t, 1)}); err != nil || res["session/ns/a"] != nil {
		t.Fatal(err, res)
	}
	t.Run("an entry another owner holds is a conflict and changes nothing", func(t *testing.T) {
		res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/b", Entries: sessionEntries(t, 1)})
		var ce *ConflictError
		if err != nil || !errors.As(res["session/ns/b"], &ce) || ce.Owner != "session/ns/a" {
			t.Fatalf("got %v %v, want a conflict with session/ns/a", err, res)
		}
	})
	t.Run("removing an owner deletes its entries", func(t *testing.T) {
		if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/a"}); err != nil || res["session/ns/a"] != nil {
			t.Fatal(err, res)
		}
		if n := r.count(t, "sessions"); n != 0 {
			t.Errorf("%d sessions entries left", n)
		}
	})
	t.Run("the owner refused for the conflict is woken when the key is released", func(t *testing.T) {
		select {
		case owners := <-r.room:
			if len(owners) != 1 || owners[0] != "session/ns/b" {
				t.Errorf("woken %v, want session/ns/b", owners)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("session/ns/b not woken after session/ns/a released the key")
		}
		if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/b", Entries: sessionEntries(t, 1)}); err != nil || res["session/ns/b"] != nil {
			t.Fatalf("retry: %v %v", err, res)
		}
	})
}

// A round that changes the entries a table holds tells OnStatus, with Status showing the new
// count: the UPF's status.tables and status.sessions follow the device, not a timer.
func TestProgrammerTellsWhenTableUsageChanges(t *testing.T) {
	r := newProgRig(t, nil)
	told := make(chan int, 16)
	r.prog.OnStatus = func() { told <- r.prog.Status().Usage["sessions"] }
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		entries []desired.Entry
		want    int
	}{
		{"a session written", sessionEntries(t, 1), 1},
		{"the session removed", nil, 0},
	} {
		if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/a", Entries: tc.entries}); err != nil || res["session/ns/a"] != nil {
			t.Fatal(tc.name, err, res)
		}
		select {
		case n := <-told:
			if n != tc.want {
				t.Errorf("%s: told with %d sessions entries, want %d", tc.name, n, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: OnStatus not told", tc.name)
		}
	}
}

func TestProgrammerTableFullThenRoom(t *testing.T) {
	r := newProgRig(t, func(info *p4configv1.P4Info) {
		for _, tb := range info.GetTables() {
			if tb.GetPreamble().GetName() == "sessions" {
				tb.Size = 2
			}
		}
	})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		owner := fmt.Sprintf("session/ns/s%d", i)
		if res, err := r.prog.Apply(ctx, Change{Owner: owner, Entries: sessionEntries(t, i)}); err != nil || res[owner] != nil {
			t.Fatal(err, res)
		}
	}
	res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/s2", Entries: sessionEntries(t, 2)})
	var full *TableFullError
	if err != nil || !errors.As(res["session/ns/s2"], &full) || full.Table != "sessions" {
		t.Fatalf("got %v %v, want TableFull on sessions", err, res)
	}
	if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/s0"}); err != nil || res["session/ns/s0"] != nil {
		t.Fatal(err, res)
	}
	select {
	case owners := <-r.room:
		if len(owners) != 1 || owners[0] != "session/ns/s2" {
			t.Errorf("room for %v, want session/ns/s2", owners)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no room notification after a delete in the full table")
	}
	if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/s2", Entries: sessionEntries(t, 2)}); err != nil || res["session/ns/s2"] != nil {
		t.Fatalf("retry: %v %v", err, res)
	}
}

// AppIDInUse sees an application ID in an override an owner wants and, after the owner dropped
// it, in the override the device still holds until its delete went through.
func TestAppIDInUseWhileAnOverrideNamesIt(t *testing.T) {
	r := newProgRig(t, nil)
	ctx := context.Background()
	seq := uint32(0)
	lb := junctionv1.SteeringPolicySpec{Precedence: 10,
		TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"198.18.10.0/24"}},
		Steering:          junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptrTo(int32(30))}}}
	es, err := desired.SessionEntries(desired.Session{
		Name: "s", UserIndex: 1, SequenceIndex: &seq, Policies: []desired.Policy{{Name: "video", AppID: 5, Spec: lb}},
		Spec: junctionv1.ATSSSSessionSpec{SessionAddress: "10.60.0.1",
			AccessLegs: junctionv1.AccessLegs{NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/s", Entries: es}); err != nil || res["session/ns/s"] != nil {
		t.Fatal(err, res)
	}
	if n := r.count(t, "session_overrides"); n != 1 {
		t.Fatalf("%d session_overrides entries, want the session's one", n)
	}
	if !r.prog.AppIDInUse(5) || r.prog.AppIDInUse(6) {
		t.Fatalf("in use: 5 %v, 6 %v; want only 5", r.prog.AppIDInUse(5), r.prog.AppIDInUse(6))
	}
	// Nobody wants the override any more, but the device holds it until its delete goes through
	// (the mirror says so).
	r.prog.mu.Lock()
	wanted := r.prog.owners["session/ns/s"]
	delete(r.prog.owners, "session/ns/s")
	r.prog.mu.Unlock()
	if !r.prog.AppIDInUse(5) {
		t.Error("an override on the device does not count")
	}
	r.prog.mu.Lock()
	r.prog.owners["session/ns/s"] = wanted
	r.prog.mu.Unlock()
	if res, err := r.prog.Apply(ctx, Change{Owner: "session/ns/s"}); err != nil || res["session/ns/s"] != nil {
		t.Fatal(err, res)
	}
	if r.prog.AppIDInUse(5) {
		t.Error("still in use after the override was deleted from the device")
	}
}

func ptrTo[T any](v T) *T { return &v }

// claimedSchema is a device whose P4Info, as the programmer is told, has other table sizes than
// the one it runs: a device that holds fewer entries than its P4Info says.
type claimedSchema struct {
	Device
	sch *upfclient.Schema
}

func (c claimedSchema) Schema() *upfclient.Schema { return c.sch }

// onDevice runs another programmer on the rig's device, as dev presents it.
func (r *progRig) onDevice(t testing.TB, dev Device) *progRig {
	t.Helper()
	q := &progRig{srv: r.srv, dev: r.dev, gen: r.gen, room: make(chan []string, 16)}
	q.prog = New(dev, logr.Discard(), 5*time.Millisecond)
	q.prog.OnRoom = func(o []string) { q.room <- o }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go q.prog.Run(ctx)
	q.replay(t)
	return q
}

// An object's entries go in all or none (the README: a full table disturbs nothing else), the
// device's RESOURCE_EXHAUSTED having the last word: on a device whose applications table holds 3
// while its P4Info says 1,024, a policy whose three entries meet room for two has the two it got
// in taken back, so that a smaller policy still fits, and it goes in whole once room appears.
func TestAnObjectThatDoesNotFitLeavesNothingOnTheDevice(t *testing.T) {
	rig := newProgRig(t, sizeOf("applications", 3))
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := upfclient.NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := sch.TableSize("applications"); err != nil || n <= 3 {
		t.Fatalf("the P4Info's applications size is %d (%v), want more than the device's 3", n, err)
	}
	r := rig.onDevice(t, claimedSchema{rig.dev, sch})
	d := &deviceWrites{srv: r.srv, last: r.srv.Stats()}
	ctx := context.Background()
	apply := func(owner string, id uint16, prefixes ...junctionv1.IPv4Prefix) error {
		t.Helper()
		var es []desired.Entry
		if len(prefixes) > 0 {
			var err error
			es, err = desired.ApplicationEntries(desired.Policy{Name: owner, AppID: id, Spec: junctionv1.SteeringPolicySpec{
				Precedence:        int32(id),
				TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes},
				Steering:          junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay, SmallestDelay: &junctionv1.SmallestDelay{}},
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
		res, err := r.prog.Apply(ctx, Change{Owner: owner, Entries: es})
		if err != nil {
			t.Fatal(err)
		}
		return res[owner]
	}
	if err := apply("policy/ns/filler", 1, "198.18.0.0/24"); err != nil {
		t.Fatal(err)
	}
	var full *TableFullError
	if err := apply("policy/ns/big", 2, "198.18.1.0/24", "198.18.2.0/24", "198.18.3.0/24"); !errors.As(err, &full) || full.Table != "applications" {
		t.Fatalf("got %v, want TableFull on applications", err)
	}
	if inserts, refused := d.since(); inserts != 3 || refused != 1 {
		t.Fatalf("%d inserts and %d refused updates, want the filler's and 2 of the big policy's in, 1 refused", inserts, refused)
	}
	if n := r.count(t, "applications"); n != 1 {
		t.Fatalf("%d applications entries, want only the filler's 1: the policy that did not fit left some", n)
	}
	if err := apply("policy/ns/small", 3, "198.18.9.0/24"); err != nil {
		t.Fatalf("a policy that fits in what is left: %v", err)
	}
	if err := apply("policy/ns/filler", 1); err != nil {
		t.Fatal(err)
	}
	if err := apply("policy/ns/small", 3); err != nil {
		t.Fatal(err)
	}
	select {
	case owners := <-r.room:
		if !slices.Contains(owners, "policy/ns/big") {
			t.Fatalf("room for %v, want policy/ns/big", owners)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no room notification")
	}
	if err := apply("policy/ns/big", 2, "198.18.1.0/24", "198.18.2.0/24", "198.18.3.0/24"); err != nil {
		t.Fatalf("with room for all three: %v", err)
	}
	if n := r.count(t, "applications"); n != 3 {
		t.Fatalf("%d applications entries, want the big policy's 3", n)
	}
}

// sizeOf sets a table's size in the P4Info pushed to the device.
func sizeOf(table string, size int64) func(*p4configv1.P4Info) {
	return func(info *p4configv1.P4Info) {
		for _, tb := range info.GetTables() {
			if tb.GetPreamble().GetName() == table {
				tb.Size = size
			}
		}
	}
}

// policyChange is owner's Change for a policy whose n destination prefixes make n applications
// entries (n = 0 removes the owner).
func policyChange(t *testing.T, owner string, id uint16, n int) Change {
	t.Helper()
	return steeredPolicyChange(t, owner, id, n, junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay, SmallestDelay: &junctionv1.SmallestDelay{}})
}

// steeredPolicyChange is policyChange with the policy's steering: the same entries' keys with
// other action data.
func steeredPolicyChange(t *testing.T, owner string, id uint16, n int, steering junctionv1.SteeringMode) Change {
	t.Helper()
	if n == 0 {
		return Change{Owner: owner}
	}
	prefixes := make([]junctionv1.IPv4Prefix, n)
	for i := range prefixes {
		prefixes[i] = junctionv1.IPv4Prefix(fmt.Sprintf("198.18.%d.0/24", int(id)*16+i))
	}
	es, err := desired.ApplicationEntries(desired.Policy{Name: owner, AppID: id, Spec: junctionv1.SteeringPolicySpec{
		Precedence:        int32(id),
		TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes},
		Steering:          steering,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n {
		t.Fatalf("%d applications entries for %d prefixes", len(es), n)
	}
	return Change{Owner: owner, Entries: es}
}

// deviceWrites counts what reached the software UPF since the last call.
type deviceWrites struct {
	srv  *p4rt.Server
	last p4rt.Stats
}

func (d *deviceWrites) since() (inserts, refused uint64) {
	inserts, _, refused = d.sinceWithModifies()
	return inserts, refused
}

func (d *deviceWrites) sinceWithModifies() (inserts, modifies, refused uint64) {
	st := d.srv.Stats()
	inserts, modifies, refused = st.Inserts-d.last.Inserts, st.Modifies-d.last.Modifies, st.UpdateErrors-d.last.UpdateErrors
	d.last = st
	return inserts, modifies, refused
}

// An object that cannot fit writes nothing (issue 27, item 6; docs/operator.md, "Capacity"): the
// programmer plans each owner's inserts against the room its table has (the P4Info's size less
// what the device holds, after the round's deletes and the owners planned before it in the
// round), so none of a waiting object's entries is ever live on the device, nor is it written
// again each time it is applied while it waits; it goes in whole once room appears.
func TestAnOwnerThatCannotFitWritesNothingUntilThereIsRoom(t *testing.T) {
	r := newProgRig(t, sizeOf("applications", 4))
	ctx := context.Background()
	d := &deviceWrites{srv: r.srv, last: r.srv.Stats()}
	apply := func(changes ...Change) map[string]error {
		t.Helper()
		res, err := r.prog.Apply(ctx, changes...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	wantFull := func(res map[string]error, owner string) {
		t.Helper()
		var full *TableFullError
		if !errors.As(res[owner], &full) || full.Table != "applications" {
			t.Fatalf("%s: %v, want TableFull on applications", owner, res[owner])
		}
	}
	wantWrites := func(what string, inserts uint64) {
		t.Helper()
		if got, refused := d.since(); got != inserts || refused != 0 {
			t.Errorf("%s: %d inserts reached the device and it refused %d updates, want %d inserts and no refusal", what, got, refused, inserts)
		}
	}

	if res := apply(policyChange(t, "policy/ns/filler", 1, 1)); res["policy/ns/filler"] != nil {
		t.Fatal(res)
	}
	wantWrites("the filler", 1)
	big := policyChange(t, "policy/ns/big", 2, 4)
	wantFull(apply(big), "policy/ns/big")
	wantWrites("a policy of 4 with room for 3", 0)

	// The operator applies a waiting object again whenever it reconciles it (another object's
	// change, a requeue): here in the same round as a second owner. The waiting one is planned
	// first (owners go in order) and takes no room from the second.
	res := apply(big, policyChange(t, "policy/ns/small", 3, 1))
	wantFull(res, "policy/ns/big")
	if res["policy/ns/small"] != nil {
		t.Fatalf("a second owner that fits: %v", res["policy/ns/small"])
	}
	wantWrites("the waiting policy and a second one", 1)

	// Room for 2: x takes 1, so y, planned after it in the same round, does not fit.
	res = apply(policyChange(t, "policy/ns/x", 4, 1), policyChange(t, "policy/ns/y", 5, 2))
	wantFull(res, "policy/ns/y")
	if res["policy/ns/x"] != nil {
		t.Fatalf("x, with room for it: %v", res["policy/ns/x"])
	}
	wantWrites("x and y with room for 2", 1)
	if n := r.count(t, "applications"); n != 3 {
		t.Fatalf("%d applications entries, want the filler's, small's and x's", n)
	}

	// Room for 3 appears: big is woken, still does not fit, and waits again without writing.
	if res := apply(policyChange(t, "policy/ns/filler", 1, 0), policyChange(t, "policy/ns/small", 3, 0)); res["policy/ns/filler"] != nil || res["policy/ns/small"] != nil {
		t.Fatal(res)
	}
	select {
	case owners := <-r.room:
		if !slices.Contains(owners, "policy/ns/big") {
			t.Fatalf("room for %v, want policy/ns/big among them", owners)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no room notification after deletes in the applications table")
	}
	d.since()
	wantFull(apply(big), "policy/ns/big")
	wantWrites("a policy of 4 with room for 3", 0)

	// The round that deletes x has room for all 4.
	res = apply(policyChange(t, "policy/ns/x", 4, 0), big)
	if res["policy/ns/big"] != nil || res["policy/ns/x"] != nil {
		t.Fatalf("with room for all 4 after the round's delete: %v", res)
	}
	wantWrites("the policy of 4 with room for 4", 4)
	if n := r.count(t, "applications"); n != 4 {
		t.Fatalf("%d applications entries, want the big policy's 4", n)
	}

	// In the full table: other action data for the same 4 entries needs no room; with a fifth
	// entry none of it is written, the modifies neither.
	balanced := junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptrTo(int32(30))}}
	if res := apply(steeredPolicyChange(t, "policy/ns/big", 2, 4, balanced)); res["policy/ns/big"] != nil {
		t.Fatalf("modifies in a full table: %v", res["policy/ns/big"])
	}
	if inserts, modifies, refused := d.sinceWithModifies(); inserts != 0 || modifies != 4 || refused != 0 {
		t.Errorf("new action data: %d inserts, %d modifies, %d refused; want the 4 modifies", inserts, modifies, refused)
	}
	wantFull(apply(steeredPolicyChange(t, "policy/ns/big", 2, 5, junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay, SmallestDelay: &junctionv1.SmallestDelay{}})), "policy/ns/big")
	if inserts, modifies, refused := d.sinceWithModifies(); inserts != 0 || modifies != 0 || refused != 0 {
		t.Errorf("a fifth entry and new action data in a full table: %d inserts, %d modifies, %d refused; want nothing written", inserts, modifies, refused)
	}
}

// A replay plans like a round: an owner the device has no room for is not written, and waits.
func TestAReplayWritesNothingOfAnOwnerThatCannotFit(t *testing.T) {
	r := newProgRig(t, sizeOf("applications", 3))
	d := &deviceWrites{srv: r.srv, last: r.srv.Stats()}
	if err := r.prog.Seed(policyChange(t, "policy/ns/a", 1, 2), policyChange(t, "policy/ns/b", 2, 2)); err != nil {
		t.Fatal(err)
	}
	r.replay(t)
	if inserts, refused := d.since(); inserts != 2 || refused != 0 {
		t.Fatalf("the replay: %d inserts reached the device and it refused %d updates, want a's 2 and no refusal", inserts, refused)
	}
	res, err := r.prog.Apply(context.Background(), policyChange(t, "policy/ns/b", 2, 2))
	var full *TableFullError
	if err != nil || !errors.As(res["policy/ns/b"], &full) {
		t.Fatalf("b after the replay: %v %v, want TableFull", err, res)
	}
	if inserts, refused := d.since(); inserts != 0 || refused != 0 {
		t.Fatalf("b applied again: %d inserts, %d refused, want nothing written", inserts, refused)
	}
}

// Path monitoring writes the device through the programmer, the device's one writer: its
// register writes for programmed users share the rounds of other sessions' table writes (few
// WriteRequests for many), and while the device is down nothing is written.
func TestPathMonitoringWritesGoThroughTheProgrammer(t *testing.T) {
	r := newProgRig(t, nil)
	const n = 100
	entries := make([][]desired.Entry, 2*n)
	for i := range entries {
		entries[i] = sessionEntries(t, i)
	}
	apply := func(i int) error {
		owner := fmt.Sprintf("session/ns/s%d", i)
		res, err := r.prog.Apply(context.Background(), Change{Owner: owner, Entries: entries[i]})
		return errors.Join(err, res[owner])
	}
	for i := range n {
		if err := apply(i); err != nil {
			t.Fatal(err)
		}
	}
	// Users 0..n-1 are programmed: path monitoring writes their RTTs while sessions n..2n-1
	// (new users, whose path state the programmer resets) are applied.
	before := r.srv.Stats().WriteRequests
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() { defer wg.Done(); errs[i] = apply(n + i) }()
		go func() {
			defer wg.Done()
			errs[n+i] = r.prog.WriteRegister(context.Background(), RegisterRTTNon3GPP, uint32(i), uint64(1000+i))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if writes := r.srv.Stats().WriteRequests - before; writes > n/10 {
		t.Errorf("%d applies and %d register writes took %d WriteRequests, want them in shared rounds (at most %d)", n, n, writes, n/10)
	}
	got, err := r.dev.ReadRegisters(context.Background(), RegisterRTTNon3GPP)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 * n {
		want := uint64(0) // a new user's path state starts at 0
		if i < n {
			want = uint64(1000 + i)
		}
		if got[int64(i)] != want {
			t.Fatalf("rtt_non3gpp[%d] = %d, want %d", i, got[int64(i)], want)
		}
	}

	r.prog.Down()
	before = r.srv.Stats().WriteRequests
	if err := r.prog.WriteRegister(context.Background(), RegisterRTTNon3GPP, 1, 5); !errors.Is(err, ErrNotSynced) {
		t.Errorf("a register write while down: %v, want ErrNotSynced", err)
	}
	if writes := r.srv.Stats().WriteRequests - before; writes != 0 {
		t.Errorf("%d WriteRequests reached a device the programmer is down for", writes)
	}
}

// writeTracker is a device that knows whether a Write is in flight.
type writeTracker struct {
	Device
	inWrite atomic.Int32
}

func (w *writeTracker) Write(ctx context.Context, updates []*p4v1.Update) []error {
	w.inWrite.Add(1)
	defer w.inWrite.Add(-1)
	return w.Device.Write(ctx, updates)
}

// The programmer is the device's one writer for its other state too: the extras (the digest
// configuration and the clone session) run first in a replay and, while refused, again between
// rounds, never while one of its writes is in flight.
func TestExtrasRunBetweenTheProgrammersWrites(t *testing.T) {
	rig := newProgRig(t, nil)
	dev := &writeTracker{Device: rig.dev}
	p := New(dev, logr.Discard(), time.Millisecond)
	p.extrasRetry = 10 * time.Millisecond
	var calls, overlaps atomic.Int32
	p.Extras = func(context.Context) error {
		if dev.inWrite.Load() != 0 {
			overlaps.Add(1)
		}
		if calls.Add(1) <= 5 {
			return errors.New("refused")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	p.RequestReplay(rig.gen, false)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; calls.Load() < 6; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("extras ran %d times in 10s, want a first run in the replay and retries until it succeeds", calls.Load())
		}
		owner := fmt.Sprintf("session/ns/s%d", i%50)
		if _, err := p.Apply(ctx, Change{Owner: owner, Entries: sessionEntries(t, i%50)}); err != nil {
			t.Fatal(err)
		}
		_ = p.WriteRegister(ctx, RegisterRTT3GPP, uint32(i%50), uint64(i))
	}
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 6 {
		t.Errorf("extras ran %d times, want 6: no more retries once it succeeded", n)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("extras ran %d times while a write was in flight", n)
	}
}

// BenchmarkProgrammerReplay replays the desired state of JUNCTION_BENCH_SESSIONS sessions
// (default 100,000; both legs: a sessions and an uplink_tunnels entry each) onto an empty
// software UPF and then onto one that holds it all: the programmer, the P4Runtime client and
// the server in one process, without the API server. The operator benchmark (test/operator)
// measures the same replay inside the whole system.
//
//	go test -run '^$' -bench ProgrammerReplay -benchtime 1x ./controllers
func BenchmarkProgrammerReplay(b *testing.B) {
	n := 100_000
	if env := os.Getenv("JUNCTION_BENCH_SESSIONS"); env != "" {
		var err error
		if n, err = strconv.Atoi(env); err != nil {
			b.Fatalf("JUNCTION_BENCH_SESSIONS: %v", err)
		}
	}
	changes := make([]Change, n)
	for i := range changes {
		es, err := desired.SessionEntries(desired.Session{
			Name: fmt.Sprint("s", i), UserIndex: uint32(i), PeerIndex: 1,
			Spec: junctionv1.ATSSSSessionSpec{
				SessionAddress: junctionv1.IPv4Address(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)),
				AccessLegs: junctionv1.AccessLegs{
					ThreeGPP:    &junctionv1.ThreeGPPLeg{UEAddress: "100.64.0.1", GNBAddress: "198.51.100.1", UplinkTEID: int64(i + 1), DownlinkTEID: int64(i + 1)},
					NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.1"},
				},
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		changes[i] = Change{Owner: fmt.Sprint("session/ns/s", i), Entries: es}
	}
	for range b.N {
		r := newProgRig(b, nil)
		if err := r.prog.Seed(changes...); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		r.replay(b)
		empty := time.Since(start)
		start = time.Now()
		r.replay(b)
		full := time.Since(start)
		b.ReportMetric(empty.Seconds(), "s-onto-empty")
		b.ReportMetric(full.Seconds(), "s-onto-full")
		b.ReportMetric(float64(n)/empty.Seconds(), "sessions/s")
	}
}

// BenchmarkBuildSessionEntries builds the P4Runtime entries of one two-leg session, what the
// programmer does for every session it is given (N4 establishments included).
func BenchmarkBuildSessionEntries(b *testing.B) {
	sch := newProgRig(b, nil).dev.Schema()
	es, err := desired.SessionEntries(desired.Session{
		Name: "s", UserIndex: 1, PeerIndex: 1, UsageIndex: 1,
		Spec: junctionv1.ATSSSSessionSpec{
			SessionAddress: "10.60.0.1",
			AccessLegs: junctionv1.AccessLegs{
				ThreeGPP:    &junctionv1.ThreeGPPLeg{UEAddress: "100.64.0.1", GNBAddress: "198.51.100.1", UplinkTEID: 1, DownlinkTEID: 1},
				NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.1"},
			},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range es {
			if _, err := sch.Build(e.Client()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// usageSession is a single-access session of user 1 that counts into usage cell 7.
func usageSession(t *testing.T, name string, teid uint32) []desired.Entry {
	t.Helper()
	es, err := desired.SessionEntries(desired.Session{
		Name: name, UserIndex: 1, PeerIndex: 1, UsageIndex: 7,
		Spec: junctionv1.ATSSSSessionSpec{
			SessionAddress: "10.60.0.1",
			AccessLegs: junctionv1.AccessLegs{ThreeGPP: &junctionv1.ThreeGPPLeg{
				UEAddress: "10.45.0.1", GNBAddress: "198.51.100.10", UplinkTEID: int64(teid), DownlinkTEID: 8193}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// applyOwned applies owner's entries, failing on any error.
func (r *progRig) applyOwned(t *testing.T, owner string, es []desired.Entry) {
	t.Helper()
	res, err := r.prog.Apply(context.Background(), Change{Owner: owner, Entries: es})
	if err = errors.Join(err, res[owner]); err != nil {
		t.Fatal(err)
	}
}

// sessionCells are the counters a session's usage index names cells of (docs/pipeline.md,
// "Usage counters": usage and, with a policer, what it dropped; each way).
var sessionCells = [4]string{"uplink_usage", "downlink_usage", "uplink_policed", "downlink_policed"}

// setUsage writes c into a session's cells at idx, as traffic would have counted.
func (r *progRig) setUsage(t *testing.T, idx int64, c upfclient.CounterData) {
	t.Helper()
	r.setCells(t, sessionCells[:], idx, c)
}

// setCells writes c into the cells at idx of the counters names.
func (r *progRig) setCells(t *testing.T, names []string, idx int64, c upfclient.CounterData) {
	t.Helper()
	for _, name := range names {
		u, err := r.dev.Schema().CounterUpdate(name, idx, c)
		if err != nil {
			t.Fatal(err)
		}
		if errs := r.dev.Write(context.Background(), []*p4v1.Update{u}); errs != nil {
			t.Fatal(errs[0])
		}
	}
}

// usage reads a session's cells at idx (sessionCells).
func (r *progRig) usage(t *testing.T, idx int64) [4]upfclient.CounterData {
	t.Helper()
	var out [4]upfclient.CounterData
	for i, name := range sessionCells {
		c, err := r.dev.ReadCounter(context.Background(), name, idx)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c
	}
	return out
}

// A session's usage cells count from its first entry (docs/pipeline.md, "Usage counters"): the
// programmer zeroes a cell when an entry starts to name it and none on the device does, and
// leaves it alone when a replay finds the session's entries on the device (an operator restart
// does not reset a session's usage) or the session's entries change.
func TestUsageCellsAreZeroedWhenASessionStartsUsingThem(t *testing.T) {
	r := newProgRig(t, nil)
	r.setUsage(t, 7, upfclient.CounterData{Packets: 5, Bytes: 500}) // what an earlier session counted
	r.applyOwned(t, "session/ns/s", usageSession(t, "s", 4097))
	if got := r.usage(t, 7); got != [4]upfclient.CounterData{} {
		t.Fatalf("cell 7 after the session's first entries: %+v, want zero", got)
	}
	counted := upfclient.CounterData{Packets: 3, Bytes: 300}
	r.setUsage(t, 7, counted) // the session's own traffic
	r.applyOwned(t, "session/ns/s", usageSession(t, "s", 4098))
	r.replay(t)
	if got := r.usage(t, 7); got != [4]upfclient.CounterData{counted, counted, counted, counted} {
		t.Errorf("cell 7 after a change of the session's entries and a replay: %+v, want %+v in each counter", got, counted)
	}
}

// After a pipeline push every usage cell is 0 (P4Runtime: a push clears the forwarding state),
// so a session that takes a cell no entry has named since then writes no zeros (at 100,000
// sessions, two of every five updates of a replay), while a cell an earlier session counted
// into is still zeroed before the next session counts.
func TestUsageCellsFreshSinceAPushAreNotZeroedAgain(t *testing.T) {
	r := newProgRig(t, nil)
	r.replayAfter(t, true) // the rig pushed the pipeline and nothing was written since

	// Registers and counters hold the push's zeros: the first session writes its entries only.
	before := r.srv.Stats()
	r.applyOwned(t, "session/ns/a", usageSession(t, "a", 4097))
	after := r.srv.Stats()
	if n := len(usageSession(t, "a", 4097)); after.Inserts-before.Inserts != uint64(n) || after.Modifies != before.Modifies {
		t.Fatalf("first session on cell 7 after the push: %d inserts, %d modifies; want its %d entries and nothing else",
			after.Inserts-before.Inserts, after.Modifies-before.Modifies, n)
	}
	// Session a counts into cell 7 and ends; session b takes the cell.
	r.setUsage(t, 7, upfclient.CounterData{Packets: 5, Bytes: 500})
	r.applyOwned(t, "session/ns/a", nil)
	r.applyOwned(t, "session/ns/b", usageSession(t, "b", 4098))
	if got := r.usage(t, 7); got != [4]upfclient.CounterData{} {
		t.Fatalf("cell 7 after session a counted into it and session b took it: %+v, want zero", got)
	}
}

// A QoS flow's cells count from its first entry too (docs/pipeline.md, "QoS flows"): the
// programmer zeroes a flow cell an earlier session counted into (its usage and policed counters)
// when a qos_flows entry starts to name it, as it does a session's usage cell.
func TestFlowCellsAreZeroedWhenAFlowStartsUsingThem(t *testing.T) {
	r := newProgRig(t, nil)
	flowCells := [4]string{CounterUplinkFlowUsage, CounterDownlinkFlowUsage, CounterUplinkFlowPoliced, CounterDownlinkFlowPoliced}
	set := func(idx int64, c upfclient.CounterData) {
		t.Helper()
		r.setCells(t, flowCells[:], idx, c)
	}
	check := func(what string, idx int64, want upfclient.CounterData) {
		t.Helper()
		for _, name := range flowCells {
			if c, err := r.dev.ReadCounter(context.Background(), name, idx); err != nil || c != want {
				t.Errorf("%s[%d] %s: %+v (%v), want %+v", name, idx, what, c, err, want)
			}
		}
	}
	block := uint32(2) // flow 0's cell: 10, flow 1's 11 (docs/pipeline.md: 5 × block + i)
	set(10, upfclient.CounterData{Packets: 5, Bytes: 500})
	session := func(flows ...junctionv1.QoSFlow) []desired.Entry {
		t.Helper()
		es, err := desired.SessionEntries(desired.Session{
			Name: "s", UserIndex: 1, PeerIndex: 1, UsageIndex: 7, QoSFlowIndex: &block,
			Spec: junctionv1.ATSSSSessionSpec{
				SessionAddress: "10.60.0.1", QFI: 9,
				AccessLegs: junctionv1.AccessLegs{ThreeGPP: &junctionv1.ThreeGPPLeg{
					UEAddress: "10.45.0.1", GNBAddress: "198.51.100.10", UplinkTEID: 4097, DownlinkTEID: 8193}},
				QoSFlows: flows,
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	video := junctionv1.QoSFlow{Name: "video", QFI: 2, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"198.51.100.0/24"}}}
	voice := junctionv1.QoSFlow{Name: "voice", QFI: 3, TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"203.0.113.0/24"}}}
	r.applyOwned(t, "session/ns/s", session(video))
	check("after the flow's first entries", 10, upfclient.CounterData{})

	// Two flows counted; then they swap cells in one round (a flow added ahead of another moves
	// it): each cell starts again from zero for its new flow. A cell a flow keeps keeps counting.
	r.applyOwned(t, "session/ns/s", session(video, voice))
	set(10, upfclient.CounterData{Packets: 5, Bytes: 500})
	set(11, upfclient.CounterData{Packets: 3, Bytes: 300})
	r.applyOwned(t, "session/ns/s", session(voice, video))
	check("after the two flows swapped cells", 10, upfclient.CounterData{})
	check("after the two flows swapped cells", 11, upfclient.CounterData{})
	set(10, upfclient.CounterData{Packets: 2, Bytes: 200})
	r.applyOwned(t, "session/ns/s", session(voice))
	check("kept by the flow that stays", 10, upfclient.CounterData{Packets: 2, Bytes: 200})
}
