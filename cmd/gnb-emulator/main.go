// Command gnb-emulator carries UEs' 3GPP legs between their radio interfaces and the UPF's N3
// address in GTP-U, with the TEIDs of the ATSSSSessions that name its N3 address
// (internal/gnb). It stands in for a gNB in the testbed and the demo:
//
//	gnb-emulator --n3-address=198.51.100.10 --radio-interface=ran0 [--radio-interface=ran1 ...]
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
		n3, namespace, netns, metricsAddr, healthAddr string
		radios                                        stringList
	)
	flag.StringVar(&n3, "n3-address", "", "The gNB's N3 address: sessions whose spec.accessLegs.threeGPP.gnbAddress equals it are served (required).")
	flag.Var(&radios, "radio-interface", "An interface toward UEs (repeatable, at least one).")
	flag.StringVar(&namespace, "namespace", "", "Watch sessions and UPFs in this namespace only; empty: all namespaces.")
	flag.StringVar(&netns, "netns", "", "Network namespace (a name under /var/run/netns, or a path) with the radio and N3 interfaces; empty: the emulator's own.")
	flag.StringVar(&metricsAddr, "metrics-addr", ":9120", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&healthAddr, "health-addr", "0", "Address of the /healthz and /readyz endpoints; \"0\" disables them.")
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	addr, err := netip.ParseAddr(n3)
	if err != nil || !addr.Is4() {
		return fmt.Errorf("--n3-address %q: an IPv4 address is required", n3)
	}
	if len(radios) == 0 {
		return fmt.Errorf("--radio-interface: at least one is required")
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("gnb-emulator")

	mgr, err := nodecmd.NewManager(gnb.CacheOptions(addr), namespace, metricsAddr, healthAddr)
	if err != nil {
		return err
	}
	dp, err := gnb.NewDatapath(gnb.Options{Netns: netns, N3: addr, Radios: radios}, gnb.NewMetrics(ctrlmetrics.Registry), log)
	if err != nil {
		return err
	}
	defer dp.Close()
	c := &gnb.Controller{Client: mgr.GetClient(), N3: addr, Datapath: dp, Recorder: mgr.GetEventRecorderFor("junction-gnb-emulator"), Log: log}
	if err := c.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting the gNB emulator", "n3", addr, "radios", []string(radios), "netns", netns)
	return mgr.Start(ctrl.SetupSignalHandler())
}
