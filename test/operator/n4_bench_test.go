package operator

// BenchmarkN4 measures Session Establishments over N4 into the software UPF, end to end: the SMF
// emulator's request, the endpoint's mapping, allocation and P4Runtime write (the direct path,
// docs/n4.md), the response; the objects are written after, and the run waits for them before
// it goes on (the writer's pace is printed too). In the same run it
// prints the references the issue names: the manifest path (the same sessions created through
// the API server, until Programmed; measured first, on a rig that is gone before the N4 one
// starts, so that neither runs beside the other or weighs on its heap) and the rate at which
// the same UPF takes the sessions' entries from the operator's programmer (the replay after a
// UPF restart: the P4Runtime ceiling of this path). It also prints the response times at
// offered rates, open loop, the operator's heap per N4 session, the bytes each establishment
// allocates, and the garbage collections in each open-loop run (the slow answers come in the
// collections' mark phases: docs/operator.md, "N4 (PFCP) sessions"). The last open-loop run lasts longer
// than the N4 writer defers the objects for session requests (n4WriterMaxDefer,
// controllers/n4_writer.go): its last third shows the SMF's answers while the API server takes
// objects on the same two cores.
//
//	go test -run '^$' -bench N4 -benchtime 1x -timeout 60m -v ./test/operator/
//	JUNCTION_BENCH_N4_SESSIONS=1000,5000 go test ...   # choose the sizes (default 1000)

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
)

type n4Result struct {
	sessions             int
	n4Rate, manifestRate float64 // establishments (or creates) until Programmed, per second
	p50, p99             time.Duration
	replay               time.Duration
	replayRate           float64
	savedRate            float64 // objects written with their indexes, per second from the first request
	heapPerSession       float64 // bytes
	// allocPerSession and mallocsPerSession are what this process allocated per establishment
	// in the closed loop: the garbage collector's work, and so the response time's tail, grow
	// with them.
	allocPerSession, mallocsPerSession uint64
	// cpuPerSession is this process's CPU time (the SMF emulator, the operator and the software
	// UPF; not the API server) per establishment in the closed loop: steadier than a rate on a
	// shared machine.
	cpuPerSession           time.Duration
	offered                 []offeredResult
	refusedClosed, timeouts int
}

type offeredResult struct {
	rate               float64
	d                  time.Duration
	p50, p99           time.Duration
	p99LastThird       time.Duration // of the requests sent in the run's last third
	answered, refused  int
	timeouts, requests int
	gcCycles           uint64 // garbage collections during the run
}

func BenchmarkN4(b *testing.B) {
	sizes := benchSizes(b, "JUNCTION_BENCH_N4_SESSIONS", 1_000)
	var rows []n4Result
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for range b.N {
				rows = append(rows, runN4(b, n))
			}
		})
	}
	var t strings.Builder
	t.WriteString("\n| sessions | N4 establishments/s (64 in flight) | p50 | p99 | CPU per establishment (SMF, operator, UPF) | allocated per establishment | refused | objects saved /s | manifest path, creates→Programmed /s | N4 / manifest | UPF takes the entries at /s (replay) | replay after UPF restart | operator heap per N4 session |\n")
	t.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		replayRate := "too fast to time"
		if r.replayRate > 0 {
			replayRate = fmt.Sprintf("%.0f", r.replayRate)
		}
		fmt.Fprintf(&t, "| %d | %.0f | %v | %v | %v | %.1f kB in %d objects | %d | %.0f | %.0f | %.0f%% | %s | %v | %.1f kB |\n", r.sessions, r.n4Rate, r.p50.Round(time.Millisecond),
			r.p99.Round(time.Millisecond), r.cpuPerSession.Round(time.Microsecond), float64(r.allocPerSession)/1024, r.mallocsPerSession, r.refusedClosed+r.timeouts, r.savedRate, r.manifestRate, 100*r.n4Rate/r.manifestRate, replayRate,
			r.replay.Round(time.Millisecond), r.heapPerSession/1024)
	}
	t.WriteString("\n| offered establishments/s (open loop) | for | requests | accepted | refused (the first three logged with their cause) | no answer in 30 s | p50 of the accepted | p99 | p99 of the last third | garbage collections |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		for _, o := range r.offered {
			fmt.Fprintf(&t, "| %.0f | %v | %d | %d | %d | %d | %v | %v | %v | %d |\n", o.rate, o.d, o.requests, o.answered, o.refused, o.timeouts,
				o.p50.Round(time.Millisecond), o.p99.Round(time.Millisecond), o.p99LastThird.Round(time.Millisecond), o.gcCycles)
		}
	}
	b.Log(t.String())
}

