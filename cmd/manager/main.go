// Command manager runs the Junction operator: it reconciles UserPlaneFunctions, SteeringPolicies
// and ATSSSSessions into P4Runtime writes on each UPF. Flags are parsed here only.
//
//	manager [flags]         the operator
//	manager check [flags]   whether an installation works: the Junction kinds served and an
//	                        operator up (the chart's helm test runs it)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/controllers"
	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/agentauthz"
	"github.com/junction-atsss/junction/internal/memlimit"
	"github.com/junction-atsss/junction/internal/nodecmd"
	"github.com/junction-atsss/junction/internal/pathmon"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

func run() error {
	// `manager check`: the installation check of the chart's helm test (check.go).
	if len(os.Args) > 1 && os.Args[1] == "check" {
		return runCheck(os.Args[2:])
	}
	var (
		metricsAddr, probeAddr, metricsCertDir string
		secureMetrics, enableHTTP2             bool
		leaderElect                            bool
		leaseNamespace, leaseName              string
		leaseDuration, renewDeadline, retry    time.Duration
		maxConcurrent                          int
		writeWindow, statusInterval            time.Duration
		flipSwitches                           int
		flipWindow, settle                     time.Duration
		apiQPS                                 float64
		apiBurst                               int
		n4LeaderLabel                          bool
		reservedPrefixes, secretNamespaces     string
		electionHigh                           uint64
		authzAddr, authzCertDir                string
		authzUsers, authzNamespaces            string
	)
	def := pathmon.DefaultConfig()
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; \"0\" disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, only to scrapers whose token may get /metrics (TokenReview + SubjectAccessReview).")
	flag.StringVar(&metricsCertDir, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for the metrics endpoint; empty: a self-signed certificate.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics endpoint (off: CVE-2023-44487 rapid reset).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Elect a leader among replicas; only the leader connects to UPFs.")
	flag.StringVar(&leaseNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease; default: the pod's namespace (POD_NAMESPACE or the service account's), else \"default\".")
	flag.StringVar(&leaseName, "leader-election-id", "junction-operator.atsss.junction.dev", "Name of the leader-election Lease.")
	flag.DurationVar(&leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a leader's lease lasts without renewal.")
	flag.DurationVar(&renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it steps down.")
	flag.DurationVar(&retry, "leader-election-retry-period", 2*time.Second, "How often candidates try to acquire the lease.")
	// client-go's default (5 QPS) would hold 100k sessions' status writes for hours.
	flag.Float64Var(&apiQPS, "kube-api-qps", 200, "Requests per second the operator may send to the API server.")
	flag.IntVar(&apiBurst, "kube-api-burst", 400, "Burst of requests above --kube-api-qps.")
	flag.IntVar(&maxConcurrent, "max-concurrent-reconciles", controllers.DefaultMaxConcurrentReconciles, "Sessions reconciled at once; their writes share WriteRequests.")
	flag.DurationVar(&writeWindow, "write-window", 2*time.Millisecond, "Least time between the starts of a UPF programmer's P4Runtime writes; changes that arrive meanwhile share the next write, and a change after a quiet spell is written at once.")
	flag.DurationVar(&statusInterval, "path-status-interval", 10*time.Second, "Least time between two path-status refreshes of one session.")
	flag.IntVar(&flipSwitches, "flip-flop-switches", def.MaxSwitches, "Active-access changes tolerated within --flip-flop-window; one more suspends the user's in-data-plane path updates.")
	flag.DurationVar(&flipWindow, "flip-flop-window", def.Window, "Window over which active-access changes are counted.")
	flag.DurationVar(&settle, "flip-flop-settle", def.Settle, "How long a suspended user's paths must be stable before updates resume.")
	flag.Uint64Var(&electionHigh, "p4runtime-election-id-high", 0, "High 64 bits of every P4Runtime election ID the operator sends: raise it to outrank another controller of a switch (the UPFs' objects cannot).")
	flag.BoolVar(&n4LeaderLabel, "n4-leader-label", false, "Label this pod "+controllers.LabelN4Leader+"=true while it leads (POD_NAME and POD_NAMESPACE name the pod), for a Service that sends N4 to the leader.")
	zopts := zap.Options{Development: false}
	flag.StringVar(&reservedPrefixes, "reserved-prefixes", "", "Comma-separated IPv4 prefixes no session address may take beside the ServiceCIDRs and the API server's address: the cluster's node and pod ranges (docs/address-pools.md).")
	flag.StringVar(&secretNamespaces, "secret-namespaces", "", "Comma-separated namespaces whose Secrets the operator reads (the UserPlaneFunctions' TLS Secrets), as its RBAC allows; empty: every namespace.")
	flag.StringVar(&authzAddr, "agent-authorizer-bind-address", "0", "Address of the authorization webhook that lets each UE agent list and watch its own node's sessions only (docs/threat-model.md); \"0\" disables it.")
	flag.StringVar(&authzCertDir, "agent-authorizer-cert-dir", "", "Directory with tls.crt and tls.key the agent authorizer serves with (the API server's webhook kubeconfig trusts their CA).")
	flag.StringVar(&authzUsers, "agent-authorizer-users", "", "Comma-separated user names of the UE agents' service accounts (system:serviceaccount:NAMESPACE:NAME).")
	flag.StringVar(&authzNamespaces, "agent-authorizer-namespaces", "", "Comma-separated namespaces whose sessions the agents may read; empty: every namespace.")
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	reserved, err := addrpool.ParseReserved(reservedPrefixes, "the cluster's reserved range (--reserved-prefixes)")
	if err != nil {
		return fmt.Errorf("--reserved-prefixes: %w", err)
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(junctionv1.AddToScheme(scheme))

	if leaderElect && leaseNamespace == "" {
		leaseNamespace = podNamespace()
	}
	restCfg := ctrl.GetConfigOrDie()
	restCfg.QPS, restCfg.Burst = float32(apiQPS), apiBurst
	var secretNS []string
	if secretNamespaces != "" {
		secretNS = strings.Split(secretNamespaces, ",")
	}
	opts, err := controllers.ManagerOptions(restCfg, secretNS)
	if err != nil {
		return err
	}
	opts.Scheme = scheme
	opts.Metrics = nodecmd.Metrics{Addr: metricsAddr, Secure: secureMetrics, CertDir: metricsCertDir, HTTP2: enableHTTP2}.Options()
	opts.HealthProbeBindAddress = probeAddr
	opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = leaderElect, leaseName, leaseNamespace
	opts.LeaderElectionReleaseOnCancel = true // a clean shutdown hands over at once
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &leaseDuration, &renewDeadline, &retry
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	electionLow := controllers.StartTimeElectionLow(time.Now())
	if leaderElect {
		electionLow = controllers.LeaseElectionLow(mgr.GetAPIReader(), leaseNamespace, leaseName)
	}
	// A process that finds a newer leader of this operator primary on a UPF stops, as one that
	// lost its lease does: it was paused or cut off, and its view is stale.
	ctx, stop := context.WithCancelCause(ctrl.SetupSignalHandler())
	defer stop(nil)
	onDeposed := func(upf types.NamespacedName) {
		stop(fmt.Errorf("deposed: a newer leader of this operator is primary on UserPlaneFunction %s", upf))
	}
	if _, _, err := controllers.SetupWithManager(ctx, mgr, controllers.Options{
		ElectionLow:             electionLow,
		ElectionIDHigh:          electionHigh,
		MaxConcurrentReconciles: maxConcurrent,
		WriteWindow:             writeWindow,
		StatusInterval:          statusInterval,
		PathConfig:              pathmon.Config{MaxSwitches: flipSwitches, Window: flipWindow, Settle: settle, Reassert: def.Reassert, Refresh: def.Refresh, MaxRefresh: def.MaxRefresh},
		OnDeposed:               onDeposed,
		Reserved:                reserved,
	}); err != nil {
		return err
	}
	if n4LeaderLabel {
		pod := types.NamespacedName{Namespace: podNamespace(), Name: os.Getenv("POD_NAME")}
		if pod.Name == "" {
			return errors.New("--n4-leader-label needs POD_NAME (the downward API's metadata.name)")
		}
		label := &controllers.LeaderPodLabel{Client: mgr.GetClient(), Pod: pod, OnFailure: func(err error) {
			stop(fmt.Errorf("labelling the leader's pod %s for N4: %w", pod, err))
		}}
		// A replica clears the label before it may lead: the old leader's restarted process too.
		if err := label.Clear(ctx); err != nil {
			return fmt.Errorf("clearing %s on pod %s: %w", controllers.LabelN4Leader, pod, err)
		}
		if err := mgr.Add(label); err != nil {
			return err
		}
	}
	if authzAddr != "0" {
		if authzCertDir == "" || authzUsers == "" {
			return errors.New("--agent-authorizer-bind-address needs --agent-authorizer-cert-dir and --agent-authorizer-users")
		}
		az := agentauthz.Server{Addr: authzAddr, CertDir: authzCertDir, Authorizer: agentauthz.Authorizer{Users: strings.Split(authzUsers, ",")}}
		if authzNamespaces != "" {
			az.Namespaces = strings.Split(authzNamespaces, ",")
		}
		if err := mgr.Add(az); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting the manager", "goMemoryLimit", memlimit.Apply(), "leaderElection", leaderElect, "leaseNamespace", leaseNamespace, "metrics", metricsAddr, "secureMetrics", secureMetrics)
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause // exit non-zero: Kubernetes restarts the pod as a follower
	}
	return nil
}

// podNamespace is the namespace the operator runs in.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}
