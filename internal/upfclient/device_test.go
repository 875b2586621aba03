package upfclient

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

func sessionEntry(t testing.TB, d *Device, i int) *p4v1.TableEntry {
	return mustBuild(t, d, Entry{
		Table:  "sessions",
		Match:  []Match{Exact("session_addr", Uint(uint64(0x0a400000+i)))},
		Action: "set_session",
		Params: map[string][]byte{
			"user_idx": Uint(uint64(i)), "endpoint_idx": Uint(0), "peer_idx": Uint(1), "teid": Uint(uint64(i + 1)),
			"ue_addr_3gpp": Uint(uint64(0x0a000000 + i)), "ue_addr_non3gpp": Uint(uint64(0xc0a80000 + i)), "gateway_non3gpp": Uint(0), "teid_non3gpp": Uint(0), "usage_idx": Uint(uint64(i + 1)),
		},
	})
}

func TestConnectsAndBecomesPrimary(t *testing.T) {
	u := startUPF(t, "127.0.0.1:0")
	var eid atomic.Uint64
	eid.Store(7)
	d, _ := startDevice(t, u.addr, &eid)
	st := waitPrimary(t, d)
	if !st.Connected || st.Generation != 1 || st.ElectionID.GetLow() != 7 || st.Err != nil {
		t.Fatalf("state %+v", st)
	}
	if got := <-d.States(); !got.Primary || got.Generation != 1 {
		t.Fatalf("States() delivered %+v, want the primary state", got)
	}
	if v := testutil.ToFloat64(d.m.Primary.WithLabelValues(d.Name())); v != 1 {
		t.Fatalf("primary gauge %v", v)
	}
	// Before any pipeline: the cookie is 0 and name-based calls say why they cannot work.
	if c, err := d.GetPipelineCookie(ctxT(t)); err != nil || c != 0 {
		t.Fatalf("cookie %d, %v", c, err)
	}
	if _, err := d.ReadTable(ctxT(t), "sessions"); !errors.Is(err, ErrNoPipeline) {
		t.Fatalf("ReadTable before a pipeline: %v", err)
	}
}

func TestHigherElectionIDWinsAndBackupTakesOver(t *testing.T) {
	u := startUPF(t, "127.0.0.1:0")
	var eidA, eidB atomic.Uint64
	eidA.Store(10)
	eidB.Store(5)

	b, _ := startDevice(t, u.addr, &eidB)
	if st := waitPrimary(t, b); st.Generation != 1 {
		t.Fatalf("B alone: %+v", st)
	}
	a, stopA := startDevice(t, u.addr, &eidA)
	waitPrimary(t, a)
	st := waitState(t, b, "B demoted", func(s State) bool { return s.Connected && !s.Primary })
	if st.Generation != 1 {
		t.Fatalf("B demoted: %+v", st)
	}

	// A backup may read but not write.
	info, cfg := pipeline(t)
	if _, err := b.EnsurePipeline(ctxT(t), info, cfg, Cookie(info, cfg), PushIfDifferent); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("backup push: %v", err)
	}
	if pushed, err := a.EnsurePipeline(ctxT(t), info, cfg, Cookie(info, cfg), PushIfDifferent); err != nil || !pushed {
		t.Fatalf("primary push: %v, %v", pushed, err)
	}
	if _, err := b.LoadPipeline(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	errs := b.Write(ctxT(t), []*p4v1.Update{Insert(sessionEntry(t, b, 1))})
	if len(errs) != 1 || Code(errs[0]) != codes.PermissionDenied || !errors.Is(errs[0], ErrNotPrimary) {
		t.Fatalf("backup write: %v", errs)
	}
	if _, err := b.ReadTable(ctxT(t), "sessions"); err != nil {
		t.Fatalf("backup read: %v", err)
	}

	// The old leader stops; the new one (B) now derives a higher ID from its lease and
	// takes over on the device's "no primary" notice.
	eidB.Store(11)
	stopA()
	st = waitPrimary(t, b)
	if st.Generation != 2 || st.ElectionID.GetLow() != 11 {
		t.Fatalf("B after takeover: %+v", st)
	}
	mustWrite(t, b, Insert(sessionEntry(t, b, 1)))

	// A controller with a lower ID connects as a backup.
	var eidC atomic.Uint64
	eidC.Store(3)
	c, _ := startDevice(t, u.addr, &eidC)
	waitState(t, c, "C connected as backup", func(s State) bool { return s.Connected && !s.Primary })

	// Reelect: C's leadership changes, it asks for its new ID and wins.
	eidC.Store(12)
	if err := c.Reelect(); err != nil {
		t.Fatal(err)
	}
	if st := waitPrimary(t, c); st.Generation != 1 {
		t.Fatalf("C after Reelect: %+v", st)
	}
	waitState(t, b, "B demoted by C", func(s State) bool { return !s.Primary })
}

