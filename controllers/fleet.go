package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/alloc"
	"github.com/junction-atsss/junction/internal/pathmon"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// Owner names in the programmers' desired state.
const ownerUPF = "upf"

func policyOwner(ns, name string) string  { return "policy/" + ns + "/" + name }
func sessionOwner(ns, name string) string { return "session/" + ns + "/" + name }
func peerOwner(addr string) string        { return "peer/" + addr }

// Fleet holds the runtime of every UserPlaneFunction this operator manages, and the allocations
// shared across UPFs (application IDs). It is a manager Runnable that needs leader election:
// only the leader connects to devices, and it starts only once elected.
type Fleet struct {
	// Client is the manager's (cached) client; Reader reads the API server directly, for the
	// restores that must see every recorded allocation.
	Client client.Client
	Reader client.Reader
	Log    logr.Logger
	// Window is the least time between the starts of a UPF programmer's writes; changes that
	// arrive meanwhile share the next (default 2ms).
	Window time.Duration
	// ElectionLow gives the leadership epoch of the P4Runtime election IDs (electionIDs), once
	// this process leads.
	ElectionLow func(context.Context) (uint64, error)
	// ElectionIDHigh is the high half of the election IDs (Options.ElectionIDHigh).
	ElectionIDHigh uint64
	// Metrics of the P4Runtime clients (registered by the caller); nil records nothing.
	Metrics *upfclient.Metrics
	// PathConfig tunes flip-flop detection; StatusInterval bounds path status refreshes.
	PathConfig     pathmon.Config
	StatusInterval time.Duration
	// ReconnectBackoff shapes the P4Runtime clients' reconnect delays.
	ReconnectBackoff upfclient.Backoff
	// OnDeposed is called when a UPF's primary turns out to be a newer leader of this operator
	// (deposedBy): cmd/manager stops the process, as losing the lease would.
	OnDeposed func(upf types.NamespacedName)
	// Reserved are ranges no session address may take beside the ServiceCIDRs (clusterRanges):
	// the API server's address, the cluster's node and pod ranges.
	Reserved []addrpool.Reserved

	// downlinkData is told of each session's first held downlink frame (downlink_buffer.go); the
	// N4 endpoints set it (a manifest session has no SMF to tell).
	downlinkData atomic.Pointer[DownlinkDataFunc]

	sessionEvents, policyEvents, upfEvents *requests
	// upfStatusEvents ask for a UPF status refresh that may wait upfStatusDelay (usage counts).
	upfStatusEvents *requests

	startOnce sync.Once
	started   chan struct{}
	ctx       context.Context
	low       uint64

	mu        sync.Mutex
	upfs      map[types.NamespacedName]*upfRuntime
	creating  map[types.NamespacedName]*creation
	apps      *alloc.Pool
	appsReady bool

	direct directSessions  // N4 sessions the endpoints program themselves (n4_direct.go)
	hosts  deviceHostCache // the device hosts devicePeers looked up
}

func (f *Fleet) init() {
	f.startOnce.Do(func() {
		f.started = make(chan struct{})
		f.upfs = map[types.NamespacedName]*upfRuntime{}
		f.creating = map[types.NamespacedName]*creation{}
		f.sessionEvents = newRequests(func() client.Object { return &junctionv1.ATSSSSession{} })
		f.policyEvents = newRequests(func() client.Object { return &junctionv1.SteeringPolicy{} })
		f.upfEvents = newRequests(func() client.Object { return &junctionv1.UserPlaneFunction{} })
		f.upfStatusEvents = newRequests(func() client.Object { return &junctionv1.UserPlaneFunction{} })
		// Application IDs are 16 bits; 0 is the default application (traffic no policy matches).
		f.apps = alloc.NewPool("application ID", 1, 1<<16)
		if f.Window <= 0 {
			f.Window = 2 * time.Millisecond
		}
		if f.StatusInterval <= 0 {
			f.StatusInterval = 10 * time.Second
		}
		if f.PathConfig == (pathmon.Config{}) {
			f.PathConfig = pathmon.DefaultConfig()
		}
	})
}

