//go:build linux

package ueagent

// The paper's Fig. 11 (handover): active-standby on WiFi, a 25 Mbit/s UDP stream to the UE, and
// WiFi lost halfway, once with the carrier gone (netlink tells the agent) and once silently
// (only missed probes tell it). Throughput per 100 ms and the outage gap.
//
//	go test ./test/ueagent -run TestScenarioHandover                       # short: 4 s per run
//	make scenarios SCENARIO=Handover   (JUNCTION_SCENARIO=full go test ... -run TestScenarioHandover)
//	                 # the paper's 40 s, failure at 20 s; writes docs/results/fig11-handover.{csv,png}
//	                 # and the table in docs/results.md
//
// make test runs the short version with generous bounds; the targets (outage <= 100 ms on
// carrier loss, <= 3 probe intervals silently) are printed, not asserted.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/color"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/internal/pathmon"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/ueagent/steer"
	"github.com/junction-atsss/junction/test/netns"
	"github.com/junction-atsss/junction/test/topology"
)

const (
	cbrRate    = 25e6 // bit/s, the paper's stream
	cbrPayload = 1250 // bytes: 2,500 datagrams a second
	binWidth   = 100 * time.Millisecond
)

// fullScenario: make scenarios runs the scenarios at the paper's lengths (JUNCTION_SCENARIO=full),
// make test the short versions.
var fullScenario = os.Getenv("JUNCTION_SCENARIO") == "full"

// shortOrFull picks a scenario's short or full value.
func shortOrFull[T any](short, full T) T {
	if fullScenario {
		return full
	}
	return short
}

// stream is one CBR run's arrivals at the UE.
type stream struct {
	start    time.Time
	arrivals []time.Time
	bytes    []int
	seqs     []uint64
}

// cbr sends a cbrRate UDP stream from the data network to the session address for d, calling
// fail at failAt, and records the arrivals.
func (tb *testbed) cbr(t *testing.T, d, failAt time.Duration, fail func()) *stream {
	t.Helper()
	u := tb.ues[0]
	var rx, tx *net.UDPConn
	must(t, u.NS.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(sessionAddr), Port: 7000})
		return err
	}))
	defer rx.Close()
	rx.SetReadBuffer(8 << 20)
	must(t, tb.DN.Do(func() (err error) {
		tx, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(sessionAddr), Port: 7000})
		return err
	}))
	defer tx.Close()
	s := &stream{start: time.Now()}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			rx.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := rx.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			s.arrivals = append(s.arrivals, time.Now())
			s.bytes = append(s.bytes, n)
			s.seqs = append(s.seqs, binary.BigEndian.Uint64(buf))
			mu.Unlock()
		}
	}()
	msg := make([]byte, cbrPayload)
	pace(s.start, d, failAt, fail, func(i int) error {
		binary.BigEndian.PutUint64(msg, uint64(i))
		tx.Write(msg)
		return nil
	})
	<-done
	return s
}

// pace calls send with 0, 1, ... at the CBR's packet rate from start for d (until send fails),
// and fail once at failAt.
func pace(start time.Time, d, failAt time.Duration, fail func(), send func(i int) error) {
	pps := cbrRate / 8 / cbrPayload
	failed := false
	for i := 0; ; i++ {
		due := start.Add(time.Duration(float64(i) / pps * float64(time.Second)))
		if due.Sub(start) >= d {
			return
		}
		if !failed && due.Sub(start) >= failAt {
			fail()
			failed = true
		}
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		if send(i) != nil {
			return
		}
	}
}

// paceAt calls send at the packet rate of rate bit/s in cbrPayload datagrams for d.
func paceAt(rate float64, d time.Duration, send func()) {
	start, pps := time.Now(), rate/8/cbrPayload
	for i := 0; ; i++ {
		due := start.Add(time.Duration(float64(i) / pps * float64(time.Second)))
		if due.Sub(start) >= d {
			return
		}
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		send()
	}
}

// newEmulation gives every UE's radio ran's properties and the shared WiFi cell wifi's, both
// directions alike.
func newEmulation(ran, wifi linkem.Params) *topology.Emulation {
	return &topology.Emulation{Radio: ran, WiFi: wifi}
}

// series is the throughput per bin in Mbit/s.
func (s *stream) series(d time.Duration) []float64 {
	out := make([]float64, int(d/binWidth))
	for i, at := range s.arrivals {
		if b := int(at.Sub(s.start) / binWidth); b >= 0 && b < len(out) {
			out[b] += float64(s.bytes[i]*8) / binWidth.Seconds() / 1e6
		}
	}
	return out
}

// outage is the longest stretch after failAt (to the end d) in which the stream delivered less
// than half its rate, in 10 ms bins: a gap between datagrams for UDP, and for TCP also the
// trickle of retransmissions before a subflow is given up.
func (s *stream) outage(failAt, d time.Duration) time.Duration {
	const bin = 10 * time.Millisecond
	got := make([]int, int((d-failAt)/bin))
	for i, at := range s.arrivals {
		if b := int((at.Sub(s.start) - failAt) / bin); b >= 0 && b < len(got) {
			got[b] += s.bytes[i]
		}
	}
	half := int(cbrRate / 8 * bin.Seconds() / 2)
	var run, longest int
	for _, n := range got {
		if n < half {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return time.Duration(longest) * bin
}

// handoverResult is one run of the handover scenario (target 0: a baseline, no target).
type handoverResult struct {
	name   string
	s      *stream
	outage time.Duration
	after  float64
	target time.Duration
}

// mptcpCBR is cbr over the MPTCP baseline: a cbrRate TCP stream on an MPTCP connection from the
// server to the client (which opened it, with a subflow per link), arrivals recorded per read.
func mptcpCBR(t *testing.T, mp *topology.MPTCP, d, failAt time.Duration, fail func()) *stream {
	t.Helper()
	addr := net.JoinHostPort(mp.ServerAddr.String(), "7100")
	var ln net.Listener
	must(t, mp.Server.Do(func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(true)
		ln, err = lc.Listen(context.Background(), "tcp4", addr)
		return err
	}))
	defer ln.Close()
	var rx net.Conn
	must(t, mp.Client.Do(func() (err error) {
		dl := net.Dialer{Timeout: 5 * time.Second}
		dl.SetMultipathTCP(true)
		rx, err = dl.Dial("tcp4", addr)
		return err
	}))
	defer rx.Close()
	if on, err := rx.(*net.TCPConn).MultipathTCP(); err != nil || !on {
		t.Fatalf("the baseline connection is not MPTCP (%v): is MPTCP enabled in the kernel?", err)
	}
	tx, err := ln.Accept()
	must(t, err)
	defer tx.Close()
	s := &stream{start: time.Now()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := rx.Read(buf)
			if n > 0 {
				s.arrivals, s.bytes = append(s.arrivals, time.Now()), append(s.bytes, n)
			}
			if err != nil {
				return
			}
		}
	}()
	msg := make([]byte, cbrPayload)
	tx.SetWriteDeadline(s.start.Add(d))
	pace(s.start, d, failAt, fail, func(int) error {
		_, err := tx.Write(msg)
		return err
	})
	tx.Close()
	rx.SetReadDeadline(time.Now().Add(time.Second))
	<-done
	return s
}

// rateAfter is the mean receive rate in Mbit/s over the last second of the run.
func (s *stream) rateAfter(from, to time.Duration) float64 {
	var bytes int
	for i, at := range s.arrivals {
		if off := at.Sub(s.start); off >= from && off < to {
			bytes += s.bytes[i]
		}
	}
	return float64(bytes*8) / (to - from).Seconds() / 1e6
}

