//go:build linux

package ueagent

// Wireline hybrid access (issue 26): a 5G-RG bonds a fixed line, which ends at a W-AGF and
// reaches the UPF over N3, with 5G. Fixed line 50 Mbit/s and 8 ms each way, 5G 100 Mbit/s and
// 15 ms each way. One TCP download with each link alone, under load balancing (5G's share the
// links' ratio, 67%) and under autonomous balancing; a 25 Mbit/s stream on the line
// (active-standby) while the line is lost, with its carrier and silently; and, in the same run,
// Linux MPTCP over links emulated alike, as hybrid-access products bond them today.
//
//	go test ./test/ueagent -run TestScenarioHybridAccess      # short: 4 s per download and stream
//	make scenarios SCENARIO=HybridAccess                      # 20 s each, the line lost at 10 s;
//	                 # writes docs/results/hybrid-access.{csv,png} and the table in docs/results.md
//
// make test runs the short version with generous bounds; the targets (aggregate >= 97% of what
// the links carry alone, summed; outage <= 100 ms on carrier loss and no worse than MPTCP's)
// are printed, not asserted.

import (
	"fmt"
	"testing"
	"time"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/test/topology"
)

// Hybrid access's download modes.
const (
	hybridLine       = "fixed line alone"
	hybrid5G         = "5G alone"
	hybridBalance    = "load balance 33/67"
	hybridAutonomous = "autonomous balance"
	hybridMPTCP      = "MPTCP"
)

