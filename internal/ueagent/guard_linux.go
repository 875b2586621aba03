package ueagent

// The agent's own check of a session's addresses before it touches the node
// (docs/address-pools.md): the operator refusing a session does not stop an agent from building
// its tunnel, so the agent asks internal/addrpool itself, with the ranges it sees on its node.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/addrpool"
)

// checkAddresses returns a *addrpool.RefusedError when the session may not use its addresses:
// they are not granted to its namespace, or its session address is in one of the node's own
// networks or Options.Reserved.
func (a *Agent) checkAddresses(ctx context.Context, s *junctionv1.ATSSSSession) error {
	var pools junctionv1.AddressPoolList
	if err := a.List(ctx, &pools); err != nil {
		return err
	}
	reserved, err := nodeNetworks(a.node)
	if err != nil {
		return err
	}
	return addrpool.Check(s, pools.Items, append(reserved, a.opts.Reserved...))
}

// nodeNetworks are the networks of the node's interfaces but the agent's own TUNs: a session
// address in one would become a local address the node's traffic to that network meets.
func nodeNetworks(n *node) ([]addrpool.Reserved, error) {
	addrs, err := n.nl.AddrList(nil, unix.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	out := make([]addrpool.Reserved, 0, len(addrs))
	for _, ad := range addrs {
		link, err := n.nl.LinkByIndex(ad.LinkIndex)
		if err != nil || strings.HasPrefix(link.Attrs().Name, tunPrefix) {
			continue
		}
		ip, ok := netip.AddrFromSlice(ad.IP.To4())
		if !ok {
			continue
		}
		ones, _ := ad.Mask.Size()
		out = append(out, addrpool.Reserved{Prefix: netip.PrefixFrom(ip, ones).Masked(),
			What: fmt.Sprintf("this node's network on %s", link.Attrs().Name)})
	}
	return out, nil
}
