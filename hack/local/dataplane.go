package main

// The data path of `make run`, as root: test/topology's network (namespaces jx-*, wired as
// config/samples says) with emulated 5G and WiFi links, one UE node per sample node, the gNB
// emulator, a W-AGF for the nodes whose non-3GPP legs run over N3 (carol's fixed line), one UE
// agent per node, application traffic through the sessions, a live view every second, and a
// scripted story: WiFi lost at ue-node-a, WiFi back, ue-node-b and ue-node-c arriving.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/test/topology"
)

// The story, from the moment traffic starts.
const (
	wifiLostAt   = 20 * time.Second
	wifiBackAt   = 40 * time.Second
	secondUEAt   = 50 * time.Second
	n4ModifyAt   = 65 * time.Second
	storyEnd     = 80 * time.Second
	readyWait    = 90 * time.Second
	firstUENode  = "ue-node-a"
	secondUENode = "ue-node-b"
	lineUENode   = "ue-node-c" // carol's 5G-RG: 5G and a fixed line through the W-AGF
)

// emulation: a 5G cell farther away than the WiFi access point, both 60 Mbit/s each way.
var emulation = topology.Emulation{
	Radio: linkem.Params{Rate: 60e6, Delay: 12 * time.Millisecond, Jitter: 2 * time.Millisecond, Queue: 300_000},
	WiFi:  linkem.Params{Rate: 60e6, Delay: 4 * time.Millisecond, Jitter: time.Millisecond, Queue: 300_000},
}

// app is a traffic source in the data network and the session it reaches: an iperf3 server on
// a server address of config/samples/policies.yaml, and a client on the UE pulling from it.
type app struct {
	name, node, session string // session: the one whose address the client binds ("": the N4 session)
	server              netip.Addr
	port                int
	args                []string // the client's traffic flags
	started             bool
}

// apps: alice's default (ActiveStandby on WiFi) and video (LoadBalance, 30% 5G) traffic, and
// bob's game (SmallestDelay), the servers inside the samples' traffic descriptors.
var apps = []*app{
	{name: "web (default-internet)", node: firstUENode, session: "alice-internet", server: topology.DNHost, port: 5201, args: []string{"-u", "-b", "15M"}},
	{name: "video (video-streaming)", node: firstUENode, session: "alice-internet", server: netip.MustParseAddr("198.18.10.10"), port: 443, args: []string{"-b", "25M"}},
	{name: "game (cloud-gaming)", node: secondUENode, session: "bob-internet", server: netip.MustParseAddr("198.18.20.10"), port: 3074, args: []string{"-u", "-b", "8M"}},
	{name: "stream (the SMF's MAR 2)", node: secondUENode, server: netip.MustParseAddr("198.18.30.10"), port: 5301, args: []string{"-u", "-b", "10M"}},
	{name: "branch (5G + fixed line, 50/50)", node: lineUENode, session: "carol-branch", server: topology.DNHost, port: 5202, args: []string{"-u", "-b", "20M"}},
}

type dataplane struct {
	smf     *exec.Cmd // the SMF emulator: SIGUSR1 sends its Session Modification
	topo    *topology.Topology
	work    string
	procs   []proc
	metrics map[string]string // node → the agent's /metrics URL
	lines   []*topology.UE    // UEs whose non-3GPP legs are over N3 through the W-AGF
}

// proc is a process the data path started; done closes when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// newDataplane builds the network without UEs (the samples say which nodes there are).
func newDataplane() (*dataplane, error) {
	em := emulation
	topo, err := topology.New(topology.Config{Name: topology.FixedNames("jx-"), Emulation: &em})
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		if a.server != topology.DNHost {
			if err := topo.DN.AddAddress("dn0", netip.PrefixFrom(a.server, 24)); err != nil {
				topo.Close()
				return nil, err
			}
		}
	}
	return &dataplane{topo: topo, metrics: map[string]string{}}, nil
}

// close stops the processes and removes the namespaces.
func (dp *dataplane) close() {
	dp.stop()
	dp.topo.Close()
}

