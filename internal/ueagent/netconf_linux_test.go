package ueagent

import (
	"maps"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/test/netns"
)

// The agent applies a session's routing again on every reconcile (each status resync): its
// rules must never all be gone meanwhile, or a packet the UE sends then finds no route ("Network
// is unreachable"; seen once in TestKindDataplane). A rule an older agent left goes.
func TestReconfiguringKeepsTheSessionsRules(t *testing.T) {
	netns.Require(t)
	ns, err := netns.New(netns.UniqueName("jxrules"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	handle := func() *netlink.Handle {
		h, nh, err := netnsexec.Handle(ns.Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(); nh.Close() })
		return h
	}
	nl, watcher := handle(), handle() // a handle per goroutine
	if err := nl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "jxtest0"}, PeerName: "jxtest1"}); err != nil {
		t.Fatal(err)
	}
	link, err := nl.LinkByName("jxtest0")
	if err != nil {
		t.Fatal(err)
	}
	session := netip.MustParseAddr("10.60.0.2")
	r := routing{session: session, upf: netip.MustParseAddr("192.0.2.2")}
	if err := configureTUN(nl, link, r); err != nil {
		t.Fatal(err)
	}
	// sessionRules counts the session's rules as the kernel holds them, by source and destination.
	sessionRules := func(h *netlink.Handle) (map[string]int, error) {
		rules, err := h.RuleList(unix.AF_INET)
		if err != nil {
			return nil, err
		}
		out := map[string]int{}
		for _, ru := range rules {
			if ru.Protocol == ruleProtocol {
				out[ipNetString(ru.Src)+" "+ipNetString(ru.Dst)]++
			}
		}
		return out, nil
	}
	const fromSession, toUPF = "10.60.0.2/32 all", "10.60.0.2/32 192.0.2.2/32"

	const rounds = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var looks, missing int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := sessionRules(watcher)
			if err != nil {
				t.Error(err)
				return
			}
			looks++
			if got[fromSession] == 0 || got[toUPF] == 0 {
				missing++
			}
		}
	}()
	for range rounds {
		if err := configureTUN(nl, link, r); err != nil {
			t.Error(err)
			break
		}
	}
	close(stop)
	wg.Wait()
	if missing > 0 {
		t.Errorf("%d of %d looks during %d reconfigurations found the session's rules gone", missing, looks, rounds)
	}

	got, err := sessionRules(nl)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{fromSession: 1, toUPF: 1}; !maps.Equal(got, want) {
		t.Errorf("after %d reconfigurations: rules %v, want %v, once each", rounds+1, got, want)
	}
	// A node-wide rule into the session's table, as older agents added per policy prefix.
	old := netlink.NewRule()
	old.Priority, old.Table, old.Protocol = ruleSession, tableID(session), ruleProtocol
	old.Dst = &net.IPNet{IP: net.IPv4(198, 51, 100, 0).To4(), Mask: net.CIDRMask(24, 32)}
	if err := nl.RuleAdd(old); err != nil {
		t.Fatal(err)
	}
	if err := configureTUN(nl, link, r); err != nil {
		t.Fatal(err)
	}
	if got, err = sessionRules(nl); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{fromSession: 1, toUPF: 1}; !maps.Equal(got, want) {
		t.Errorf("after an older agent's rule: rules %v, want %v", got, want)
	}
}

func ipNetString(n *net.IPNet) string {
	if n == nil {
		return "all"
	}
	return n.String()
}