// benchSession is N4 session i: its own UE and addresses, one of 64 gNBs, load-balanced 50/50.
func benchSession(i int) smf.MASession {
	ip := func(base byte) netip.Addr {
		j := i
		if base == 10 {
			j += 1 << 16 // 10.1.0.0 on: 10.0.0.0/24 is envtest's service range
		}
		return netip.AddrFrom4([4]byte{base, byte(j >> 16), byte(j >> 8), byte(j)})
	}
	return smf.MASession{
		IMSI: fmt.Sprintf("00101%010d", i), UEAddr: ip(10), UE3GPP: ip(100), UENon3GPP: ip(172),
		GNB: netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i%64)}), DownlinkTEID: uint32(i + 1),
		Default: smf.Steering{Mode: smf.LoadBalancing, Weight3GPP: 50},
	}
}

func runN4(b *testing.B, n int) n4Result {
	ctx := context.Background()
	res := n4Result{sessions: n}
	// The manifest path in the same run: the same number of sessions through the API server, on a
	// rig of its own that is gone (its cleanups run) before the N4 rig starts.
	b.Run("manifest path", func(b *testing.B) { res.manifestRate = runScale(b, n).statusRate })
	r := newBenchN4Rig(b)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)

	// Closed loop: 64 establishments in flight until n are answered.
	lat := make([]time.Duration, n)
	var next, refused, timeouts atomic.Int64
	cpu0 := processCPU(b)
	var a0, a1 runtime.MemStats
	runtime.ReadMemStats(&a0)
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				_, err := r.smf.Establish(ctx, benchSession(i))
				lat[i] = time.Since(t0)
				switch {
				case errors.Is(err, smf.ErrTimeout):
					timeouts.Add(1)
				case err != nil:
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res.cpuPerSession = (processCPU(b) - cpu0) / time.Duration(n)
	runtime.ReadMemStats(&a1)
	res.allocPerSession, res.mallocsPerSession = (a1.TotalAlloc-a0.TotalAlloc)/uint64(n), (a1.Mallocs-a0.Mallocs)/uint64(n)
	res.refusedClosed, res.timeouts = int(refused.Load()), int(timeouts.Load())
	res.n4Rate = float64(n-res.refusedClosed-res.timeouts) / elapsed.Seconds()
	slices.Sort(lat)
	res.p50, res.p99 = lat[n/2], lat[n*99/100]
	// Each phase says what it measured as it ends: a long run cut short still tells something.
	b.Logf("closed loop: %d establishments at %.0f/s, p99 %v, %d refused", n, res.n4Rate, res.p99.Round(time.Millisecond), res.refusedClosed+res.timeouts)
	saved := n - res.refusedClosed - res.timeouts

	// The UPF restarts: the operator replays every session, N4 ones like any other, from what it
	// holds, while the objects are still being written (at 100,000 sessions that takes half an
	// hour here, and a UPF can restart at any time).
	r.u.stop()
	restarted := time.Now()
	fresh := startSoftUPF(b, r.u.addr)
	firstWrite, replayed := waitSessionsOnUPF(b, fresh, r.sch, saved, scaleTimeout(saved))
	res.replay, res.replayRate = replayed.Sub(restarted), rateOver(saved, replayed.Sub(firstWrite))
	b.Logf("replay: %d sessions back on the restarted UPF in %v", saved, res.replay.Round(time.Millisecond))

	// The objects follow at the API server's pace; what comes next waits for them.
	res.savedRate = float64(saved) / r.awaitSaved(b, saved).Sub(start).Seconds()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	res.heapPerSession = float64(int64(m1.HeapInuse)-int64(m0.HeapInuse)) / float64(n)

	// Open loop: requests sent at their times whatever came back, at a rate the path takes and
	// at the 1,000/s; the objects of each run saved before the next.
	total, base := saved, n // sessions established; the next session's number
	for _, o := range []struct {
		rate float64
		d    time.Duration
	}{{50, 2 * time.Second}, {1000, 5 * time.Second}} {
		out := r.offer(b, o.rate, o.d, base)
		b.Logf("%.0f/s for %v: p99 %v, %d refused", o.rate, o.d, out.p99.Round(time.Millisecond), out.refused)
		base += out.requests
		total += out.answered
		r.awaitSaved(b, total)
		res.offered = append(res.offered, out)
	}

	// A load longer than the writer defers the objects (n4WriterMaxDefer), on a rig of its own.
	// Nothing waits for the objects.
	long := newBenchN4Rig(b)
	res.offered = append(res.offered, long.offer(b, 1000, 15*time.Second, 0))
	return res
}

