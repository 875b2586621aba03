package operator

// BenchmarkOperatorScale measures the operator end to end against the real API server and the
// real software UPF: sessions created through the API server until their entries are on the UPF
// and their Programmed condition is written, at 1k, 10k and 100k sessions; the replay after the
// target restarts; and the P4Runtime writes once nothing changes (which must be 0).
//
//	go test -run '^$' -bench OperatorScale -benchtime 1x -timeout 120m -v ./test/operator/
//	JUNCTION_BENCH_SESSIONS=1000,10000 go test ...   # choose the sizes
//
// Each size runs once, in a namespace and software UPF of its own, after a warm-up of 1,000
// sessions that is not in the table (JUNCTION_BENCH_WARMUP=0 skips it): the first load after the
// API server starts took the creates faster and the status writes slower than the loads after it
// (62% against 83-94% in five 1,000-session runs that followed it in one process), while the
// larger sizes always ran on a warm API server. The table separates where the
// time goes: how fast the API server takes the creates (the client's side, and the baseline of
// the Programmed / creates ratio), how fast the
// sessions' entries reach the UPF (the operator's reconcile and P4Runtime path), and how fast
// their Programmed conditions are written back (status writes through the API server).

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/upfclient"
)

type scaleResult struct {
	sessions                           int
	createRate, deviceRate, statusRate float64 // per second, from the first create
	p50, p99                           time.Duration
	writeRequests, updates             uint64
	replay                             time.Duration
	replayRate                         float64 // sessions per second from the first replay write; 0 if too fast to time
	steadyWrites                       uint64
}

func BenchmarkOperatorScale(b *testing.B) {
	sizes := benchSizes(b, "JUNCTION_BENCH_SESSIONS", 1_000, 10_000, 100_000)
	warmup := 1_000
	if env := os.Getenv("JUNCTION_BENCH_WARMUP"); env != "" {
		var err error
		if warmup, err = strconv.Atoi(env); err != nil {
			b.Fatalf("JUNCTION_BENCH_WARMUP: %v", err)
		}
	}
	if warmup > 0 {
		b.Run(fmt.Sprintf("warmup=%d", warmup), func(b *testing.B) { runScale(b, warmup) })
	}
	var rows []scaleResult
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for range b.N {
				rows = append(rows, runScale(b, n))
			}
		})
	}
	var t strings.Builder
	t.WriteString("\n| sessions | API creates/s | on the UPF/s | Programmed/s | Programmed / creates | create→Programmed p50 | p99 | P4Runtime write requests | updates/request | replay after UPF restart | replay sessions/s | writes in steady state |\n")
	t.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		replayRate := "too fast to time"
		if r.replayRate > 0 {
			replayRate = fmt.Sprintf("%.0f", r.replayRate)
		}
		fmt.Fprintf(&t, "| %d | %.0f | %.0f | %.0f | %.0f%% | %v | %v | %d | %.0f | %v | %s | %d |\n", r.sessions, r.createRate, r.deviceRate,
			r.statusRate, 100*r.statusRate/r.createRate, r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.writeRequests,
			float64(r.updates)/float64(max(r.writeRequests, 1)), r.replay.Round(time.Millisecond), replayRate, r.steadyWrites)
	}
	b.Log(t.String())
}

