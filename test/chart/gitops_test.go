package chart

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/junction-atsss/junction/internal/testenv"
)

// readDocs reads a multi-document YAML file.
func readDocs(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return splitDocs(t, path, b)
}

// kustomizeBuild returns the objects of bin/kustomize build DIR (relative to the repository root).
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "bin", "kustomize"), "build", filepath.Join(root, dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.Bytes())
	}
	return splitDocs(t, dir, out)
}

// splitDocs parses multi-document YAML (from: where it came from, for errors).
func splitDocs(t *testing.T, from string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s: %v", from, err)
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
	if len(want) != 5 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("argocd-cm keys %v, want %v", got, want)
	}
}

// The Flux example deploys what exists and what the release made: its HelmRelease's values pass
// the chart's schema, its Kustomizations' paths are directories of this repository with a
// kustomization.yaml, every reference (each source, dependency and health check) names an object
// the example defines, the GitRepository fetches the release's tag, and the release is named and
// placed where gitops/objects expects it, in a namespace of the Pod Security level the software
// UPF needs.
func TestFluxExample(t *testing.T) {
	dir := filepath.Join(root, "gitops", "flux")
	objs := readDocs(t, filepath.Join(dir, "junction.yaml"))
	hrs := readDocs(t, filepath.Join(dir, "release", "helmrelease.yaml"))
	defined := map[string]string{} // kind/namespace/name → apiVersion
	for _, o := range append(objs, hrs...) {
		defined[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetAPIVersion()
		if o.GetKind() == "GitRepository" {
			if tag, _, _ := unstructured.NestedString(o.Object, "spec", "ref", "tag"); tag != testenv.ReleaseVersion() {
				t.Errorf("GitRepository %s fetches tag %q, want the release's %s (VERSION)", o.GetName(), tag, testenv.ReleaseVersion())
			}
		}
	}
	// resolves checks one of from's references (field: where it is) as Flux follows it: its
	// kind (the default for those without), name, namespace (from's when it has none) and
	// apiVersion when it has one.
	resolves := func(from *unstructured.Unstructured, field string, ref map[string]any, kind string) {
		if k, ok := ref["kind"].(string); ok {
			kind = k
		}
		ns, _ := ref["namespace"].(string)
		if ns == "" {
			ns = from.GetNamespace()
		}
		name, _ := ref["name"].(string)
		what := kind + " " + ns + "/" + name
		apiVersion, found := defined[kind+"/"+ns+"/"+name]
		if want, ok := ref["apiVersion"].(string); ok {
			what = want + " " + what
			found = found && want == apiVersion
		}
		if !found {
			t.Errorf("%s %s: %s names %s, which the example does not define", from.GetKind(), from.GetName(), field, what)
		}
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
		src, _, _ := unstructured.NestedMap(o.Object, "spec", "sourceRef")
		resolves(o, "spec.sourceRef", src, "")
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			resolves(o, "spec.dependsOn", d.(map[string]any), "Kustomization")
		}
		checks, _, _ := unstructured.NestedSlice(o.Object, "spec", "healthChecks")
		for _, c := range checks {
			resolves(o, "spec.healthChecks", c.(map[string]any), "")
		}
	}
	if kustomizations != 2 || len(hrs) != 1 {
		t.Fatalf("%d Kustomizations and %d HelmReleases in the example", kustomizations, len(hrs))
	}
	src, _, _ := unstructured.NestedMap(hrs[0].Object, "spec", "chart", "spec", "sourceRef")
	resolves(hrs[0], "spec.chart.spec.sourceRef", src, "")
	hr := hrs[0].Object
	chartPath, _, _ := unstructured.NestedString(hr, "spec", "chart", "spec", "chart")
	if filepath.Join(root, chartPath) != chart {
		t.Errorf("the HelmRelease installs %s, not charts/junction", chartPath)
	}
	for field, want := range map[string]string{"releaseName": gitopsRelease, "targetNamespace": gitopsNamespace, "chart.spec.reconcileStrategy": "Revision"} {
		if got, _, _ := unstructured.NestedString(hr, append([]string{"spec"}, strings.Split(field, ".")...)...); got != want {
			t.Errorf("the HelmRelease's spec.%s is %q, want %q", field, got, want)
		}
	}
	ns := readDocs(t, filepath.Join(dir, "release", "namespace.yaml"))
	if len(ns) != 1 || ns[0].GetName() != gitopsNamespace || ns[0].GetLabels()["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("gitops/flux/release makes no privileged Namespace %s: %v", gitopsNamespace, ns)
	}
	values, _, _ := unstructured.NestedMap(hr, "spec", "values")
	if out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "-f", valuesFile(t, values)); err != nil {
		t.Errorf("the HelmRelease's values: %v\n%s", err, out)
	}
}

