//go:build linux

package ueagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/ueagent"
	"github.com/junction-atsss/junction/test/netns"
	"github.com/junction-atsss/junction/test/topology"
)

const sessionAddr = "10.60.0.1"

// pingSize is the ICMP payload of the test pings: 1000 bytes, so that a leg's byte counter tells
// pings (10 kB for 10) from probes (66-byte frames, at most 20 a second with their acks).
const pingSize = 1000

// ping sends count echo requests from the session address to the data network host and
// returns how many were answered.
func ping(t *testing.T, u *ueNode, count int) int {
	t.Helper()
	return pingFrom(t, u, sessionAddr, count)
}

// pingFrom is ping from the UE's address src.
func pingFrom(t *testing.T, u *ueNode, src string, count int) int {
	t.Helper()
	out, _ := u.NS.Command("ping", "-n", "-q", "-c", fmt.Sprint(count), "-s", fmt.Sprint(pingSize), "-i", "0.2", "-W", "1", "-I", src, dnHost.String()).CombinedOutput()
	var sent, recv int
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "packets transmitted") {
			fmt.Sscanf(line, "%d packets transmitted, %d received", &sent, &recv)
		}
	}
	if sent != count {
		t.Fatalf("ping did not run: %s", out)
	}
	return recv
}

// txBytes and rxBytes are the bytes an interface of ns has sent and received.
func txBytes(t testing.TB, ns *netns.Namespace, iface string) uint64 {
	return linkStats(t, ns, iface).TX.Bytes
}
func rxBytes(t testing.TB, ns *netns.Namespace, iface string) uint64 {
	return linkStats(t, ns, iface).RX.Bytes
}

type byteCount struct {
	Bytes   uint64 `json:"bytes"`
	Packets uint64 `json:"packets"` // what the link counted: a GSO frame it passed on whole is one
}

