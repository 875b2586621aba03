package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/junction-atsss/junction/internal/installcheck"
)

// runCheck is `manager check`: whether the installation works (internal/installcheck), waited
// for up to --timeout; the chart's helm test Pod runs it. Exit status 0 when it does.
func runCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var cfg installcheck.Config
	var timeout, interval time.Duration
	fs.StringVar(&cfg.Namespace, "namespace", podNamespace(), "The operator's namespace.")
	fs.StringVar(&cfg.Deployment, "deployment", "junction-operator", "The operator's Deployment.")
	fs.StringVar(&cfg.Lease, "lease", "junction-operator.atsss.junction.dev", "The operator's leader-election Lease; empty: leader election is off, and the Deployment must have a ready replica.")
	fs.DurationVar(&timeout, "timeout", 2*time.Minute, "How long to wait for the installation to work.")
	fs.DurationVar(&interval, "interval", 2*time.Second, "How often to check again meanwhile.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := installcheck.Wait(ctx, c, cfg, interval); err != nil {
		return fmt.Errorf("check: not within %v:\n%w", timeout, err)
	}
	how := "the Lease " + cfg.Lease + " held"
	if cfg.Lease == "" {
		how = "the Deployment " + cfg.Deployment + " ready"
	}
	fmt.Printf("Junction works: %d kinds served, %s in namespace %s\n", len(installcheck.Kinds()), how, cfg.Namespace)
	return nil
}
