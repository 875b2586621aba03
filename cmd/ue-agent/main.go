// Command ue-agent is Junction's UE agent (the paper's JUNCTION-UE), one per node: it watches
// the ATSSSSessions whose spec.ue.nodeName is its node and builds, for each whose addresses an
// AddressPool grants (docs/address-pools.md), a TUN device and a multipath UDP tunnel over the
// session's 3GPP and non-3GPP legs toward the UPF (internal/ueagent).
// Flags are parsed here only.
//
//	ue-agent --node-name=$(NODE_NAME) --metrics-addr=$(POD_IP):9110 --health-addr=$(POD_IP):9111
//
// It needs CAP_NET_ADMIN and /dev/net/tun, and runs in the node's network namespace.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/memlimit"
	"github.com/junction-atsss/junction/internal/nodecmd"
	"github.com/junction-atsss/junction/internal/ueagent"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ue-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		node, namespace, netns, healthAddr, reserved string
		statusInterval, minStatusInterval            time.Duration
		metrics                                      nodecmd.Metrics
	)
	flag.StringVar(&node, "node-name", os.Getenv("NODE_NAME"), "The node this agent serves: sessions whose spec.ue.nodeName equals it (default $NODE_NAME).")
	flag.StringVar(&namespace, "namespace", "", "Serve the sessions of these namespaces only (comma-separated; the chart's ueAgent.namespaces); empty: all namespaces.")
	flag.StringVar(&reserved, "reserved-prefixes", "", "Comma-separated IPv4 prefixes no session address may take beside the node's own networks and the API server's address: the cluster's node, pod and service ranges (docs/address-pools.md).")
	flag.StringVar(&netns, "netns", "", "Network namespace (a name under /var/run/netns, or a path) that holds the node's legs and gets the TUNs; empty: the agent's own. For running several agents as separate nodes on one machine (the testbed).")
	flag.StringVar(&metrics.Addr, "metrics-addr", "127.0.0.1:9110", "Address of the Prometheus /metrics endpoint (never an access interface's); \"0\" disables it.")
	flag.BoolVar(&metrics.Secure, "metrics-secure", true, "Serve metrics over HTTPS, only to scrapers whose token may get /metrics (TokenReview + SubjectAccessReview); false: plain HTTP to anyone who reaches the address.")
	flag.StringVar(&metrics.CertDir, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for the metrics endpoint; empty: a self-signed certificate.")
	flag.StringVar(&healthAddr, "health-addr", "127.0.0.1:9111", "Address of the /healthz and /readyz endpoints (the kubelet's probes need the node's address).")
	flag.DurationVar(&statusInterval, "status-interval", 10*time.Second, "Least time between two status writes of a session that change only RTTs.")
	flag.DurationVar(&minStatusInterval, "min-status-interval", time.Second, "Least time between two status writes of a session.")
	var exp ueagent.Experiment
	flag.IntVar(&exp.SwitchEvery, "experiment-switch-every", 0, "Testbed experiments only: alternate the uplink between the legs every N packets (the paper's Table IV).")
	flag.BoolVar(&exp.NoMarks, "experiment-no-reorder-marks", false, "Testbed experiments only: send no reorder marks on a switch, as if the UPF's reorder engine were off.")
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	if node == "" {
		return fmt.Errorf("--node-name (or NODE_NAME) is required")
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("ue-agent")

	mgr, err := nodecmd.NewManager(ctrl.GetConfigOrDie(), ueagent.CacheOptions(node), namespace, metrics, healthAddr)
	if err != nil {
		return err
	}
	keep, err := addrpool.ParseReserved(reserved, "the cluster's reserved range (--reserved-prefixes)")
	if err != nil {
		return fmt.Errorf("--reserved-prefixes: %w", err)
	}
	keep = append(keep, addrpool.APIServer(context.Background(), mgr.GetConfig().Host)...)
	agent, err := ueagent.New(mgr.GetClient(), ueagent.Options{
		NodeName: node, Netns: netns, StatusInterval: statusInterval, MinStatusInterval: minStatusInterval, Reserved: keep, Experiment: exp,
	}, ueagent.NewMetrics(ctrlmetrics.Registry), mgr.GetEventRecorderFor("junction-ue-agent"), log)
	if err != nil {
		return err
	}
	if err := agent.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting the UE agent", "goMemoryLimit", memlimit.Apply(), "node", node, "namespace", namespace, "metrics", metrics.Addr, "secureMetrics", metrics.Secure)
	return mgr.Start(ctrl.SetupSignalHandler())
}
