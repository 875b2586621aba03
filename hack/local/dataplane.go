package main

// The data path of `make run`, as root: the sample node ue-node-a, a gNB, the software UPF's
// ports and a data network as network namespaces, wired as config/samples/upf.yaml and
// sessions.yaml describe them, with the gNB emulator and the UE agent serving them:
//
//	jx-ue-node-a                 jx-gnb                    jx-upf (softupf ports)   jx-dn
//	 TUN jx0a3c0001 ─ agent ─ ran0 ══ ran0 ─ gnb-emulator ─ n3g ══ u-n3   port 1 ┐
//	 TUN jx0a3c0101 ┘        wlan0 ═════════════════════════════ u-wifi port 2 ├ UPF
//	                                                             u-n6   port 3 ┘ ══ dn0 198.18.0.10
//
// The MACs are the sample UPF's: its ports 02:00:00:00:01:0{1,2,3}, its next hops
// 02:00:00:00:02:0{1,2,3}.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/test/netns"
)

const (
	ueNode                   = "ue-node-a"
	dnHost                   = "198.18.0.10"
	upfJunct                 = "192.0.2.2"
	readyWait                = 90 * time.Second
	nsUE, nsGNB, nsUPF, nsDN = "jx-" + ueNode, "jx-gnb", "jx-upf", "jx-dn"
)

type dataplane struct {
	ue, gnb, upf, dn *netns.Namespace
}

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// newDataplane builds the namespaces, replacing what a crashed run left.
func newDataplane() (*dataplane, error) {
	for _, n := range []string{nsUE, nsGNB, nsUPF, nsDN} {
		_ = exec.Command("ip", "netns", "del", n).Run()
	}
	dp := &dataplane{}
	var err error
	for _, x := range []struct {
		ns   **netns.Namespace
		name string
	}{{&dp.ue, nsUE}, {&dp.gnb, nsGNB}, {&dp.upf, nsUPF}, {&dp.dn, nsDN}} {
		if *x.ns, err = netns.New(x.name); err != nil {
			dp.close()
			return nil, err
		}
	}
	if err := dp.wire(); err != nil {
		dp.close()
		return nil, err
	}
	return dp, nil
}