// newBenchN4Rig is an N4 rig with its SMF associated.
func newBenchN4Rig(b *testing.B) n4Rig {
	r := newN4Rig(b, nil, nil)
	r.associate(b)
	// No retransmissions: a request waits for its answer, so the latencies are the endpoint's.
	r.smf.T1, r.smf.N1 = 30*time.Second, 0
	return r
}

// offer sends establishments at rate for d, open loop, numbering sessions from base.
func (r n4Rig) offer(b *testing.B, rate float64, d time.Duration, base int) offeredResult {
	ctx := context.Background()
	count := int(rate * d.Seconds())
	out := offeredResult{rate: rate, d: d, requests: count}
	lats := make([]time.Duration, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	gc0 := gcCycles()
	t0 := time.Now()
	for k := range count {
		time.Sleep(time.Until(t0.Add(time.Duration(float64(k) / rate * float64(time.Second)))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := time.Now()
			_, err := r.smf.Establish(ctx, benchSession(base+k))
			lats[k], errs[k] = time.Since(s), err
		}()
	}
	wg.Wait()
	out.gcCycles = gcCycles() - gc0
	var ok, late []time.Duration
	for k, err := range errs {
		switch {
		case err == nil:
			ok = append(ok, lats[k])
			if k >= count*2/3 {
				late = append(late, lats[k])
			}
		case errors.Is(err, smf.ErrTimeout):
			out.timeouts++
		default:
			if out.refused++; out.refused <= 3 {
				b.Logf("%.0f/s for %v: session %d: %v", rate, d, base+k, err)
			}
		}
	}
	out.answered = len(ok)
	if len(ok) > 0 {
		slices.Sort(ok)
		out.p50, out.p99 = ok[len(ok)/2], ok[len(ok)*99/100]
	}
	if len(late) > 0 {
		slices.Sort(late)
		out.p99LastThird = late[len(late)*99/100]
	}
	return out
}

// awaitSaved waits until n of the rig's N4 sessions are saved (their objects hold their indexes)
// and returns when. It lists in pages and less often the more there are: a list of every object
// each second took the API server's CPU from the writes it waits for (at 100,000 sessions, most
// of it).
func (r n4Rig) awaitSaved(b *testing.B, n int) time.Time {
	deadline := time.Now().Add(scaleTimeout(n))
	every := time.Second * time.Duration(1+n/5000)
	for {
		done := r.savedCount(b)
		if done >= n {
			return time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d N4 sessions saved as objects", done, n)
		}
		time.Sleep(every)
	}
}

// savedCount is how many of the rig's N4 sessions have objects that hold their indexes, read a
// page at a time.
func (r n4Rig) savedCount(b *testing.B) int {
	done, cont := 0, ""
	for {
		var list junctionv1.ATSSSSessionList
		if err := k8s.List(context.Background(), &list, client.InNamespace(r.ns), client.Limit(2000), client.Continue(cont),
			client.MatchingLabels{"atsss.junction.dev/n4-upf": r.upf.Name}); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			if list.Items[i].Status.UsageIndex != nil {
				done++
			}
		}
		if cont = list.Continue; cont == "" {
			return done
		}
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcCycles is how many garbage collections this process has completed.
func gcCycles() uint64 {
	m := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}
