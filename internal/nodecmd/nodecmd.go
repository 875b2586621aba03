// Package nodecmd is what the node-side commands (cmd/ue-agent, cmd/gnb-emulator) share: a
// controller-runtime manager for Junction's types whose cache holds only what the command
// serves (cacheOpts, usually a field selector), optionally in chosen namespaces; and the metrics
// endpoint's options, which the operator's command uses too.
package nodecmd

import (
	"crypto/tls"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Metrics is a command's /metrics endpoint.
type Metrics struct {
	// Addr is where it listens; "0" turns it off.
	Addr string
	// Secure serves HTTPS to scrapers whose token may get /metrics (a TokenReview and a
	// SubjectAccessReview per scrape, as kube-rbac-proxy does); else plain HTTP to anyone.
	Secure bool
	// CertDir holds tls.crt and tls.key; empty: a self-signed certificate.
	CertDir string
	// HTTP2 allows HTTP/2 (off: CVE-2023-44487, rapid reset).
	HTTP2 bool
}

// Options are the manager's metrics options for m.
func (m Metrics) Options() metricsserver.Options {
	o := metricsserver.Options{BindAddress: m.Addr, SecureServing: m.Secure, CertDir: m.CertDir}
	if !m.HTTP2 {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if m.Secure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// NewManager returns the manager; namespaces is a comma-separated list ("" watches all
// namespaces; cluster-scoped objects are watched whatever it says), an address "0" turns its
// endpoint off.
func NewManager(cfg *rest.Config, cacheOpts cache.Options, namespaces string, metrics Metrics, healthAddr string) (ctrl.Manager, error) {
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metrics.Options(),
		HealthProbeBindAddress: healthAddr,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, nil
}