func linkStats(t testing.TB, ns *netns.Namespace, iface string) (s struct{ TX, RX byteCount }) {
	t.Helper()
	var links []struct {
		Stats struct {
			TX byteCount `json:"tx"`
			RX byteCount `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(run(t, ns, "ip", "-j", "-s", "link", "show", "dev", iface)), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -s link show %s: %v", iface, err)
	}
	s.TX, s.RX = links[0].Stats.TX, links[0].Stats.RX
	return s
}

func leg(s *junctionv1.ATSSSSession, a junctionv1.Access) *junctionv1.AgentLeg {
	if s.Status.Agent == nil {
		return nil
	}
	for i := range s.Status.Agent.Legs {
		if s.Status.Agent.Legs[i].Access == a {
			return &s.Status.Agent.Legs[i]
		}
	}
	return nil
}

// legState waits until the session's status shows leg a in state want.
func (tb *testbed) legState(name string, a junctionv1.Access, want junctionv1.LegState, timeout time.Duration) *junctionv1.AgentLeg {
	var l *junctionv1.AgentLeg
	eventually(tb.t, timeout, fmt.Sprintf("%s leg %s %s", name, a, want), func() error {
		s, err := getSession(name, tb.ns)
		if err != nil {
			return err
		}
		if l = leg(s, a); l == nil || l.State != want {
			return fmt.Errorf("status.agent: %+v", s.Status.Agent)
		}
		return nil
	})
	return l
}

// userIndex is the session's UPF user index, from the operator's status.
func userIndex(t *testing.T, s *junctionv1.ATSSSSession) int64 {
	t.Helper()
	if s.Status.UserIndex == nil {
		t.Fatalf("session %s has no status.userIndex", s.Name)
	}
	return int64(*s.Status.UserIndex)
}

// rules lists the policy rules of the UE namespace at the agent's priorities.
func rules(t *testing.T, u *ueNode) []string {
	var out []string
	for _, line := range strings.Split(run(t, u.NS, "ip", "-4", "rule", "show"), "\n") {
		if strings.HasPrefix(line, "9990:") || strings.HasPrefix(line, "9991:") {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return out
}

// TestSessionCarriesTrafficOnBothLegs follows one session through its life: the TUN appears,
// pings cross the 3GPP leg (through the gNB emulator's GTP-U) and the WiFi leg, the probes
// fill the UPF's path-state registers and the status (the UPF's RTTs and the agent's), a silent
// 3GPP failure moves the traffic to WiFi and tells the UPF (LINK_DOWN), the radio's return
// brings LINK_UP, a policy change moves the session to WiFi in place, WiFi's link going down
// moves it back to 5G with LINK_DOWN, a restarted agent adopts the session without duplicating
// its rules, and deleting the session removes the TUN and the rules.
func TestSessionCarriesTrafficOnBothLegs(t *testing.T) {
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	tb.startAgent(u)
	create(t, tb.policy("as-3gpp", activeStandby(junctionv1.Access3GPP)), tb.session("s1", u, sessionAddr, 100, "as-3gpp"))
	s := tb.waitReady("s1")
	var err error
	tunName := ueagent.TUNName(netip.MustParseAddr(sessionAddr))
	if s.Status.Agent == nil || s.Status.Agent.NodeName != u.Node || s.Status.Agent.Interface != tunName {
		t.Fatalf("status.agent = %+v, want node %s and interface %s", s.Status.Agent, u.Node, tunName)
	}
	run(t, u.NS, "ip", "link", "show", "dev", tunName)

	// Both legs answer probes: Up with an RTT in the status, and the UPF's registers hold the
	// RTTs the UE reported (LINK_UP / PROBE_ACK), non-zero for both accesses.
	l3 := tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	ln := tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	if l3.RTT == "" || ln.RTT == "" || l3.Interface != "ran0" || ln.Interface != "wlan0" {
		t.Fatalf("legs: 3GPP %+v, non-3GPP %+v: want RTTs on ran0 and wlan0", l3, ln)
	}
	// The operator's columns show the UPF's own RTTs beside the agent's (kubectl get mas -o wide).
	eventually(t, probeTimeout, "UPF-measured RTTs in status.paths", func() error {
		if s, err = getSession("s1", tb.ns); err != nil {
			return err
		}
		p := s.Status.Paths
		if p.ThreeGPP == nil || p.NonThreeGPP == nil || p.ThreeGPP.RTT == "" || p.NonThreeGPP.RTT == "" || !p.ThreeGPP.Available || !p.NonThreeGPP.Available {
			return fmt.Errorf("status.paths = 3GPP %+v, non-3GPP %+v", p.ThreeGPP, p.NonThreeGPP)
		}
		return nil
	})
	user := userIndex(t, s)
	for _, reg := range []string{"rtt_3gpp", "rtt_non3gpp"} {
		eventually(t, probeTimeout, reg+" set by the probes", func() error {
			v, err := tb.register(reg, user)
			if err == nil && v == 0 {
				err = fmt.Errorf("%s[%d] = 0", reg, user)
			}
			return err
		})
	}

	// Active-standby on 3GPP: every ping crosses ran0 (and the gNB), none the WiFi leg. One
	// unanswered ping first: in one run of many the very first echo request after the legs came
	// up never reached the UPF (open: where it was lost), and this test is about the path.
	ping(t, u, 1)
	ran0, wlan0 := txBytes(t, u.NS, "ran0"), txBytes(t, u.NS, "wlan0")
	if got := ping(t, u, 10); got != 10 {
		t.Fatalf("3GPP leg: %d of 10 pings answered", got)
	}
	d3, dn := txBytes(t, u.NS, "ran0")-ran0, txBytes(t, u.NS, "wlan0")-wlan0
	if d3 < 10*pingSize || dn >= 10*pingSize/2 {
		t.Fatalf("ran0 sent %d and wlan0 %d bytes during 10 pings of %d bytes; want the pings on ran0", d3, dn, pingSize)
	}

	// Silent failure of the 3GPP leg: the gNB blackholes the radio. The probes time out, the
	// agent sends LINK_DOWN on WiFi, the UPF's rtt_3gpp becomes 0 and the traffic moves to WiFi.
	run(t, tb.GNB, "ip", "route", "replace", "blackhole", "default", "table", "2152")
	down := tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegDown, failoverTimeout)
	if down.Reason != "ProbeTimeout" {
		t.Errorf("3GPP leg down with reason %q, want ProbeTimeout", down.Reason)
	}
	eventually(t, failoverTimeout, "rtt_3gpp cleared by LINK_DOWN", func() error {
		if v, err := tb.register("rtt_3gpp", user); err != nil || v != 0 {
			return fmt.Errorf("rtt_3gpp[%d] = %d, %v", user, v, err)
		}
		return nil
	})
	wlan0 = txBytes(t, u.NS, "wlan0")
	if got := ping(t, u, 10); got != 10 {
		t.Fatalf("after the 3GPP failure: %d of 10 pings answered over WiFi", got)
	}
	if d := txBytes(t, u.NS, "wlan0") - wlan0; d < 10*pingSize {
		t.Fatalf("wlan0 sent %d bytes during 10 pings of %d bytes after the failover", d, pingSize)
	}

	// The radio comes back: probes answered again, LINK_UP, rtt_3gpp non-zero, traffic back on 3GPP.
	var link []byte
	link, err = tb.GNB.Command("ip", "route", "replace", "default", "dev", "gtp0", "table", "2152").CombinedOutput()
	must(t, errorOf(err, link))
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	eventually(t, probeTimeout, "rtt_3gpp restored by LINK_UP", func() error {
		if v, err := tb.register("rtt_3gpp", user); err != nil || v == 0 {
			return fmt.Errorf("rtt_3gpp[%d] = %d, %v", user, v, err)
		}
		return nil
	})

	// The policy moves the session to WiFi (the tunnel is updated in place): pings cross wlan0.
	pol := &junctionv1.SteeringPolicy{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: tb.ns, Name: "as-3gpp"}, pol))
	pol.Spec.Steering = activeStandby(junctionv1.AccessNon3GPP)
	must(t, k8s.Update(context.Background(), pol))
	eventually(t, readyTimeout, "pings on WiFi after the policy change", func() error {
		before := txBytes(t, u.NS, "wlan0")
		if got := ping(t, u, 5); got != 5 {
			return fmt.Errorf("%d of 5 pings answered", got)
		}
		if d := txBytes(t, u.NS, "wlan0") - before; d < 5*pingSize {
			return fmt.Errorf("wlan0 sent %d bytes during 5 pings of %d bytes", d, pingSize)
		}
		return nil
	})

	// A netlink-visible failure: WiFi's link goes down. The leg is Down at once with the reason,
	// the agent sends LINK_DOWN on 3GPP (the UPF's rtt_non3gpp becomes 0) and the traffic moves
	// to 5G within the failover bound, both ways.
	run(t, u.NS, "ip", "link", "set", "wlan0", "down")
	if l := tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegDown, failoverTimeout); l.Reason != "LinkDown" {
		t.Errorf("WiFi leg down with reason %q, want LinkDown", l.Reason)
	}
	eventually(t, failoverTimeout, "rtt_non3gpp cleared by LINK_DOWN", func() error {
		if v, err := tb.register("rtt_non3gpp", user); err != nil || v != 0 {
			return fmt.Errorf("rtt_non3gpp[%d] = %d, %v", user, v, err)
		}
		return nil
	})
	ranTx, ranRx := txBytes(t, u.NS, "ran0"), rxBytes(t, u.NS, "ran0")
	if got := ping(t, u, 5); got != 5 {
		t.Fatalf("WiFi down: %d of 5 pings answered over 3GPP", got)
	}
	if dt, dr := txBytes(t, u.NS, "ran0")-ranTx, rxBytes(t, u.NS, "ran0")-ranRx; dt < 5*pingSize || dr < 5*pingSize {
		t.Fatalf("WiFi down: ran0 sent %d and received %d bytes during 5 pings of %d bytes", dt, dr, pingSize)
	}
	run(t, u.NS, "ip", "link", "set", "wlan0", "up")
	// The kernel flushed the route with the link; the node's network manager (here, the test)
	// puts it back, as DHCP would on a real WiFi link.
	must(t, u.Routes())
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	// A crashed agent leaves its rules; the next one adopts them instead of adding copies.
	before := rules(t, u)
	if len(before) != 2 {
		t.Fatalf("agent rules: %q, want the protection and the session rule", before)
	}
	u.agent.stop(syscallKill)
	killed := time.Now()
	tb.startAgent(u)
	eventually(t, readyTimeout, "the restarted agent serves the session", func() error {
		if out, err := u.NS.Command("ip", "link", "show", "dev", tunName).CombinedOutput(); err != nil {
			return fmt.Errorf("no TUN yet: %s", out)
		}
		s, err := getSession("s1", tb.ns)
		if err != nil {
			return err
		}
		if l := leg(s, junctionv1.Access3GPP); l == nil || l.State != junctionv1.LegUp || l.LastProbe == nil || !l.LastProbe.After(killed) {
			return fmt.Errorf("no probe answered since the restart: status.agent %+v", s.Status.Agent)
		}
		return nil
	})
	if got := ping(t, u, 5); got != 5 {
		t.Fatalf("after the agent restart: %d of 5 pings answered", got)
	}
	if after := rules(t, u); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("rules after the restart:\n%s\nwant as before:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}

	// Deleting the session removes its TUN and its rules.
	must(t, k8s.Delete(context.Background(), s))
	eventually(t, readyTimeout, "TUN and rules removed", func() error {
		if out, err := u.NS.Command("ip", "link", "show", "dev", tunName).CombinedOutput(); err == nil {
			return fmt.Errorf("TUN still there: %s", out)
		}
		if r := rules(t, u); len(r) != 0 {
			return fmt.Errorf("rules left: %q", r)
		}
		return nil
	})
}

// TestAgentServesOnlyItsNode runs a second agent for a node whose namespace holds none of the
// session's addresses: it reports the legs NoAddress and AgentReady False, while the first
// node's agent builds nothing for the other node's session.
func TestAgentServesOnlyItsNode(t *testing.T) {
	tb := newTestbed(t, 1)
	a := tb.ues[0]
	b := &ueNode{UE: &topology.UE{UESpec: topology.UESpec{Node: "ue-node-b", Addr3GPP: a.Addr3GPP, AddrWiFi: a.AddrWiFi}, NS: netns.ForTest(t, "jue")}}
	tb.startAgent(a)
	tb.startAgent(b)
	s := tb.session("on-b", b, "10.60.0.2", 200, "as-3gpp")
	create(t, tb.policy("as-3gpp", activeStandby(junctionv1.Access3GPP)), s)
	tb.legState("on-b", junctionv1.Access3GPP, junctionv1.LegNoAddress, readyTimeout)
	tb.legState("on-b", junctionv1.AccessNon3GPP, junctionv1.LegNoAddress, readyTimeout)
	got, err := getSession("on-b", tb.ns)
	must(t, err)
	if got.Status.Agent.NodeName != b.Node {
		t.Fatalf("status.agent.nodeName = %q, want %q", got.Status.Agent.NodeName, b.Node)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, junctionv1.ConditionAgentReady); c == nil || c.Status != "False" {
		t.Fatalf("AgentReady = %+v, want False: no leg can send", c)
	}
	tun := ueagent.TUNName(netip.MustParseAddr("10.60.0.2"))
	if out, err := a.NS.Command("ip", "link", "show", "dev", tun).CombinedOutput(); err == nil {
		t.Fatalf("node a's agent built node b's TUN: %s", out)
	}

	// Two sessions of node a on the same leg addresses: the second is refused, and says why.
	create(t, tb.session("on-a", a, "10.60.0.3", 300, "as-3gpp"))
	tb.waitReady("on-a")
	create(t, tb.session("dup", a, "10.60.0.4", 400, "as-3gpp"))
	eventually(t, readyTimeout, "dup refused", func() error {
		s, err := getSession("dup", tb.ns)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionAgentReady)
		if c == nil || c.Status != "False" || !strings.Contains(c.Message, "spec.accessLegs.threeGPP.ueAddress") || !strings.Contains(c.Message, "on-a") {
			return fmt.Errorf("AgentReady %+v: want False naming the shared leg address and session on-a", c)
		}
		return nil
	})
}