func TestScenarioHandover(t *testing.T) {
	d, failAt := 4*time.Second, 2*time.Second
	full := fullScenario
	if full {
		d, failAt = 40*time.Second, 20*time.Second
	}
	// WiFi 50 Mbit/s, 5 ms each way; 5G 100 Mbit/s, 10 ms each way (the UE's side of each).
	wifi := linkem.Params{Rate: 50e6, Delay: 5 * time.Millisecond, Queue: 200_000}
	ran := linkem.Params{Rate: 100e6, Delay: 10 * time.Millisecond, Queue: 400_000}
	em := newEmulation(ran, wifi)
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	tb.startAgent(u)
	create(t, tb.policy("as-wifi", activeStandby(junctionv1.AccessNon3GPP)), tb.session("s1", u, sessionAddr, 100, "as-wifi"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	results := tb.non3GPPLost(t, em, "s1", d, failAt)
	// The baseline, full run only (MPTCP needs seconds to give up a silent subflow).
	if full {
		results = append(results, mptcpNon3GPPLost(t, em, d, failAt)...)
		writeHandover(t, d, results, "fig11-handover", "Handover: WiFi lost, traffic moves to 5G (25 Mbit/s)", map[string]string{
			"carrier": "Junction, carrier lost (netlink)", "silent": "Junction, silent loss (probes)",
			"MPTCP carrier": "MPTCP, carrier lost", "MPTCP silent": "MPTCP, silent loss"})
		writeHandoverTable(t, results)
	} else {
		t.Log("the MPTCP baseline runs in the full scenario only (make scenarios SCENARIO=Handover)")
	}
	fmt.Printf("\nFig. 11 handover (25 Mbit/s, WiFi lost at %v)\n%-14s %12s %20s %14s\n", failAt, "WiFi lost", "outage", "target", "5G after Mb/s")
	for _, r := range results {
		target := "baseline"
		if r.target > 0 {
			target = "<= " + r.target.String() + " met"
			if r.outage > r.target {
				target = "<= " + r.target.String() + " NOT met"
			}
		}
		fmt.Printf("%-14s %12v %20s %14.1f\n", r.name, r.outage.Round(time.Millisecond), target, r.after)
	}
}

// non3GPPLost runs the 25 Mbit/s stream to the first UE's session (active-standby on its
// non-3GPP leg) while that leg is lost at failAt, once with its carrier gone and once silently
// (the cell emulator drops everything), the leg back up in between; silently last, the cell stays
// down. The targets: 100 ms on carrier loss, 3 probe intervals (the busy interval: the
// stream keeps the leg busy) when only probes can tell. Generous bounds are asserted: the
// stream moves to 5G and stays there.
func (tb *testbed) non3GPPLost(t *testing.T, em *topology.Emulation, session string, d, failAt time.Duration) []handoverResult {
	u := tb.ues[0]
	var results []handoverResult
	for _, mode := range []string{"carrier", "silent"} {
		fail, target := func() { must(t, u.WiFi.SetCarrier(false)) }, 100*time.Millisecond
		if mode == "silent" {
			fail, target = func() { setDown(em.Cell[:], true) }, 3*steer.DefaultLegConfig().Busy
		}
		s := tb.cbr(t, d, failAt, fail)
		r := handoverResult{name: mode, s: s, outage: s.outage(failAt, d), after: s.rateAfter(d-time.Second, d), target: target}
		results = append(results, r)
		t.Logf("the non-3GPP leg lost (%s): outage %v (target <= %v), %.1f Mbit/s on 5G after", mode, r.outage.Round(time.Millisecond), target, r.after)
		if r.outage > 2*time.Second || r.after < 0.8*cbrRate/1e6 {
			t.Errorf("%s: outage %v, %.1f Mbit/s after the failure; want the stream back on 5G", mode, r.outage, r.after)
		}
		if mode == "carrier" {
			must(t, u.WiFi.SetCarrier(true))
			must(t, u.Routes())
			tb.legState(session, junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
		}
	}
	return results
}

// mptcpNon3GPPLost is non3GPPLost's baseline: Linux MPTCP over links emulated alike, the
// non-3GPP link first and 5G as the backup subflow, the same 25 Mbit/s as a paced TCP stream,
// the same failures.
func mptcpNon3GPPLost(t *testing.T, em *topology.Emulation, d, failAt time.Duration) []handoverResult {
	mp := newMPTCP(t, em, true)
	var results []handoverResult
	for _, mode := range []string{"carrier", "silent"} {
		fail := func() { must(t, mp.WiFi.SetCarrier(false)) }
		if mode == "silent" {
			fail = func() { setDown(mp.WiFiShapers[:], true) }
		}
		s := mptcpCBR(t, mp, d, failAt, fail)
		results = append(results, handoverResult{name: "MPTCP " + mode, s: s, outage: s.outage(failAt, d), after: s.rateAfter(d-time.Second, d)})
		must(t, mp.WiFi.SetCarrier(true))
		setDown(mp.WiFiShapers[:], false)
	}
	return results
}

// writeHandoverTable writes Fig. 11's table: results are Junction's carrier and silent runs,
// then MPTCP's.
func writeHandoverTable(t *testing.T, results []handoverResult) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Round(10*time.Millisecond).Milliseconds()) }
	rows := [][]string{{"WiFi lost", "outage", "target (issue)", "on 5G afterwards"}}
	for i, how := range []string{"carrier (netlink)", "silently (probes)"} {
		j, m := results[i], results[i+2]
		target := "≤ " + ms(j.target)
		if i == 1 {
			target = fmt.Sprintf("≤ 3 probe intervals (%s)", ms(j.target))
		}
		rows = append(rows, []string{"Junction, " + how, ms(j.outage), target + " and ≤ MPTCP's: " + metOrNot(j.outage <= j.target && j.outage <= m.outage), mbps(j.after) + " Mbit/s"})
	}
	for _, m := range results[2:] {
		rows = append(rows, []string{"MPTCP, " + map[string]string{"MPTCP carrier": "carrier", "MPTCP silent": "silently"}[m.name], ms(m.outage), "baseline", mbps(m.after) + " Mbit/s"})
	}
	writeResultsTable(t, "handover", rows)
}

// writeHandover writes the CSV and the plot of a full handover run under docs/results, as
// base.csv and base.png, each run's line labelled legend[its name].
func writeHandover(t *testing.T, d time.Duration, results []handoverResult, base, title string, legend map[string]string) {
	dir := resultsDir(t)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "throughput (Mbit/s)"
	palette := []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}
	csv := "t_s"
	var series [][]float64
	for i, r := range results {
		csv += "," + strings.ReplaceAll(strings.ToLower(r.name), " ", "_") + "_mbps"
		ys := r.s.series(d)
		series = append(series, ys)
		xy := make(plotter.XYs, len(ys))
		for j, y := range ys {
			xy[j] = plotter.XY{X: (time.Duration(j) * binWidth).Seconds(), Y: y}
		}
		l, err := plotter.NewLine(xy)
		must(t, err)
		l.Color = palette[i%len(palette)]
		if i%2 == 1 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(legend[r.name], l)
	}
	csv += "\n"
	for j := range series[0] {
		csv += fmt.Sprintf("%.1f", (time.Duration(j) * binWidth).Seconds())
		for _, ys := range series {
			csv += fmt.Sprintf(",%.3f", ys[j])
		}
		csv += "\n"
	}
	must(t, os.WriteFile(filepath.Join(dir, base+".csv"), []byte(csv), 0o644))
	must(t, p.Save(8*vg.Inch, 4*vg.Inch, filepath.Join(dir, base+".png")))
	t.Logf("wrote %s/%s.{csv,png}", dir, base)
}