// benchSizes reads a comma-separated list of sizes from the environment variable env, or
// returns def.
func benchSizes(b *testing.B, env string, def ...int) []int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("%s: %v", env, err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

func runScale(b *testing.B, n int) scaleResult {
	ctx := context.Background()
	ns := newNamespace(b)
	upf := startSoftUPF(b, "127.0.0.1:0")
	cm, sch := pipelineConfigMap(b, ns, "pipeline", nil)
	u := newUPF(ns, "upf", upf.addr, "pipeline")
	grantDevice(b, u)
	create(b, cm, u, &junctionv1.SteeringPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "games"},
		Spec:       junctionv1.SteeringPolicySpec{Precedence: 10, Steering: junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay}},
	})
	startOperator(b, ns, operatorOptions{})
	waitCondition(b, programTimeout, u, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	programmed := watchProgrammed(ctx, b, ns, n)

	before := upf.srv.Stats()
	createdAt := make([]time.Time, n)
	start := time.Now()
	var wg sync.WaitGroup
	const creators = 32
	errs := make(chan error, creators)
	for c := range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += creators {
				if err := k8s.Create(ctx, scaleSession(ns, i)); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					return
				}
				createdAt[i] = time.Now()
			}
		}()
	}
	wg.Wait()
	created := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	_, lastOnDevice := waitSessionsOnUPF(b, upf, sch, n, scaleTimeout(n))
	onDevice := lastOnDevice.Sub(start)
	var programmedAt map[string]time.Time
	select {
	case programmedAt = <-programmed:
	case <-time.After(scaleTimeout(n)):
		b.Fatalf("not every one of %d sessions Programmed after %s", n, scaleTimeout(n))
	}
	var statusDone time.Duration
	after := upf.srv.Stats()

	lat := make([]time.Duration, 0, n)
	for i := range n {
		at := programmedAt[fmt.Sprintf("s-%d", i)]
		statusDone = max(statusDone, at.Sub(start))
		lat = append(lat, at.Sub(createdAt[i]))
	}
	slices.Sort(lat)

	// Steady state: nothing changes, so nothing may be written.
	quiet := upf.srv.Stats().WriteRequests
	time.Sleep(5 * time.Second)
	steady := upf.srv.Stats().WriteRequests - quiet
	if steady != 0 {
		b.Errorf("%d sessions: %d WriteRequests in 5 s with nothing changed; steady state writes nothing", n, steady)
	}

	// Replay: a fresh UPF on the same address holds nothing until the operator replays. The
	// replay time runs from the restart (reconnect backoff and pipeline push included); the
	// replay rate from the first write, which is the operator's P4Runtime path alone.
	upf.stop()
	restarted := time.Now()
	fresh := startSoftUPF(b, upf.addr)
	firstWrite, replayed := waitSessionsOnUPF(b, fresh, sch, n, scaleTimeout(n))

	return scaleResult{
		sessions:      n,
		createRate:    float64(n) / created.Seconds(),
		deviceRate:    float64(n) / onDevice.Seconds(),
		statusRate:    float64(n) / statusDone.Seconds(),
		p50:           lat[len(lat)/2],
		p99:           lat[len(lat)*99/100],
		writeRequests: after.WriteRequests - before.WriteRequests,
		updates:       (after.Inserts + after.Modifies + after.Deletes) - (before.Inserts + before.Modifies + before.Deletes),
		replay:        replayed.Sub(restarted),
		replayRate:    rateOver(n, replayed.Sub(firstWrite)),
		steadyWrites:  steady,
	}
}

// watchProgrammed records when each session of ns is first seen Programmed and delivers the
// times once all n are. When the API server ends the watch it lists again (sessions first seen
// Programmed in that list get the list's time) and watches on from the list's version.
func watchProgrammed(ctx context.Context, b *testing.B, ns string, n int) <-chan map[string]time.Time {
	wc, err := client.NewWithWatch(ownConnection(restCfg), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan map[string]time.Time, 1)
	ctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	seen := make(map[string]time.Time, n)
	// record reports whether every session has now been seen Programmed.
	record := func(s *junctionv1.ATSSSSession) bool {
		if _, ok := seen[s.Name]; !ok && meta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionProgrammed) {
			seen[s.Name] = time.Now()
		}
		return len(seen) == n
	}
	relist := func() (string, bool) {
		var list junctionv1.ATSSSSessionList
		if err := wc.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return "", false
		}
		all := false
		for i := range list.Items {
			all = record(&list.Items[i])
		}
		return list.ResourceVersion, all
	}
	go func() {
		for ctx.Err() == nil {
			rv, all := relist()
			if all {
				done <- seen
				return
			}
			w, err := wc.Watch(ctx, &junctionv1.ATSSSSessionList{}, client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				if s, ok := ev.Object.(*junctionv1.ATSSSSession); ok && ev.Type != watch.Deleted && ev.Type != watch.Bookmark && record(s) {
					w.Stop()
					done <- seen
					return
				}
			}
		}
	}()
	return done
}

