// Command gnb-emulator carries UEs' legs between their access links and the UPF's N3 address in
// GTP-U, with the TEIDs of the ATSSSSessions that name its N3 address (internal/gnb). It stands
// in for a gNB in the testbed and the demo (the 3GPP legs that name it) or, with --role=w-agf,
// for a W-AGF, the wireline access gateway a 5G-RG's fixed line ends at (the non-3GPP legs that
// run over N3 through it):
//
//	gnb-emulator --n3-address=198.51.100.10 --radio-interface=ran0 [--radio-interface=ran1 ...]
//	gnb-emulator --role=w-agf --n3-address=203.0.113.2 --radio-interface=gw1
//
// It needs CAP_NET_ADMIN and /dev/net/tun. With --netns its TUN, socket and rules live in that
// namespace while it talks to the API server from its own.
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/junction-atsss/junction/internal/gnb"
	"github.com/junction-atsss/junction/internal/nodecmd"
)

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gnb-emulator:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		n3, namespace, netns, metricsAddr, healthAddr, roleName string
		radios                                                  stringList
	)
	flag.StringVar(&roleName, "role", string(gnb.RoleGNB), "gnb (the 3GPP legs that name --n3-address) or w-agf (the non-3GPP legs over N3 that name it).")
	flag.StringVar(&n3, "n3-address", "", "The node's N3 address: sessions whose spec.accessLegs.threeGPP.gnbAddress (gnb) or spec.accessLegs.nonThreeGPP.gatewayAddress (w-agf) equals it are served (required).")
	flag.Var(&radios, "radio-interface", "An interface toward UEs: a radio link, or a W-AGF's fixed lines (repeatable, at least one).")
	flag.StringVar(&namespace, "namespace", "", "Watch sessions and UPFs in this namespace only; empty: all namespaces.")
	flag.StringVar(&netns, "netns", "", "Network namespace (a name under /var/run/netns, or a path) with the radio and N3 interfaces; empty: the emulator's own.")
	flag.StringVar(&metricsAddr, "metrics-addr", ":9120", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&healthAddr, "health-addr", "0", "Address of the /healthz and /readyz endpoints; \"0\" disables them.")
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	role, err := gnb.ParseRole(roleName)
	if err != nil {
		return fmt.Errorf("--role: %w", err)
	}
	addr, err := netip.ParseAddr(n3)
	if err != nil || !addr.Is4() {
		return fmt.Errorf("--n3-address %q: an IPv4 address is required", n3)
	}
	if len(radios) == 0 {
		return fmt.Errorf("--radio-interface: at least one is required")
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("gnb-emulator").WithValues("role", role)

	// A testbed tool: its metrics are plain HTTP.
	mgr, err := nodecmd.NewManager(ctrl.GetConfigOrDie(), gnb.CacheOptions(role, addr), namespace, nodecmd.Metrics{Addr: metricsAddr}, healthAddr)
	if err != nil {
		return err
	}
	dp, err := gnb.NewDatapath(gnb.Options{Netns: netns, N3: addr, Radios: radios}, gnb.NewMetrics(ctrlmetrics.Registry), log)
	if err != nil {
		return err
	}
	defer dp.Close()
	c := &gnb.Controller{Client: mgr.GetClient(), Role: role, N3: addr, Datapath: dp, Recorder: mgr.GetEventRecorderFor("junction-gnb-emulator"), Log: log}
	if err := c.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting the access-node emulator", "n3", addr, "radios", []string(radios), "netns", netns)
	return mgr.Start(ctrl.SetupSignalHandler())
}