func TestScenarioHybridAccess(t *testing.T) {
	secs := shortOrFull("4", "20")
	d, failAt := shortOrFull(4*time.Second, 20*time.Second), shortOrFull(2*time.Second, 10*time.Second)
	line := linkem.Params{Rate: 50e6, Delay: 8 * time.Millisecond, Queue: 200_000}
	ran := linkem.Params{Rate: 100e6, Delay: 15 * time.Millisecond, Queue: 400_000}
	em := newEmulation(ran, line)
	tb := newEmulatedTestbed(t, 1, em)
	u := tb.ues[0]
	start(t, "gnb-emulator", append([]string{"--kubeconfig", kubeconfig, "--namespace", tb.ns, "--metrics-addr", "0"}, tb.WAGFArgs(u.UE)...)...)
	tb.startAgent(u)
	share5G := int32(67)
	modes := []struct {
		name string
		mode junctionv1.SteeringMode
	}{
		{hybridLine, activeStandby(junctionv1.AccessNon3GPP)},
		{hybrid5G, activeStandby(junctionv1.Access3GPP)},
		{hybridBalance, junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: &share5G}}},
		{hybridAutonomous, junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}},
	}
	pol := tb.policy("p", modes[0].mode)
	create(t, pol, tb.overN3(tb.session("rg", u, sessionAddr, 100, "p")))
	tb.waitReady("rg")
	tb.legState("rg", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("rg", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	got, retrans := map[string]float64{}, map[string]int{}
	var stolen []float64 // the share of the CPU time the hypervisor took from each download
	for _, m := range modes {
		setSteering(t, pol, m.mode)
		stolen = append(stolen, testenv.MeasureQuietly(t, m.name, func() {
			r := iperf(t, u.NS, tb.DN, sessionAddr, "-t", secs)
			got[m.name], retrans[m.name] = r.End.SumReceived.BitsPerSecond/1e6, r.End.SumSent.Retransmits
			t.Logf("%s: %.1f Mbit/s, %d retransmissions", m.name, got[m.name], retrans[m.name])
		}))
	}
	mp := newMPTCP(t, em, false)
	r := iperfMPTCP(t, mp.Server, mp.Client, mp.ServerAddr.String(), "-t", secs, "-R")
	got[hybridMPTCP], retrans[hybridMPTCP] = r.End.SumReceived.BitsPerSecond/1e6, r.End.SumSent.Retransmits
	t.Logf("MPTCP: %.1f Mbit/s, %d retransmissions", got[hybridMPTCP], retrans[hybridMPTCP])

	// The line lost under a 25 Mbit/s stream on it (active-standby on the line).
	setSteering(t, pol, modes[0].mode)
	results := tb.non3GPPLost(t, em, "rg", d, failAt)
	// MPTCP gives a silent subflow up in seconds: its handover runs in the full scenario only.
	if fullScenario {
		results = append(results, mptcpNon3GPPLost(t, em, d, failAt)...)
	}

	alone := got[hybridLine] + got[hybrid5G]
	fmt.Printf("\nHybrid access (TCP download, fixed line 50 Mbit/s over N3 through a W-AGF, 5G 100 Mbit/s, %s s)\n", secs)
	for _, n := range []string{hybridLine, hybrid5G, hybridBalance, hybridAutonomous, hybridMPTCP} {
		fmt.Printf("%-20s %8.1f Mbit/s %6.0f%% of the links alone, summed (target >= 97%%) %7d retransmissions\n", n, got[n], 100*got[n]/alone, retrans[n])
	}
	for _, h := range results {
		fmt.Printf("line lost, %-14s outage %v, %.1f Mbit/s on 5G after\n", h.name, h.outage.Round(time.Millisecond), h.after)
	}
	if fullScenario {
		writeHandover(t, d, results, "hybrid-access", "Hybrid access: the fixed line lost, traffic moves to 5G (25 Mbit/s)", map[string]string{
			"carrier": "Junction, line's carrier lost", "silent": "Junction, line lost silently",
			"MPTCP carrier": "MPTCP, line's carrier lost", "MPTCP silent": "MPTCP, line lost silently"})
		writeHybridTable(t, got, retrans, results)
	}
	// Generous bounds, the behaviour: each link carries most of its rate alone, both balancing
	// modes more than the faster link alone (autonomous balancing starts from the rates the links
	// carried alone: 128.5 Mbit/s in a 4 s run where 5G alone carried 88.6; before, with the UPF
	// stepping the share a probe at a time, less than 5G alone; docs/results.md).
	// They are judged on downloads the hypervisor left the CPU (testenv.Judged).
	if got[hybridLine] < 0.6*line.Rate/1e6 || got[hybrid5G] < 0.6*ran.Rate/1e6 ||
		got[hybridBalance] < 1.1*got[hybrid5G] || got[hybridAutonomous] < 1.1*got[hybrid5G] {
		testenv.MissedBound(t, fmt.Sprintf("hybrid access downloads: %v", got), stolen...)
	}
}

// overN3 puts the session's non-3GPP leg on the UE's fixed line through the topology's W-AGF.
func (tb *testbed) overN3(s *junctionv1.ATSSSSession) *junctionv1.ATSSSSession {
	l := s.Spec.AccessLegs.NonThreeGPP
	l.Type, l.GatewayAddress = junctionv1.NonThreeGPPWireline, junctionv1.IPv4Address(topology.WAGFN3.String())
	l.UplinkTEID, l.DownlinkTEID = 0x3001, 0x3002
	return s
}

// setDown takes the shapers' links down (silently: the carrier stays) or back.
func setDown(shapers []*linkem.Shaper, down bool) {
	for _, s := range shapers {
		p := s.Params()
		p.Down = down
		s.Set(p)
	}
}

// writeHybridTable writes the hybrid-access table: the downloads, then the line lost
// (Junction's carrier and silent runs, then MPTCP's).
func writeHybridTable(t *testing.T, got map[string]float64, retrans map[string]int, ho []handoverResult) {
	alone := got[hybridLine] + got[hybrid5G]
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Round(10*time.Millisecond).Milliseconds()) }
	rows := [][]string{{"run", "Mbit/s", "of the two single-link results, summed", "TCP retransmissions", "outage", "target (issue)"}}
	for _, n := range []string{hybridLine, hybrid5G} {
		rows = append(rows, []string{"download, " + n, mbps(got[n]), "", fmt.Sprint(retrans[n]), "", ""})
	}
	for _, n := range []string{hybridBalance, hybridAutonomous} {
		rows = append(rows, []string{"download, " + n, mbps(got[n]), pct(got[n] / alone), fmt.Sprint(retrans[n]), "", "≥ 97%: " + metOrNot(got[n] >= 0.97*alone)})
	}
	rows = append(rows, []string{"download, MPTCP (same links, one subflow each)", mbps(got[hybridMPTCP]), pct(got[hybridMPTCP] / alone), fmt.Sprint(retrans[hybridMPTCP]), "", "baseline"})
	for i, how := range []string{"carrier", "silently"} {
		j, m := ho[i], ho[i+2]
		target := fmt.Sprintf("≤ MPTCP's: %s", metOrNot(j.outage <= m.outage))
		if i == 0 {
			target = fmt.Sprintf("≤ 100 ms and ≤ MPTCP's: %s", metOrNot(j.outage <= j.target && j.outage <= m.outage))
		}
		rows = append(rows, []string{"the line lost (" + how + "), Junction", mbps(j.after) + " after, on 5G", "", "", ms(j.outage), target})
	}
	for i, how := range []string{"carrier", "silently"} {
		m := ho[i+2]
		rows = append(rows, []string{"the line lost (" + how + "), MPTCP", mbps(m.after) + " after, on 5G", "", "", ms(m.outage), "baseline"})
	}
	writeResultsTable(t, "hybrid-access", rows)
}