// The paper's Fig. 12 (aggregation): two 60 Mbit/s links, one TCP download for the run's
// length, with each link alone (active-standby) and with load balancing over both, 50/50 and
// autonomous, whose downlink the agent puts back in order; then, with 5G at a third of WiFi's
// rate, 5G alone and autonomous, and an upload autonomous and on WiFi alone.
//
//	go test ./test/ueagent -run TestScenarioAggregation                     # short: 5 s per mode
//	make scenarios SCENARIO=Aggregation                                      # 30 s per mode
func TestScenarioAggregation(t *testing.T) {
	// The testbed's cleanups print the software UPF's log after a failure; this one, registered
	// first, runs last, so the output ends with the bounds that failed.
	var failed []string
	t.Cleanup(func() {
		if len(failed) > 0 {
			t.Logf("aggregation bounds not met: %s", strings.Join(failed, "; "))
		}
	})
	secs := shortOrFull("5", "30")
	const linkRate = 60e6
	wifi := linkem.Params{Rate: linkRate, Delay: 5 * time.Millisecond, Queue: 300_000}
	ran := linkem.Params{Rate: linkRate, Delay: 10 * time.Millisecond, Queue: 300_000}
	em := newEmulation(ran, wifi)
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	reorder := startAgentWithReorderCounters(t, tb, u)
	half := int32(50)
	modes := []struct {
		name string
		mode junctionv1.SteeringMode
	}{
		{"WiFi alone", activeStandby(junctionv1.AccessNon3GPP)},
		{"5G alone", activeStandby(junctionv1.Access3GPP)},
		{"load balance 50/50", junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: &half}}},
		{"autonomous balance", junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}},
	}
	pol := tb.policy("p", modes[0].mode)
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "p"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	// got is each run's Mbit/s; stolen, the share of the CPU time the hypervisor took from it.
	got, stolen := map[string]float64{}, map[string]float64{}
	retransmits := map[string]int{}
	// onLinks is the bytes each download put on the two links' downlinks (frames, headers and
	// retransmissions included): what the goodput is measured against, apart from idle time.
	onLinks := map[string]uint64{}
	downlinks := func(sh ...*linkem.Shaper) uint64 {
		var b uint64
		for _, s := range sh {
			b += s.Stats().DeliveredB
		}
		return b
	}
	// measureOnce runs a TCP download (or, with up, an upload).
	measureOnce := func(name string, up bool) {
		var r iperfResult
		dir := 1 // the shapers' index of the direction the data goes: 0 up, 1 down
		if up {
			dir = 0
		}
		before, reorderBefore, dropsBefore := downlinks(u.RadioShapers[1], em.Cell[1]), reorder(), queueDrops(em.Cell[dir], u.RadioShapers[dir])
		if up {
			r = iperf(t, tb.DN, u.NS, dnHost.String(), "-t", secs, "-B", sessionAddr)
		} else {
			r = iperf(t, u.NS, tb.DN, sessionAddr, "-t", secs)
			onLinks[name] = downlinks(u.RadioShapers[1], em.Cell[1]) - before
		}
		got[name], retransmits[name] = r.End.SumReceived.BitsPerSecond/1e6, r.End.SumSent.Retransmits
		// What a shortfall needs to be read: the sender's retransmissions, the drops of the
		// queues the data crossed and the agent's downlink reorder buffer (which an upload's
		// ACKs cross, its data not).
		after, dropsAfter := reorder(), queueDrops(em.Cell[dir], u.RadioShapers[dir])
		t.Logf("%s: %.1f Mbit/s, %d retransmissions; queue drops WiFi %d, 5G %d; reorder late/timed out/lost/overflow %.0f/%.0f/%.0f/%.0f",
			name, got[name], r.End.SumSent.Retransmits, dropsAfter[0]-dropsBefore[0], dropsAfter[1]-dropsBefore[1],
			after[0]-reorderBefore[0], after[1]-reorderBefore[1], after[2]-reorderBefore[2], after[3]-reorderBefore[3])
	}
	// measure runs measureOnce under mode, again while the CPU was stolen
	// (testenv.MeasureQuietly).
	measure := func(name string, mode junctionv1.SteeringMode, up bool) {
		setSteering(t, pol, mode)
		stolen[name] = testenv.MeasureQuietly(t, name, func() { measureOnce(name, up) })
	}
	for _, m := range modes {
		measure(m.name, m.mode, false)
	}
	// Unequal links: 5G at a third of WiFi's rate. Autonomous balance follows the rates (its
	// share settles where the delays are equal: docs/pipeline.md); an even split would cap the
	// two links at twice the slower one, below WiFi alone.
	slow := ran
	slow.Rate = linkRate / 3
	for _, s := range u.RadioShapers {
		s.Set(slow)
	}
	measure(unequal5G, activeStandby(junctionv1.Access3GPP), false)
	measure(unequalAutonomous, modes[3].mode, false)
	// The uplink on the same links: the UE agent's own share, moved by its probes' RTTs.
	measure(unequalUpAutonomous, modes[3].mode, true)
	measure(unequalUpWiFi, activeStandby(junctionv1.AccessNon3GPP), true)
	// The baseline: Linux MPTCP over links emulated alike, a subflow on each.
	mp := newMPTCP(t, em, false)
	stolen["MPTCP"] = testenv.MeasureQuietly(t, "MPTCP", func() {
		before := downlinks(mp.RadioShapers[1], mp.WiFiShapers[1])
		r := iperfMPTCP(t, mp.Server, mp.Client, mp.ServerAddr.String(), "-t", secs, "-R")
		got["MPTCP"] = r.End.SumReceived.BitsPerSecond / 1e6
		onLinks["MPTCP"] = downlinks(mp.RadioShapers[1], mp.WiFiShapers[1]) - before
		t.Logf("MPTCP: %.1f Mbit/s", got["MPTCP"])
	})
	radio, wifiB := mp.RadioShapers[1].Stats().DeliveredB, mp.WiFiShapers[1].Stats().DeliveredB
	if min(radio, wifiB) < (radio+wifiB)/10 {
		t.Errorf("MPTCP baseline: %d bytes down on 5G, %d on WiFi: want a subflow on each", radio, wifiB)
	}
	modes = append(modes, struct {
		name string
		mode junctionv1.SteeringMode
	}{name: "MPTCP"})
	agg := got["load balance 50/50"]
	fmt.Printf("\nFig. 12 aggregation (TCP download, two %.0f Mbit/s links, %s s)\n", linkRate/1e6, secs)
	for _, m := range modes {
		fmt.Printf("%-20s %8.1f Mbit/s\n", m.name, got[m.name])
	}
	fmt.Printf("unequal links, WiFi %.0f and 5G %.0f Mbit/s: 5G alone %.1f, autonomous %.1f Mbit/s (WiFi alone %.1f); upload autonomous %.1f, WiFi alone %.1f\n",
		linkRate/1e6, slow.Rate/1e6, got[unequal5G], got[unequalAutonomous], got["WiFi alone"], got[unequalUpAutonomous], got[unequalUpWiFi])
	if fullScenario {
		names := make([]string, len(modes))
		for i, m := range modes {
			names[i] = m.name
		}
		writeAggregation(t, names, got, 2*linkRate/1e6)
		writeAggregationTable(t, got, onLinks, secs, linkRate/1e6, slow.Rate/1e6)
	}
	alone := got["WiFi alone"] + got["5G alone"]
	for _, name := range []string{"load balance 50/50", "autonomous balance", "MPTCP"} {
		fmt.Printf("%s: %.0f%% of the two links' rates (target >= 95%% and >= MPTCP's %.0f%%), %.0f%% of what each carries alone, summed; goodput %.1f%% of the bytes on the links\n",
			name, 100*got[name]/(2*linkRate/1e6), 100*got["MPTCP"]/(2*linkRate/1e6), 100*got[name]/alone, 100*goodputShare(got[name], onLinks[name], secs))
	}
	// Behaviour, with generous bounds: each link alone carries most of its rate, and load
	// balancing, 50/50 or autonomous, carries half as much again as either alone (a 3-to-1
	// split caps two equal links at 4/3 of one). On the unequal links autonomous must carry a
	// tenth more than WiFi alone, down and up, which an even split (at most twice the 5G link)
	// cannot. A bound is judged on runs the hypervisor left the CPU (testenv.Judged).
	best := max(got["WiFi alone"], got["5G alone"])
	for _, b := range []struct {
		name     string
		min, got float64
		runs     []string // the runs the bound reads
	}{
		{"WiFi alone >= 0.7 of the link rate", 0.7 * linkRate / 1e6, got["WiFi alone"], []string{"WiFi alone"}},
		{"5G alone >= 0.7 of the link rate", 0.7 * linkRate / 1e6, got["5G alone"], []string{"5G alone"}},
		{"load balance 50/50 >= 1.5x the better link alone", 1.5 * best, agg, []string{"WiFi alone", "5G alone", "load balance 50/50"}},
		{"autonomous balance >= 1.5x the better link alone", 1.5 * best, got["autonomous balance"], []string{"WiFi alone", "5G alone", "autonomous balance"}},
		{"unequal links, autonomous >= 1.1x WiFi alone", 1.1 * got["WiFi alone"], got[unequalAutonomous], []string{"WiFi alone", unequalAutonomous}},
		{"unequal links, upload autonomous >= 1.1x WiFi alone's upload", 1.1 * got[unequalUpWiFi], got[unequalUpAutonomous], []string{unequalUpWiFi, unequalUpAutonomous}},
	} {
		var lost []float64
		for _, r := range b.runs {
			lost = append(lost, stolen[r])
		}
		if b.got < b.min && testenv.Judged(t, fmt.Sprintf("%s: %.1f Mbit/s, want >= %.1f", b.name, b.got, b.min), lost...) {
			failed = append(failed, fmt.Sprintf("%s: %.1f Mbit/s, want >= %.1f", b.name, b.got, b.min))
			t.Error("aggregation: " + failed[len(failed)-1])
		}
	}
	// The split upload's retransmissions: 442-706 a second before the agent evened out the legs'
	// delays, 63-193 after (docs/results.md, "Unequal links").
	d, _ := strconv.ParseFloat(secs, 64)
	if n, most := retransmits[unequalUpAutonomous], int(300*d); n > most &&
		testenv.Judged(t, fmt.Sprintf("unequal links, upload autonomous: %d retransmissions, want <= %d", n, most), stolen[unequalUpAutonomous]) {
		failed = append(failed, fmt.Sprintf("unequal links, upload autonomous: %d retransmissions, want <= %d (300 a second)", n, most))
		t.Error("aggregation: " + failed[len(failed)-1])
	}
}