func TestReconnectsAfterTargetRestart(t *testing.T) {
	u := startUPF(t, "127.0.0.1:0")
	var eid atomic.Uint64
	eid.Store(1)
	d, _ := startDevice(t, u.addr, &eid)
	waitPrimary(t, d)
	info, cfg := pipeline(t)
	cookie := Cookie(info, cfg)
	if _, err := d.EnsurePipeline(ctxT(t), info, cfg, cookie, PushIfDifferent); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, Insert(sessionEntry(t, d, 1)), Insert(sessionEntry(t, d, 2)))

	addr := u.addr
	u.stop()
	st := waitState(t, d, "disconnected", func(s State) bool { return !s.Connected })
	if st.Err == nil {
		t.Fatalf("a lost stream must say why: %+v", st)
	}
	if errs := d.Write(ctxT(t), []*p4v1.Update{Insert(sessionEntry(t, d, 3))}); len(errs) != 1 || !IsUnavailable(errs[0]) {
		t.Fatalf("write while down: %v", errs)
	}

	startUPF(t, addr) // the same address, a fresh target with no state
	st = waitPrimary(t, d)
	if st.Generation != 2 {
		t.Fatalf("after restart: %+v, want generation 2", st)
	}
	if n := testutil.ToFloat64(d.m.Reconnects.WithLabelValues(d.Name())); n < 1 {
		t.Fatalf("reconnects metric %v", n)
	}
	// The restarted target lost its pipeline: the caller's replay pushes it and rewrites. The
	// P4Info is the same (another copy): entries built against the schema in use stay valid.
	sch := d.Schema()
	pushed, err := d.EnsurePipeline(ctxT(t), proto.Clone(info).(*p4configv1.P4Info), cfg, cookie, PushIfDifferent)
	if err != nil || !pushed {
		t.Fatalf("EnsurePipeline after restart: %v, %v", pushed, err)
	}
	if d.Schema() != sch {
		t.Fatal("the same P4Info pushed again must keep the schema in use")
	}
	entries, err := d.ReadTable(ctxT(t), "sessions")
	if err != nil || len(entries) != 0 {
		t.Fatalf("restarted target has %d entries, %v", len(entries), err)
	}
	mustWrite(t, d, Insert(sessionEntry(t, d, 1)))
}

