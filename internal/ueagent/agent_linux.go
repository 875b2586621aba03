package ueagent

// Agent reconciles the ATSSSSessions of its node into tunnels:
//
//	session (field selector spec.ue.nodeName=<node>) + its UPF + the policies it selects
//	  ─BuildConfig─> Config ─checkAddresses (AddressPools, the node's networks)─> Tunnel (new,
//	  updated in place, or rebuilt) ─> status.agent, AgentReady
//	netlink link/address events ─> every tunnel re-reads its legs' interfaces
//	a tunnel's state change ─> notify ─> the session is reconciled again (status written on change,
//	at a bounded rate)
//
// The agent keeps no finalizer: a deleted session's tunnel is closed when the reconcile finds it
// gone, and rules left by sessions deleted while no agent ran are pruned at start.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/contract"
)

// Options configure an Agent.
type Options struct {
	// NodeName is the node the agent serves.
	NodeName string
	// Netns is the network namespace with the node's legs, where TUNs are made: "" for the
	// agent's own (a DaemonSet pod on the host network); a testbed runs one agent per namespace.
	Netns string
	// StatusInterval is the least time between two status writes that change only RTTs.
	StatusInterval time.Duration
	// MinStatusInterval is the least time between two status writes of one session.
	MinStatusInterval time.Duration
	// Reserved are ranges no session address may take beside the node's own networks: the
	// cluster's pod and service ranges, the API server's addresses (docs/address-pools.md).
	Reserved []addrpool.Reserved
	// Experiment alters the uplink for the testbed's experiments; zero in production.
	Experiment Experiment
}

// Experiment alters the uplink as the paper's Table IV experiment does (docs/results.md).
type Experiment struct {
	// SwitchEvery > 0 alternates every session's uplink between the legs every SwitchEvery
	// packets while both are up, whatever the steering mode says.
	SwitchEvery int
	// NoMarks sends no EX-PATH marker and no CURRENT_PATH marks on a switch: the UPF's uplink
	// reorder engine never holds, as if it were off.
	NoMarks bool
}

// CacheOptions restricts the manager's cache to the node's sessions: the API server filters
// them, so an agent never receives another node's sessions.
func CacheOptions(node string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&junctionv1.ATSSSSession{}: {Field: fields.OneTermEqualSelector(junctionv1.SessionNodeNameField, node)},
	}}
}

// Agent is the UE agent's controller.
type Agent struct {
	client.Client
	opts     Options
	node     *node
	log      logr.Logger
	metrics  *Metrics
	recorder record.EventRecorder
	events   chan event.GenericEvent

	mu      sync.Mutex
	tunnels map[types.NamespacedName]*Tunnel
	status  map[types.NamespacedName]*statusState
}

// New returns an agent; SetupWithManager starts it.
func New(c client.Client, opts Options, m *Metrics, rec record.EventRecorder, log logr.Logger) (*Agent, error) {
	if opts.StatusInterval == 0 {
		opts.StatusInterval = 10 * time.Second
	}
	if opts.MinStatusInterval == 0 {
		opts.MinStatusInterval = time.Second
	}
	n, err := openNode(opts.Netns)
	if err != nil {
		return nil, err
	}
	return &Agent{
		Client: c, opts: opts, node: n, metrics: m, recorder: rec, log: log,
		events:  make(chan event.GenericEvent, 1024),
		tunnels: map[types.NamespacedName]*Tunnel{},
		status:  map[types.NamespacedName]*statusState{},
	}, nil
}