// The unequal-link runs of Fig. 12's scenario.
const (
	unequal5G           = "5G alone, a third of WiFi's rate"
	unequalAutonomous   = "autonomous balance, 5G at a third of WiFi's rate"
	unequalUpWiFi       = "upload, WiFi alone"
	unequalUpAutonomous = "upload, autonomous balance, 5G at a third of WiFi's rate"
)

// goodputShare is the share of the bytes a download put on the links (b) that reached the
// application as goodput (mbps over secs seconds).
func goodputShare(mbps float64, b uint64, secs string) float64 {
	d, _ := strconv.ParseFloat(secs, 64)
	return mbps * 1e6 * d / 8 / float64(b)
}

// writeAggregationTable writes Fig. 12's table from the Mbit/s per mode, the bytes each download
// of secs seconds put on the links, the link rate and the slower 5G rate of the unequal runs.
func writeAggregationTable(t *testing.T, got map[string]float64, onLinks map[string]uint64, secs string, rate, slowRate float64) {
	sum := 2 * rate
	alone := got["WiFi alone"] + got["5G alone"]
	// Goodput per link byte is what the headers (and retransmissions) leave; goodput against
	// the link bytes the rate allows, divided by it, is how busy the links were.
	split := func(name string, links float64) (string, string) {
		share := goodputShare(got[name], onLinks[name], secs)
		return fmt.Sprintf("%.1f%%", 100*share), fmt.Sprintf("%.1f%%", 100*got[name]/share/links)
	}
	rows := [][]string{{"mode", "Mbit/s", "of the two link rates", "of the two single-link results, summed", "goodput per byte on the links", "links busy"}}
	for _, m := range []struct{ name, row string }{{"WiFi alone", "WiFi alone (active-standby)"}, {"5G alone", "5G alone (active-standby)"}} {
		perByte, busy := split(m.name, rate)
		rows = append(rows, []string{m.row, mbps(got[m.name]), "", "", perByte, busy})
	}
	for _, m := range []struct{ name, row string }{{"load balance 50/50", "load balance 50/50"}, {"autonomous balance", "autonomous load balance"}} {
		v := got[m.name]
		perByte, busy := split(m.name, sum)
		rows = append(rows, []string{m.row, mbps(v), pct(v/sum) + " (targets ≥ 95% and ≥ MPTCP's: " + metOrNot(v >= 0.95*sum && v >= got["MPTCP"]) + ")", pct(v / alone), perByte, busy})
	}
	perByte, busy := split("MPTCP", sum)
	rows = append(rows, []string{"MPTCP (same links, one subflow each)", mbps(got["MPTCP"]), pct(got["MPTCP"] / sum), pct(got["MPTCP"] / alone), perByte, busy})
	unequalAlone := got["WiFi alone"] + got[unequal5G]
	rows = append(rows,
		[]string{fmt.Sprintf("5G alone at %.0f Mbit/s (active-standby)", slowRate), mbps(got[unequal5G]), "", "", "", ""},
		[]string{fmt.Sprintf("autonomous load balance, WiFi %.0f / 5G %.0f Mbit/s", rate, slowRate), mbps(got[unequalAutonomous]),
			pct(got[unequalAutonomous] / (rate + slowRate)), pct(got[unequalAutonomous] / unequalAlone), "", ""},
		[]string{"upload, WiFi alone (active-standby)", mbps(got[unequalUpWiFi]), "", "", "", ""},
		[]string{fmt.Sprintf("upload, autonomous load balance, WiFi %.0f / 5G %.0f Mbit/s", rate, slowRate), mbps(got[unequalUpAutonomous]),
			pct(got[unequalUpAutonomous] / (rate + slowRate)), "", "", ""})
	writeResultsTable(t, "aggregation", rows)
}

