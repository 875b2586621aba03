package ueagent

// The node's network configuration for one session: its TUN's address, its routing table and
// the policy rules that send the session's traffic into the TUN; and the lookups the legs need
// (which interface holds a leg's UE address, its MTU).
//
// Names and numbers are derived from the session address, which is immutable, so a restarted
// agent finds what an earlier one left (rules survive a crash; the TUN and its routes do not,
// since the TUN goes with the process that held it) and replaces it instead of duplicating it:
//
//	TUN          jx<8 hex digits of the session address>      e.g. jx0a3c0001 for 10.60.0.1
//	table        the session address as a number               e.g. 0x0a3c0001
//	rules        prio ruleProtect: from <session address> to <UPF junction address> lookup main
//	             prio ruleSession: from <session address> lookup <table>
//	routes       in <table>: default dev <TUN> src <session address>
//
// Every rule matches only packets from the session address (docs/address-pools.md): a session
// never changes how the node routes its own traffic. Policies steer inside the tunnel
// (steer.Classifier), not by routes, so the node's routing never sees a policy prefix; an
// application reaches the tunnel by sending from the session address.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/internal/wire"
)

// Rule priorities: below the kernel's main-table rule (32766), above local (0). The protection
// rule comes first so that the session's own packets to the UPF (a leg whose UE address is the
// session address) never loop into the tunnel.
const (
	ruleProtect = 9990
	ruleSession = 9991
	// ruleProtocol marks routes and rules as the agent's (rtnetlink protocol numbers above
	// RTPROT_STATIC are free for daemons), so cleanup never touches anyone else's.
	ruleProtocol = 0x4a // 'J'
	tunPrefix    = "jx"
)

// Tunnel overheads a leg adds to a user packet (docs/junction-header.md): IPv4 + UDP + Junction
// (36 bytes) on every leg; on 3GPP the gNB adds outer IPv4 + UDP + GTP-U with its 4 option bytes
// and a 4-byte PDU session container (44 bytes) on N3, assumed to have the radio side's MTU.
const (
	overheadNon3GPP = wire.JunctionOverhead
	overhead3GPP    = wire.JunctionOverhead + wire.GTPUOverhead + wire.GTPUPSCOverhead
	defaultLinkMTU  = 1500
)

// node is the network namespace that holds the legs' interfaces and the TUNs: the node's own in
// a cluster (the DaemonSet uses the host network), a testbed namespace with --netns.
type node struct {
	ns     string          // "" for the process's own namespace
	nl     *netlink.Handle // netlink requests act in ns
	handle *netns.NsHandle // for subscriptions; nil for the process's own
}

func openNode(ns string) (*node, error) {
	nl, h, err := netnsexec.Handle(ns)
	if err != nil {
		return nil, err
	}
	return &node{ns: ns, nl: nl, handle: h}, nil
}

// TUNName is the stable interface name of the session with this address.
func TUNName(session netip.Addr) string {
	a := session.As4()
	return fmt.Sprintf("%s%02x%02x%02x%02x", tunPrefix, a[0], a[1], a[2], a[3])
}

// tableID is the session's routing table: its address as a number (0 and 253-255 are reserved,
// which no usable session address maps to).
func tableID(session netip.Addr) int {
	a := session.As4()
	return int(uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]))
}

// routing is what the node's routing must hold for one session.
type routing struct {
	session netip.Addr
	upf     netip.Addr
}

// configureTUN gives the TUN its address and fills the session's table and rules, replacing
// whatever an earlier agent left for the same session.
func configureTUN(nl *netlink.Handle, link netlink.Link, r routing) error {
	host := hostNet(r.session)
	if err := nl.LinkSetUp(link); err != nil { // routes need a link that is up
		return fmt.Errorf("%s up: %w", link.Attrs().Name, err)
	}
	if err := nl.AddrReplace(link, &netlink.Addr{IPNet: host}); err != nil {
		return fmt.Errorf("address %s on %s: %w", r.session, link.Attrs().Name, err)
	}
	table := tableID(r.session)
	rt := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
		Src: host.IP, Table: table, Scope: netlink.SCOPE_LINK, Protocol: ruleProtocol}
	if err := nl.RouteReplace(rt); err != nil {
		return fmt.Errorf("default route dev %s table %d: %w", link.Attrs().Name, table, err)
	}
	src := netlink.NewRule()
	src.Priority, src.Table, src.Src, src.Protocol = ruleSession, table, host, ruleProtocol
	rules := []*netlink.Rule{protectRule(r.session, r.upf), src}
	for _, rule := range rules {
		if err := nl.RuleAdd(rule); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("rule %s: %w", rule, err)
		}
	}
	// Only then do the rules no longer wanted go (those an older agent left): every reconcile
	// applies this again, and deleting them all first left the session's packets without a
	// route in between.
	return removeRules(nl, r.session, rules...)
}

func hostNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(32, 32)}
}

// protectRule keeps the session's packets to the UPF in the main table.
func protectRule(session, upf netip.Addr) *netlink.Rule {
	r := netlink.NewRule()
	r.Priority, r.Table, r.Protocol = ruleProtect, unix.RT_TABLE_MAIN, ruleProtocol
	r.Src, r.Dst = hostNet(session), hostNet(upf)
	return r
}

// removeRules deletes the agent's rules of the session (from its address, or into its table as
// older agents added them) but those like one of keep (the same priority, source and
// destination).
func removeRules(nl *netlink.Handle, session netip.Addr, keep ...*netlink.Rule) error {
	rules, err := nl.RuleList(unix.AF_INET)
	if err != nil {
		return fmt.Errorf("list rules: %w", err)
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[selector(k)] = true
	}
	table := tableID(session)
	for i := range rules {
		r := &rules[i]
		if r.Protocol != ruleProtocol || kept[selector(r)] {
			continue
		}
		if src, ok := ruleSource(r); (ok && src == session) || r.Table == table {
			if err := nl.RuleDel(r); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("delete rule %s: %w", r, err)
			}
		}
	}
	return nil
}

// ruleSource is the single address a rule's source selector matches; ok is false for a rule
// without one (every source: what no rule of this agent is).
func ruleSource(r *netlink.Rule) (netip.Addr, bool) {
	if r.Src == nil {
		return netip.Addr{}, false
	}
	if ones, _ := r.Src.Mask.Size(); ones != 32 {
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(r.Src.IP.To4())
	return a, ok
}

// selector is what tells a session's rules apart: their priority, source and destination.
func selector(r *netlink.Rule) string {
	prefix := func(n *net.IPNet) string {
		if n == nil {
			return "all"
		}
		a, _ := netip.AddrFromSlice(n.IP.To4())
		ones, _ := n.Mask.Size()
		return netip.PrefixFrom(a, ones).String()
	}
	return fmt.Sprintf("%d %s %s", r.Priority, prefix(r.Src), prefix(r.Dst))
}

// pruneRules deletes every rule the agent owns that no live session (address → UPF) needs:
// those of sessions deleted while no agent ran, and any without a session source (older agents
// added node-wide ones).
func pruneRules(nl *netlink.Handle, live map[netip.Addr]netip.Addr) error {
	rules, err := nl.RuleList(unix.AF_INET)
	if err != nil {
		return fmt.Errorf("list rules: %w", err)
	}
	var errs []error
	for i := range rules {
		r := &rules[i]
		if r.Protocol != ruleProtocol {
			continue // not the agent's
		}
		src, ok := ruleSource(r)
		upf, isLive := live[src]
		stale := !ok || !isLive
		switch {
		case stale:
		case r.Priority == ruleSession:
			stale = r.Dst != nil || r.Table != tableID(src)
		case r.Priority == ruleProtect:
			stale = r.Dst == nil || !upf.IsValid() || selector(r) != selector(protectRule(src, upf))
		default:
			stale = true
		}
		if stale {
			if err := nl.RuleDel(r); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("delete rule %s: %w", r, err))
			}
		}
	}
	return errors.Join(errs...)
}

// legInterface finds the interface that holds addr, its index, MTU and whether it is up; name
// is "" when no interface of the node has the address (the leg is NoAddress).
func legInterface(nl *netlink.Handle, addr netip.Addr) (name string, index, mtu int, up bool, err error) {
	addrs, err := nl.AddrList(nil, unix.AF_INET)
	if err != nil {
		return "", 0, 0, false, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP.To4())
		if ip != addr {
			continue
		}
		link, err := nl.LinkByIndex(a.LinkIndex)
		if err != nil {
			return "", 0, 0, false, fmt.Errorf("link of %s: %w", addr, err)
		}
		at := link.Attrs()
		up := at.Flags&net.FlagUp != 0 && at.OperState != netlink.OperDown && at.OperState != netlink.OperLowerLayerDown
		return at.Name, at.Index, at.MTU, up, nil
	}
	return "", 0, 0, false, nil
}

// tunMTU leaves room for the worse leg's overhead: the smallest of each present leg's interface
// MTU minus its overhead (a missing interface counts as a 1500-byte link).
func tunMTU(mtu3GPP, mtuNon3GPP int) int {
	best := 0
	for _, c := range []struct{ mtu, over int }{{mtu3GPP, overhead3GPP}, {mtuNon3GPP, overheadNon3GPP}} {
		if c.mtu < 0 {
			continue // leg absent
		}
		m := c.mtu
		if m == 0 {
			m = defaultLinkMTU
		}
		if v := m - c.over; best == 0 || v < best {
			best = v
		}
	}
	if best < 576 {
		best = 576 // IPv4's minimum datagram every host must accept
	}
	return best
}