func TestPipelinePushedOnlyWhenCookieDiffers(t *testing.T) {
	u := startUPF(t, "127.0.0.1:0")
	var eid atomic.Uint64
	eid.Store(1)
	d, stop := startDevice(t, u.addr, &eid)
	waitPrimary(t, d)
	info, cfg := pipeline(t)
	cookie := Cookie(info, cfg)

	if pushed, err := d.EnsurePipeline(ctxT(t), info, cfg, cookie, PushIfDifferent); err != nil || !pushed {
		t.Fatalf("first ensure: %v, %v", pushed, err)
	}
	if got, err := d.GetPipelineCookie(ctxT(t)); err != nil || got != cookie {
		t.Fatalf("device cookie %d, %v; want %d", got, err, cookie)
	}
	mustWrite(t, d, Insert(sessionEntry(t, d, 1)))
	if pushed, err := d.EnsurePipeline(ctxT(t), info, cfg, cookie, PushIfDifferent); err != nil || pushed {
		t.Fatalf("same cookie: pushed %v, %v", pushed, err)
	}

	// An operator restart: a new Device with a fresh Schema finds the pipeline in place.
	stop()
	eid.Store(2)
	d2, _ := startDevice(t, u.addr, &eid)
	waitPrimary(t, d2)
	if pushed, err := d2.EnsurePipeline(ctxT(t), info, cfg, cookie, PushIfDifferent); err != nil || pushed {
		t.Fatalf("restarted operator: pushed %v, %v", pushed, err)
	}
	if entries, err := d2.ReadTable(ctxT(t), "sessions"); err != nil || len(entries) != 1 {
		t.Fatalf("the entry must survive: %d, %v", len(entries), err)
	}

	// A new device config changes the cookie: pushed, and the device state is reset.
	cfg2 := []byte("softupf v2")
	cookie2 := Cookie(info, cfg2)
	if _, err := d2.EnsurePipeline(ctxT(t), info, cfg2, cookie2, PushNever); err == nil {
		t.Fatal("PushNever with a different cookie must fail")
	}
	if pushed, err := d2.EnsurePipeline(ctxT(t), info, cfg2, cookie2, PushIfDifferent); err != nil || !pushed {
		t.Fatalf("new cookie: pushed %v, %v", pushed, err)
	}
	if entries, err := d2.ReadTable(ctxT(t), "sessions"); err != nil || len(entries) != 0 {
		t.Fatalf("a push resets the tables: %d, %v", len(entries), err)
	}
	if n := testutil.ToFloat64(d2.m.PipelinePushes.WithLabelValues(d2.Name(), "OK")); n != 1 {
		t.Fatalf("pipeline pushes metric %v", n)
	}
	// A different P4Info gives a new schema, whose names resolve against it.
	sch := d2.Schema()
	info3 := proto.Clone(info).(*p4configv1.P4Info)
	info3.PkgInfo.Version = "changed"
	if _, err := d2.EnsurePipeline(ctxT(t), info3, cfg2, Cookie(info3, cfg2), PushIfDifferent); err != nil {
		t.Fatal(err)
	}
	if d2.Schema() == sch || d2.Schema().P4Info().GetPkgInfo().GetVersion() != "changed" {
		t.Fatal("a different P4Info must replace the schema")
	}
}

func TestBatchedWritesReportEachUpdateAndReadsGetEverything(t *testing.T) {
	// Small read chunks: the read-back below spans over a hundred ReadResponse messages.
	u, d := primaryWithPipeline(t, []upfOption{withReadChunk(100)})
	const n = 10_000
	want := make(map[string]*p4v1.TableEntry, n+100)
	updates := make([]*p4v1.Update, n)
	for i := range n {
		te := sessionEntry(t, d, i)
		updates[i] = Insert(te)
		want[EntryKey(te)] = te
	}
	before := u.srv.Stats().WriteRequests
	mustWrite(t, d, updates...)
	if reqs := u.srv.Stats().WriteRequests - before; reqs != 2 {
		t.Fatalf("%d updates took %d WriteRequests, want 2 (5000 per request)", n, reqs)
	}

	// A batch mixing new entries and duplicates: each update gets its own verdict.
	var mixed []*p4v1.Update
	for i := range 200 {
		if i%2 == 0 {
			te := sessionEntry(t, d, n+i)
			want[EntryKey(te)] = te
			mixed = append(mixed, Insert(te))
		} else {
			mixed = append(mixed, Insert(sessionEntry(t, d, i)))
		}
	}
	errs := d.Write(ctxT(t), mixed)
	if len(errs) != len(mixed) {
		t.Fatalf("got %d errors for %d updates", len(errs), len(mixed))
	}
	for i, err := range errs {
		if i%2 == 0 && err != nil {
			t.Fatalf("update %d (new) failed: %v", i, err)
		}
		if i%2 == 1 {
			var ue *UpdateError
			if !IsAlreadyExists(err) || !errors.As(err, &ue) || ue.Index != i || ue.Update != mixed[i] {
				t.Fatalf("update %d (duplicate): %v", i, err)
			}
		}
	}
	m := d.m
	if v := testutil.ToFloat64(m.WriteUpdates.WithLabelValues(d.Name(), "INSERT", "AlreadyExists")); v != 100 {
		t.Fatalf("AlreadyExists updates metric %v", v)
	}
	if v := testutil.ToFloat64(m.WriteUpdates.WithLabelValues(d.Name(), "INSERT", "OK")); v != n+100 {
		t.Fatalf("OK updates metric %v", v)
	}

	// Read everything back: every streamed response counts.
	got, err := d.ReadTable(ctxT(t), "sessions")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d entries, want %d", len(got), len(want))
	}
	for _, te := range got {
		w, ok := want[EntryKey(te)]
		if !ok || !SameEntry(w, te) {
			t.Fatalf("read-back entry %v differs from the written one %v", te, w)
		}
	}

	// MODIFY and DELETE of absent entries come back as NOT_FOUND.
	absent := sessionEntry(t, d, 999_999)
	errs = d.Write(ctxT(t), []*p4v1.Update{Modify(absent), Delete(absent), Delete(sessionEntry(t, d, 0))})
	if len(errs) != 3 || !IsNotFound(errs[0]) || !IsNotFound(errs[1]) || errs[2] != nil {
		t.Fatalf("modify/delete: %v", errs)
	}
}

