package controllers

// N4 endpoints run in the operator's leader, one per UserPlaneFunction whose spec has n4. The
// leader because the sessions are written once, by one process, into the objects every replica
// reads, and because PFCP associations are per UPF: two processes answering one SMF would give
// it two recovery time stamps. A leader change moves the endpoint with its state (the UPF's
// status.n4 and the sessions' annotations), so the SMF sees no restart; the N4 address should
// then be one that follows the leader (a Service selecting the leader, or a host port on the
// nodes the operator runs on), which is the chart's business (docs/n4.md).

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/n4"
)

// N4Endpoints starts, reconfigures and stops the UPFs' N4 endpoints.
type N4Endpoints struct {
	Client client.Client
	Cache  cache.Cache
	// Fleet reads the sessions' usage counters for the URRs' reports.
	Fleet    *Fleet
	Recorder record.EventRecorder
	Log      logr.Logger
	// Timeout is how long an N4 request waits for its session's entries (default 10s).
	Timeout time.Duration

	watch   sessionWatch
	mu      sync.Mutex
	running map[types.NamespacedName]*runningEndpoint
	invalid map[types.NamespacedName]int64 // the generation whose spec.n4 was reported invalid
	// notServed: UPFs with spec.n4 whose device no grant covers, reported (N4NotServed)
	notServed map[types.NamespacedName]bool
}

type runningEndpoint struct {
	cfg        n4.Config
	ep         *n4.Endpoint
	writer     *n4Writer
	cancel     context.CancelFunc
	stopWriter context.CancelFunc
	done       chan struct{}
}

// n4DrainTimeout bounds how long a stopping endpoint's writer may take to write what is left.
const n4DrainTimeout = 30 * time.Second

// n4ReleaseWait is how long a UPF leaving N4 waits for its SMFs to release their associations
// when it asked them to, before it releases the rest itself (n4.Endpoint.Release): an SMF that
// takes the request answers within its T1 and releases once it has deleted its sessions.
const n4ReleaseWait = 3 * time.Second

// policyGCAge is how old an N4 traffic class must be before it is deleted for having no
// session: younger ones may belong to an establishment in flight.
const policyGCAge = 2 * time.Minute

// Start runs until ctx ends (manager.Runnable; the manager runs it in the leader only).
func (r *N4Endpoints) Start(ctx context.Context) error {
	if r.Timeout == 0 {
		r.Timeout = 10 * time.Second
	}
	r.watch.waiters = map[types.NamespacedName][]chan struct{}{}
	r.running = map[types.NamespacedName]*runningEndpoint{}
	r.invalid = map[types.NamespacedName]int64{}
	r.notServed = map[types.NamespacedName]bool{}
	sessions, err := r.Cache.GetInformer(ctx, &junctionv1.ATSSSSession{})
	if err != nil {
		return err
	}
	if _, err := sessions.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: r.watch.notify, UpdateFunc: func(_, o any) { r.watch.notify(o) }, DeleteFunc: r.watch.notify,
	}); err != nil {
		return err
	}
	upfs, err := r.Cache.GetInformer(ctx, &junctionv1.UserPlaneFunction{})
	if err != nil {
		return err
	}
	// What an establishment reads, synced before an SMF is answered: an informer started by the
	// first request makes the whole first burst wait for its list.
	for _, obj := range []client.Object{&junctionv1.AddressPool{}, &junctionv1.SteeringPolicy{}, &networkingv1.ServiceCIDR{}} {
		if _, err := r.Cache.GetInformer(ctx, obj); err != nil && !meta.IsNoMatchError(err) { // ServiceCIDRs: Kubernetes 1.33 on
			return err
		}
	}
	if !r.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	if r.Fleet != nil {
		report := DownlinkDataFunc(r.downlinkData)
		r.Fleet.downlinkData.Store(&report)
		defer r.Fleet.downlinkData.Store(nil)
	}
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := upfs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return err
	}
	// A periodic pass retries endpoints that could not bind and collects unused traffic classes.
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	lastGC := time.Now()
	for {
		r.syncAll(ctx)
		select {
		case <-ctx.Done():
			r.stopAll()
			return nil
		case <-changed:
		case <-tick.C:
			if time.Since(lastGC) > time.Minute {
				lastGC = time.Now()
				r.collectPolicies(ctx)
			}
		}
	}
}