// stop stops the processes (SIGTERM, SIGKILL after 5 s): before the API server, whose graceful
// shutdown waits for its watchers.
func (dp *dataplane) stop() {
	for i := len(dp.procs) - 1; i >= 0; i-- {
		p := dp.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	dp.procs = nil
}

// start runs a built binary or a tool, its output in bin/local/<log>.log, until close.
func (dp *dataplane) start(log string, cmd *exec.Cmd) error {
	f, err := os.Create(filepath.Join(dp.work, log+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", log, err)
	}
	p := proc{cmd: cmd, done: make(chan struct{})}
	dp.procs = append(dp.procs, p)
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return nil
}

// show adds the samples' UE nodes, starts the gNB emulator, the first node's agent and its
// traffic, and runs the story with the live view; then, unless once, the view until ctx ends.
func (dp *dataplane) show(ctx context.Context, k8s client.Client, work, kubeconfig string, once bool) error {
	dp.work = work
	step("adding the samples' UE nodes (emulated links: 5G 60 Mbit/s, 12±2 ms; WiFi 60 Mbit/s, 4±1 ms; one way)")
	if err := dp.addUEs(ctx, k8s); err != nil {
		return err
	}
	gnb := exec.Command(filepath.Join(work, "gnb-emulator"), append([]string{"--kubeconfig", kubeconfig, "--metrics-addr", "0"}, dp.topo.GNBArgs()...)...)
	if err := dp.start("gnb-emulator", gnb); err != nil {
		return err
	}
	if len(dp.lines) > 0 {
		wagf := exec.Command(filepath.Join(work, "gnb-emulator"), append([]string{"--kubeconfig", kubeconfig, "--metrics-addr", "0"}, dp.topo.WAGFArgs(dp.lines...)...)...)
		if err := dp.start("w-agf", wagf); err != nil {
			return err
		}
	}
	for _, a := range apps {
		srv := dp.topo.DN.Command("iperf3", "--server", "--bind", a.server.String(), "--port", fmt.Sprint(a.port))
		if err := dp.start(fmt.Sprintf("iperf3-server-%d", a.port), srv); err != nil {
			return fmt.Errorf("%w (hack/tools.sh dataplane installs iperf3)", err)
		}
	}
	if err := dp.startAgent(firstUENode, kubeconfig); err != nil {
		return err
	}
	step("waiting for " + firstUENode + "'s sessions: AgentReady, both legs Up")
	if err := waitAgentReady(ctx, k8s, firstUENode); err != nil {
		return err
	}

	step(fmt.Sprintf("traffic starts; the story: WiFi lost at %s at %v, back at %v, %s arrives at %v, the SMF modifies its N4 session at %v",
		firstUENode, wifiLostAt, wifiBackAt, secondUENode, secondUEAt, n4ModifyAt))
	v := &view{k8s: k8s, dp: dp, prev: map[string]float64{}, legUp: map[string]bool{}, suspended: map[string]bool{}}
	start := time.Now()
	events := []struct {
		at   time.Duration
		what string
		do   func() error
	}{
		{wifiLostAt, "WiFi lost at " + firstUENode + " (carrier down): traffic moves to 5G", func() error { return dp.wifi(firstUENode, false) }},
		{wifiBackAt, "WiFi back at " + firstUENode, func() error { return dp.wifi(firstUENode, true) }},
		{secondUEAt, secondUENode + " arrives: its agent starts", func() error { return dp.startAgent(secondUENode, kubeconfig) }},
		{secondUEAt, lineUENode + " (a branch office's 5G-RG) arrives: 5G, and a fixed line through the W-AGF, over N3", func() error { return dp.startAgent(lineUENode, kubeconfig) }},
		{n4ModifyAt, "the SMF modifies bob's N4 session over N4: MAR 2 (the stream) from load-balance 50/50 to active-standby on 5G",
			func() error { return dp.smf.Process.Signal(syscall.SIGUSR1) }},
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	hinted := false
	for {
		el := time.Since(start)
		for len(events) > 0 && el >= events[0].at {
			v.event(el, events[0].what)
			if err := events[0].do(); err != nil {
				return err
			}
			events = events[1:]
		}
		dp.startApps(ctx, k8s, v, el)
		v.print(ctx, el)
		if el >= storyEnd && !hinted {
			hints(kubeconfig)
			hinted = true
			if once {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// addUEs adds a UE node per node name in the sessions, with the leg addresses of the sessions
// this testbed can carry (3GPP legs through its gNB; every non-3GPP leg, behind the gateway,
// over N3 through the gateway's W-AGF when the leg names it).
func (dp *dataplane) addUEs(ctx context.Context, k8s client.Client) error {
	var list junctionv1.ATSSSSessionList
	if err := k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
		return err
	}
	specs, overN3 := map[string]*topology.UESpec{}, map[string]bool{}
	for _, s := range list.Items {
		node := s.Spec.UE.NodeName
		if node == "" {
			fmt.Printf("   %s: no spec.ue.nodeName, no agent serves it\n", s.Name)
			continue
		}
		if specs[node] == nil {
			specs[node] = &topology.UESpec{Node: node}
		}
		u := specs[node]
		if l := s.Spec.AccessLegs.ThreeGPP; l != nil {
			if a := netip.MustParseAddr(string(l.UEAddress)); string(l.GNBAddress) == topology.GNBN3.String() {
				if !slices.Contains(u.Addr3GPP, a) {
					u.Addr3GPP = append(u.Addr3GPP, a)
				}
			} else {
				fmt.Printf("   %s: its gNB %s is not emulated here, its 3GPP leg has no address on %s\n", s.Name, l.GNBAddress, node)
			}
		}
		if l := s.Spec.AccessLegs.NonThreeGPP; l != nil {
			if a := netip.MustParseAddr(string(l.UEAddress)); !slices.Contains(u.AddrWiFi, a) {
				u.AddrWiFi = append(u.AddrWiFi, a)
			}
			// The W-AGF takes every packet on the node's line: all of its legs go through it.
			if l.OverN3() && string(l.GatewayAddress) == topology.WAGFN3.String() {
				overN3[node] = true
			}
		}
	}
	nodes := make([]string, 0, len(specs))
	for n := range specs {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		u, err := dp.topo.AddUE(*specs[n])
		if err != nil {
			return err
		}
		line := "WiFi"
		if overN3[n] {
			dp.lines = append(dp.lines, u)
			line = "fixed line through the W-AGF " + topology.WAGFN3.String() + ", over N3"
		}
		fmt.Printf("   node %s: namespace jx-%s, 3GPP %v, %s %v\n", n, n, specs[n].Addr3GPP, line, specs[n].AddrWiFi)
	}
	return nil
}

func (dp *dataplane) ue(node string) *topology.UE {
	for _, u := range dp.topo.UEs {
		if u.Node == node {
			return u
		}
	}
	return nil
}

func (dp *dataplane) startAgent(node, kubeconfig string) error {
	u := dp.ue(node)
	if u == nil {
		return fmt.Errorf("no sample session runs on node %s", node)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	dp.metrics[node] = "http://" + addr + "/metrics"
	// Plain HTTP on loopback: the run's own display reads it, with no token to show.
	agent := exec.Command(filepath.Join(dp.work, "ue-agent"), "--kubeconfig", kubeconfig, "--node-name", node,
		"--netns", u.NS.Name, "--metrics-addr", addr, "--metrics-secure=false", "--health-addr", "0", "--status-interval", "2s")
	return dp.start("ue-agent-"+node, agent)
}

// wifi takes the node's WiFi carrier down or brings it back with its routes.
func (dp *dataplane) wifi(node string, up bool) error {
	u := dp.ue(node)
	if err := u.WiFi.SetCarrier(up); err != nil || !up {
		return err
	}
	return u.Routes()
}

// startApps starts the traffic of every session that has just become AgentReady.
func (dp *dataplane) startApps(ctx context.Context, k8s client.Client, v *view, el time.Duration) {
	for _, a := range apps {
		if a.started || dp.metrics[a.node] == "" {
			continue
		}
		if a.session == "" {
			var n4 junctionv1.ATSSSSessionList
			if err := k8s.List(ctx, &n4, client.InNamespace("default"), client.HasLabels{"atsss.junction.dev/n4-upf"}); err != nil || len(n4.Items) == 0 {
				continue
			}
			a.session = n4.Items[0].Name
		}
		s := &junctionv1.ATSSSSession{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: a.session}, s); err != nil ||
			!apimeta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionAgentReady) {
			continue
		}
		// -R: the server sends, as a download does; bound to the session address, so the
		// agent's routing rule takes it into the session's TUN.
		args := append([]string{"--client", a.server.String(), "--port", fmt.Sprint(a.port), "--bind", string(s.Spec.SessionAddress),
			"--reverse", "--time", "86400", "--interval", "10"}, a.args...)
		if err := dp.start("iperf3-"+a.session+fmt.Sprint(a.port), dp.ue(a.node).NS.Command("iperf3", args...)); err != nil {
			v.event(el, fmt.Sprintf("%s could not start: %v", a.name, err))
			continue
		}
		a.started = true
		v.event(el, fmt.Sprintf("%s: %s starts (%s from %s:%d)", a.session, a.name, strings.Join(a.args, " "), a.server, a.port))
	}
}

// view prints one line per session with traffic each second: throughput per access and direction (the
// agents' leg counters), the UPF's and the UE's RTT per access, the mode, and the access that
// carries the traffic; leg changes and story events print as events.
type view struct {
	k8s   client.Client
	dp    *dataplane
	prev  map[string]float64 // counter → value at the last tick
	last  time.Time
	legUp map[string]bool
	// suspended: the operator pinned the session's path state (flip-flop damping, §V-E).
	suspended map[string]bool
	lines     int
}

func (v *view) event(el time.Duration, what string) {
	fmt.Printf("%5.0fs  ** %s\n", el.Seconds(), what)
	v.lines = 0 // the header again after an event
}

func (v *view) print(ctx context.Context, el time.Duration) {
	now := time.Now()
	dt := now.Sub(v.last).Seconds()
	v.last = now
	var list junctionv1.ATSSSSessionList
	if err := v.k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
		return
	}
	series := map[string]float64{}
	for _, url := range v.dp.metrics {
		scrape(url, series)
	}
	if v.lines%20 == 0 {
		fmt.Printf("%6s  %-15s %-10s %-15s %-15s %-15s %-15s %-5s %s\n", "t", "SESSION", "NODE",
			"5G Mbit/s ↓/↑", "WiFi/line ↓/↑", "5G RTT UPF/UE", "WiFi/line RTT", "ON", "MODES")
	}
	for _, s := range list.Items {
		node := s.Spec.UE.NodeName
		if v.dp.metrics[node] == "" || !hasApp(s.Name) {
			continue
		}
		key := string(s.Spec.SessionAddress) // the agent labels series with the session address
		rate := func(access, dir string) float64 {
			k := fmt.Sprintf("%s|bytes|%s|%s", key, access, dir)
			cur, ok := series[k]
			old, had := v.prev[k]
			v.prev[k] = cur
			if !ok || !had || dt <= 0 || cur < old {
				return 0
			}
			return (cur - old) * 8 / dt / 1e6
		}
		if was, now := v.suspended[s.Name], s.Status.PathUpdatesSuspended; was != now {
			what := "the operator suspended its path updates: the paths flip-flopped, the UPF's path state is pinned until they settle"
			if !now {
				what = "the operator resumed its path updates"
			}
			fmt.Printf("%5.0fs  ** %s: %s\n", el.Seconds(), s.Name, what)
			v.suspended[s.Name] = now
		}
		d5, u5 := rate(contract.Access3GPP.String(), "rx"), rate(contract.Access3GPP.String(), "tx")
		dw, uw := rate(contract.AccessNon3GPP.String(), "rx"), rate(contract.AccessNon3GPP.String(), "tx")
		for _, a := range []contract.Access{contract.Access3GPP, contract.AccessNon3GPP} {
			access := a.String()
			k := key + "|up|" + access
			if up, ok := series[k]; ok {
				if was, seen := v.legUp[k]; seen && was != (up == 1) {
					state := map[bool]string{true: "up", false: "DOWN"}[up == 1]
					fmt.Printf("%5.0fs  ** %s: %s leg %s (agent)\n", el.Seconds(), s.Name, access, state)
				}
				v.legUp[k] = up == 1
			}
		}
		fmt.Printf("%5.0fs  %-15s %-10s %6.1f/%-8.1f %6.1f/%-8.1f %-15s %-15s %-5s %s\n", el.Seconds(), s.Name, node,
			d5, u5, dw, uw, rtts(s, series, key, contract.Access3GPP), rtts(s, series, key, contract.AccessNon3GPP), on(d5+u5, dw+uw), s.Status.Steering)
		v.lines++
	}
}

// hasApp says whether traffic runs in the session: the view shows those.
func hasApp(session string) bool {
	for _, a := range apps {
		if a.session == session {
			return true
		}
	}
	return false
}

// rtts is "UPF/UE": the operator's path status and the agent's last probe ("-": not measured).
func rtts(s junctionv1.ATSSSSession, series map[string]float64, key string, access contract.Access) string {
	upf := "-"
	p := s.Status.Paths.ThreeGPP
	if access == contract.AccessNon3GPP {
		p = s.Status.Paths.NonThreeGPP
	}
	switch {
	case p != nil && p.Available && p.RTT != "":
		upf = short(string(p.RTT))
	case p != nil && !p.Available:
		upf = "down"
	}
	ue := "-"
	if r, ok := series[key+"|rtt|"+access.String()]; ok {
		ue = "down"
		if series[key+"|up|"+access.String()] == 1 {
			ue = short(time.Duration(r * float64(time.Second)).String())
		}
	}
	return upf + "/" + ue
}

// short rounds a duration string to what fits a column.
func short(d string) string {
	v, err := time.ParseDuration(d)
	if err != nil {
		return d
	}
	switch {
	case v >= 10*time.Millisecond:
		return v.Round(time.Millisecond).String()
	case v >= time.Millisecond:
		return v.Round(100 * time.Microsecond).String()
	default:
		return v.Round(time.Microsecond).String()
	}
}

// on names the access that carries the session's traffic (both: each above 10%).
func on(fiveG, wifi float64) string {
	total := fiveG + wifi
	switch {
	case total < 0.05:
		return "-"
	case fiveG > 0.9*total:
		return "5G"
	case wifi > 0.9*total:
		return "WiFi"
	default:
		return "both"
	}
}

// scrape reads an agent's leg counters into series, keyed "session|bytes|access|direction",
// "session|up|access" and "session|rtt|access".
func scrape(url string, series map[string]float64) {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for name, kind := range map[string]string{"junction_ue_leg_bytes_total": "bytes", "junction_ue_leg_up": "up", "junction_ue_leg_rtt_seconds": "rtt"} {
		for _, m := range families[name].GetMetric() {
			k := label(m, "session") + "|" + kind + "|" + label(m, "access")
			if kind == "bytes" {
				k += "|" + label(m, "direction")
			}
			series[k] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
}

func hints(kubeconfig string) {
	fmt.Printf(`
The story is over; the traffic and the view go on until Ctrl-C (which removes the namespaces). Try:
   KUBECONFIG=%[1]s bin/kubectl get mas -o wide            # both sides' RTTs, the active access
   KUBECONFIG=%[1]s bin/kubectl edit steeringpolicy default-internet   # e.g. active: 3GPP
   ip netns exec jx-%[2]s ping -I 10.60.0.1 %[3]s
Logs: bin/local/*.log

`, kubeconfig, firstUENode, topology.DNHost)
}

// waitAgentReady waits until every session of node is AgentReady with all its legs Up (legs
// without an address on the node excepted).
func waitAgentReady(ctx context.Context, k8s client.Client, node string) error {
	deadline := time.Now().Add(readyWait)
	for {
		var list junctionv1.ATSSSSessionList
		if err := k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
			return err
		}
		waiting := ""
		for _, s := range list.Items {
			if s.Spec.UE.NodeName != node {
				continue
			}
			if !apimeta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionAgentReady) || s.Status.Agent == nil {
				waiting = s.Name + ": not AgentReady"
				continue
			}
			for _, l := range s.Status.Agent.Legs {
				if l.State != junctionv1.LegUp && l.State != junctionv1.LegNoAddress {
					waiting = fmt.Sprintf("%s: leg %s %s %s", s.Name, l.Access, l.State, l.Reason)
				}
			}
		}
		if waiting == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s after %s (see bin/local/ue-agent-%s.log)", waiting, readyWait, node)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
