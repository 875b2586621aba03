//go:build linux

package ueagent

// Steering under load (issue 31): one TCP download over links that differ, split by load
// balancing at the links' ratio and by autonomous balancing, against Linux MPTCP on the same
// emulated links in the same run; and N UEs on one WiFi cell, each with its own 5G, downloading
// at once under smallest delay.
//
//	go test ./test/ueagent -run TestScenarioUnequalLinks     # short: 4 s per download
//	make scenarios SCENARIO=UnequalLinks                      # 20 s each; table and plot
//	go test ./test/ueagent -run TestScenarioCell              # short: 3 UEs, 8 s
//	make scenarios SCENARIO=Cell                              # 3 UEs, then 8, 20 s each
//
// make test runs the short versions with bounds that catch a regression; the targets
// are printed and written to the tables, not asserted.

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/internal/testenv"
)

// linkPair is one unequal-links case: WiFi's and 5G's rates, bit/s.
type linkPair struct{ wifi, ran float64 }

func (p linkPair) String() string { return fmt.Sprintf("WiFi %.0f / 5G %.0f", p.wifi/1e6, p.ran/1e6) }

// unequalRun is one download of the unequal-links scenario.
type unequalRun struct {
	pair      linkPair
	name      string
	mbps      float64
	retrans   int
	suspended bool // the session's status said pathUpdatesSuspended during the download
	// reorder: the agent's downlink reorder buffer during the download: packets delivered
	// late (after their gap was given up on), gaps given up on after the timeout (timed out)
	// and as lost (every leg passed them), packets released early from a full window
	// (overflow).
	late, timedOut, lost, overflow float64
	// drops are the frames the links' downlink queues dropped during the download (WiFi, 5G):
	// congestion, which no reordering hides.
	drops [2]uint64
	// stolen is the share of the CPU time the hypervisor took during the download
	// (testenv.MeasureQuietly).
	stolen float64
}

// The unequal-links runs, per pair.
const (
	ulWiFi       = "WiFi alone"
	ulRAN        = "5G alone"
	ulBalance    = "load balance at the links' ratio"
	ulAutonomous = "autonomous balance"
	ulMPTCP      = "MPTCP"
)