// fluxCRDs is where hack/tools.sh flux-crds puts the CRDs of the Flux release it pins; its stamp
// names that release and each controller's version.
var fluxCRDs, fluxCRDsStamp = filepath.Join(root, "bin", "flux-crds"), filepath.Join(root, "bin", ".flux-crds.version")

// kubectlApply applies obj with kubectl apply ARGS, strictly (--validate=strict, kubectl's
// default): a field the CRD does not define is an error that names it, not a field dropped. A
// warning (a deprecated API version or field, say) is an error too.
func (c *cluster) kubectlApply(obj *unstructured.Unstructured, args ...string) error {
	b, err := yaml.Marshal(obj.Object)
	if err != nil {
		return err
	}
	args = append([]string{"--kubeconfig", c.kubeconfig, "apply", "--validate=strict", "-f", "-"}, args...)
	cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), args...)
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.CombinedOutput()
	if err == nil && bytes.Contains(out, []byte("Warning:")) {
		err = errors.New("a warning")
	}
	if err != nil {
		return fmt.Errorf("kubectl apply: %v: %s", err, out)
	}
	return nil
}

// How the Flux example's objects reach the API server: junction.yaml by the user's kubectl apply
// (gitops/README.md), what a Kustomization builds by kustomize-controller's server-side apply
// under its field manager.
var userApply, fluxApply = []string{}, []string{"--server-side", "--field-manager=kustomize-controller", "--force-conflicts"}

// The Flux example is what Flux's API accepts: in an API server with the CRDs of the Flux release
// hack/tools.sh pins (and Junction's), every object the example makes reach it is applied the way
// it gets there, so the CRDs' OpenAPI schemas and CEL rules judge every field: junction.yaml by
// the user's kubectl apply, then what each of its Kustomizations applies (kustomize build of its
// path, server-side applied as kustomize-controller does; Namespaces first, as it orders them:
// junction-objects waits for junction-operator, which makes junction-system). Each Flux object,
// broken in memory, is rejected with the field named, which shows the check can fail.
// gitops/README.md names the Flux release the example is checked against.
func TestFluxExampleMeetsFluxCRDs(t *testing.T) {
	stamp, err := os.ReadFile(fluxCRDsStamp)
	testenv.Require(t, "Flux's CRDs (hack/tools.sh flux-crds)", err)
	// "v2.9.5 source-controller@v1.9.5 ...": gitops/README.md says "Flux v2.9.5 (source-controller v1.9.5, ...".
	doc, err := os.ReadFile(filepath.Join(root, "gitops", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ") // its lines joined
	for i, v := range strings.Fields(string(stamp)) {
		if i == 0 {
			v = "Flux " + v
		}
		if v = strings.Replace(v, "@", " ", 1); !strings.Contains(text, v) {
			t.Errorf("gitops/README.md does not name %q, the Flux CRDs test/chart checks against (hack/tools.sh)", v)
		}
	}

	c := startCluster(t, fluxCRDs, filepath.Join(root, "config", "crd", "bases"))
	// flux install makes flux-system, where the example's own objects live.
	if err := c.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}); err != nil {
		t.Fatal(err)
	}
	type applied struct {
		obj *unstructured.Unstructured
		how []string // userApply or fluxApply
	}
	var user, flux []applied
	for _, o := range readDocs(t, filepath.Join(root, "gitops", "flux", "junction.yaml")) {
		user = append(user, applied{o, userApply})
		if o.GetKind() == "Kustomization" {
			path, _, _ := unstructured.NestedString(o.Object, "spec", "path")
			for _, built := range kustomizeBuild(t, path) {
				flux = append(flux, applied{built, fluxApply})
			}
		}
	}
	sort.SliceStable(flux, func(i, j int) bool {
		return flux[i].obj.GetKind() == "Namespace" && flux[j].obj.GetKind() != "Namespace"
	})
	var fluxObjs []applied
	kinds := map[string]int{}
	for _, a := range append(user, flux...) {
		if err := c.kubectlApply(a.obj, a.how...); err != nil {
			t.Errorf("%s %s/%s: %v", a.obj.GetKind(), a.obj.GetNamespace(), a.obj.GetName(), err)
		}
		if strings.HasSuffix(a.obj.GroupVersionKind().Group, ".toolkit.fluxcd.io") {
			fluxObjs = append(fluxObjs, a)
			kinds[a.obj.GetKind()]++
		}
	}
	if got := fmt.Sprint(kinds); got != "map[GitRepository:1 HelmRelease:1 Kustomization:2]" {
		t.Errorf("the example applies the Flux objects %s, want a GitRepository, two Kustomizations and a HelmRelease", got)
	}

	// Each broken copy is applied with dry-run, under a name of its own (judged as a new object,
	// as on a first apply): the API server judges it and keeps nothing.
	type breakage struct {
		name  string
		edit  func(spec map[string]any)
		wants []string // in the error: the field (and the type it must have)
	}
	for _, a := range fluxObjs {
		cases := []breakage{
			{"an unknown field", func(spec map[string]any) { spec["intervall"] = "5m" }, []string{"spec.intervall"}},
			{"interval as a number", func(spec map[string]any) { spec["interval"] = int64(600) }, []string{"spec.interval", "string"}},
		}
		if a.obj.GetKind() == "HelmRelease" {
			cases = append(cases, breakage{"both chart and chartRef (a CEL rule)", func(spec map[string]any) {
				spec["chartRef"] = map[string]any{"kind": "OCIRepository", "name": "junction"}
			}, []string{"spec: Invalid value", "either chart or chartRef must be set"}})
		}
		for _, tc := range cases {
			t.Run(a.obj.GetKind()+"/"+a.obj.GetName()+"/"+tc.name, func(t *testing.T) {
				broken := a.obj.DeepCopy()
				broken.SetName(a.obj.GetName() + "-broken")
				tc.edit(broken.Object["spec"].(map[string]any))
				err := c.kubectlApply(broken, append(a.how, "--dry-run=server")...)
				if err == nil {
					t.Fatal("accepted")
				}
				for _, want := range tc.wants {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not say %q: %v", want, err)
					}
				}
			})
		}
	}
}