// NeedLeaderElection: devices are programmed by the leader only.
func (f *Fleet) NeedLeaderElection() bool { return true }

// Start runs until ctx ends; runtimes live under its context.
func (f *Fleet) Start(ctx context.Context) error {
	f.init()
	low := uint64(1)
	if f.ElectionLow != nil {
		var err error
		if low, err = f.ElectionLow(ctx); err != nil {
			return fmt.Errorf("deriving the P4Runtime election ID: %w", err)
		}
	}
	f.ctx, f.low = ctx, low
	for _, q := range []*requests{f.sessionEvents, f.policyEvents, f.upfEvents, f.upfStatusEvents} {
		go q.run(ctx)
	}
	f.Log.Info("Fleet started", "electionIDLow", low)
	close(f.started)
	<-ctx.Done()
	f.mu.Lock()
	rts := make([]*upfRuntime, 0, len(f.upfs))
	for _, rt := range f.upfs {
		rts = append(rts, rt)
	}
	f.upfs = map[types.NamespacedName]*upfRuntime{}
	f.mu.Unlock()
	for _, rt := range rts {
		rt.stop()
	}
	return nil
}

func (f *Fleet) wait(ctx context.Context) error {
	f.init()
	select {
	case <-f.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runtime returns the UPF's runtime, creating it, with its allocations restored from the API
// server and its desired state seeded, on first use. The creation (a ConfigMap read and two
// uncached lists, seconds at 100k sessions) runs outside the Fleet's lock: other UPFs' runtimes
// stay available meanwhile, and concurrent callers for the same UPF wait for the one creation.
func (f *Fleet) runtime(ctx context.Context, upf *junctionv1.UserPlaneFunction) (*upfRuntime, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(upf)
	if _, err := checkGrant(ctx, f.Client, &f.hosts, upf); err != nil {
		var le *loadError
		if errors.As(err, &le) {
			f.remove(key) // its grant was taken back: the device is no longer its to program
		}
		return nil, err
	}
	peers, err := devicePeers(ctx, f.Client, &f.hosts, upf)
	if err != nil {
		return nil, err
	}
	if other := deviceHolder(upf, peers); other != nil {
		f.remove(key) // in case it programmed the device before the other one appeared
		return nil, &loadError{ReasonDuplicateDevice, fmt.Errorf("UserPlaneFunction %s/%s names the same device (%s) and programs it; this one waits until it goes",
			other.Namespace, other.Name, upf.Spec.P4Runtime.Address)}
	}
	for {
		f.mu.Lock()
		if rt := f.upfs[key]; rt != nil {
			if rt.uid == upf.UID {
				f.mu.Unlock()
				return rt, nil
			}
			delete(f.upfs, key) // deleted and created again under the same name
			go rt.stop()
		}
		c := f.creating[key]
		if c == nil {
			c = &creation{done: make(chan struct{})}
			f.creating[key] = c
			f.mu.Unlock()
			rt, err := f.create(ctx, upf)
			f.mu.Lock()
			delete(f.creating, key)
			if err == nil {
				f.upfs[key] = rt
			}
			c.err = err
			close(c.done)
			f.mu.Unlock()
			return rt, err
		}
		f.mu.Unlock()
		select {
		case <-c.done:
			if c.err != nil {
				return nil, c.err
			}
			// Created: look it up again (its UID is checked there).
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// current returns the UPF's runtime if one exists for this very object, without runtime()'s
// reads of the device's grant and of the other UPFs that name the device. The runtime passed
// those gates when it was made, and the UPF's controller, which a grant's change and every UPF
// naming the same device trigger, calls runtime() then and removes it as soon as one fails: so
// this sees a revoked grant or a new holder when the controller has, a reconcile after the
// informer. N4 establishments take it: those reads were an eighth of an establishment's CPU.
func (f *Fleet) current(upf *junctionv1.UserPlaneFunction) *upfRuntime {
	f.init()
	f.mu.Lock()
	defer f.mu.Unlock()
	if rt := f.upfs[client.ObjectKeyFromObject(upf)]; rt != nil && rt.uid == upf.UID {
		return rt
	}
	return nil
}

// devicePeers lists the other UserPlaneFunctions that name upf's device (deleting ones included,
// sameDevice) and that a P4RuntimeTarget grants it: a UPF without a grant is never connected, so
// it takes the device from no one. They are the cache's own objects: callers read them, never
// write them.
func devicePeers(ctx context.Context, c client.Reader, hosts *deviceHostCache, upf *junctionv1.UserPlaneFunction) ([]junctionv1.UserPlaneFunction, error) {
	var list junctionv1.UserPlaneFunctionList
	mine := upfDevice(upf)
	// Read only (no deep copy): every session's programming asks, N4's at thousands a second.
	if err := c.List(ctx, &list, client.MatchingFields{indexUPFDevice: mine.key()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, o := range list.Items {
		if o.UID == upf.UID || !hosts.sameDevice(ctx, mine, upfDevice(&o)) {
			continue
		}
		if g, err := grantOf(ctx, c, hosts, &o); err != nil {
			return nil, err
		} else if g != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// device is what names one P4Runtime device: a UserPlaneFunction's spec.p4runtime
// (upfDevice) or a P4RuntimeTarget's spec (targetDevice).
type device struct {
	address  string
	deviceID int64
	role     string
}

func upfDevice(upf *junctionv1.UserPlaneFunction) device {
	ep := upf.Spec.P4Runtime
	return device{string(ep.Address), ep.DeviceID, ep.Role}
}

func targetDevice(t *junctionv1.P4RuntimeTarget) device {
	return device{string(t.Spec.Address), t.Spec.DeviceID, t.Spec.Role}
}

// key is what of a device its spec says without a lookup: the port, device ID and role. Devices
// with one key are one device when their hosts resolve to a common address (sameDevice).
func (d device) key() string {
	_, port, err := net.SplitHostPort(d.address)
	if err != nil {
		port = strings.ToLower(d.address) // the API server's pattern makes this unreachable
	}
	return fmt.Sprintf("%s|%d|%s", port, d.deviceID, d.role)
}

// sameDevice reports whether a and b name one device: the same port, device ID and role at hosts
// that resolve to a common address, however they are spelled (localhost and 127.0.0.1, a name
// and its address, upper case).
func (c *deviceHostCache) sameDevice(ctx context.Context, a, b device) bool {
	return a.key() == b.key() && overlap(c.hosts(ctx, a.address), c.hosts(ctx, b.address))
}

// resolveTimeout bounds the lookup of a UPF's host name: a UPF's reconcile waits for it.
const resolveTimeout = 2 * time.Second

// hostTTL is how long a device host's lookup is reused: every session programmed asks who else
// names its UPF's device, and on a fleet of switches that all listen on 9559 with device ID 1
// the answer holds every other UPF, each looked up. A name that starts (or stops) resolving to
// a common address is seen within it.
const hostTTL = 30 * time.Second

// deviceHostCache keeps deviceHosts' answers by host for hostTTL; the zero value is ready.
type deviceHostCache struct {
	mu  sync.Mutex
	m   map[string]cachedHosts
	now func() time.Time // nil: time.Now
}

type cachedHosts struct {
	hosts []string
	at    time.Time
}

// hosts is deviceHosts(address), from the cache while fresh.
func (c *deviceHostCache) hosts(ctx context.Context, address string) []string {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	key := strings.ToLower(address)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now().Sub(e.at) < hostTTL {
		return e.hosts
	}
	hosts := deviceHosts(ctx, address)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedHosts{}
	}
	for k, old := range c.m { // the fleet's hosts, and the names it no longer uses
		if now().Sub(old.at) >= hostTTL {
			delete(c.m, k)
		}
	}
	c.m[key] = cachedHosts{hosts: hosts, at: now()}
	c.mu.Unlock()
	return hosts
}

// deviceHosts is where address's host is: its IP addresses (resolved for a name), or, when a name
// does not resolve, the name itself in lower case, so that two spellings of one unresolvable
// name still match.
func deviceHosts(ctx context.Context, address string) []string {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return []string{strings.ToLower(address)}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []string{ip.Unmap().String()}
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return []string{"name:" + strings.TrimSuffix(strings.ToLower(host), ".")}
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.Unmap().String()
	}
	return out
}

func overlap(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// deviceHolder returns, of upf's peers on one device, the one that programs it when it is not
// upf itself. Two objects naming one device (devicePeers) would each take primary
// in turn and delete each other's entries in their replays: the oldest one programs it (then the
// first by namespace and name), the others wait.
func deviceHolder(upf *junctionv1.UserPlaneFunction, peers []junctionv1.UserPlaneFunction) *junctionv1.UserPlaneFunction {
	holder := upf
	for i := range peers {
		o := &peers[i]
		if o.DeletionTimestamp != nil {
			continue
		}
		if o.CreationTimestamp.Before(&holder.CreationTimestamp) || (o.CreationTimestamp.Equal(&holder.CreationTimestamp) &&
			client.ObjectKeyFromObject(o).String() < client.ObjectKeyFromObject(holder).String()) {
			holder = o
		}
	}
	if holder == upf {
		return nil
	}
	return holder
}

// creation is a runtime being created; done closes when it is in f.upfs or err says why not.
type creation struct {
	done chan struct{}
	err  error
}

func (f *Fleet) create(ctx context.Context, upf *junctionv1.UserPlaneFunction) (*upfRuntime, error) {
	pipe, err := loadPipeline(ctx, f.Reader, upf)
	if err != nil {
		return nil, err
	}
	rt := newRuntime(f, upf, pipe)
	if err := f.restore(ctx, rt, upf); err != nil {
		return nil, fmt.Errorf("restoring the allocations of UserPlaneFunction %s: %w", client.ObjectKeyFromObject(upf), err)
	}
	rt.start(f.ctx)
	return rt, nil
}

// runtimesIn returns the runtimes of the namespace's UPFs, each created if the operator just
// started (one not made yet would be skipped), and the names of those that cannot have one
// (their pipeline is missing or invalid): what should be on their devices is not. Deleting UPFs
// are left out, and so are UPFs waiting as duplicates of another's device (DuplicateDevice):
// they program nothing by design, so nothing of theirs is missing.
func (f *Fleet) runtimesIn(ctx context.Context, ns string) (rts []*upfRuntime, notReady []string, err error) {
	var upfs junctionv1.UserPlaneFunctionList
	if err := f.Client.List(ctx, &upfs, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	for i := range upfs.Items {
		upf := &upfs.Items[i]
		if upf.DeletionTimestamp != nil {
			continue
		}
		rt, err := f.runtime(ctx, upf)
		var le *loadError
		switch {
		case errors.As(err, &le) && le.Reason == ReasonDuplicateDevice:
			continue
		case errors.As(err, &le):
			notReady = append(notReady, upf.Name)
		case err != nil:
			return nil, nil, err
		default:
			rts = append(rts, rt)
		}
	}
	return rts, notReady, nil
}

// runtimesHolding returns the runtimes that hold indexes for session key (ns/name): one, or
// none once they are freed.
func (f *Fleet) runtimesHolding(key string) []*upfRuntime {
	f.mu.Lock()
	rts := make([]*upfRuntime, 0, len(f.upfs))
	for _, rt := range f.upfs {
		rts = append(rts, rt)
	}
	f.mu.Unlock()
	var out []*upfRuntime
	for _, rt := range rts {
		if rt.holds(key) {
			out = append(out, rt)
		}
	}
	return out
}

// remove stops and forgets the UPF's runtime.
func (f *Fleet) remove(key types.NamespacedName) {
	f.init()
	f.mu.Lock()
	rt := f.upfs[key]
	delete(f.upfs, key)
	f.mu.Unlock()
	if rt != nil {
		rt.stop()
	}
}

// appID returns the policy's application ID: the one its status records, or a new one that the
// caller must record in the status before writing any entry.
func (f *Fleet) appID(ctx context.Context, pol *junctionv1.SteeringPolicy) (id uint16, isNew bool, err error) {
	if err := f.wait(ctx); err != nil {
		return 0, false, err
	}
	if err := f.restoreApps(ctx); err != nil {
		return 0, false, err
	}
	owner := policyOwner(pol.Namespace, pol.Name)
	if s := pol.Status.ApplicationID; s != nil {
		if have, ok := f.apps.Lookup(owner); ok && have == uint32(*s) {
			return uint16(have), false, nil
		}
		if err := f.apps.Restore(owner, owner, uint32(*s)); err == nil {
			return uint16(*s), false, nil
		}
		// The recorded ID is taken (restored for another policy first): allocate anew.
	}
	idx, err := acquireUnnamed(f.apps, owner, func(id uint32) bool { return f.appIDNamed(uint16(id)) })
	if err != nil {
		return 0, false, err
	}
	return uint16(idx), true, nil
}

// acquireUnnamed allocates owner an index of pool that named reports free of references. A
// deleted policy's application ID is freed at once, but its sessions drop the session_overrides
// naming it in their own reconciles (and a device may be slow to delete them): an ID an override
// still names, wanted or on a device, is passed over, or the new policy would inherit the old
// one's per-session steering.
func acquireUnnamed(pool *alloc.Pool, owner string, named func(uint32) bool) (uint32, error) {
	var passed []string // held while looking further, so that Acquire moves on
	defer func() {
		for _, q := range passed {
			pool.Release(q, q)
		}
	}()
	for {
		idx, err := pool.Acquire(owner, owner)
		if err != nil {
			return 0, err
		}
		if !named(idx) {
			return idx, nil
		}
		pool.Release(owner, owner)
		q := fmt.Sprintf("still-named/%d", idx)
		if err := pool.Restore(q, q, idx); err != nil {
			return 0, err
		}
		passed = append(passed, q)
	}
}

// appIDNamed reports whether a session_overrides entry on any UPF, wanted or on the device,
// names the application ID.
func (f *Fleet) appIDNamed(id uint16) bool {
	f.mu.Lock()
	rts := make([]*upfRuntime, 0, len(f.upfs))
	for _, rt := range f.upfs {
		rts = append(rts, rt)
	}
	f.mu.Unlock()
	for _, rt := range rts {
		if rt.prog.AppIDInUse(id) {
			return true
		}
	}
	return false
}

// releaseApp frees a deleted policy's application ID. The pool is restored first: restored
// after the release, it would not know the freed ID, and a restarted operator would hand it out
// next (allocation goes on after the highest restored ID) while the old overrides may still name it.
func (f *Fleet) releaseApp(ctx context.Context, pol *junctionv1.SteeringPolicy) error {
	if err := f.restoreApps(ctx); err != nil {
		return err
	}
	owner := policyOwner(pol.Namespace, pol.Name)
	f.apps.Release(owner, owner)
	return nil
}

// restoreApps rebuilds the application ID pool from every policy's status, once.
func (f *Fleet) restoreApps(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.appsReady {
		return nil
	}
	var list junctionv1.SteeringPolicyList
	if err := f.Reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing SteeringPolicies to restore application IDs: %w", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.ApplicationID == nil {
			continue
		}
		owner := policyOwner(p.Namespace, p.Name)
		if err := f.apps.Restore(owner, owner, uint32(*p.Status.ApplicationID)); err != nil {
			f.Log.Error(err, "Recorded application ID not restored; the policy gets a new one", "policy", owner)
		}
	}
	f.appsReady = true
	return nil
}

func (f *Fleet) enqueueSessions(keys []types.NamespacedName) { f.sessionEvents.add(keys...) }

func (f *Fleet) enqueuePolicies(keys []types.NamespacedName) { f.policyEvents.add(keys...) }

func (f *Fleet) enqueueUPF(key types.NamespacedName) { f.upfEvents.add(key) }

// refreshUPFStatus asks for a UPF status refresh that may wait upfStatusDelay: table usage and
// allocations change with every session, and a burst must not cost a status write per session.
func (f *Fleet) refreshUPFStatus(key types.NamespacedName) { f.upfStatusEvents.add(key) }
