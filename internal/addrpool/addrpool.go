// Package addrpool decides whether a session may use its addresses: each must come from an
// AddressPool an administrator granted to the session's namespace, and the session address must
// stay clear of the ranges a node needs for itself (its own addresses, pods, services, the API
// server). The operator and the UE agent both ask it, each with the reserved ranges it can see;
// docs/address-pools.md is the design.
package addrpool

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Reason is the condition reason and event reason of a refused address, the operator's and the
// agent's alike.
const Reason = "AddressNotAllowed"

// Reserved is a range no session address may take, and what it is, for the message.
type Reserved struct {
	Prefix netip.Prefix
	What   string // e.g. "the cluster's service range (ServiceCIDR kubernetes)"
}

// RefusedError says which spec field holds an address the session may not use, and why.
type RefusedError struct {
	Field string
	Why   string
}

func (e *RefusedError) Error() string { return e.Field + ": " + e.Why }

// Check returns nil when every address of s is granted to its namespace by pools and its session
// address is in none of reserved; otherwise a *RefusedError for the first field that is not.
func Check(s *junctionv1.ATSSSSession, pools []junctionv1.AddressPool, reserved []Reserved) error {
	sessionAddr, err := netip.ParseAddr(string(s.Spec.SessionAddress))
	if err != nil {
		return &RefusedError{Field: "spec.sessionAddress", Why: fmt.Sprintf("%q is not an IPv4 address", s.Spec.SessionAddress)}
	}
	if err := granted(s.Namespace, "spec.sessionAddress", sessionAddr, "sessionAddresses", pools,
		func(p *junctionv1.AddressPoolSpec) []junctionv1.IPv4Prefix { return p.SessionAddresses }); err != nil {
		return err
	}
	// A session address is a local address of a TUN on the UE node, with a rule that routes
	// whatever the node sends from it into the tunnel: on a node's own range it would take the
	// node's traffic.
	for _, r := range reserved {
		if r.Prefix.Contains(sessionAddr) {
			return &RefusedError{Field: "spec.sessionAddress", Why: fmt.Sprintf("%s is in %s %s", sessionAddr, r.What, r.Prefix)}
		}
	}
	type leg struct {
		field string
		addr  junctionv1.IPv4Address
	}
	var legs []leg
	if l := s.Spec.AccessLegs.ThreeGPP; l != nil {
		legs = append(legs, leg{"spec.accessLegs.threeGPP.ueAddress", l.UEAddress})
	}
	if l := s.Spec.AccessLegs.NonThreeGPP; l != nil {
		legs = append(legs, leg{"spec.accessLegs.nonThreeGPP.ueAddress", l.UEAddress})
	}
	for _, l := range legs {
		a, err := netip.ParseAddr(string(l.addr))
		if err != nil {
			return &RefusedError{Field: l.field, Why: fmt.Sprintf("%q is not an IPv4 address", l.addr)}
		}
		if err := granted(s.Namespace, l.field, a, "ueAddresses", pools,
			func(p *junctionv1.AddressPoolSpec) []junctionv1.IPv4Prefix { return p.UEAddresses }); err != nil {
			return err
		}
	}
	return nil
}

// granted checks that one of the namespace's pools lists a prefix holding addr.
func granted(ns, field string, addr netip.Addr, poolField string, pools []junctionv1.AddressPool, prefixes func(*junctionv1.AddressPoolSpec) []junctionv1.IPv4Prefix) error {
	for i := range pools {
		if pools[i].Spec.Namespace != ns || pools[i].DeletionTimestamp != nil {
			continue
		}
		for _, p := range prefixes(&pools[i].Spec) {
			if pfx, err := netip.ParsePrefix(string(p)); err == nil && pfx.Contains(addr) {
				return nil
			}
		}
	}
	return &RefusedError{Field: field, Why: fmt.Sprintf("%s is in no AddressPool's spec.%s for namespace %s (an administrator grants addresses, docs/address-pools.md)", addr, poolField, ns)}
}

// ParseReserved reads a comma-separated list of IPv4 prefixes or addresses (a flag's value),
// each reserved as what.
func ParseReserved(list, what string) ([]Reserved, error) {
	var out []Reserved
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil || !a.Is4() {
				return nil, fmt.Errorf("%q is not an IPv4 prefix or address", f)
			}
			p = netip.PrefixFrom(a, 32)
		}
		if !p.Addr().Is4() {
			return nil, fmt.Errorf("%q is not an IPv4 prefix", f)
		}
		out = append(out, Reserved{Prefix: p.Masked(), What: what})
	}
	return out, nil
}

// APIServer reserves the API server's addresses as a client reaches it: the host of its URL
// when that is an address, else what the name resolves to now, and the in-cluster Service
// address ($KUBERNETES_SERVICE_HOST).
func APIServer(ctx context.Context, hostURL string) []Reserved {
	var hosts []string
	if u, err := url.Parse(hostURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	} else if h, _, err := net.SplitHostPort(hostURL); err == nil {
		hosts = append(hosts, h)
	}
	if h := os.Getenv("KUBERNETES_SERVICE_HOST"); h != "" {
		hosts = append(hosts, h)
	}
	var out []Reserved
	for _, h := range hosts {
		addrs := []string{h}
		if _, err := netip.ParseAddr(h); err != nil {
			addrs, _ = net.DefaultResolver.LookupHost(ctx, h)
		}
		for _, s := range addrs {
			if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
				out = append(out, Reserved{Prefix: netip.PrefixFrom(a, 32), What: "the API server's address"})
			}
		}
	}
	return out
}

// SessionsOf maps an AddressPool event to the sessions c sees in the namespace the pool grants
// to (or granted to, before an update: both ends of a change arrive as separate events): the
// operator's sessions, or, through an agent's cache, its node's.
func SessionsOf(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		p, ok := o.(*junctionv1.AddressPool)
		if !ok {
			return nil
		}
		var list junctionv1.ATSSSSessionList
		if err := c.List(ctx, &list, client.InNamespace(p.Spec.Namespace), client.UnsafeDisableDeepCopy); err != nil { // read only
			logf.FromContext(ctx).Error(err, "Listing the sessions of an address pool failed", "addresspool", p.Name)
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
		}
		return out
	}
}