// The release gitops/objects is written for (its UPF's address, the namespace of its pipeline and
// TLS Secret), which both examples install.
const gitopsRelease, gitopsNamespace = "junction", "junction-system"

func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// The Argo CD Application installs the chart the release pushes (the registry of the chart's
// image, /charts, at VERSION's SemVer) under the release name and namespace gitops/objects
// expects, with the Flux example's values, and the objects at the release's tag with sync waves:
// the AddressPool and UPF after the chart, the policies and sessions after them.
func TestArgoCDExample(t *testing.T) {
	app := readDocs(t, filepath.Join(root, "gitops", "argocd", "application.yaml"))[0].Object
	sources, _, _ := unstructured.NestedSlice(app, "spec", "sources")
	if len(sources) != 2 {
		t.Fatalf("the Application has %d sources, want the chart and the objects", len(sources))
	}
	helmSrc, gitSrc := sources[0].(map[string]any), sources[1].(map[string]any)
	imageRepo, _, _ := unstructured.NestedString(readYAML(t, filepath.Join(chart, "values.yaml")), "image", "repository")
	v := testenv.ReleaseVersion()
	if want := filepath.Dir(imageRepo) + "/charts"; helmSrc["repoURL"] != want || helmSrc["chart"] != "junction" || helmSrc["targetRevision"] != strings.TrimPrefix(v, "v") {
		t.Errorf("the chart source is %v, want %s junction %s (what hack/release.sh pushes)", helmSrc, want, strings.TrimPrefix(v, "v"))
	}
	if rn, _, _ := unstructured.NestedString(helmSrc, "helm", "releaseName"); rn != gitopsRelease {
		t.Errorf("the chart's releaseName is %q, want %s", rn, gitopsRelease)
	}
	if ns, _, _ := unstructured.NestedString(app, "spec", "destination", "namespace"); ns != gitopsNamespace {
		t.Errorf("the Application's namespace is %q, want %s", ns, gitopsNamespace)
	}
	argoValues, _, _ := unstructured.NestedMap(helmSrc, "helm", "valuesObject")
	flux := readDocs(t, filepath.Join(root, "gitops", "flux", "release", "helmrelease.yaml"))[0].Object
	fluxValues, _, _ := unstructured.NestedMap(flux, "spec", "values")
	if !reflect.DeepEqual(argoValues, fluxValues) {
		t.Errorf("the Application's values %v differ from the HelmRelease's %v", argoValues, fluxValues)
	}
	if gitSrc["targetRevision"] != v {
		t.Errorf("the objects source is at %v, want the release's tag %s", gitSrc["targetRevision"], v)
	}
	path, _ := gitSrc["path"].(string)
	wantWave := map[string]string{"AddressPool": "1", "P4RuntimeTarget": "1", "UserPlaneFunction": "1", "SteeringPolicy": "2", "ATSSSSession": "2"}
	seen := map[string]int{}
	for _, u := range kustomizeBuild(t, path) {
		seen[u.GetKind()]++
		if got := u.GetAnnotations()["argocd.argoproj.io/sync-wave"]; got != wantWave[u.GetKind()] {
			t.Errorf("%s %s: sync wave %q, want %q", u.GetKind(), u.GetName(), got, wantWave[u.GetKind()])
		}
	}
	for kind := range wantWave {
		if seen[kind] == 0 {
			t.Errorf("%s applies no %s", path, kind)
		}
	}
}