// writeAggregation writes Fig. 12's CSV and bar chart (Mbit/s per mode, the two links' rate as
// a line) under docs/results.
func writeAggregation(t *testing.T, names []string, got map[string]float64, sum float64) {
	dir := resultsDir(t)
	csv := "mode,mbps\n"
	values := make(plotter.Values, len(names))
	for i, n := range names {
		values[i] = got[n]
		csv += fmt.Sprintf("%s,%.1f\n", n, got[n])
	}
	p := plot.New()
	p.Title.Text = "Aggregation: one TCP download over two 60 Mbit/s links"
	p.Y.Label.Text = "throughput (Mbit/s)"
	bars, err := plotter.NewBarChart(values, vg.Points(40))
	must(t, err)
	bars.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	p.Add(bars)
	p.NominalX(names...)
	limit, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: sum}, {X: float64(len(names)) - 0.5, Y: sum}})
	must(t, err)
	limit.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	p.Add(limit)
	p.Legend.Add("sum of the link rates", limit)
	p.Legend.Top = true
	p.Y.Max = sum * 1.15
	must(t, os.WriteFile(filepath.Join(dir, "fig12-aggregation.csv"), []byte(csv), 0o644))
	must(t, p.Save(8*vg.Inch, 4*vg.Inch, filepath.Join(dir, "fig12-aggregation.png")))
	t.Logf("wrote %s/fig12-aggregation.{csv,png}", dir)
}

// setSteering gives policy pol the steering mode, and the operator and the agent time to apply
// it, unless it has it already.
func setSteering(t *testing.T, pol *junctionv1.SteeringPolicy, mode junctionv1.SteeringMode) {
	p := &junctionv1.SteeringPolicy{}
	must(t, k8s.Get(context.Background(), clientKey(pol), p))
	if !reflect.DeepEqual(p.Spec.Steering, mode) {
		p.Spec.Steering = mode
		must(t, k8s.Update(context.Background(), p))
		time.Sleep(2 * time.Second)
	}
}

// rxBytesAll is the received bytes of every interface of ns, by name.
func rxBytesAll(t testing.TB, ns interface {
	Command(string, ...string) *exec.Cmd
}) map[string]uint64 {
	out, err := ns.Command("ip", "-j", "-s", "link", "show").Output()
	must(t, err)
	var links []struct {
		Name  string `json:"ifname"`
		Stats struct {
			RX byteCount `json:"rx"`
		} `json:"stats64"`
	}
	must(t, json.Unmarshal(out, &links))
	m := map[string]uint64{}
	for _, l := range links {
		m[l.Name] = l.Stats.RX.Bytes
	}
	return m
}

// The paper's Fig. 13 (smallest delay under competition): UE 1, active-standby on WiFi, downloads
// in bulk through the shared WiFi cell; UE 2 joins with a 15 Mbit/s stream steered by smallest
// delay. UE 1's queue raises WiFi's RTT above 5G's, so UE 2's stream moves to 5G, and UE 1 keeps
// the cell.
//
//	go test ./test/ueagent -run TestScenarioSmallestDelay                   # short: 10 s, join at 3 s
//	make scenarios SCENARIO=SmallestDelay                                   # 20 s, join at 9 s
func TestScenarioSmallestDelay(t *testing.T) {
	d, join := 10*time.Second, 3*time.Second
	full := fullScenario
	if full {
		d, join = 20*time.Second, 9*time.Second
	}
	// The cell: 30 Mbit/s, 5 ms each way, a 300 kB queue (80 ms when full): idle, WiFi's RTT
	// (10 ms) is below 5G's (20 ms); loaded, above. 5G: 40 Mbit/s, 10 ms each way per UE.
	em := newEmulation(linkem.Params{Rate: 40e6, Delay: 10 * time.Millisecond, Queue: 300_000},
		linkem.Params{Rate: 30e6, Delay: 5 * time.Millisecond, Queue: 300_000})
	tb := newEmulatedTestbed(t, 2, em)
	ue1, ue2 := tb.ues[0], tb.ues[1]
	tb.startAgent(ue1)
	tb.startAgent(ue2)
	// Each application its own traffic: the UPF's applications table is shared by all sessions
	// (UE 1's bulk: TCP to its port 5201; UE 2's stream: UDP to its port 7001).
	bulkApp := tb.policy("bulk", activeStandby(junctionv1.AccessNon3GPP))
	bulkApp.Spec.TrafficDescriptor = junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolTCP, SourcePorts: []junctionv1.PortRange{{From: 5201}}}
	streamApp := tb.policy("stream", junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay, SmallestDelay: &junctionv1.SmallestDelay{}})
	streamApp.Spec.Precedence = 20
	streamApp.Spec.TrafficDescriptor = junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, SourcePorts: []junctionv1.PortRange{{From: 7001}}}
	create(t, bulkApp, streamApp, tb.session("s1", ue1, "10.60.0.1", 100, "bulk"), tb.session("s2", ue2, "10.60.0.2", 200, "stream"))
	for _, s := range []string{"s1", "s2"} {
		tb.waitReady(s)
		tb.legState(s, junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
		tb.legState(s, junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	}
	s2, err := getSession("s2", tb.ns)
	must(t, err)
	user2 := userIndex(t, s2)

	// UE 1's bulk download for the whole run, in the background.
	bulk := make(chan error, 1)
	go func() {
		_, err := runIperf(ue1.NS, tb.DN, "10.60.0.1", "-t", fmt.Sprint(int(d.Seconds())))
		bulk <- err
	}()

	type sample struct {
		at                   time.Duration
		ue1WiFi, ue2WiFi, g5 uint64 // cumulative rx bytes
		rttWiFi, rtt5G       uint64 // UE 2's path state in the UPF, µs
	}
	var samples []sample
	start := time.Now()
	joined := false
	cbrDone := make(chan struct{})
	for time.Since(start) < d {
		if !joined && time.Since(start) >= join {
			joined = true
			send := tb.cbrTo(t, ue2, "10.60.0.2", 15e6) // UE 2 joins with its stream
			go func() {
				defer close(cbrDone)
				send(d - join)
			}()
		}
		a, b := rxBytesAll(t, ue1.NS), rxBytesAll(t, ue2.NS)
		rw, _ := tb.register("rtt_non3gpp", user2)
		r5, _ := tb.register("rtt_3gpp", user2)
		samples = append(samples, sample{at: time.Since(start), ue1WiFi: a["wlan0"], ue2WiFi: b["wlan0"], g5: b["ran0"], rttWiFi: rw, rtt5G: r5})
		time.Sleep(200 * time.Millisecond)
	}
	<-cbrDone
	if err := <-bulk; err != nil {
		t.Fatalf("UE 1's download: %v", err)
	}

	// UE 2 after it settled: where did its bytes arrive? Settled is a second after joining (its
	// smoothed RTTs catch up) plus the flip-flop guard's refresh: a user whose path updates were
	// suspended before it joined moves then (docs/results.md, Fig. 13).
	settled := join + time.Second + pathmon.DefaultConfig().Refresh
	var before, after sample
	for _, s := range samples {
		if s.at <= join {
			before = s
		}
		if s.at <= settled {
			after = s
		}
	}
	last := samples[len(samples)-1]
	on5G, onWiFi := float64(last.g5-after.g5), float64(last.ue2WiFi-after.ue2WiFi)
	share5G := on5G / (on5G + onWiFi)
	span := func(a, b sample) float64 { return (b.at - a.at).Seconds() }
	ue1Before := float64(before.ue1WiFi-samples[0].ue1WiFi) * 8 / span(samples[0], before) / 1e6
	ue1After := float64(last.ue1WiFi-after.ue1WiFi) * 8 / span(after, last) / 1e6
	fmt.Printf("\nFig. 13 smallest delay under competition (cell 30 Mbit/s, UE 2 joins at %v with 15 Mbit/s)\n", join)
	fmt.Printf("UE 2's downlink on 5G from %v after joining: %.0f%%\nUE 1 on WiFi: %.1f Mbit/s before, %.1f after\n", settled-join, 100*share5G, ue1Before, ue1After)
	fmt.Printf("UE 2's path state at the end: WiFi %d µs, 5G %d µs\n", last.rttWiFi, last.rtt5G)
	if full {
		writeSmallestDelay(t, samples[0].at, func(yield func(at time.Duration, ue1, ue2w, ue2g, rw, rg float64)) {
			for i := 1; i < len(samples); i++ {
				p, s := samples[i-1], samples[i]
				dt := (s.at - p.at).Seconds()
				mb := func(a, b uint64) float64 { return float64(b-a) * 8 / dt / 1e6 }
				yield(s.at, mb(p.ue1WiFi, s.ue1WiFi), mb(p.ue2WiFi, s.ue2WiFi), mb(p.g5, s.g5), float64(s.rttWiFi)/1000, float64(s.rtt5G)/1000)
			}
		})
		writeResultsTable(t, "smallest-delay", [][]string{
			{"", "measured"},
			{fmt.Sprintf("UE 2's stream on 5G from %v after joining", settled-join), pct(share5G)},
			{"UE 1 on WiFi before / after UE 2 joins", fmt.Sprintf("%.1f / %.1f Mbit/s", ue1Before, ue1After)},
			{"UE 2's path state at the end (WiFi / 5G)", fmt.Sprintf("%.1f / %.1f ms", float64(last.rttWiFi)/1000, float64(last.rtt5G)/1000)},
		})
	}
	// Behaviour, generously: UE 2 mostly on 5G, UE 1 keeps most of the cell.
	if share5G < 0.6 || ue1After < 0.6*ue1Before {
		t.Errorf("UE 2 on 5G: %.0f%%; UE 1 %.1f -> %.1f Mbit/s", 100*share5G, ue1Before, ue1After)
	}
}

// cbrTo opens a UDP stream of rate bit/s from the data network to UE u's address addr and
// returns the function that sends it for a while (from any goroutine); the sockets close with
// the test.
func (tb *testbed) cbrTo(t *testing.T, u *ueNode, addr string, rate float64) func(time.Duration) {
	return udpCBR(t, tb.DN, nil, u.NS, &net.UDPAddr{IP: net.ParseIP(addr), Port: 7001}, rate)
}

// uplinkCBR opens a UDP stream of rate bit/s from UE u's session address to the data network,
// as cbrTo does the other way.
func (tb *testbed) uplinkCBR(t *testing.T, u *ueNode, rate float64) func(time.Duration) {
	return udpCBR(t, u.NS, net.ParseIP(sessionAddr), tb.DN, &net.UDPAddr{IP: net.IP(dnHost.AsSlice()), Port: 7002}, rate)
}

// udpCBR opens a UDP socket to dst in rxNS, whose datagrams a goroutine drains (the receiving
// application), and one from src (nil: any) in txNS toward it; it returns the function that
// sends cbrPayload datagrams at rate bit/s for a while. The sockets close with the test.
func udpCBR(t *testing.T, txNS *netns.Namespace, src net.IP, rxNS *netns.Namespace, dst *net.UDPAddr, rate float64) func(time.Duration) {
	var rx, tx *net.UDPConn
	must(t, rxNS.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", dst)
		return err
	}))
	must(t, txNS.Do(func() (err error) {
		var local *net.UDPAddr
		if src != nil {
			local = &net.UDPAddr{IP: src}
		}
		tx, err = net.DialUDP("udp4", local, dst)
		return err
	}))
	t.Cleanup(func() { rx.Close(); tx.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := rx.Read(buf); err != nil {
				return
			}
		}
	}()
	msg := make([]byte, cbrPayload)
	return func(d time.Duration) { paceAt(rate, d, func() { tx.Write(msg) }) }
}