func (dp *dataplane) wire() error {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	steps := []func() error{
		// gNB ══ N3 ══ UPF port 1
		func() error {
			return netns.AddVeth(netns.Link{Name: "n3g", NS: dp.gnb, MAC: mac("02:00:00:00:02:01")}, netns.Link{Name: "u-n3", NS: dp.upf, MAC: mac("02:00:00:00:01:01")})
		},
		func() error { return dp.gnb.AddAddress("n3g", p("198.51.100.10/24")) },
		func() error { return dp.gnb.AddRoute(p("192.0.2.1/32"), netip.Addr{}, "n3g") },
		func() error { return dp.gnb.AddNeighbor("n3g", a("192.0.2.1"), mac("02:00:00:00:01:01")) },
		// UE ══ radio ══ gNB: both of alice's sessions' 3GPP addresses.
		func() error {
			return netns.AddVeth(netns.Link{Name: "ran0", NS: dp.ue}, netns.Link{Name: "ran0", NS: dp.gnb})
		},
		func() error { return dp.ue.AddAddress("ran0", p("10.45.0.1/24")) },
		func() error { return dp.ue.AddAddress("ran0", p("10.45.0.5/24")) },
		func() error { return dp.gnb.AddAddress("ran0", p("10.45.0.254/24")) },
		// UE ══ WiFi ══ UPF port 2 (the access point is a wire here)
		func() error {
			return netns.AddVeth(netns.Link{Name: "wlan0", NS: dp.ue, MAC: mac("02:00:00:00:02:02")}, netns.Link{Name: "u-wifi", NS: dp.upf, MAC: mac("02:00:00:00:01:02")})
		},
		func() error { return dp.ue.AddAddress("wlan0", p("203.0.113.11/24")) },
		func() error { return dp.ue.AddAddress("wlan0", p("203.0.113.15/24")) },
		// UPF port 3 ══ N6 ══ data network
		func() error {
			return netns.AddVeth(netns.Link{Name: "u-n6", NS: dp.upf, MAC: mac("02:00:00:00:01:03")}, netns.Link{Name: "dn0", NS: dp.dn, MAC: mac("02:00:00:00:02:03")})
		},
		func() error { return dp.dn.AddAddress("dn0", p(dnHost+"/24")) },
		func() error { return dp.dn.AddNeighbor("dn0", a("198.18.0.1"), mac("02:00:00:00:01:03")) },
		func() error { return dp.dn.AddRoute(p("10.60.0.0/16"), a("198.18.0.1"), "dn0") },
		func() error { return dp.ue.Sysctl("net/ipv4/conf/all/rp_filter", "0") },
		dp.ueRoutes,
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	// The software UPF's AF_PACKET ports take no unsegmented or partially checksummed frames.
	for _, x := range []struct {
		ns    *netns.Namespace
		iface string
	}{{dp.gnb, "n3g"}, {dp.gnb, "ran0"}, {dp.ue, "ran0"}, {dp.ue, "wlan0"}, {dp.upf, "u-n3"}, {dp.upf, "u-wifi"}, {dp.upf, "u-n6"}, {dp.dn, "dn0"}} {
		if out, err := x.ns.Command("ethtool", "-K", x.iface, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off").CombinedOutput(); err != nil {
			return fmt.Errorf("ethtool on %s (hack/tools.sh dataplane installs it): %v %s", x.iface, err, out)
		}
	}
	return nil
}

// ueRoutes are what a UE node's network manager sets up: the UPF's junctionAddress through the
// gNB (preferred, as a cellular default) and directly on WiFi. The WiFi ones go with the link.
func (dp *dataplane) ueRoutes() error {
	for _, args := range [][]string{
		{"route", "replace", upfJunct + "/32", "via", "10.45.0.254", "dev", "ran0", "metric", "10"},
		{"route", "replace", upfJunct + "/32", "dev", "wlan0", "metric", "20"},
		{"neigh", "replace", upfJunct, "lladdr", "02:00:00:00:01:02", "nud", "permanent", "dev", "wlan0"},
	} {
		if out, err := dp.ue.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func (dp *dataplane) close() {
	for _, ns := range []*netns.Namespace{dp.ue, dp.gnb, dp.upf, dp.dn} {
		if ns != nil {
			ns.Close()
		}
	}
}

// softupfPorts are the software UPF's port flags.
func (dp *dataplane) softupfPorts() []string {
	return []string{"--ports-netns", nsUPF, "-i", "1@u-n3", "-i", "2@u-wifi", "-i", "3@u-n6"}
}

// show starts the gNB emulator and the UE agent, waits for ue-node-a's sessions, and shows
// traffic through them: pings from each session address, the status with both sides' RTTs,
// and a WiFi failure that the 3GPP leg absorbs.
func (dp *dataplane) show(ctx context.Context, k8s client.Client, root, work, kubeconfig string) (stop func(), err error) {
	var procs []*exec.Cmd
	stop = func() {
		for _, p := range procs {
			terminate(p)
		}
	}
	for _, p := range []struct {
		name string
		args []string
	}{
		{"gnb-emulator", []string{"--kubeconfig", kubeconfig, "--netns", nsGNB, "--n3-address", "198.51.100.10", "--radio-interface", "ran0", "--metrics-addr", "0"}},
		{"ue-agent", []string{"--kubeconfig", kubeconfig, "--node-name", ueNode, "--netns", nsUE, "--metrics-addr", "0", "--health-addr", "0", "--status-interval", "2s"}},
	} {
		logf, _ := os.Create(filepath.Join(work, p.name+".log"))
		cmd := command(ctx, root, logf, filepath.Join(work, p.name), p.args...)
		if err := cmd.Start(); err != nil {
			return stop, err
		}
		procs = append(procs, cmd)
		fmt.Printf("   %s started, log %s\n", p.name, logf.Name())
	}

	step("waiting for " + ueNode + "'s sessions: AgentReady, both legs Up")
	mine, err := waitAgentReady(ctx, k8s)
	if err != nil {
		return stop, err
	}
	for _, s := range mine {
		step(fmt.Sprintf("ping %s from %s (session %s)", dnHost, s.Spec.SessionAddress, s.Name))
		dp.ping(string(s.Spec.SessionAddress), 5)
	}
	if kubectl := filepath.Join(root, "bin", "kubectl"); fileExists(kubectl) {
		waitUPFRTTs(ctx, k8s, mine)
		step("kubectl get mas -o wide: the UPF's RTTs and the agent's")
		_ = command(ctx, root, os.Stdout, kubectl, "--kubeconfig", kubeconfig, "get", "mas", "-o", "wide", "-n", "default").Run()
	}

	step("WiFi goes down on " + ueNode + ": the traffic stays up on 5G")
	_ = dp.ue.Command("ip", "link", "set", "wlan0", "down").Run()
	time.Sleep(time.Second)
	dp.ping(string(mine[0].Spec.SessionAddress), 5)
	_ = dp.ue.Command("ip", "link", "set", "wlan0", "up").Run()
	if err := dp.ueRoutes(); err != nil {
		return stop, err
	}
	fmt.Printf("   WiFi back up. The node is namespace %s: e.g. sudo ip netns exec %s ping -I %s %s\n", nsUE, nsUE, mine[0].Spec.SessionAddress, dnHost)
	return stop, nil
}

func (dp *dataplane) ping(src string, n int) {
	out, _ := dp.ue.Command("ping", "-n", "-q", "-c", fmt.Sprint(n), "-i", "0.2", "-W", "1", "-I", src, dnHost).CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, "transmitted") || strings.HasPrefix(line, "rtt") {
			fmt.Println("   " + line)
		}
	}
}

// waitUPFRTTs waits (a bounded time) until the operator shows the UPF's RTTs of the sessions:
// path status reaches the status at a bounded rate.
func waitUPFRTTs(ctx context.Context, k8s client.Client, sessions []junctionv1.ATSSSSession) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		done := true
		for _, s := range sessions {
			got := &junctionv1.ATSSSSession{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(&s), got); err != nil {
				return
			}
			p := got.Status.Paths
			if p.ThreeGPP == nil || p.ThreeGPP.RTT == "" || p.NonThreeGPP == nil || p.NonThreeGPP.RTT == "" {
				done = false
			}
		}
		if done {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitAgentReady waits until every session of ue-node-a is AgentReady with all its legs Up.
func waitAgentReady(ctx context.Context, k8s client.Client) ([]junctionv1.ATSSSSession, error) {
	deadline := time.Now().Add(readyWait)
	for {
		var list junctionv1.ATSSSSessionList
		if err := k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
			return nil, err
		}
		var mine []junctionv1.ATSSSSession
		waiting := ""
		for _, s := range list.Items {
			if s.Spec.UE.NodeName != ueNode {
				continue
			}
			mine = append(mine, s)
			if !apimeta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionAgentReady) || s.Status.Agent == nil {
				waiting = s.Name + ": not AgentReady"
				continue
			}
			for _, l := range s.Status.Agent.Legs {
				if l.State != junctionv1.LegUp {
					waiting = fmt.Sprintf("%s: leg %s %s %s", s.Name, l.Access, l.State, l.Reason)
				}
			}
		}
		if waiting == "" && len(mine) > 0 {
			return mine, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s after %s (see bin/local/ue-agent.log)", waiting, readyWait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