// SetupWithManager registers the controller, the netlink watcher and the start/stop hooks.
func (a *Agent) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("ue-agent").
		For(&junctionv1.ATSSSSession{}).
		Watches(&junctionv1.SteeringPolicy{}, handler.EnqueueRequestsFromMapFunc(a.sessionsIn)).
		Watches(&junctionv1.UserPlaneFunction{}, handler.EnqueueRequestsFromMapFunc(a.sessionsIn)).
		Watches(&junctionv1.AddressPool{}, handler.EnqueueRequestsFromMapFunc(addrpool.SessionsOf(a.Client))).
		WatchesRawSource(source.Channel(a.events, &handler.EnqueueRequestForObject{})).
		Complete(a)
	if err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("cache did not sync")
		}
		if err := a.prune(ctx); err != nil {
			a.log.Error(err, "Stale rules not pruned")
		}
		a.watchLinks(ctx)
		return a.closeAll()
	}))
}

// sessionsIn enqueues the node's sessions in the object's namespace: a policy or UPF change
// may change any of them, and the cache holds only this node's sessions.
func (a *Agent) sessionsIn(ctx context.Context, obj client.Object) []reconcile.Request {
	var list junctionv1.ATSSSSessionList
	if err := a.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// Reconcile builds, updates or closes one session's tunnel and reports it.
func (a *Agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := a.log.WithValues("session", req.NamespacedName)
	var s junctionv1.ATSSSSession
	if err := a.Get(ctx, req.NamespacedName, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, a.closeTunnel(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	// A single-access session has no Junction tunnel: the UE's own stack sends on its 3GPP
	// interface; the agent neither serves nor reports it.
	if s.DeletionTimestamp != nil || s.Spec.UE.NodeName != a.opts.NodeName || s.Spec.Type == junctionv1.SessionSingleAccess {
		return ctrl.Result{}, a.closeTunnel(req.NamespacedName)
	}
	var upf *junctionv1.UserPlaneFunction
	u := &junctionv1.UserPlaneFunction{}
	if err := a.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.UPFRef.Name}, u); err == nil {
		upf = u
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	var policies junctionv1.SteeringPolicyList
	if err := a.List(ctx, &policies, client.InNamespace(s.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	cfg, unresolved, err := BuildConfig(&s, upf, policies.Items)
	if err != nil {
		// Nothing the agent can build from: no tunnel, and the session says why.
		if cerr := a.closeTunnel(req.NamespacedName); cerr != nil {
			log.Error(cerr, "Tunnel not closed")
		}
		return a.report(ctx, &s, nil, unresolved, notReady("InvalidSession", err.Error()))
	}
	if err := a.checkAddresses(ctx, &s); err != nil {
		var refused *addrpool.RefusedError
		if !errors.As(err, &refused) {
			return ctrl.Result{}, err
		}
		if cerr := a.closeTunnel(req.NamespacedName); cerr != nil {
			log.Error(cerr, "Tunnel not closed")
		}
		return a.report(ctx, &s, nil, unresolved, notReady(addrpool.Reason, err.Error()))
	}
	t, err := a.ensureTunnel(req.NamespacedName, cfg, log)
	if err != nil {
		// The condition says why; the error retries with backoff.
		_, serr := a.report(ctx, &s, nil, unresolved, notReady("TunnelFailed", err.Error()))
		return ctrl.Result{}, errors.Join(err, serr)
	}
	return a.report(ctx, &s, t, unresolved, condition{})
}

// ensureTunnel creates the session's tunnel, updates it in place, or rebuilds it when its
// addresses changed.
func (a *Agent) ensureTunnel(key types.NamespacedName, cfg Config, log logr.Logger) (*Tunnel, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.tunnels[key]; t != nil {
		ok, err := t.Update(cfg)
		if ok {
			return t, err
		}
		log.Info("Rebuilding tunnel", "reason", "addresses changed")
		delete(a.tunnels, key)
		if err := t.Close(); err != nil {
			log.Error(err, "Old tunnel not closed cleanly")
		}
	}
	for k, t := range a.tunnels {
		if t.Config().Session == cfg.Session {
			return nil, fmt.Errorf("spec.sessionAddress: %s is already the session address of %s on this node", cfg.Session, k)
		}
		// A leg's socket is bound to its UE address and the Junction port: each session needs
		// its own leg addresses, as each PDU session has its own UE address.
		for acc, addr := range cfg.Legs {
			if addr.IsValid() && t.Config().Legs[acc] == addr {
				return nil, fmt.Errorf("%s: %s is already a leg address of session %s on this node; each session needs its own", legField(contract.Access(acc)), addr, k)
			}
		}
	}
	notify := func() {
		obj := &junctionv1.ATSSSSession{}
		obj.Namespace, obj.Name = key.Namespace, key.Name
		select {
		case a.events <- event.GenericEvent{Object: obj}:
		default: // a status resync per StatusInterval catches up
		}
	}
	t, err := newTunnel(a.node, cfg, a.opts.Experiment, log.WithValues("tun", TUNName(cfg.Session)), a.metrics, notify)
	if err != nil {
		return nil, err
	}
	a.tunnels[key] = t
	log.Info("Tunnel up", "tun", t.Name(), "upf", cfg.UPF)
	return t, nil
}

func (a *Agent) closeTunnel(key types.NamespacedName) error {
	a.mu.Lock()
	t := a.tunnels[key]
	delete(a.tunnels, key)
	delete(a.status, key)
	a.mu.Unlock()
	if t == nil {
		return nil
	}
	a.log.Info("Tunnel closed", "session", key, "tun", t.Name())
	return errors.Join(t.Close(), a.pruneLive())
}

// pruneLive removes the rules no open tunnel needs (the protection rule of a UPF the last
// session toward it has left). Sessions not reconciled yet after a restart lose theirs too;
// they have no TUN until their reconcile, which adds the rules back.
func (a *Agent) pruneLive() error {
	a.mu.Lock()
	live := map[netip.Addr]netip.Addr{}
	for _, t := range a.tunnels {
		live[t.cfg.Session] = t.cfg.UPF
	}
	a.mu.Unlock()
	return pruneRules(a.node.nl, live)
}

// closeAll tears every tunnel down when the agent stops: no TUN, route or rule stays behind.
func (a *Agent) closeAll() error {
	a.mu.Lock()
	ts := a.tunnels
	a.tunnels = map[types.NamespacedName]*Tunnel{}
	a.mu.Unlock()
	var errs []error
	for _, t := range ts {
		errs = append(errs, t.Close())
	}
	errs = append(errs, a.pruneLive())
	return errors.Join(errs...)
}

// prune removes rules of sessions this node no longer has (deleted while no agent ran).
func (a *Agent) prune(ctx context.Context) error {
	var list junctionv1.ATSSSSessionList
	if err := a.List(ctx, &list); err != nil {
		return err
	}
	live := map[netip.Addr]netip.Addr{}
	for i := range list.Items {
		s := &list.Items[i]
		addr, err := netip.ParseAddr(string(s.Spec.SessionAddress))
		if err != nil {
			continue
		}
		var upf junctionv1.UserPlaneFunction
		if err := a.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.UPFRef.Name}, &upf); err != nil {
			live[addr] = netip.Addr{}
			continue
		}
		if ep, err := tunnelEndpoint(&upf, s.Spec.TunnelEndpoint); err == nil {
			live[addr], _ = netip.ParseAddr(string(ep.JunctionAddress))
		}
	}
	return pruneRules(a.node.nl, live)
}

// watchLinks re-reads every tunnel's legs on each link or address change until ctx ends.
func (a *Agent) watchLinks(ctx context.Context) {
	done := make(chan struct{})
	defer close(done)
	links := make(chan netlink.LinkUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 64)
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{Namespace: a.node.handle}); err != nil {
		a.log.Error(err, "No link events; legs follow probes only")
	}
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: a.node.handle}); err != nil {
		a.log.Error(err, "No address events; legs follow probes only")
	}
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-links:
			if !ok {
				links = nil // the subscription ended; addresses may still report
			}
		case _, ok := <-addrs:
			if !ok {
				addrs = nil
			}
		}
		a.mu.Lock()
		for _, t := range a.tunnels {
			t.LinkChanged()
		}
		a.mu.Unlock()
	}
}