// writeSmallestDelay writes the CSV and the two plots (throughput, UE 2's RTTs) of the full run.
func writeSmallestDelay(t *testing.T, _ time.Duration, rows func(func(at time.Duration, ue1, ue2w, ue2g, rw, rg float64))) {
	dir := resultsDir(t)
	csv := "t_s,ue1_wifi_mbps,ue2_wifi_mbps,ue2_5g_mbps,ue2_rtt_wifi_ms,ue2_rtt_5g_ms\n"
	var series [5]plotter.XYs
	rows(func(at time.Duration, ue1, ue2w, ue2g, rw, rg float64) {
		x := at.Seconds()
		csv += fmt.Sprintf("%.1f,%.3f,%.3f,%.3f,%.3f,%.3f\n", x, ue1, ue2w, ue2g, rw, rg)
		for i, y := range []float64{ue1, ue2w, ue2g, rw, rg} {
			series[i] = append(series[i], plotter.XY{X: x, Y: y})
		}
	})
	must(t, os.WriteFile(filepath.Join(dir, "fig13-smallest-delay.csv"), []byte(csv), 0o644))
	colors := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}}
	for _, fig := range []struct {
		file, title, y string
		idx            []int
		names          []string
	}{
		{"fig13-throughput.png", "Smallest delay under competition: throughput", "throughput (Mbit/s)", []int{0, 1, 2}, []string{"UE 1 on WiFi", "UE 2 on WiFi", "UE 2 on 5G"}},
		{"fig13-rtt.png", "Smallest delay under competition: UE 2's path state in the UPF", "RTT (ms)", []int{3, 4}, []string{"WiFi", "5G"}},
	} {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = fig.title, "time (s)", fig.y
		for k, i := range fig.idx {
			l, err := plotter.NewLine(series[i])
			must(t, err)
			l.Color = colors[k]
			p.Add(l)
			p.Legend.Add(fig.names[k], l)
		}
		p.Legend.Top = true
		must(t, p.Save(8*vg.Inch, 4*vg.Inch, filepath.Join(dir, fig.file)))
	}
	t.Logf("wrote %s/fig13-*", dir)
}

// Beyond the paper: Rel-17 redundant steering over two lossy links. Every downlink packet goes on
// both legs and the agent drops the second copy, so the stream loses only what both links lose:
// with 5% on each, about 0.25%, against 5% on either alone.
//
//	go test ./test/ueagent -run TestScenarioRedundant                       # short: 4 s
//	make scenarios SCENARIO=Redundant                                       # 20 s
func TestScenarioRedundant(t *testing.T) {
	d := shortOrFull(4*time.Second, 20*time.Second)
	const loss = 0.05
	em := newEmulation(linkem.Params{Rate: 100e6, Delay: 10 * time.Millisecond, Queue: 400_000},
		linkem.Params{Rate: 100e6, Delay: 5 * time.Millisecond, Queue: 400_000})
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	tb.startAgent(u)
	pol := tb.policy("p", junctionv1.SteeringMode{Mode: junctionv1.ModeRedundant, Redundant: &junctionv1.Redundant{}})
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "p"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	// Downlink loss on both legs from here on (probes too: the legs stay up at 5%).
	for _, s := range []*linkem.Shaper{em.Cell[1], tb.ues[0].RadioShapers[1]} {
		p := s.Params()
		p.Loss = loss
		s.Set(p)
	}
	// The 25 Mbit/s stream: the share delivered is what arrived (the agent passes one copy).
	s := tb.cbr(t, d, d+time.Hour, func() {})
	sent := int(d.Seconds() * cbrRate / 8 / cbrPayload)
	unique := map[uint64]bool{}
	for _, q := range s.seqs {
		unique[q] = true
	}
	if len(unique) != len(s.seqs) {
		t.Errorf("%d datagrams arrived twice: the agent must drop redundant copies", len(s.seqs)-len(unique))
	}
	got := 1 - float64(len(unique))/float64(sent)
	fmt.Printf("\nRedundant over two links losing %.0f%% each: %.2f%% of %d datagrams lost (independent losses: %.2f%%)\n",
		100*loss, 100*got, sent, 100*loss*loss)
	if fullScenario {
		writeResultsTable(t, "redundant", [][]string{
			{"", "measured", "independent losses"},
			{fmt.Sprintf("datagrams lost (of %d)", sent), fmt.Sprintf("%.2f%%", 100*got), fmt.Sprintf("%.2f%% (%.0f%% × %.0f%%)", 100*loss*loss, 100*loss, 100*loss)},
			{"datagrams delivered twice", fmt.Sprint(len(s.seqs) - len(unique)), ""},
		})
	}
	// Behaviour: far below one link's loss (5%), near the product.
	if got > loss/4 {
		t.Errorf("redundant: %.2f%% lost, want well below one link's %.0f%%", 100*got, 100*loss)
	}
}

