// Package api proves the Junction API as the API server enforces it: the CRDs from
// config/crd/bases are installed into a real kube-apiserver (envtest), every sample is accepted,
// and every validation rule rejects a manifest that breaks it, naming the field.
package api

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/junction-atsss/junction/internal/testenv"
)

var k8s client.Client

func TestMain(m *testing.M) {
	cfg, stop, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// samples reads every object of config/samples, in file order.
func samples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(obj.Object) > 0 {
				objs = append(objs, obj)
			}
		}
	}
	return objs
}

// sample returns a fresh copy of the sample of that kind and name.
func sample(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range samples(t) {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no sample %s/%s in config/samples", kind, name)
	return nil
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// setPath sets a value at a dotted path with list indexes, e.g. "spec.ports[0].number".
// A nil value removes the field.
func setPath(t *testing.T, obj map[string]any, path string, value any) {
	t.Helper()
	var cur any = obj
	parts := strings.Split(path, ".")
	for i, part := range parts {
		name, index := part, -1
		if open := strings.IndexByte(part, '['); open >= 0 {
			name = part[:open]
			n, err := strconv.Atoi(strings.TrimSuffix(part[open+1:], "]"))
			if err != nil {
				t.Fatalf("bad path %q", path)
			}
			index = n
		}
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("path %q: %q is not an object", path, name)
		}
		last := i == len(parts)-1
		if index < 0 {
			if last {
				if value == nil {
					delete(m, name)
				} else {
					m[name] = value
				}
				return
			}
			if _, ok := m[name]; !ok {
				m[name] = map[string]any{}
			}
			cur = m[name]
			continue
		}
		list, ok := m[name].([]any)
		if !ok || index >= len(list) {
			t.Fatalf("path %q: no element %d in %q", path, index, name)
		}
		if last {
			list[index] = value
			return
		}
		cur = list[index]
	}
}