func TestScenarioUnequalLinks(t *testing.T) {
	secs := shortOrFull("4", "20")
	pairs := []linkPair{{80e6, 20e6}, {60e6, 20e6}}
	if !fullScenario {
		pairs = pairs[:1]
	}
	// The links: WiFi 5 ms, 5G 10 ms each way, 300 kB queues (30 ms of WiFi at 80
	// Mbit/s, 120 ms of 5G at 20).
	wifi := linkem.Params{Rate: pairs[0].wifi, Delay: 5 * time.Millisecond, Queue: 300_000}
	ran := linkem.Params{Rate: pairs[0].ran, Delay: 10 * time.Millisecond, Queue: 300_000}
	em := newEmulation(ran, wifi)
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	reorder := startAgentWithReorderCounters(t, tb, u)
	pol := tb.policy("p", activeStandby(junctionv1.AccessNon3GPP))
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "p"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	mp := newMPTCP(t, em, false)

	var runs []unequalRun
	for _, pair := range pairs {
		w, r := wifi, ran
		w.Rate, r.Rate = pair.wifi, pair.ran
		for _, s := range u.RadioShapers {
			s.Set(r)
		}
		for _, s := range em.Cell {
			s.Set(w)
		}
		mp.RadioShapers[0].Set(r)
		mp.RadioShapers[1].Set(r)
		mp.WiFiShapers[0].Set(w)
		mp.WiFiShapers[1].Set(w)
		pct3GPP := int32(100*pair.ran/(pair.ran+pair.wifi) + 0.5)
		for _, m := range []struct {
			name string
			mode junctionv1.SteeringMode
		}{
			{ulWiFi, activeStandby(junctionv1.AccessNon3GPP)},
			{ulRAN, activeStandby(junctionv1.Access3GPP)},
			{ulBalance, junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: &pct3GPP}}},
			{ulAutonomous, junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}},
		} {
			setSteering(t, pol, m.mode)
			var run unequalRun
			stolen := testenv.MeasureQuietly(t, m.name, func() {
				stop := watchSuspended(t, tb.ns, "s1")
				before, dropsBefore := reorder(), queueDrops(em.Cell[1], u.RadioShapers[1])
				res := iperf(t, u.NS, tb.DN, sessionAddr, "-t", secs)
				after, dropsAfter := reorder(), queueDrops(em.Cell[1], u.RadioShapers[1])
				run = unequalRun{pair: pair, name: m.name, mbps: res.End.SumReceived.BitsPerSecond / 1e6, retrans: res.End.SumSent.Retransmits, suspended: stop(),
					late: after[0] - before[0], timedOut: after[1] - before[1], lost: after[2] - before[2], overflow: after[3] - before[3],
					drops: [2]uint64{dropsAfter[0] - dropsBefore[0], dropsAfter[1] - dropsBefore[1]}}
			})
			run.stolen = stolen
			runs = append(runs, run)
			t.Logf("%v, %s: %.1f Mbit/s, %d retransmissions, suspended %v; reorder: %.0f late, %.0f timed out, %.0f lost, %.0f overflow; queue drops WiFi %d, 5G %d",
				pair, m.name, run.mbps, run.retrans, run.suspended, run.late, run.timedOut, run.lost, run.overflow, run.drops[0], run.drops[1])
		}
		var run unequalRun
		stolen := testenv.MeasureQuietly(t, ulMPTCP, func() {
			dropsBefore := queueDrops(mp.WiFiShapers[1], mp.RadioShapers[1])
			res := iperfMPTCP(t, mp.Server, mp.Client, mp.ServerAddr.String(), "-t", secs, "-R")
			dropsAfter := queueDrops(mp.WiFiShapers[1], mp.RadioShapers[1])
			run = unequalRun{pair: pair, name: ulMPTCP, mbps: res.End.SumReceived.BitsPerSecond / 1e6, retrans: res.End.SumSent.Retransmits,
				drops: [2]uint64{dropsAfter[0] - dropsBefore[0], dropsAfter[1] - dropsBefore[1]}}
		})
		run.stolen = stolen
		runs = append(runs, run)
		t.Logf("%v, MPTCP: %.1f Mbit/s, %d retransmissions", pair, runs[len(runs)-1].mbps, runs[len(runs)-1].retrans)
	}

	fmt.Printf("\nUnequal links (one TCP download, %s s; targets: >= 97%% of the two links alone, summed, and <= 100 retransmissions)\n", secs)
	for _, r := range runs {
		alone := unequalAlone(runs, r.pair)
		fmt.Printf("%-14v %-34s %6.1f Mbit/s %4.0f%% of the links alone %6d retransmissions, queue drops %d/%d, suspended %-5v reorder late/timed out/lost/overflow %.0f/%.0f/%.0f/%.0f\n",
			r.pair, r.name, r.mbps, 100*r.mbps/alone, r.retrans, r.drops[0], r.drops[1], r.suspended, r.late, r.timedOut, r.lost, r.overflow)
	}
	if fullScenario {
		writeUnequal(t, runs, secs)
	}
	// Bounds that catch a regression, generous for a shared machine: each link alone carries
	// most of its rate; both balancing modes a tenth more than WiFi alone and at most 50
	// retransmissions a second of download (before the reorder buffer followed the legs: load
	// balance 250-390 a second at 1.02-1.17 times WiFi alone, autonomous 50-700 at 1.06-1.17;
	// after: 5-32 and 20-330; with the UE's balancer of queued bytes, autonomous 2-3 a second
	// at 1.18 times WiFi alone, docs/results.md); no suspension in load balance or
	// active-standby. A bound on rates is judged on downloads the hypervisor left the CPU
	// (testenv.Judged).
	d, _ := strconv.ParseFloat(secs, 64)
	for _, pair := range pairs {
		get := func(name string) unequalRun {
			for _, r := range runs {
				if r.pair == pair && r.name == name {
					return r
				}
			}
			t.Fatalf("no run %s for %v", name, pair)
			return unequalRun{}
		}
		wifiAlone := get(ulWiFi)
		if wifiAlone.mbps < 0.7*pair.wifi/1e6 || get(ulRAN).mbps < 0.6*pair.ran/1e6 {
			testenv.MissedBound(t, fmt.Sprintf("%v: a link alone carries %.1f (WiFi) and %.1f (5G) Mbit/s", pair, wifiAlone.mbps, get(ulRAN).mbps), wifiAlone.stolen, get(ulRAN).stolen)
		}
		for _, b := range []struct {
			name          string
			retransPerSec float64
		}{{ulBalance, 50}, {ulAutonomous, 50}} {
			r := get(b.name)
			if r.mbps < 1.1*wifiAlone.mbps || float64(r.retrans) > b.retransPerSec*d {
				testenv.MissedBound(t, fmt.Sprintf("%v, %s: %.1f Mbit/s (WiFi alone %.1f), %d retransmissions in %s s", pair, b.name, r.mbps, wifiAlone.mbps, r.retrans, secs), r.stolen, wifiAlone.stolen)
			}
			// Both modes sequence the whole downlink at the UPF, before the links' queues: a
			// frame a queue dropped is a gap the agent's reorder buffer gives up on (lost,
			// timed out, or passed by packets released early; docs/pipeline.md, "Downlink
			// reordering at the UE").
			if r.drops[0]+r.drops[1] > 0 && r.timedOut+r.lost+r.overflow == 0 {
				t.Errorf("%v, %s: the links' queues dropped %d/%d frames and the reorder buffer gave up on no gap (late/timed out/lost/overflow %.0f/%.0f/%.0f/%.0f)",
					pair, b.name, r.drops[0], r.drops[1], r.late, r.timedOut, r.lost, r.overflow)
			}
		}
		for _, name := range []string{ulWiFi, ulRAN, ulBalance, ulAutonomous} {
			if get(name).suspended {
				t.Errorf("%v, %s: the session's path updates were suspended (only smallest delay and priority with a threshold are guarded)", pair, name)
			}
		}
	}
}