// Beyond the paper: priority-based steering with an RTT threshold. The stream stays on WiFi (the
// priority access) while WiFi's RTT is under 30 ms, overflows to 5G when WiFi's delay rises to
// 25 ms each way, and comes back when it falls.
//
//	go test ./test/ueagent -run TestScenarioPriority                        # short: 9 s
//	make scenarios SCENARIO=Priority                                        # 30 s
func TestScenarioPriority(t *testing.T) {
	phase := shortOrFull(3*time.Second, 10*time.Second)
	wifi := linkem.Params{Rate: 100e6, Delay: 5 * time.Millisecond, Queue: 400_000}
	em := newEmulation(linkem.Params{Rate: 100e6, Delay: 10 * time.Millisecond, Queue: 400_000}, wifi)
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	tb.startAgent(u)
	create(t, tb.policy("p", junctionv1.SteeringMode{Mode: junctionv1.ModePriorityBased,
		PriorityBased: &junctionv1.PriorityBased{PriorityAccess: junctionv1.AccessNon3GPP, RTTThreshold: "30ms"}}),
		tb.session("s1", u, sessionAddr, 100, "p"))
	user := userIndex(t, tb.waitReady("s1"))
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	setWiFiDelay := func(d time.Duration) {
		for _, s := range em.Cell {
			p := s.Params()
			p.Delay = d
			s.Set(p)
		}
	}
	// Three phases: WiFi fast, slow (50 ms RTT, above the threshold), fast again; each waits
	// until the UPF's rtt_non3gpp is on the phase's side of the threshold (probes see the new
	// RTT), then the UE's interface counters say where the phase's stream arrived.
	waitRTT := func(over bool) {
		const threshold, settle = 30_000, 30 * time.Second // µs, rtt_threshold_us
		for start := time.Now(); time.Since(start) < settle; time.Sleep(100 * time.Millisecond) {
			rtt, err := tb.register("rtt_non3gpp", user)
			must(t, err)
			if rtt != 0 && (rtt > threshold) == over {
				return
			}
		}
		t.Fatalf("rtt_non3gpp[%d] over 30 ms is not %v after 30 s", user, over)
	}
	var shares [3]float64
	for i, delay := range []time.Duration{5 * time.Millisecond, 25 * time.Millisecond, 5 * time.Millisecond} {
		setWiFiDelay(delay)
		waitRTT(delay > 15*time.Millisecond)
		w0, g0 := rxBytes(t, u.NS, "wlan0"), rxBytes(t, u.NS, "ran0")
		tb.cbr(t, phase/2, phase, func() {})
		w, g := float64(rxBytes(t, u.NS, "wlan0")-w0), float64(rxBytes(t, u.NS, "ran0")-g0)
		shares[i] = w / (w + g)
	}
	fmt.Printf("\nPriority-based, WiFi first up to 30 ms RTT: stream on WiFi %.0f%% (WiFi 10 ms RTT), %.0f%% (50 ms), %.0f%% (10 ms again)\n",
		100*shares[0], 100*shares[1], 100*shares[2])
	if fullScenario {
		writeResultsTable(t, "priority", [][]string{
			{"WiFi RTT", "stream on WiFi"},
			{"10 ms (under the threshold)", pct(shares[0])},
			{"50 ms (over: overflow to 5G)", pct(shares[1])},
			{"10 ms again", pct(shares[2])},
		})
	}
	if shares[0] < 0.9 || shares[1] > 0.1 || shares[2] < 0.9 {
		t.Errorf("share of the stream on WiFi per phase: %.2f", shares)
	}
}

// Beyond the paper: the Rel-17 packet-loss threshold. Active-standby on WiFi with
// packetLossPercent 5; WiFi clean, then losing 20% each way (about 36% of the probes, which cross
// it twice: far enough above the threshold that a 20-probe window seldom reads 5% or less), then
// clean again. The UE agent measures each leg's loss over its last 20 probes and
// reports it in its PROBE_ACKs; the UPF keeps it in loss_<access>[user] and steers the downlink by
// it, the agent the uplink. Each phase waits until the UPF's path state says WiFi meets the
// threshold or not, as the phase wants, then measures the share of a 25 Mbit/s downlink stream
// the UE's WiFi interface received and of a 2 Mbit/s uplink stream it sent on WiFi.
//
//	go test ./test/ueagent -run TestScenarioLossThreshold                   # short: 2 s per phase
//	make scenarios SCENARIO=LossThreshold                                   # 10 s per phase
func TestScenarioLossThreshold(t *testing.T) {
	measure := shortOrFull(2*time.Second, 10*time.Second)
	const (
		threshold = 5    // packetLossPercent
		wifiLoss  = 0.20 // each way
		settle    = 60 * time.Second
	)
	wifi := linkem.Params{Rate: 100e6, Delay: 5 * time.Millisecond, Queue: 400_000}
	em := newEmulation(linkem.Params{Rate: 100e6, Delay: 10 * time.Millisecond, Queue: 400_000}, wifi)
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	tb.startAgent(u)
	pol := tb.policy("p", activeStandby(junctionv1.AccessNon3GPP))
	limit := int32(threshold)
	pol.Spec.Thresholds = &junctionv1.Thresholds{PacketLossPercent: &limit}
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "p"))
	s := tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	user := userIndex(t, s)
	upload := tb.uplinkCBR(t, u, 2e6)
	download := tb.cbrTo(t, u, sessionAddr, cbrRate)

	setWiFiLoss := func(loss float64) {
		for _, sh := range em.Cell {
			p := sh.Params()
			p.Loss = loss
			sh.Set(p)
		}
	}
	// waitOK keeps traffic flowing until the UPF's path state says whether WiFi meets the
	// threshold (available, loss_non3gpp below packetLossPercent + 1: docs/pipeline.md) as
	// wanted, and says how long that took. (A lossy leg may also go down for a while: three
	// probes lost in a row.)
	waitOK := func(want bool) time.Duration {
		start := time.Now()
		for time.Since(start) < settle {
			rtt, err := tb.register("rtt_non3gpp", user)
			must(t, err)
			loss, err := tb.register("loss_non3gpp", user)
			must(t, err)
			if ok := rtt != 0 && loss < threshold+1; ok == want {
				return time.Since(start)
			}
			download(200 * time.Millisecond)
		}
		t.Fatalf("WiFi's path state for user %d: meets the threshold %v after %v, want %v", user, !want, settle, want)
		return 0
	}
	type phase struct {
		name             string
		loss             float64
		settled          time.Duration
		downWiFi, upWiFi float64
	}
	phases := []phase{{name: "clean"}, {name: "20% loss each way", loss: wifiLoss}, {name: "clean again"}}
	for i := range phases {
		p := &phases[i]
		setWiFiLoss(p.loss)
		p.settled = waitOK(p.loss == 0)
		dw0, dg0 := rxBytes(t, u.NS, "wlan0"), rxBytes(t, u.NS, "ran0")
		uw0, ug0 := txBytes(t, u.NS, "wlan0"), txBytes(t, u.NS, "ran0")
		done := make(chan struct{})
		go func() { defer close(done); upload(measure) }()
		download(measure)
		<-done
		dw, dg := float64(rxBytes(t, u.NS, "wlan0")-dw0), float64(rxBytes(t, u.NS, "ran0")-dg0)
		uw, ug := float64(txBytes(t, u.NS, "wlan0")-uw0), float64(txBytes(t, u.NS, "ran0")-ug0)
		p.downWiFi, p.upWiFi = dw/(dw+dg), uw/(uw+ug)
	}
	fmt.Printf("\nActive-standby on WiFi, packetLossPercent %d: share on WiFi per phase\n", threshold)
	fmt.Printf("%-20s %12s %10s %10s\n", "WiFi", "settled in", "downlink", "uplink")
	rows := [][]string{{"WiFi", "settled in", "downlink on WiFi", "uplink on WiFi"}}
	for _, p := range phases {
		fmt.Printf("%-20s %12v %9.0f%% %9.0f%%\n", p.name, p.settled.Round(100*time.Millisecond), 100*p.downWiFi, 100*p.upWiFi)
		rows = append(rows, []string{p.name, fmt.Sprintf("%.1f s", p.settled.Round(100*time.Millisecond).Seconds()), pct(p.downWiFi), pct(p.upWiFi)})
	}
	if fullScenario {
		writeResultsTable(t, "loss-threshold", rows)
	}
	for i, want := range []bool{true, false, true} {
		p := phases[i]
		if on := p.downWiFi > 0.9 && p.upWiFi > 0.9; want && !on {
			t.Errorf("WiFi %s: %.0f%% of the downlink and %.0f%% of the uplink on WiFi, want it all", p.name, 100*p.downWiFi, 100*p.upWiFi)
		}
		if off := p.downWiFi < 0.1 && p.upWiFi < 0.1; !want && !off {
			t.Errorf("WiFi %s: %.0f%% of the downlink and %.0f%% of the uplink on WiFi, want none", p.name, 100*p.downWiFi, 100*p.upWiFi)
		}
	}
}