func TestFullTableIsResourceExhaustedPerUpdate(t *testing.T) {
	_, d := primaryWithPipeline(t, nil)
	size, err := d.Schema().TableSize("tunnel_endpoints")
	if err != nil || size <= 0 || size > 200 {
		t.Fatalf("tunnel_endpoints size %d, %v", size, err)
	}
	endpoint := func(i int) *p4v1.TableEntry {
		return mustBuild(t, d, Entry{
			Table: "tunnel_endpoints", Match: []Match{Exact("endpoint_idx", Uint(uint64(i)))},
			Action: "set_tunnel_endpoint",
			Params: map[string][]byte{
				"n3_addr":       IPv4(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})),
				"junction_addr": IPv4(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})),
			},
		})
	}
	var updates []*p4v1.Update
	for i := range int(size) + 3 {
		updates = append(updates, Insert(endpoint(i)))
	}
	errs := d.Write(ctxT(t), updates)
	ok, full := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case IsResourceExhausted(err):
			full++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != int(size) || full != 3 {
		t.Fatalf("%d inserted, %d RESOURCE_EXHAUSTED; want %d and 3", ok, full, size)
	}
	// Room appears: the refused entry goes in.
	mustWrite(t, d, Delete(endpoint(0)))
	mustWrite(t, d, Insert(endpoint(int(size))))
}