// startAgentWithReorderCounters starts u's agent with its metrics on plain HTTP and returns
// what reads its downlink reorder buffer's counters: late, timed out, lost, overflow
// (docs/pipeline.md, "Downlink reordering at the UE").
func startAgentWithReorderCounters(t *testing.T, tb *testbed, u *ueNode) func() [4]float64 {
	metrics := testenv.FreeAddr(t)
	tb.startAgent(u, "--metrics-addr", metrics, "--metrics-secure=false")
	return func() [4]float64 {
		var v [4]float64
		for i, kind := range []string{"late", "timed_out", "lost", "overflow"} {
			v[i] = scrapeCounter(t, metrics, "junction_ue_reorder_packets", `kind="`+kind+`"`)
		}
		return v
	}
}

// queueDrops is the frames each shaper's queue dropped so far.
func queueDrops(wifi, ran *linkem.Shaper) [2]uint64 {
	return [2]uint64{wifi.Stats().QueueDrops, ran.Stats().QueueDrops}
}

// unequalAlone is what the pair's two links carried alone, summed.
func unequalAlone(runs []unequalRun, pair linkPair) float64 {
	var sum float64
	for _, r := range runs {
		if r.pair == pair && (r.name == ulWiFi || r.name == ulRAN) {
			sum += r.mbps
		}
	}
	return sum
}

