// Package nodecmd is what the node-side commands (cmd/ue-agent, cmd/gnb-emulator) share: a
// controller-runtime manager for Junction's types whose cache holds only what the command
// serves (cacheOpts, usually a field selector), optionally in chosen namespaces.
package nodecmd

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// NewManager returns the manager; namespaces is a comma-separated list ("" watches all
// namespaces; cluster-scoped objects are watched whatever it says), an address "0" turns its
// endpoint off.
func NewManager(cacheOpts cache.Options, namespaces, metricsAddr, healthAddr string) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(junctionv1.AddToScheme(scheme))
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns == "" {
			continue
		}
		if cacheOpts.DefaultNamespaces == nil {
			cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		}
		cacheOpts.DefaultNamespaces[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: healthAddr,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
}