func TestDigestsAreDeliveredAndAcked(t *testing.T) {
	lists := make(chan DigestList, 8)
	u, d := primaryWithPipeline(t, nil, func(c *Config) {
		c.DigestHandler = func(_ context.Context, l DigestList) { lists <- l }
	})
	const user = 9
	probeAck := probeTopology(t, u, d, user)
	// One message per list; the next list waits for the ack of the previous one (a minute
	// of ack timeout), so a second list proves the first was acked.
	if err := d.ConfigureDigest(ctxT(t), "probe_reports", 0, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := d.ConfigureDigest(ctxT(t), "probe_reports", 0, 1, time.Minute); err != nil {
		t.Fatalf("configuring again (MODIFY): %v", err)
	}

	for i, rtt := range []uint32{2500, 3100} {
		u.process(1, probeAck(rtt))
		var l DigestList
		select {
		case l = <-lists:
		case <-time.After(eventually):
			t.Fatalf("digest list %d never arrived (server stats %+v)", i+1, u.srv.Stats())
		}
		if l.Digest != "probe_reports" || len(l.Messages) != 1 {
			t.Fatalf("list %d: %+v", i+1, l)
		}
		m := l.Messages[0]
		if m.Uint("session_addr") != probeSession || m.Uint("user_idx") != user || m.Uint("access") != 2 ||
			m.Uint("kind") != 1 || m.Uint("rtt_us") != uint64(rtt) || m.Uint("suspended") != 0 {
			t.Fatalf("list %d message %v", i+1, m)
		}
	}
	// The server counts a list after handing it to the stream: the client may see it first.
	deadline := time.Now().Add(eventually)
	for st := u.srv.Stats(); st.DigestLists != 2 || st.DigestDrops != 0; st = u.srv.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("server stats %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
	if v := testutil.ToFloat64(d.m.DigestLists.WithLabelValues(d.Name(), "probe_reports")); v != 2 {
		t.Fatalf("digest lists metric %v", v)
	}

	// The data plane wrote the last RTT to the user's path state; read it by name.
	if v, err := d.ReadRegister(ctxT(t), "rtt_non3gpp", user); err != nil || v != 3100 {
		t.Fatalf("rtt_non3gpp[%d] = %d, %v", user, v, err)
	}
	// The ACKs were consumed: drop reason 13 (CONSUMED).
	if c, err := d.ReadCounter(ctxT(t), "drops", 13); err != nil || c.Packets != 2 {
		t.Fatalf("drops[CONSUMED] = %+v, %v", c, err)
	}
}

const probeSession = 0x0a400009 // 10.64.0.9

// probeTopology installs what a PROBE_ACK on the non-3GPP leg needs (the UPF's Junction
// address, a session of user) and returns a builder of such frames for a given RTT.
func probeTopology(t testing.TB, u *softUPF, d *Device, user uint64) func(rtt uint32) []byte {
	jAddr := netip.MustParseAddr("198.51.100.1")
	sess := netip.AddrFrom4([4]byte{10, 64, 0, 9})
	ue := netip.MustParseAddr("192.168.1.9")
	mustWrite(t, d,
		Insert(mustBuild(t, d, Entry{Table: "local_addresses", Match: []Match{Exact("dst_addr", IPv4(jAddr))}, Action: "accept_local"})),
		Insert(mustBuild(t, d, Entry{Table: "sessions", Match: []Match{Exact("session_addr", IPv4(sess))}, Action: "set_session",
			Params: map[string][]byte{"user_idx": Uint(user), "endpoint_idx": Uint(0), "peer_idx": Uint(0), "teid": Uint(1),
				"ue_addr_3gpp": Uint(0), "ue_addr_non3gpp": IPv4(ue), "gateway_non3gpp": Uint(0), "teid_non3gpp": Uint(0), "usage_idx": Uint(1)}})),
	)
	return func(rtt uint32) []byte {
		return wiretest.Build(
			wire.Ethernet{},
			wire.IPv4{Src: ue.As4(), Dst: jAddr.As4()}, wire.UDP{},
			wire.Header{Type: wire.TypeProbeAck},
			wire.Control{Session: sess.As4(), Access: contract.AccessNon3GPP, UETime: 5, UPFTime: u.now.Load() - rtt},
		)
	}
}

func TestRegistersByName(t *testing.T) {
	_, d := primaryWithPipeline(t, nil)
	ctx := ctxT(t)
	if err := d.WriteRegister(ctx, "path_updates_suspended", 42, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteRegister(ctx, "rtt_3gpp", 42, 12345); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{"path_updates_suspended": 1, "rtt_3gpp": 12345, "rtt_non3gpp": 0} {
		if v, err := d.ReadRegister(ctx, name, 42); err != nil || v != want {
			t.Fatalf("%s[42] = %d, %v; want %d", name, v, err, want)
		}
	}
	if err := d.WriteRegister(ctx, "path_updates_suspended", 42, 256); err == nil {
		t.Fatal("a value wider than the register must be refused")
	}
	if err := d.WriteRegister(ctx, "rtt_4g", 1, 1); err == nil || !contains(err, `register "rtt_4g"`) {
		t.Fatalf("unknown register: %v", err)
	}
	if err := d.WriteRegister(ctx, "rtt_3gpp", 1<<40, 1); err == nil || !contains(err, "outside") {
		t.Fatalf("index out of range: %v", err)
	}
	// Batched register writes, e.g. suspending many users at once.
	var updates []*p4v1.Update
	for user := range 100 {
		up, err := d.Schema().RegisterUpdate("path_updates_suspended", int64(user), 1)
		if err != nil {
			t.Fatal(err)
		}
		updates = append(updates, up)
	}
	mustWrite(t, d, updates...)
	if v, err := d.ReadRegister(ctx, "path_updates_suspended", 99); err != nil || v != 1 {
		t.Fatalf("suspended[99] = %d, %v", v, err)
	}
}

func TestCloneSessionWrittenAndReadBack(t *testing.T) {
	_, d := primaryWithPipeline(t, nil)
	mustWrite(t, d, CloneSession(p4v1.Update_INSERT, 100, 5))
	if errs := d.Write(ctxT(t), []*p4v1.Update{CloneSession(p4v1.Update_INSERT, 100, 5)}); len(errs) != 1 || !IsAlreadyExists(errs[0]) {
		t.Fatalf("second insert: %v", errs)
	}
	got, err := d.Read(ctxT(t), []*p4v1.Entity{{Entity: &p4v1.Entity_PacketReplicationEngineEntry{
		PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: 100}},
		},
	}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("read %v, %v", got, err)
	}
	reps := got[0].GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetReplicas()
	if len(reps) != 1 {
		t.Fatalf("replicas %v", reps)
	}
	port := reps[0].GetEgressPort()
	if p := reps[0].GetPort(); p != nil {
		v, _ := DecodeUint(p)
		port = uint32(v)
	}
	if port != 5 {
		t.Fatalf("replica port %d", port)
	}
	mustWrite(t, d, CloneSession(p4v1.Update_DELETE, 100))
}

func TestPacketInsAreDelivered(t *testing.T) {
	u, d := primaryWithPipeline(t, nil)
	arp := wiretest.Build(wire.Ethernet{Type: 0x0806}, make([]byte, 28))
	u.process(7, arp)
	select {
	case p := <-d.PacketIns():
		if port, _ := DecodeUint(p.Metadata["ingress_port"]); port != 7 || len(p.Payload) != len(arp) {
			t.Fatalf("packet-in %+v", p)
		}
	case <-time.After(eventually):
		t.Fatal("no packet-in")
	}
}

func TestWriteWithoutDevice(t *testing.T) {
	var eid atomic.Uint64
	d, err := New(Config{Address: "127.0.0.1:1", ElectionID: func() (uint64, uint64) { return 0, eid.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	errs := d.Write(context.Background(), []*p4v1.Update{{}, {}})
	if len(errs) != 2 || !IsUnavailable(errs[1]) || !errors.Is(errs[1], ErrNotConnected) {
		t.Fatalf("errors %v", errs)
	}
	if _, err := d.WaitPrimary(ctxShort(t)); err == nil {
		t.Fatal("WaitPrimary must give up with its context")
	}
}

func ctxShort(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

func TestPacketOutsReachTheDevice(t *testing.T) {
	u, d := primaryWithPipeline(t, nil)
	arp := wiretest.Build(wire.Ethernet{Type: 0x0806}, make([]byte, 28))
	if err := d.PacketOut(arp, map[string]uint64{"egress_port": 3}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, eventually, "the packet-out on the device", func() error {
		if st := u.srv.Stats(); st.PacketOuts != 1 {
			return fmt.Errorf("it took %d packet-outs, want 1 (errors: %d)", st.PacketOuts, st.PacketOutErrors)
		}
		return nil
	})
	// docs/pipeline.md: egress_port is 9 bits wide.
	for wantErr, fields := range map[string]map[string]uint64{
		`packet_out has no field "no_such_field"`: {"no_such_field": 1},
		`"egress_port" is 9 bits wide`:            {"egress_port": 1 << 9},
	} {
		if err := d.PacketOut(arp, fields); !contains(err, wantErr) {
			t.Errorf("PacketOut(%v): %v, want an error containing %q", fields, err, wantErr)
		}
	}
	if n := u.srv.Stats().PacketOuts; n != 1 {
		t.Errorf("the device took %d packet-outs after the refused ones, want still 1", n)
	}
}