// scaleTimeout allows the API server 50 sessions a second at the least (it managed about 60 on
// a loaded 2-core machine at 100k sessions).
// pollUPF is how often waitSessionsOnUPF reads the UPF's counters.
const pollUPF = 20 * time.Millisecond

// rateOver is n per second over d, or 0 (printed as such) when d is too short for the polling to
// time: a small replay lands within one or two polls.
func rateOver(n int, d time.Duration) float64 {
	if d < 10*pollUPF {
		return 0
	}
	return float64(n) / d.Seconds()
}

func scaleTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*20*time.Millisecond }

// scaleSession is session i: its own UE, both legs, one of 64 gNBs; every 16th overrides its
// mode to load-balance and so is an exception entry.
func scaleSession(ns string, i int) *junctionv1.ATSSSSession {
	ip := func(base byte, i int) junctionv1.IPv4Address {
		return junctionv1.IPv4Address(fmt.Sprintf("%d.%d.%d.%d", base, byte(i>>16), byte(i>>8), byte(i)))
	}
	s := &junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s-%d", i)},
		Spec: junctionv1.ATSSSSessionSpec{
			UE:             junctionv1.UE{SUPI: fmt.Sprintf("imsi-00101%010d", i)},
			SessionAddress: ip(10, i+1<<16), // 10.1.0.0 on: 10.0.0.0/24 is envtest's service range
			UPFRef:         junctionv1.LocalObjectReference{Name: "upf"},
			AccessLegs: junctionv1.AccessLegs{
				ThreeGPP: &junctionv1.ThreeGPPLeg{UEAddress: ip(100, i), GNBAddress: junctionv1.IPv4Address(fmt.Sprintf("198.51.100.%d", 1+i%64)),
					UplinkTEID: int64(i + 1), DownlinkTEID: int64(i + 1)},
				NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: ip(172, i)},
			},
			PolicyRefs: []junctionv1.LocalObjectReference{{Name: "games"}},
		},
	}
	if i%16 == 0 {
		s.Spec.ModeOverride = &junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptr[int32](50)}}
	}
	return s
}

// waitSessionsOnUPF waits until the UPF's sessions table holds n entries and returns when the
// first and the last update after the call landed (to the 20 ms it polls at). Reading 100,000
// entries costs the UPF about what writing them does, so it reads the table only after the UPF
// has taken no update for half a second, and watches its update counters meanwhile: at 100,000
// sessions, polling the table every 100 ms took the CPU the replay it measured needed.
func waitSessionsOnUPF(b *testing.B, u *softUPF, sch *upfclient.Schema, n int, timeout time.Duration) (first, last time.Time) {
	b.Helper()
	id, err := sch.TableID("sessions")
	if err != nil {
		b.Fatal(err)
	}
	const quiet = 500 * time.Millisecond
	updates := func() uint64 { st := u.srv.Stats(); return st.Inserts + st.Modifies + st.Deletes }
	deadline := time.Now().Add(timeout)
	seen, lastAt := updates(), time.Now()
	for {
		time.Sleep(pollUPF)
		if c := updates(); c != seen {
			seen, lastAt = c, time.Now()
			if first.IsZero() {
				first = lastAt
			}
			continue
		}
		if time.Since(lastAt) < quiet {
			continue
		}
		es, err := u.read(context.Background(), &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}})
		if err == nil && len(es) >= n {
			return first, lastAt
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d sessions on the UPF: not within %v: %d entries (%v)", n, timeout, len(es), err)
		}
		lastAt = time.Now() // read again after another quiet period
	}
}