// watchSuspended polls session name's status every 250 ms until the returned function is
// called, which reports whether it ever said pathUpdatesSuspended.
func watchSuspended(t *testing.T, ns, name string) func() bool {
	done := make(chan struct{})
	var seen bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if s, err := getSession(name, ns); err == nil && s.Status.PathUpdatesSuspended {
				seen = true
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() bool {
		close(done)
		wg.Wait()
		return seen
	}
}

// writeUnequal writes the unequal-links table, CSV and bar chart.
func writeUnequal(t *testing.T, runs []unequalRun, secs string) {
	rows := [][]string{{"links (Mbit/s)", "run", "Mbit/s", "of the two single-link results, summed", "TCP retransmissions", "queue drops, WiFi / 5G", "reorder: late / timed out / lost / released early", "pathUpdatesSuspended", "targets (≥ 97%, ≤ 100 retransmissions)"}}
	csv := "links,run,mbps,retransmissions,suspended\n"
	var names []string
	var values plotter.Values
	for _, r := range runs {
		alone := unequalAlone(runs, r.pair)
		share, target := "", ""
		switch r.name {
		case ulBalance, ulAutonomous:
			share = pct(r.mbps / alone)
			target = metOrNot(r.mbps >= 0.97*alone && r.retrans <= 100)
		case ulMPTCP:
			share, target = pct(r.mbps/alone), "baseline"
		}
		susp, reo := fmt.Sprint(r.suspended), fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", r.late, r.timedOut, r.lost, r.overflow)
		if r.name == ulMPTCP {
			susp, reo = "", ""
		}
		rows = append(rows, []string{r.pair.String(), r.name, mbps(r.mbps), share, fmt.Sprint(r.retrans), fmt.Sprintf("%d / %d", r.drops[0], r.drops[1]), reo, susp, target})
		csv += fmt.Sprintf("%v,%s,%.1f,%d,%v\n", r.pair, r.name, r.mbps, r.retrans, r.suspended)
		names = append(names, fmt.Sprintf("%.0f/%.0f %s", r.pair.wifi/1e6, r.pair.ran/1e6, shortRunName(r.name)))
		values = append(values, r.mbps)
	}
	writeResultsTable(t, "unequal-links", rows)
	dir := resultsDir(t)
	must(t, os.WriteFile(filepath.Join(dir, "unequal-links.csv"), []byte(csv), 0o644))
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Unequal links: one TCP download (%s s), WiFi/5G Mbit/s", secs)
	p.Y.Label.Text = "throughput (Mbit/s)"
	bars, err := plotter.NewBarChart(values, vg.Points(22))
	must(t, err)
	bars.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	p.Add(bars)
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1, 0
	must(t, p.Save(10*vg.Inch, 5*vg.Inch, filepath.Join(dir, "unequal-links.png")))
	t.Logf("wrote %s/unequal-links.{csv,png}", dir)
}

func shortRunName(n string) string {
	switch n {
	case ulBalance:
		return "balance"
	case ulAutonomous:
		return "autonomous"
	}
	return n
}

// cellMode is a steering mode the cell scenario runs every session in.
type cellMode struct {
	name     string
	steering junctionv1.SteeringMode
	// split: the mode splits a user's traffic over both accesses, so the access the path state
	// prefers says nothing of where the traffic goes, and switches are not counted.
	split bool
	file  string // the plot's and the CSV's suffix
}

// cellModes: smallest delay, which the issue asks about and which moves a user whole, and
// autonomous load balance, which splits each user's traffic by its own legs' queues.
var cellModes = []cellMode{
	{"smallest delay", junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay, SmallestDelay: &junctionv1.SmallestDelay{}}, false, ""},
	{"autonomous load balance", junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}, true, "-autonomous"},
}

// cellResult is one run of the cell scenario.
type cellResult struct {
	ues            int
	mode           cellMode
	mbps           []float64 // per UE
	retrans        []int
	switchesPerMin []float64 // per UE, from the steady part of the run (not shown for a split mode)
	suspended      []bool    // the UE's session said pathUpdatesSuspended at some sample
	capacity       float64   // Mbit/s the UEs' links offer together: the cell and every 5G
	stolen         float64   // the share of the CPU time the hypervisor took (testenv.MeasureQuietly)
}