// downlinkData tells the endpoint of an N4 session's UPF that the session holds its first
// downlink frame while its FAR buffers (a manifest session has no SMF to tell).
func (r *N4Endpoints) downlinkData(upf, session types.NamespacedName) {
	seid, ok := n4SessionSEID(upf.Name, session.Name)
	if !ok || session.Namespace != upf.Namespace {
		return
	}
	r.mu.Lock()
	run := r.running[upf]
	r.mu.Unlock()
	if run != nil {
		run.ep.DownlinkData(seid)
	}
}

// NeedLeaderElection: the endpoints run in the leader only.
func (r *N4Endpoints) NeedLeaderElection() bool { return true }

func (r *N4Endpoints) syncAll(ctx context.Context) {
	var list junctionv1.UserPlaneFunctionList
	if err := r.Client.List(ctx, &list); err != nil {
		r.Log.Error(err, "listing UserPlaneFunctions for N4")
		return
	}
	want := map[types.NamespacedName]*junctionv1.UserPlaneFunction{}
	ungranted := map[types.NamespacedName]*junctionv1.UserPlaneFunction{}
	for i := range list.Items {
		u := &list.Items[i]
		if u.Spec.N4 == nil || u.DeletionTimestamp != nil {
			continue
		}
		// A UPF whose device no P4RuntimeTarget grants (its Connected condition says so) serves
		// no N4: an endpoint would take sessions that can never reach a device.
		if c := meta.FindStatusCondition(u.Status.Conditions, junctionv1.ConditionConnected); c != nil && c.Reason == ReasonDeviceNotGranted {
			ungranted[client.ObjectKeyFromObject(u)] = u
			continue
		}
		want[client.ObjectKeyFromObject(u)] = u
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, run := range r.running {
		switch _, ok := want[key]; {
		case ok:
		case ungranted[key] != nil:
			// Stopped as when the operator stops, the associations kept in the UPF's status: a
			// grant given back (or a status read before the grant was) restarts it unnoticed.
			r.stop(key, run)
		default:
			// The UPF left N4 for good: its SMFs are asked to release their associations.
			run.ep.Release(ctx, n4ReleaseWait)
			r.stop(key, run)
		}
	}
	for key, u := range ungranted { // said once each time it stops being served
		if !r.notServed[key] {
			r.notServed[key] = true
			r.event(u, corev1.EventTypeWarning, "N4NotServed", "no N4 endpoint while no P4RuntimeTarget grants this UserPlaneFunction's device (docs/p4runtime-targets.md)")
		}
	}
	for key := range r.notServed {
		if ungranted[key] == nil {
			delete(r.notServed, key)
		}
	}
	for key, u := range want {
		cfg, err := r.config(u)
		if err != nil {
			// Said once per change of the spec; an endpoint on the old spec stops.
			if run := r.running[key]; run != nil {
				r.stop(key, run)
			}
			if r.invalid[key] != u.Generation {
				r.invalid[key] = u.Generation
				r.event(u, corev1.EventTypeWarning, "N4Invalid", err.Error())
			}
			continue
		}
		delete(r.invalid, key)
		if run := r.running[key]; run != nil {
			if sameN4Config(run.cfg, cfg) {
				continue
			}
			r.stop(key, run)
		}
		r.start(ctx, u, cfg)
	}
	for key, u := range want {
		if run := r.running[key]; run != nil {
			if up, known := userPlaneOf(u); known {
				run.ep.UserPlane(up) // a change is reported to the SMFs (Node Report)
			}
		}
	}
}

// userPlaneOf reads from a UPF's status whether its switch holds the sessions (up: primary,
// running the pipeline, replayed) or is lost (the stream to it is down), and whether the status
// says either: connecting, a backup (another controller holds the switch, which keeps its
// entries) or a replay in progress say neither.
func userPlaneOf(u *junctionv1.UserPlaneFunction) (up, known bool) {
	connected := meta.FindStatusCondition(u.Status.Conditions, junctionv1.ConditionConnected)
	switch {
	case connected == nil:
		return false, false
	case connected.Status == metav1.ConditionFalse && connected.Reason == ReasonDisconnected:
		return false, true
	case connected.Status != metav1.ConditionTrue || !meta.IsStatusConditionTrue(u.Status.Conditions, junctionv1.ConditionPipelineReady):
		return false, false
	}
	if ready := meta.FindStatusCondition(u.Status.Conditions, junctionv1.ConditionReady); ready != nil && ready.Reason == ReasonReplaying {
		return false, false
	}
	return true, true
}

func (r *N4Endpoints) start(ctx context.Context, u *junctionv1.UserPlaneFunction, cfg n4.Config) {
	key := client.ObjectKeyFromObject(u)
	ref := &junctionv1.UserPlaneFunction{ObjectMeta: metav1.ObjectMeta{Name: u.Name, Namespace: u.Namespace, UID: u.UID}}
	cfg.Log = r.Log.WithValues("upf", key)
	cfg.Event = func(warning bool, reason, msg string) {
		t := corev1.EventTypeNormal
		if warning {
			t = corev1.EventTypeWarning
		}
		r.event(ref, t, reason, msg)
	}
	store := &n4Store{c: r.Client, fleet: r.Fleet, upf: key, watch: &r.watch, timeout: r.Timeout, log: cfg.Log}
	store.writer = newN4Writer(store)
	ep := n4.New(cfg, store)
	if err := ep.Bind(ctx); err != nil {
		r.event(u, corev1.EventTypeWarning, "N4BindFailed", err.Error())
		return
	}
	epCtx, cancel := context.WithCancel(ctx)
	writerCtx, stopWriter := context.WithCancel(ctx)
	run := &runningEndpoint{cfg: cfg, ep: ep, writer: store.writer, cancel: cancel, stopWriter: stopWriter, done: make(chan struct{})}
	r.running[key] = run
	go store.writer.run(writerCtx)
	go func() {
		defer close(run.done)
		if err := ep.Serve(epCtx); err != nil {
			r.event(ref, corev1.EventTypeWarning, "N4Stopped", err.Error())
		}
	}()
}

// stop ends an endpoint, then lets its writer finish what the SMFs were told (bounded by
// n4DrainTimeout); what it cannot write, a new endpoint learns from unsavedSince.
func (r *N4Endpoints) stop(key types.NamespacedName, run *runningEndpoint) {
	run.cancel()
	<-run.done
	ctx, cancel := context.WithTimeout(context.Background(), n4DrainTimeout)
	run.writer.drain(ctx)
	cancel()
	run.stopWriter()
	delete(r.running, key)
}

// stopAll stops every endpoint without releasing its associations: a new leader takes them over.
func (r *N4Endpoints) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, run := range r.running {
		r.stop(key, run)
	}
}

