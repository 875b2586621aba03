// Package testenv starts the envtest control plane (a real kube-apiserver and etcd, built by
// hack/tools.sh) with Junction's CRDs installed, for tests in any package.
package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// RepoRoot is the repository's top directory, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ReleaseVersion is the VERSION file's (vMAJOR.MINOR.PATCH): the image tag every manifest names
// and the chart's appVersion (hack/release.sh check holds them to it).
func ReleaseVersion() string {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "VERSION"))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

// AssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when set,
// else the newest control plane hack/tools.sh built under bin/k8s.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob(filepath.Join(RepoRoot(), "bin", "k8s", "*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "kube-apiserver")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no envtest control plane: run hack/tools.sh envtest (or set KUBEBUILDER_ASSETS)")
}

// Start runs a control plane with the CRDs from config/crd/bases and returns its config and a
// stop function. The scheme knows the Junction kinds.
func Start() (*rest.Config, func() error, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, nil, err
	}
	if err := junctionv1.AddToScheme(scheme.Scheme); err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start leaves etcd and the API server running when a later step fails (the CRDs):
		// stopped here, or each failed run leaves a control plane behind.
		_ = env.Stop()
		return nil, nil, fmt.Errorf("start envtest from %s: %w", assets, err)
	}
	return cfg, env.Stop, nil
}

// Require lets a test go on when err is nil. Otherwise it fails the test in CI ($CI set, where
// every test must run: a skipped one proves nothing) and skips it elsewhere, naming what is
// missing (what, e.g. "network namespaces (run as root)").
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("this test needs %s and CI must run it: %v", what, err)
	}
	t.Skipf("skipping, no %s: %v", what, err)
}

// FreeAddr is a loopback TCP address (host:port) whose port nothing listened on a moment ago,
// for a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