// Argo CD's upstream layout (resource_customizations/<group>/<Kind>/health.lua, health_test.yaml,
// testdata/, "_" for any: atsss.junction.dev/_ is every kind of the group, as upstream's
// _.crossplane.io/_): health.lua unchanged, cases for every kind the CRDs define, and each
// case's expectation met the way Argo CD's own test runs them (the file's object into the
// script) and again on the object as a real API server keeps it: created from the file, its
// generation raised by spec updates to the file's, its status written through the status
// subresource and read back. kubectl get shows the Ready condition's reason in its Reason column.
func TestArgoCDResourceCustomizations(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(root, "gitops", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "gitops", "argocd", "resource_customizations", "atsss.junction.dev")
	var kinds []string
	plural := map[string]string{}
	crds, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	for _, f := range crds {
		names := readYAML(t, f)["spec"].(map[string]any)["names"].(map[string]any)
		kinds = append(kinds, names["kind"].(string))
		plural[names["kind"].(string)] = names["plural"].(string)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "_" {
		t.Fatalf("resource_customizations/atsss.junction.dev holds %v, want _ alone (every kind)", entries)
	}
	dir = filepath.Join(dir, "_")
	if b, err := os.ReadFile(filepath.Join(dir, "health.lua")); err != nil || !bytes.Equal(b, script) {
		t.Errorf("_/health.lua differs from gitops/argocd/health.lua (make manifests): %v", err)
	}
	var tests struct {
		Tests []struct {
			HealthStatus struct{ Status, Message string } `json:"healthStatus"`
			InputPath    string                           `json:"inputPath"`
		} `json:"tests"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "health_test.yaml")); err != nil {
		t.Fatal(err)
	} else if err := yaml.Unmarshal(b, &tests); err != nil || len(tests.Tests) == 0 {
		t.Fatalf("_/health_test.yaml: %d tests, %v", len(tests.Tests), err)
	}

	c := startCluster(t, filepath.Join(root, "config", "crd", "bases"))
	ctx := context.Background()
	// bump raises a copy's generation: a spec field each kind may change.
	bump := map[string][]string{"UserPlaneFunction": {"spec", "p4runtime", "deviceID"}, "SteeringPolicy": {"spec", "precedence"},
		"ATSSSSession": {"spec", "accessLegs", "threeGPP", "uplinkTEID"}}
	reasons := map[string]map[string]string{} // kind → object → the Ready condition's reason
	for _, kind := range kinds {
		reasons[kind] = map[string]string{}
	}
	cases := map[string]int{}
	for i, tc := range tests.Tests {
		what := tc.InputPath
		// As JSON, as Argo CD reads objects: integers stay integers.
		u := &unstructured.Unstructured{}
		if b, err := os.ReadFile(filepath.Join(dir, tc.InputPath)); err != nil {
			t.Fatal(err)
		} else if j, err := yaml.YAMLToJSON(b); err != nil || u.UnmarshalJSON(j) != nil {
			t.Fatalf("%s: not an object: %v", what, err)
		}
		kind := u.GetKind()
		cases[kind]++
		file := u.Object
		if status, msg, err := testenv.ArgoHealth(script, file); err != nil || status != tc.HealthStatus.Status || msg != tc.HealthStatus.Message {
			t.Errorf("%s: %s %q (%v), want %s %q", what, status, msg, err, tc.HealthStatus.Status, tc.HealthStatus.Message)
		}

		name := fmt.Sprintf("%s-%d", u.GetName(), i)
		wantGeneration := u.GetGeneration()
		status, hasStatus := file["status"]
		obj := u.DeepCopy()
		unstructured.RemoveNestedField(obj.Object, "status")
		obj.SetName(name)
		obj.SetGeneration(0)
		if err := c.k8s.Create(ctx, obj); err != nil {
			t.Fatalf("%s: create: %v", what, err)
		}
		for obj.GetGeneration() < wantGeneration {
			n, _, _ := unstructured.NestedFieldNoCopy(obj.Object, bump[kind]...)
			if err := unstructured.SetNestedField(obj.Object, n.(int64)+1, bump[kind]...); err != nil {
				t.Fatal(err)
			}
			if err := c.k8s.Update(ctx, obj); err != nil {
				t.Fatalf("%s: raising the generation: %v", what, err)
			}
		}
		if hasStatus {
			obj.Object["status"] = status
			if err := c.k8s.Status().Update(ctx, obj); err != nil {
				t.Fatalf("%s: the status: %v", what, err)
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, cond := range conds {
				if cond := cond.(map[string]any); cond["type"] == "Ready" {
					reasons[kind][name] = cond["reason"].(string)
				}
			}
		}
		kept := &unstructured.Unstructured{}
		kept.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.k8s.Get(ctx, client.ObjectKeyFromObject(obj), kept); err != nil {
			t.Fatal(err)
		}
		if status, msg, err := testenv.ArgoHealth(script, kept.Object); err != nil || status != tc.HealthStatus.Status || msg != tc.HealthStatus.Message {
			t.Errorf("%s as the API server keeps it: %s %q (%v), want %s %q", what, status, msg, err, tc.HealthStatus.Status, tc.HealthStatus.Message)
		}
	}
	for _, kind := range kinds {
		if cases[kind] == 0 {
			t.Errorf("_/health_test.yaml has no case of %s", kind)
		}
	}

	for _, kind := range []string{"UserPlaneFunction", "SteeringPolicy", "ATSSSSession"} {
		out, err := exec.Command(filepath.Join(root, "bin", "kubectl"), "--kubeconfig", c.kubeconfig, "get", plural[kind], "-n", "default").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get %s: %v\n%s", kind, err, out)
		}
		// kubectl aligns its columns; an empty cell is blank, so each is cut at its header's offsets.
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		start := strings.Index(lines[0], " REASON ") + 1
		if start == 0 {
			t.Errorf("kubectl get %s: no REASON column:\n%s", kind, out)
			continue
		}
		end := start + len("REASON")
		for end < len(lines[0]) && lines[0][end] == ' ' {
			end++
		}
		for _, l := range lines[1:] {
			name := strings.Fields(l)[0]
			want := reasons[kind][name]
			got := ""
			if len(l) > start {
				got = strings.TrimSpace(l[start:min(end, len(l))])
			}
			if got != want {
				t.Errorf("kubectl get %s: %s's REASON is %q, want %q:\n%s", kind, name, got, want, out)
			}
		}
	}
}

// What both examples apply meets what they install: the chart released as junction in
// junction-system with the examples' values, then the objects (gitops/argocd/objects, which holds
// gitops/objects, Flux's) into the same API server. Every UPF finds its pipeline ConfigMap (with
// the P4Info) and its TLS Secret in its own namespace, dials a Service the release made on a
// port it serves, by a name the software UPF's certificate holds and the operator's client
// certificate chains to the same CA; the AddressPool grants the sessions' namespace.
func TestGitOpsObjectsMeetTheRelease(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	for _, ns := range readDocs(t, filepath.Join(root, "gitops", "flux", "release", "namespace.yaml")) {
		if err := c.k8s.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	flux := readDocs(t, filepath.Join(root, "gitops", "flux", "release", "helmrelease.yaml"))[0].Object
	values, _, _ := unstructured.NestedMap(flux, "spec", "values")
	if out, err := run(t, "install", gitopsRelease, chart, "-n", gitopsNamespace, "--kubeconfig", c.kubeconfig, "-f", valuesFile(t, values)); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	var upfs []*unstructured.Unstructured
	granted := map[string]bool{} // "address|deviceID" the P4RuntimeTargets grant gitopsNamespace
	for _, u := range kustomizeBuild(t, "gitops/argocd/objects") {
		if err := c.k8s.Create(ctx, u); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		switch u.GetKind() {
		case "UserPlaneFunction":
			upfs = append(upfs, u)
		case "AddressPool":
			if ns, _, _ := unstructured.NestedString(u.Object, "spec", "namespace"); ns != gitopsNamespace {
				t.Errorf("AddressPool %s grants namespace %q, the objects are in %s", u.GetName(), ns, gitopsNamespace)
			}
		case "P4RuntimeTarget":
			ns, _, _ := unstructured.NestedString(u.Object, "spec", "namespace")
			addr, _, _ := unstructured.NestedString(u.Object, "spec", "address")
			id, _, _ := unstructured.NestedInt64(u.Object, "spec", "deviceID")
			if ns != gitopsNamespace {
				t.Errorf("P4RuntimeTarget %s grants namespace %q, the objects are in %s", u.GetName(), ns, gitopsNamespace)
			}
			granted[fmt.Sprintf("%s|%d", addr, id)] = true
		default:
			if u.GetNamespace() != gitopsNamespace {
				t.Errorf("%s %s is in namespace %q, want %s", u.GetKind(), u.GetName(), u.GetNamespace(), gitopsNamespace)
			}
		}
	}
	if len(upfs) == 0 {
		t.Fatal("the objects hold no UserPlaneFunction")
	}
	for _, upf := range upfs {
		ns := upf.GetNamespace()
		// The operator connects only to a device a P4RuntimeTarget grants (docs/p4runtime-targets.md).
		device, _, _ := unstructured.NestedString(upf.Object, "spec", "p4runtime", "address")
		id, _, _ := unstructured.NestedInt64(upf.Object, "spec", "p4runtime", "deviceID")
		if !granted[fmt.Sprintf("%s|%d", device, id)] {
			t.Errorf("UPF %s names the device %s (device ID %d), which no P4RuntimeTarget grants %s", upf.GetName(), device, id, gitopsNamespace)
		}
		cmName, _, _ := unstructured.NestedString(upf.Object, "spec", "pipeline", "configMapRef", "name")
		if cm := c.get(t, "v1", "ConfigMap", ns, cmName); cm != nil {
			if info, _, _ := unstructured.NestedString(cm.Object, "data", "p4info.txtpb"); !strings.Contains(info, "tables") {
				t.Errorf("ConfigMap %s/%s has no P4Info", ns, cmName)
			}
		}
		secretName, _, _ := unstructured.NestedString(upf.Object, "spec", "p4runtime", "tls", "secretRef", "name")
		clientSecret := c.get(t, "v1", "Secret", ns, secretName)

		addr, _, _ := unstructured.NestedString(upf.Object, "spec", "p4runtime", "address")
		host, port, _ := strings.Cut(addr, ":")
		labels := strings.Split(host, ".")
		if len(labels) != 3 || labels[2] != "svc" {
			t.Errorf("UPF %s dials %s, want <service>.<namespace>.svc:<port>", upf.GetName(), addr)
			continue
		}
		svc := c.get(t, "v1", "Service", labels[1], labels[0])
		if svc == nil {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if !strings.Contains(fmt.Sprint(ports), "port:"+port+" ") {
			t.Errorf("UPF %s dials port %s; Service %s serves %v", upf.GetName(), port, labels[0], ports)
		}
		// The software UPF's certificate, in the Secret its Deployment mounts.
		server := c.get(t, "v1", "Secret", labels[1], labels[0]+"-tls")
		if server == nil || clientSecret == nil {
			continue
		}
		if err := handshake(secretData(t, server), secretData(t, clientSecret), host); err != nil {
			t.Errorf("UPF %s: the operator's certificate (%s) against the software UPF's (%s-tls) for %s: %v", upf.GetName(), secretName, labels[0], host, err)
		}
	}
}

func secretData(t *testing.T, s *unstructured.Unstructured) map[string][]byte {
	t.Helper()
	data, _, _ := unstructured.NestedStringMap(s.Object, "data")
	out := map[string][]byte{}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("Secret %s: %s: %v", s.GetName(), k, err)
		}
		out[k] = b
	}
	return out
}
