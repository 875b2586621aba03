package controllers

import (
	"context"
	"fmt"
	"net"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/pathmon"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// Options configure the operator's controllers (cmd/manager maps its flags to them).
type Options struct {
	// ElectionLow gives the leadership epoch, the upper half of the P4Runtime election ID's low
	// 64 bits, once this process leads (below 2^32); see LeaseElectionLow, StartTimeElectionLow
	// and electionIDs.
	ElectionLow func(context.Context) (uint64, error)
	// ElectionIDHigh is the high 64 bits of every P4Runtime election ID: the cluster
	// administrator's (cmd/manager's --p4runtime-election-id-high), never a UPF's, so that no one
	// who may write a UserPlaneFunction can outrank another controller of a switch.
	ElectionIDHigh uint64
	// MaxConcurrentReconciles of the session controller (default
	// DefaultMaxConcurrentReconciles): concurrent sessions share WriteRequests.
	MaxConcurrentReconciles int
	// WriteWindow is the least time between the starts of a UPF programmer's writes (default
	// 2ms); a change after a quiet spell is written at once.
	WriteWindow time.Duration
	// PathConfig tunes flip-flop detection (default pathmon.DefaultConfig()).
	PathConfig pathmon.Config
	// StatusInterval bounds how often path monitoring refreshes a session's status (default 10s).
	StatusInterval time.Duration
	// ReconnectBackoff shapes P4Runtime reconnects (zero: the client's defaults).
	ReconnectBackoff upfclient.Backoff
	// OnDeposed: see Fleet.OnDeposed.
	OnDeposed func(upf types.NamespacedName)
	// N4Timeout is how long an N4 request waits for its session's entries (default 10s).
	N4Timeout time.Duration
	// Reserved are ranges no session address may take beside the ServiceCIDRs and the API
	// server's address, which the operator finds itself: the cluster's node and pod ranges.
	Reserved []addrpool.Reserved
}

// ManagerOptions are the manager options the controllers expect; the caller adds the rest
// (scheme, metrics, leader election, namespaces).
//
//   - Secrets and ConfigMaps are read from the API server when a UPF is reconciled (its pipeline
//     ConfigMap and TLS Secret, a few reads per UPF event), not from a cache, and the watches that
//     trigger those reconciles keep metadata only. A cache would hold a copy of every Secret and
//     ConfigMap in the cluster (Helm's release Secrets included) in the operator's memory.
//   - The Secret watch covers secretNamespaces only (every namespace when empty): the operator
//     may read Secrets in the namespaces that hold UPFs alone (docs/threat-model.md), and a
//     watch beyond its RBAC would never sync.
//   - The cache's watches have a connection to the API server of their own. On the connection
//     the client writes on, their events queued in HTTP/2 behind up to MaxConcurrentReconciles
//     status writes in flight, and new sessions reached the operator a second or more after their
//     create (docs/operator.md, "Benchmark"). Setting Dial makes client-go build that connection's
//     transport instead of sharing its cached one; the timeouts are client-go's.
//   - The REST mapper keeps each kind's mapping a minute (newRESTMapper).
//   - Cached objects keep no managedFields: nothing here reads them (writes are patches,
//     status updates and applies, which the API server merges), and with N4 sessions they were
//     a tenth of the cache.
func ManagerOptions(cfg *rest.Config, secretNamespaces []string) (ctrl.Options, error) {
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	watchHC, err := rest.HTTPClientFor(watchCfg)
	if err != nil {
		return ctrl.Options{}, fmt.Errorf("the watches' HTTP client: %w", err)
	}
	secrets := map[string]cache.Config{cache.AllNamespaces: {}}
	if len(secretNamespaces) > 0 {
		secrets = map[string]cache.Config{}
		for _, ns := range secretNamespaces {
			secrets[ns] = cache.Config{}
		}
	}
	return ctrl.Options{
		MapperProvider: newRESTMapper,
		Client:         client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
		Cache: cache.Options{HTTPClient: watchHC, DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: secrets},
		}},
	}, nil
}

// SetupWithManager adds the fleet of UPF runtimes, the three controllers and the N4 endpoints
// (N4Endpoints) to mgr.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, o Options) (*Fleet, *N4Endpoints, error) {
	fleet := &Fleet{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Log: mgr.GetLogger().WithName("fleet"),
		Window: o.WriteWindow, ElectionLow: o.ElectionLow, ElectionIDHigh: o.ElectionIDHigh, Metrics: P4RuntimeMetrics,
		PathConfig: o.PathConfig, StatusInterval: o.StatusInterval, ReconnectBackoff: o.ReconnectBackoff,
		OnDeposed: o.OnDeposed, Reserved: append(addrpool.APIServer(ctx, mgr.GetConfig().Host), o.Reserved...),
	}
	fleet.init()
	if err := mgr.Add(fleet); err != nil {
		return nil, nil, err
	}
	if err := setupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, nil, fmt.Errorf("cache indexes: %w", err)
	}
	rec := mgr.GetEventRecorderFor("junction-operator")
	if err := (&UserPlaneFunctionReconciler{Client: mgr.GetClient(), Fleet: fleet, Recorder: rec}).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("UserPlaneFunction controller: %w", err)
	}
	if err := (&SteeringPolicyReconciler{Client: mgr.GetClient(), Fleet: fleet, Recorder: rec}).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("SteeringPolicy controller: %w", err)
	}
	if err := (&ATSSSSessionReconciler{Client: mgr.GetClient(), Fleet: fleet, Recorder: rec, MaxConcurrentReconciles: o.MaxConcurrentReconciles}).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("ATSSSSession controller: %w", err)
	}
	n4s := &N4Endpoints{Client: mgr.GetClient(), Cache: mgr.GetCache(), Fleet: fleet, Recorder: rec, Log: mgr.GetLogger().WithName("n4"), Timeout: o.N4Timeout}
	if err := mgr.Add(n4s); err != nil {
		return nil, nil, err
	}
	return fleet, n4s, nil
}

// LeaseElectionLow derives the leadership epoch of the P4Runtime election IDs from the leader-election
// Lease this process holds once elected: its leaseTransitions + 1. Every change of holder
// increments leaseTransitions, so a newly elected leader always outranks every earlier leader,
// whatever the clocks say.
func LeaseElectionLow(r client.Reader, namespace, name string) func(context.Context) (uint64, error) {
	return func(ctx context.Context) (uint64, error) {
		var lease coordinationv1.Lease
		if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &lease); err != nil {
			return 0, fmt.Errorf("reading leader-election Lease %s/%s: %w", namespace, name, err)
		}
		t := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			t = *lease.Spec.LeaseTransitions
		}
		return uint64(t) + 1, nil
	}
}

// StartTimeElectionLow is for a single operator without leader election: the process start
// time in seconds (below 2^32 until 2106), so that a restarted operator outranks its predecessor.
func StartTimeElectionLow(start time.Time) func(context.Context) (uint64, error) {
	return func(context.Context) (uint64, error) { return uint64(start.Unix()), nil }
}
