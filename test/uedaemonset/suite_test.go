// Package uedaemonset proves the UE agent's kustomize base (ue-daemonset/) as a real API server
// sees it: bin/kustomize builds it, every object is server-side applied with dry run into the
// envtest kube-apiserver (Junction's CRDs installed), and the responses are checked against what
// the agent may have: the host network, NET_ADMIN and /dev/net/tun, and read access to its
// sessions with a status patch, nothing more.
//
// The tools come from hack/tools.sh (kustomize, envtest). Without them the tests skip, except
// under CI, where they fail.
package uedaemonset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/junction-atsss/junction/internal/testenv"
)

// What the base must be (ue-daemonset/README.md).
const (
	namespace   = "junction-system"
	agentName   = "junction-ue-agent" // DaemonSet, ServiceAccount, ClusterRole, ClusterRoleBinding
	nodeLabel   = "junction.dev/ue-agent"
	fieldOwner  = "junction-uedaemonset-test"
	tunDevice   = "/dev/net/tun"
	healthPort  = 9111
	metricsPort = 9110
)

// defaultTag is ue-daemonset/kustomization.yaml's images: entry, the release's.
var defaultTag = "ghcr.io/junction-atsss/junction:" + testenv.ReleaseVersion()

var (
	k8s       client.Client // uncached, as the cluster admin
	k8sConfig *rest.Config  // k8s's, whose host and CA other users' clients share
	// missing says why the tests cannot run (no kustomize or no envtest control plane).
	missing error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if missing = toolsPresent(); missing != nil {
		return m.Run() // each test skips, or fails under CI
	}
	cfg, stop, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	k8sConfig = cfg
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// config/default creates the namespace; the base only lives in it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		fmt.Fprintln(os.Stderr, "create namespace:", err)
		return 1
	}
	return m.Run()
}

func kustomizeBin() string { return filepath.Join(testenv.RepoRoot(), "bin", "kustomize") }

func toolsPresent() error {
	if _, err := os.Stat(kustomizeBin()); err != nil {
		return fmt.Errorf("no bin/kustomize (hack/tools.sh kustomize builds it): %w", err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return fmt.Errorf("no envtest control plane (hack/tools.sh envtest builds it): %w", err)
	}
	return nil
}

// requireTools skips the test when the tools are missing, or fails it under CI, which must run it.
func requireTools(t *testing.T) {
	t.Helper()
	testenv.Require(t, "the UE DaemonSet tests' tools", missing)
}

// build runs bin/kustomize on ue-daemonset and returns its objects, in output order.
func build(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	requireTools(t)
	var out, stderr bytes.Buffer
	cmd := exec.Command(kustomizeBin(), "build", filepath.Join(testenv.RepoRoot(), "ue-daemonset"))
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kustomize build ue-daemonset: %v\n%s", err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decoding kustomize output: %v", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs
}

// only returns the single object of that kind, failing when there is not exactly one.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("ue-daemonset has %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// dryRunApply server-side applies obj with dry run (validation, defaulting and admission run,
// nothing is stored) and returns the API server's answer as the typed object out.
func dryRunApply(t *testing.T, obj *unstructured.Unstructured, out any) {
	t.Helper()
	o := obj.DeepCopy()
	if err := k8s.Patch(context.Background(), o, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner(fieldOwner)); err != nil {
		t.Fatalf("server-side apply (dry run) of %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	if out != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
			t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// notStored fails when an object of that kind and name exists: dry runs must leave nothing.
func notStored(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s %s after a dry run: got err %v, want NotFound", obj.GetKind(), obj.GetName(), err)
	}
}