func (r *N4Endpoints) event(obj client.Object, t, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(obj, t, reason, msg)
	}
}

// config reads a UPF's spec.n4 (defaults: listen 0.0.0.0:8805, heartbeats every 10s, a grace
// of 60s, the first tunnel endpoint; n4.New has the default of trafficStopAfter).
func (r *N4Endpoints) config(u *junctionv1.UserPlaneFunction) (n4.Config, error) {
	s := u.Spec.N4
	cfg := n4.Config{NodeID: s.NodeID, Heartbeat: 10 * time.Second, Grace: 60 * time.Second}
	listen := s.Listen
	if listen == "" {
		listen = "0.0.0.0:8805"
	}
	var err error
	if cfg.Listen, err = netip.ParseAddrPort(listen); err != nil {
		return cfg, fmt.Errorf("spec.n4.listen: %v", err)
	}
	for _, d := range []struct {
		field string
		v     junctionv1.Duration
		dst   *time.Duration
	}{{"spec.n4.heartbeatInterval", s.HeartbeatInterval, &cfg.Heartbeat}, {"spec.n4.gracePeriod", s.GracePeriod, &cfg.Grace},
		{"spec.n4.trafficStopAfter", s.TrafficStopAfter, &cfg.TrafficStop}} {
		if d.v == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(string(d.v)); err != nil || *d.dst <= 0 {
			return cfg, fmt.Errorf("%s: %q is not a positive duration", d.field, d.v)
		}
	}
	i, err := u.TunnelEndpointIndex(s.TunnelEndpoint)
	if err != nil {
		return cfg, fmt.Errorf("spec.n4.tunnelEndpoint: %v", err)
	}
	te := u.Spec.TunnelEndpoints[i]
	if cfg.N3, err = netip.ParseAddr(string(te.N3Address)); err != nil {
		return cfg, fmt.Errorf("tunnelEndpoints[%s].n3Address: %v", te.Name, err)
	}
	cfg.UPF, cfg.TunnelEndpoint = u.Name, te.Name
	cfg.RestartOnAssociationOnly = s.SMFRestartDetection == junctionv1.SMFRestartOnAssociation
	for i, a := range s.AllowedSMFs {
		p, err := netip.ParsePrefix(string(a))
		if err != nil {
			return cfg, fmt.Errorf("spec.n4.allowedSMFs[%d]: %v", i, err)
		}
		cfg.AllowedSMFs = append(cfg.AllowedSMFs, p)
	}
	for i, a := range s.AssociateWith {
		to, err := smfTarget(a)
		if err != nil {
			return cfg, fmt.Errorf("spec.n4.associateWith[%d]: %v", i, err)
		}
		cfg.AssociateWith = append(cfg.AssociateWith, to)
	}
	for i, g := range s.AccessGateways {
		a, err := netip.ParseAddr(string(g.Address))
		if err != nil {
			return cfg, fmt.Errorf("spec.n4.accessGateways[%d].address: %v", i, err)
		}
		if cfg.Gateways == nil {
			cfg.Gateways = map[netip.Addr]junctionv1.NonThreeGPPType{}
		}
		cfg.Gateways[a] = g.Type
	}
	// The UP F-SEID's address: where SMFs send this UPF's session messages.
	switch a, err := netip.ParseAddr(s.NodeID); {
	case s.Address != "":
		cfg.Address, err = netip.ParseAddr(string(s.Address))
		if err != nil {
			return cfg, fmt.Errorf("spec.n4.address: %v", err)
		}
	case err == nil && a.Is4():
		cfg.Address = a
	case !cfg.Listen.Addr().IsUnspecified():
		cfg.Address = cfg.Listen.Addr()
	default:
		return cfg, fmt.Errorf("spec.n4: nodeID %q is not an IPv4 address and listen is %s: set spec.n4.address, the IPv4 address SMFs reach the UPF at", s.NodeID, listen)
	}
	return cfg, nil
}