func (c cellResult) total() float64 {
	var s float64
	for _, v := range c.mbps {
		s += v
	}
	return s
}

// jain is Jain's fairness index of xs: (Σx)² / (n Σx²).
func jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

// TestScenarioCell: N UEs on one WiFi cell of 60 Mbit/s (5 ms each way, 300 kB queue), each
// with a 5G radio of 40 Mbit/s (10 ms each way), every session steered by one mode (smallest
// delay, then autonomous load balance), download at once over TCP. The capacity the links offer
// together is 60 + N·40 Mbit/s.
func TestScenarioCell(t *testing.T) {
	counts := []int{3}
	if fullScenario {
		counts = []int{3, 8}
	}
	var results []cellResult
	for _, n := range counts {
		for _, m := range cellModes {
			t.Run(fmt.Sprintf("%d UEs %s", n, m.name), func(t *testing.T) {
				results = append(results, runCell(t, n, m, shortOrFull(8*time.Second, 20*time.Second)))
			})
		}
	}
	fmt.Printf("\nN UEs on one cell (targets: total >= 80%% of the links' capacity, Jain >= 0.95, a few switches a minute)\n")
	for _, r := range results {
		fmt.Printf("%d UEs, %s: total %.1f of %.0f Mbit/s (%.0f%%), Jain %.3f, per UE %v Mbit/s, retransmissions %v, switches per minute %v, suspended %v\n",
			r.ues, r.mode.name, r.total(), r.capacity, 100*r.total()/r.capacity, jain(r.mbps), fmtFloats(r.mbps), r.retrans, fmtSwitches(r), r.suspended)
	}
	if fullScenario && len(results) == len(counts)*len(cellModes) {
		writeCellTable(t, results)
	}
	// Bounds that catch a regression, judged on downloads the hypervisor left the CPU
	// (testenv.Judged). Smallest delay: the issue measured 41-44% of the capacity with three
	// UEs; a run on a shared machine must carry at least 35% of it with three, 25% with eight,
	// and fairly; in the full runs no user switches more than 12 times a minute (before the
	// refreshes were damped: up to 16.4; docs/results.md). Autonomous load balance carried
	// 83-88% with three (2026-12-07): at least 60% with three; with eight the testbed's own
	// forwarding bounds both modes alike (34-41% on a slow machine): 25%. Under it no user's
	// path updates are suspended (issue 31: none under load balance; the flip-flop guard
	// leaves modes that read no RTT comparison).
	for _, r := range results {
		floor := 0.35 // smallest delay, three UEs
		switch {
		case r.ues > 3:
			floor = 0.25
		case r.mode.split:
			floor = 0.60
		}
		what := fmt.Sprintf("%d UEs, %s", r.ues, r.mode.name)
		if r.total() < floor*r.capacity || jain(r.mbps) < 0.8 {
			testenv.MissedBound(t, fmt.Sprintf("%s: total %.1f of %.0f Mbit/s, Jain %.3f (%v)", what, r.total(), r.capacity, jain(r.mbps), r.mbps), r.stolen)
		}
		if fullScenario && !r.mode.split && slices.Max(r.switchesPerMin) > 12 {
			testenv.MissedBound(t, fmt.Sprintf("%s: switches per minute %v", what, r.switchesPerMin), r.stolen)
		}
		if r.mode.split && slices.Contains(r.suspended, true) {
			t.Errorf("%s: path updates suspended %v, want none (the flip-flop guard is for modes that read the RTT comparison)", what, r.suspended)
		}
	}
}

// fmtSwitches is a result's switches per minute per UE, "-" for a split mode.
func fmtSwitches(r cellResult) string {
	if r.mode.split {
		return "-"
	}
	return fmtFloats(r.switchesPerMin)
}

