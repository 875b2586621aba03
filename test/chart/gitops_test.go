package chart

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// readDocs reads a multi-document YAML file.
func readDocs(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// The Argo CD ConfigMap has health.lua, unchanged, for every kind the CRDs define, under the key
// Argo CD looks up (resource.customizations.health.<group>_<Kind>). test/operator runs the script.
func TestArgoCDHealthCoversEveryKind(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(root, "gitops", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	crds, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	for _, f := range crds {
		crd := readYAML(t, f)
		spec := crd["spec"].(map[string]any)
		want = append(want, "resource.customizations.health."+spec["group"].(string)+"_"+spec["names"].(map[string]any)["kind"].(string))
	}
	cm := readDocs(t, filepath.Join(root, "gitops", "argocd", "argocd-cm.yaml"))[0]
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var got []string
	for k, v := range data {
		got = append(got, k)
		if v != string(script) {
			t.Errorf("%s differs from health.lua (make manifests)", k)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(want) != 4 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("argocd-cm keys %v, want %v", got, want)
	}
}

// The Flux example deploys what exists: its HelmRelease's values pass the chart's schema, its
// Kustomizations' paths are directories of this repository with a kustomization.yaml, and each
// dependency and health check names an object the example defines.
func TestFluxExample(t *testing.T) {
	dir := filepath.Join(root, "gitops", "flux")
	objs := readDocs(t, filepath.Join(dir, "junction.yaml"))
	defined := map[string]bool{}
	for _, o := range objs {
		defined[o.GetKind()+"/"+o.GetName()] = true
	}
	hrs := readDocs(t, filepath.Join(dir, "release", "helmrelease.yaml"))
	for _, o := range hrs {
		defined[o.GetKind()+"/"+o.GetName()] = true
	}
	kustomizations := 0
	for _, o := range objs {
		if o.GetKind() != "Kustomization" {
			continue
		}
		kustomizations++
		path, _, _ := unstructured.NestedString(o.Object, "spec", "path")
		if _, err := os.Stat(filepath.Join(root, path, "kustomization.yaml")); err != nil {
			t.Errorf("Kustomization %s: path %s: %v", o.GetName(), path, err)
		}
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			if name := d.(map[string]any)["name"].(string); !defined["Kustomization/"+name] {
				t.Errorf("Kustomization %s depends on %s, which the example does not define", o.GetName(), name)
			}
		}
		checks, _, _ := unstructured.NestedSlice(o.Object, "spec", "healthChecks")
		for _, c := range checks {
			c := c.(map[string]any)
			if !defined[c["kind"].(string)+"/"+c["name"].(string)] {
				t.Errorf("Kustomization %s checks %s/%s, which the example does not define", o.GetName(), c["kind"], c["name"])
			}
		}
	}
	if kustomizations != 2 || len(hrs) != 1 {
		t.Fatalf("%d Kustomizations and %d HelmReleases in the example", kustomizations, len(hrs))
	}
	chartPath, _, _ := unstructured.NestedString(hrs[0].Object, "spec", "chart", "spec", "chart")
	if filepath.Join(root, chartPath) != chart {
		t.Errorf("the HelmRelease installs %s, not charts/junction", chartPath)
	}
	values, _, _ := unstructured.NestedMap(hrs[0].Object, "spec", "values")
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "-f", f); err != nil {
		t.Errorf("the HelmRelease's values: %v\n%s", err, out)
	}
}
