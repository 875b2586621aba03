package ueagent

import (
	"net/netip"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/test/netns"
)

// newNodeNS is a network namespace of the test's own, as the agent opens a node's.
func newNodeNS(t *testing.T, prefix string) (*netns.Namespace, *node) {
	t.Helper()
	netns.Require(t)
	ns, err := netns.New(netns.UniqueName(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	n, err := openNode(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.nl.Close()
		if n.handle != nil {
			n.handle.Close()
		}
	})
	return ns, n
}

// A session's tunnel changes nothing of how the node routes its own traffic: every rule the
// agent adds matches only packets from the session address, whatever its policies' destination
// prefixes (here one that holds the node's own network, as a tenant could write). Older agents
// added a node-wide "to <prefix>" rule per policy prefix and a node-wide rule for the UPF.
func TestSessionRulesMatchOnlyTheSessionsPackets(t *testing.T) {
	_, n := newNodeNS(t, "jxsrc")
	session := netip.MustParseAddr("10.60.0.2")
	pol := desired.Policy{Name: "wide", AppID: 7}
	pol.Spec.TrafficDescriptor.DestinationPrefixes = []junctionv1.IPv4Prefix{"10.0.0.0/8", "192.0.2.0/24"}
	pol.Spec.Steering.Mode = junctionv1.ModeSmallestDelay
	cfg := Config{Session: session, UPF: netip.MustParseAddr("192.0.2.2"), Policies: []desired.Policy{pol}}
	tun, err := newTunnel(n, cfg, Experiment{}, logr.Discard(), NewMetrics(prometheus.NewRegistry()), func() {})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := n.nl.RuleList(unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	var ours []netlink.Rule
	for _, r := range rules {
		if r.Protocol == ruleProtocol {
			ours = append(ours, r)
		}
	}
	if len(ours) == 0 {
		t.Fatal("the tunnel added no rule")
	}
	for _, r := range ours {
		if r.Src == nil || r.Src.String() != session.String()+"/32" {
			t.Errorf("rule %s matches packets that are not from the session address %s", r, session)
		}
	}
	if err := tun.Close(); err != nil {
		t.Fatal(err)
	}
	if rules, err = n.nl.RuleList(unix.AF_INET); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Protocol == ruleProtocol {
			t.Errorf("rule %s left after the tunnel closed", r)
		}
	}
}