// smfTarget is an entry of spec.n4.associateWith as host:port, with PFCP's port 8805 (TS 29.244
// §4.2.2) when it names none.
func smfTarget(a string) (string, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		host, port = a, "8805"
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return "", fmt.Errorf("%q: port %q is not 1 to 65535", a, port)
	}
	if ip, err := netip.ParseAddr(host); (err == nil && !ip.Is4()) || host == "" {
		return "", fmt.Errorf("%q: want an IPv4 address or a DNS name", a)
	}
	return net.JoinHostPort(host, port), nil
}

func sameN4Config(a, b n4.Config) bool {
	return reflect.DeepEqual(a.Target, b.Target) && a.Listen == b.Listen && a.NodeID == b.NodeID && a.Address == b.Address && a.Heartbeat == b.Heartbeat && a.Grace == b.Grace &&
		a.TrafficStop == b.TrafficStop &&
		a.RestartOnAssociationOnly == b.RestartOnAssociationOnly && slices.Equal(a.AllowedSMFs, b.AllowedSMFs) && slices.Equal(a.AssociateWith, b.AssociateWith)
}

// collectPolicies deletes the N4 endpoint's traffic classes no session selects any more.
func (r *N4Endpoints) collectPolicies(ctx context.Context) {
	var pols junctionv1.SteeringPolicyList
	if err := r.Client.List(ctx, &pols, client.MatchingLabels{labelN4Policy: "true"}); err != nil {
		return
	}
	for i := range pols.Items {
		p := &pols.Items[i]
		if time.Since(p.CreationTimestamp.Time) < policyGCAge || p.DeletionTimestamp != nil {
			continue
		}
		var users junctionv1.ATSSSSessionList
		if err := r.Client.List(ctx, &users, client.InNamespace(p.Namespace), client.MatchingFields{indexSessionPolicy: p.Name}, client.Limit(1)); err != nil || len(users.Items) > 0 {
			continue
		}
		if r.Fleet.direct.selects(p.Namespace, p.Name) {
			continue // a session whose object is not written yet
		}
		if err := r.Client.Delete(ctx, p, client.Preconditions{ResourceVersion: &p.ResourceVersion}); err == nil {
			r.Log.V(1).Info("deleted an N4 traffic class no session selects", "policy", client.ObjectKeyFromObject(p))
		}
	}
}