func fmtFloats(xs []float64) string {
	s := "["
	for i, x := range xs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1f", x)
	}
	return s + "]"
}

func runCell(t *testing.T, n int, mode cellMode, d time.Duration) cellResult {
	const cellRate, ranRate = 60e6, 40e6
	em := newEmulation(linkem.Params{Rate: ranRate, Delay: 10 * time.Millisecond, Queue: 300_000},
		linkem.Params{Rate: cellRate, Delay: 5 * time.Millisecond, Queue: 300_000})
	tb := newEmulatedTestbed(t, n, em)
	pol := tb.policy("p", mode.steering)
	create(t, pol)
	addrs := make([]string, n)
	for i, u := range tb.ues {
		tb.startAgent(u)
		addrs[i] = fmt.Sprintf("10.60.0.%d", i+1)
		create(t, tb.session(fmt.Sprintf("s%d", i+1), u, addrs[i], int64(100*(i+1)), "p"))
	}
	users := make([]int64, n)
	for i := range tb.ues {
		name := fmt.Sprintf("s%d", i+1)
		tb.waitReady(name)
		tb.legState(name, junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
		tb.legState(name, junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
		s, err := getSession(name, tb.ns)
		must(t, err)
		users[i] = userIndex(t, s)
	}

	// The downloads sample what smallest delay steers by, the UPF's path state, every 250 ms,
	// and count the changes of the smaller RTT's access from the steady part on (after the
	// first quarter).
	type sample struct {
		at     time.Duration
		access []int // per UE: 1 3GPP, 2 non-3GPP
		rx     []map[string]uint64
	}
	var res cellResult
	var samples []sample
	stolen := testenv.MeasureQuietly(t, fmt.Sprintf("%d UEs' downloads", n), func() {
		res = cellResult{ues: n, mode: mode, mbps: make([]float64, n), retrans: make([]int, n), switchesPerMin: make([]float64, n),
			suspended: make([]bool, n), capacity: (cellRate + float64(n)*ranRate) / 1e6}
		errs := make(chan error, n)
		for i, u := range tb.ues {
			go func() {
				r, err := runIperf(u.NS, tb.DN, addrs[i], "-t", fmt.Sprint(int(d.Seconds())))
				res.mbps[i], res.retrans[i] = r.End.SumReceived.BitsPerSecond/1e6, r.End.SumSent.Retransmits
				errs <- err
			}()
		}
		samples = nil
		start := time.Now()
		for time.Since(start) < d {
			s := sample{at: time.Since(start), access: make([]int, n), rx: make([]map[string]uint64, n)}
			for i, u := range tb.ues {
				r3, _ := tb.register("rtt_3gpp", users[i])
				rn, _ := tb.register("rtt_non3gpp", users[i])
				s.access[i] = 1
				if rn != 0 && (r3 == 0 || rn < r3) {
					s.access[i] = 2
				}
				s.rx[i] = rxBytesAll(t, u.NS)
				if st, err := getSession(fmt.Sprintf("s%d", i+1), tb.ns); err == nil && st.Status.PathUpdatesSuspended {
					res.suspended[i] = true
				}
			}
			samples = append(samples, s)
			time.Sleep(250 * time.Millisecond)
		}
		for range tb.ues {
			if err := <-errs; err != nil {
				t.Fatalf("a download: %v", err)
			}
		}
		steady := d / 4
		for i := range tb.ues {
			changes, prev := 0, 0
			for _, s := range samples {
				if s.at < steady {
					continue
				}
				if prev != 0 && s.access[i] != prev {
					changes++
				}
				prev = s.access[i]
			}
			res.switchesPerMin[i] = float64(changes) / (samples[len(samples)-1].at - steady).Minutes()
		}
	})
	res.stolen = stolen
	if fullScenario {
		writeCellPlot(t, n, mode, func(yield func(at time.Duration, wifi, ran []float64)) {
			for k := 1; k < len(samples); k++ {
				p, s := samples[k-1], samples[k]
				dt := (s.at - p.at).Seconds()
				w, r := make([]float64, n), make([]float64, n)
				for i := range n {
					w[i] = float64(s.rx[i]["wlan0"]-p.rx[i]["wlan0"]) * 8 / dt / 1e6
					r[i] = float64(s.rx[i]["ran0"]-p.rx[i]["ran0"]) * 8 / dt / 1e6
				}
				yield(s.at, w, r)
			}
		})
	}
	return res
}

// writeCellTable writes the cell scenario's table.
func writeCellTable(t *testing.T, results []cellResult) {
	rows := [][]string{{"UEs", "mode", "total Mbit/s", "of the links' capacity", "Jain's index", "per UE Mbit/s", "TCP retransmissions per UE", "switches per minute per UE (steady part)", "suspended", "targets (≥ 80%, ≥ 0.95)"}}
	for _, r := range results {
		rows = append(rows, []string{fmt.Sprint(r.ues), r.mode.name, mbps(r.total()), fmt.Sprintf("%s of %.0f", pct(r.total()/r.capacity), r.capacity),
			fmt.Sprintf("%.3f", jain(r.mbps)), fmtFloats(r.mbps), fmt.Sprint(r.retrans), fmtSwitches(r), fmt.Sprint(r.suspended),
			metOrNot(r.total() >= 0.8*r.capacity && jain(r.mbps) >= 0.95)})
	}
	writeResultsTable(t, "cell", rows)
}

// writeCellPlot writes the cell run's CSV and plot: each UE's downlink on WiFi and on 5G.
func writeCellPlot(t *testing.T, n int, mode cellMode, rows func(func(at time.Duration, wifi, ran []float64))) {
	dir := resultsDir(t)
	csv := "t_s"
	for i := range n {
		csv += fmt.Sprintf(",ue%d_wifi_mbps,ue%d_5g_mbps", i+1, i+1)
	}
	csv += "\n"
	wifi, ran := make([]plotter.XYs, n), make([]plotter.XYs, n)
	rows(func(at time.Duration, w, r []float64) {
		csv += fmt.Sprintf("%.2f", at.Seconds())
		for i := range n {
			csv += fmt.Sprintf(",%.2f,%.2f", w[i], r[i])
			wifi[i] = append(wifi[i], plotter.XY{X: at.Seconds(), Y: w[i]})
			ran[i] = append(ran[i], plotter.XY{X: at.Seconds(), Y: r[i]})
		}
		csv += "\n"
	})
	base := fmt.Sprintf("cell-%dues%s", n, mode.file)
	must(t, os.WriteFile(filepath.Join(dir, base+".csv"), []byte(csv), 0o644))
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d UEs on one 60 Mbit/s WiFi cell, each with 40 Mbit/s 5G, %s", n, mode.name)
	p.X.Label.Text, p.Y.Label.Text = "time (s)", "downlink (Mbit/s)"
	for i := range n {
		c := plotutilColor(i)
		lw, err := plotter.NewLine(wifi[i])
		must(t, err)
		lw.Color = c
		lr, err := plotter.NewLine(ran[i])
		must(t, err)
		lr.Color, lr.Dashes = c, []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(lw, lr)
		p.Legend.Add(fmt.Sprintf("UE %d WiFi", i+1), lw)
		p.Legend.Add(fmt.Sprintf("UE %d 5G", i+1), lr)
	}
	p.Legend.Top = true
	must(t, p.Save(10*vg.Inch, 5*vg.Inch, filepath.Join(dir, base+".png")))
	t.Logf("wrote %s/%s.{csv,png}", dir, base)
}

// plotutilColor is the i-th of a few distinct colours.
func plotutilColor(i int) color.RGBA {
	cs := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xff, 0x7f, 0x0e, 0xff},
		{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}}
	return cs[i%len(cs)]
}
