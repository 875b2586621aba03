package chart

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

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

// The Flux example deploys what exists and what the release made: its HelmRelease's values pass
// the chart's schema, its Kustomizations' paths are directories of this repository with a
// kustomization.yaml, each dependency and health check names an object the example defines, the
// GitRepository fetches the release's tag, and the release is named and placed where
// gitops/objects expects it, in a namespace of the Pod Security level the software UPF needs.
func TestFluxExample(t *testing.T) {
	dir := filepath.Join(root, "gitops", "flux")
	objs := readDocs(t, filepath.Join(dir, "junction.yaml"))
	defined := map[string]bool{}
	for _, o := range objs {
		defined[o.GetKind()+"/"+o.GetName()] = true
		if o.GetKind() == "GitRepository" {
			if tag, _, _ := unstructured.NestedString(o.Object, "spec", "ref", "tag"); tag != testenv.ReleaseVersion() {
				t.Errorf("GitRepository %s fetches tag %q, want the release's %s (VERSION)", o.GetName(), tag, testenv.ReleaseVersion())
			}
		}
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
	out, err := exec.Command(filepath.Join(root, "bin", "kustomize"), "build", filepath.Join(root, path)).CombinedOutput()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", path, err, out)
	}
	wantWave := map[string]string{"AddressPool": "1", "UserPlaneFunction": "1", "SteeringPolicy": "2", "ATSSSSession": "2"}
	seen := map[string]int{}
	for _, doc := range strings.Split(string(out), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || len(u.Object) == 0 {
			continue
		}
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
	out, err := exec.Command(filepath.Join(root, "bin", "kustomize"), "build", filepath.Join(root, "gitops", "argocd", "objects")).CombinedOutput()
	if err != nil {
		t.Fatalf("kustomize build gitops/argocd/objects: %v\n%s", err, out)
	}
	var upfs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || len(u.Object) == 0 {
			continue
		}
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