// The paper's Table IV (uplink reordering): the UE alternates its uplink between 5G (2-5 ms
// RTT) and WiFi (7-15 ms) every 2,000 packets while uploading 7 MB over TCP; the UPF's reorder
// engine (EX-PATH / CURRENT_PATH marks) on, then off (the agent sends no marks). TCP
// retransmissions per upload, average and 99th percentile.
//
//	go test ./test/ueagent -run TestScenarioReorder                         # short: 5 uploads each
//	make scenarios SCENARIO=Reorder                                         # 30 uploads each
func TestScenarioReorder(t *testing.T) {
	reps := shortOrFull(5, 30)
	// One way: 5G 1-2.5 ms, WiFi 3.5-7.5 ms (jitter keeps order).
	em := newEmulation(linkem.Params{Rate: 100e6, Delay: 1750 * time.Microsecond, Jitter: 750 * time.Microsecond, Queue: 400_000},
		linkem.Params{Rate: 100e6, Delay: 5500 * time.Microsecond, Jitter: 2 * time.Millisecond, Queue: 400_000})
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	create(t, tb.policy("p", activeStandby(junctionv1.AccessNon3GPP)), tb.session("s1", u, sessionAddr, 100, "p"))
	type row struct {
		name             string
		avg, p99, median float64
		retransmits      []int
	}
	var rows []row
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"reorder on", []string{"--experiment-switch-every", "2000"}},
		{"reorder off", []string{"--experiment-switch-every", "2000", "--experiment-no-reorder-marks"}},
	} {
		if u.agent != nil {
			u.agent.stop(os.Interrupt)
		}
		tb.startAgent(u, mode.flags...)
		eventually(t, readyTimeout, "both legs up under "+mode.name, func() error {
			s, err := getSession("s1", tb.ns)
			if err != nil {
				return err
			}
			for _, a := range []junctionv1.Access{junctionv1.Access3GPP, junctionv1.AccessNon3GPP} {
				if l := leg(s, a); l == nil || l.State != junctionv1.LegUp || l.LastProbe == nil || time.Since(l.LastProbe.Time) > 3*time.Second {
					return fmt.Errorf("status.agent %+v", s.Status.Agent)
				}
			}
			return nil
		})
		r := row{name: mode.name}
		for i := 0; i < reps; i++ {
			// A 256 KB window stays below the bottleneck's BDP plus its 400 KB queue.
			res := iperf(t, tb.DN, u.NS, dnHost.String(), "-n", "7M", "-w", "256K", "-B", sessionAddr)
			r.retransmits = append(r.retransmits, res.End.SumSent.Retransmits)
		}
		sorted := append([]int(nil), r.retransmits...)
		sort.Ints(sorted)
		for _, n := range sorted {
			r.avg += float64(n) / float64(len(sorted))
		}
		r.p99 = float64(sorted[(len(sorted)*99-1)/100])
		r.median = float64(sorted[len(sorted)/2])
		rows = append(rows, r)
		t.Logf("%s: retransmissions %v", mode.name, r.retransmits)
	}
	// Retransmissions here must come from reordering alone: the window (-w) keeps the flow within
	// the bottleneck queues, which must have dropped nothing.
	for _, s := range []*linkem.Shaper{u.RadioShapers[0], em.Cell[0]} {
		if d := s.Stats().QueueDrops; d != 0 {
			t.Errorf("the uplink bottleneck dropped %d frames: the experiment measures congestion, not reordering", d)
		}
	}
	fmt.Printf("\nTable IV uplink reordering (7 MB TCP upload, legs alternating every 2,000 packets, %d uploads)\n%-12s %10s %10s\n", reps, "", "average", "99th pct")
	for _, r := range rows {
		fmt.Printf("%-12s %10.1f %10.1f\n", r.name, r.avg, r.p99)
	}
	on, off := rows[0], rows[1]
	if fullScenario {
		cell := func(r row) []string { return []string{fmt.Sprintf("%.1f", r.avg), fmt.Sprintf("%.0f", r.p99)} }
		writeResultsTable(t, "reorder", [][]string{
			{"TCP retransmissions per upload", "average", "99th percentile"},
			{"paper, without / with the engine", "186.8 / 1.2", "219.0 / 3.0"},
			append([]string{"here, reorder off"}, cell(off)...),
			append([]string{"here, reorder on"}, cell(on)...),
		})
	}
	if on.avg == 0 {
		fmt.Printf("reduction: none retransmitted with the engine (targets: <= 1.2 on average with reorder on, >= 100x fewer than off)\n")
	} else {
		fmt.Printf("reduction: %.1fx (targets: <= 1.2 on average with reorder on, >= 100x fewer than off)\n", off.avg/on.avg)
	}
	// Behaviour: the engine removes most retransmissions. Medians: single uploads vary widely
	// either way (a switch may land where TCP has little in flight).
	if on.median >= off.median {
		t.Errorf("retransmissions per upload, median: %.0f with the reorder engine, %.0f without; want fewer with it", on.median, off.median)
	}
}
