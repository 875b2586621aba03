// Package chart tests charts/junction with helm (hack/tools.sh helm) and the envtest API server:
// lint, the rendered objects against their one source each (config/, ue-daemonset/), the values
// schema, and install, upgrade and uninstall against a real kube-apiserver.
package chart

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/junction-atsss/junction/controllers"
	"github.com/junction-atsss/junction/internal/testenv"
)

var (
	root  = testenv.RepoRoot()
	chart = filepath.Join(root, "charts", "junction")
	helm  = filepath.Join(root, "bin", "helm")
)

// every optional part of the chart switched on.
var allOptional = []string{"--set", "ueAgent.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
	"--set", "pipeline.create=true", "--set-file", "pipeline.p4info=" + filepath.Join(root, "p4", "p4info.txtpb"),
	"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.dashboard.enabled=true",
	"--set", "softupf.enabled=true", "--set", "softupf.ports[0].number=1", "--set", "softupf.ports[0].interface=n3",
	"--set", "softupf.ports[1].number=3", "--set", "softupf.ports[1].interface=n6",
	"--set", "softupf.networks[0].name=n3-net", "--set", "softupf.networks[0].interface=n3",
	"--set", "softupf.networks[1].name=n6-net", "--set", "softupf.networks[1].interface=n6",
	"--set", "p4runtimeTLS.certManager.enabled=true", "--set", "p4runtimeTLS.certManager.issuerRef.name=switch-ca",
	"--set", "softupf.tls.secretName=upf-tls", "--set", "metrics.tls.issuer=certManager",
	"--set", "ueAgent.nodeScopedReads.enabled=true"}

// needForeignCRDs are the values whose objects need CRDs the envtest API server lacks
// (Prometheus Operator, cert-manager), and softupf.tls.secretName, which goes with the
// operator's certificate from cert-manager (a server certificate from the same CA): without it
// the chart issues both; and ueAgent.nodeScopedReads, whose certificate is cert-manager's then.
var needForeignCRDs = []string{"metrics.serviceMonitor", "metrics.prometheusRule", "metrics.tls", "p4runtimeTLS.certManager", "softupf.tls.secretName", "ueAgent.nodeScopedReads"}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm is not built (hack/tools.sh helm): %v", err)
	}
	cmd := exec.Command(helm, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// render runs helm template and returns the objects by kind/name.
func render(t *testing.T, args ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := run(t, append([]string{"template", "j", chart, "-n", "junction-system", "--kube-version", "1.33.0"}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(out, "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs[u.GetKind()+"/"+u.GetName()] = u
		}
	}
	return objs
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func TestLintStrict(t *testing.T) {
	for name, args := range map[string][]string{"defaults": nil, "every optional part": allOptional} {
		if out, err := run(t, append([]string{"lint", "--strict", chart}, args...)...); err != nil {
			t.Errorf("%s: helm lint --strict: %v\n%s", name, err, out)
		}
	}
}

// The chart renders what config/ and ue-daemonset/ define, not a copy that drifted.
func TestRenderedObjectsMatchTheirSources(t *testing.T) {
	objs := render(t, allOptional...)
	for _, want := range []string{"Deployment/j-junction-operator", "ClusterRole/j-junction-operator", "Role/j-junction-leader-election",
		"PodDisruptionBudget/j-junction-operator", "Service/j-junction-operator-metrics", "ServiceMonitor/j-junction-operator",
		"ConfigMap/junction-upf-pipeline", "DaemonSet/j-junction-ue-agent", "ClusterRole/j-junction-ue-agent",
		"ClusterRole/j-junction-metrics-auth", "ClusterRoleBinding/j-junction-metrics-auth", "ClusterRole/j-junction-metrics-reader",
		"PrometheusRule/j-junction-operator", "ConfigMap/j-junction-dashboard", "Deployment/j-junction-softupf", "Service/j-junction-softupf",
		"Certificate/j-junction-p4runtime-client"} {
		if objs[want] == nil {
			t.Errorf("%s not rendered", want)
		}
	}
	if objs["Deployment/j-junction-operator"] == nil || objs["DaemonSet/j-junction-ue-agent"] == nil || objs["ClusterRole/j-junction-operator"] == nil {
		t.FailNow()
	}

	// The operator's rules are controller-gen's.
	if got, want := objs["ClusterRole/j-junction-operator"].Object["rules"], readYAML(t, filepath.Join(root, "config", "rbac", "role.yaml"))["rules"]; !reflect.DeepEqual(got, want) {
		t.Errorf("operator rules differ from config/rbac/role.yaml:\n got %v\nwant %v", got, want)
	}
	// config/rbac/role.yaml's second document: the Role for the Secrets, in upfNamespace by default.
	secretsRole := map[string]any{}
	generated, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if docs := strings.Split(string(generated), "\n---\n"); len(docs) != 2 || yaml.Unmarshal([]byte(docs[1]), &secretsRole) != nil || secretsRole["kind"] != "Role" {
		t.Errorf("config/rbac/role.yaml is not a ClusterRole and a Role (for the Secrets): %d documents", len(docs))
	}
	if got := objs["Role/j-junction-operator-secrets"]; got == nil || !reflect.DeepEqual(got.Object["rules"], secretsRole["rules"]) {
		t.Errorf("the operator's Secrets rules differ from config/rbac/role.yaml's Role: %v", got)
	}
	if got, want := objs["ClusterRole/j-junction-metrics-auth"].Object["rules"], readYAML(t, filepath.Join(root, "config", "rbac", "metrics_auth_role.yaml"))["rules"]; !reflect.DeepEqual(got, want) {
		t.Errorf("metrics auth rules differ from config/rbac/metrics_auth_role.yaml:\n got %v\nwant %v", got, want)
	}
	// With ueAgent.nodeScopedReads, but for the session reads the agent authorizer grants.
	agentRules := readYAML(t, filepath.Join(root, "ue-daemonset", "role.yaml"))["rules"].([]any)
	want := slices.DeleteFunc(slices.Clone(agentRules), func(r any) bool { return contains(r.(map[string]any)["resources"], "atssssessions") })
	if len(want) != len(agentRules)-1 {
		t.Errorf("ue-daemonset/role.yaml has %d rules for atssssessions, want one (the chart drops it)", len(agentRules)-len(want))
	}
	if got := objs["ClusterRole/j-junction-ue-agent"].Object["rules"]; !reflect.DeepEqual(got, want) {
		t.Errorf("UE agent rules differ from ue-daemonset/role.yaml's without its session reads:\n got %v\nwant %v", got, want)
	}

	// The UE agent's admission policy is ue-daemonset's, for the release's ServiceAccount.
	policy, binding := objs["ValidatingAdmissionPolicy/j-junction-ue-agent"], objs["ValidatingAdmissionPolicyBinding/j-junction-ue-agent"]
	if policy == nil || binding == nil {
		t.Fatalf("the UE agent's ValidatingAdmissionPolicy or its binding not rendered: %v", names(objs))
	}
	srcPolicy := readYAML(t, filepath.Join(root, "ue-daemonset", "admission_policy.yaml"))["spec"].(map[string]any)
	gotPolicy := policy.Object["spec"].(map[string]any)
	for _, f := range []string{"matchConstraints", "variables", "validations", "failurePolicy"} {
		if !reflect.DeepEqual(gotPolicy[f], srcPolicy[f]) {
			t.Errorf("the UE agent's admission policy's %s differs from ue-daemonset/admission_policy.yaml:\n got %v\nwant %v", f, gotPolicy[f], srcPolicy[f])
		}
	}
	if want := []any{map[string]any{"name": "ue-agent", "expression": "request.userInfo.username == 'system:serviceaccount:junction-system:j-junction-ue-agent'"}}; !reflect.DeepEqual(gotPolicy["matchConditions"], want) {
		t.Errorf("the UE agent's admission policy matches %v, want the release's ServiceAccount %v", gotPolicy["matchConditions"], want)
	}
	if got, _, _ := unstructured.NestedString(binding.Object, "spec", "policyName"); got != "j-junction-ue-agent" {
		t.Errorf("the admission policy binding names policy %q, want j-junction-ue-agent", got)
	}

	// The UE agent's pod spec is ue-daemonset's but for the release's names and image, and the
	// metrics certificate the chart gives it (TestUEAgentPodMonitor checks that).
	src := readYAML(t, filepath.Join(root, "ue-daemonset", "daemonset.yaml"))
	srcPod := src["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	gotPod, _, _ := unstructured.NestedMap(objs["DaemonSet/j-junction-ue-agent"].Object, "spec", "template", "spec")
	for _, pod := range []map[string]any{srcPod, gotPod} {
		delete(pod, "serviceAccountName")
		c := pod["containers"].([]any)[0].(map[string]any)
		delete(c, "image")
		delete(c, "imagePullPolicy")
		c["args"] = slices.DeleteFunc(c["args"].([]any), func(a any) bool { return strings.HasPrefix(a.(string), "--metrics-cert-dir=") })
		isCert := func(v any) bool { return v.(map[string]any)["name"] == "metrics-tls" }
		c["volumeMounts"] = slices.DeleteFunc(c["volumeMounts"].([]any), isCert)
		pod["volumes"] = slices.DeleteFunc(pod["volumes"].([]any), isCert)
	}
	if !reflect.DeepEqual(srcPod, gotPod) {
		a, _ := yaml.Marshal(srcPod)
		b, _ := yaml.Marshal(gotPod)
		t.Errorf("the chart's UE agent pod spec differs from ue-daemonset/daemonset.yaml:\n--- ue-daemonset\n%s\n--- chart\n%s", a, b)
	}

	// The operator runs the chart's image with the values' settings.
	dep := objs["Deployment/j-junction-operator"]
	replicas, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas") // a float64 from YAML
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	if replicas != float64(2) || c["image"] != "ghcr.io/junction-atsss/junction:"+testenv.ReleaseVersion() || !contains(c["args"], "--leader-elect=true") {
		t.Errorf("operator: replicas %v, image %v, args %v", replicas, c["image"], c["args"])
	}
	if want := fmt.Sprintf("--max-concurrent-reconciles=%d", controllers.DefaultMaxConcurrentReconciles); !contains(c["args"], want) {
		t.Errorf("operator args %v lack %s: the chart's default is not the operator's", c["args"], want)
	}
}

func contains(list any, s string) bool {
	for _, x := range list.([]any) {
		if x == s {
			return true
		}
	}
	return false
}

// The chart's CRDs are config/crd/bases, byte for byte (make manifests copies them).
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	src, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	got, _ := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	if len(src) == 0 || len(src) != len(got) {
		t.Fatalf("%d CRDs in config/crd/bases, %d in the chart", len(src), len(got))
	}
	for _, s := range src {
		a, _ := os.ReadFile(s)
		b, err := os.ReadFile(filepath.Join(chart, "crds", filepath.Base(s)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("charts/junction/crds/%s differs from config/crd/bases (make manifests): %v", filepath.Base(s), err)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"operator.replicas=0", "replicas"},
		{"image.pullPolicy=Sometimes", "pullPolicy"},
		{"operator.pathStatusInterval=soon", "pathStatusInterval"},
		{"nonsense=1", "nonsense"},
		{"softupf.ports[0].number=600", "number"},
		{"softupf.ports[0].interface=a-name-longer-than-15", "interface"},
		{"metrics.prometheusRule.tableUsageRatio=2", "tableUsageRatio"},
		{"p4runtimeTLS.certManager.issuerRef.kind=Vault", "kind"},
		{"softupf.tls.secretName=Not_A_Name", "secretName"},
		{"n4.ports[0]=0", "/n4/ports"},
		{"n4.service.type=ExternalName", "type"},
		{"ueAgent.nodeScopedReads.port=8443", "port"},
		{"ueAgent.nodeScopedReads.apiServer.url=http://10.0.0.1", "url"},
	} {
		out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "--set", tc.set)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: %v, want an error naming %s:\n%s", tc.set, err, tc.want, out)
		}
	}
	for _, tc := range []struct {
		what string
		set  []string
		want string
	}{
		{"a TLS Secret without its CA", []string{"p4runtimeTLS.create=true"}, "p4runtimeTLS.caCrt"},
		{"a certificate without an issuer", []string{"p4runtimeTLS.certManager.enabled=true"}, "issuerRef.name"},
		{"both ways of making the TLS Secret", []string{"p4runtimeTLS.create=true", "p4runtimeTLS.caCrt=x",
			"p4runtimeTLS.certManager.enabled=true", "p4runtimeTLS.certManager.issuerRef.name=ca"}, "choose one"},
		{"the operator's certificate from your CA and the software UPF's from the chart's",
			[]string{"softupf.enabled=true", "p4runtimeTLS.create=true", "p4runtimeTLS.caCrt=x"}, "set softupf.tls.secretName"},
		{"plaintext and a TLS Secret for the software UPF", []string{"softupf.enabled=true", "softupf.insecure=true", "softupf.tls.secretName=upf-tls"}, "choose one"},
		{"the chart's cert-manager CA for a client Secret in another namespace",
			[]string{"softupf.enabled=true", "softupf.tls.issuer=certManager", "upfNamespace=tenant"}, "upfNamespace"},
		{"two replicas without leader election", []string{"operator.leaderElection=false"}, "operator.replicas=1"},
		{"the agent authorizer without a certificate", []string{"ueAgent.enabled=true", "ueAgent.nodeScopedReads.enabled=true", "metrics.tls.issuer=none"}, "ueAgent.nodeScopedReads.tls.secretName"},
	} {
		args := []string{"template", "j", chart, "--kube-version", "1.33.0"}
		for _, v := range tc.set {
			args = append(args, "--set", v)
		}
		if out, err := run(t, args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %v, want an error naming %s:\n%s", tc.what, err, tc.want, out)
		}
	}
}

// Kubernetes 1.30 lacks CRD field selectors (beta in 1.31), which the node agents list with.
func TestChartRequiresKubernetes131(t *testing.T) {
	if out, err := run(t, "template", "j", chart, "--kube-version", "1.30.0"); err == nil || !strings.Contains(out, "1.31") {
		t.Errorf("Kubernetes 1.30: %v, want an error naming 1.31:\n%s", err, out)
	}
	// Without --kube-version, helm assumes the Kubernetes version of its client-go (hack/tools.sh
	// builds it with the link flags Helm's release build sets): the chart renders and lints, as
	// with a released helm, for GitOps tools and users who render offline.
	for _, args := range [][]string{{"template", "j", chart}, {"lint", chart}} {
		if out, err := run(t, args...); err != nil {
			t.Errorf("helm %s without --kube-version: %v\n%s", args[0], err, out)
		}
	}
}

// One replica gets no PodDisruptionBudget (minAvailable 1 would block every drain); numbers of a
// million and more render as integers, not in Helm's float form (1e+06).
func TestRenderedDetails(t *testing.T) {
	if objs := render(t, "--set", "operator.replicas=1"); objs["PodDisruptionBudget/j-junction-operator"] != nil {
		t.Error("a PodDisruptionBudget for one replica")
	}
	if objs := render(t); objs["PodDisruptionBudget/j-junction-operator"] == nil {
		t.Errorf("no PodDisruptionBudget for two replicas; rendered %v", names(objs))
	}
	// From a values file: Helm reads its numbers as float64 (--set parses integers as such).
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("softupf: {enabled: true, deviceID: 4000000000}\noperator: {maxConcurrentReconciles: 1000000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "-f", values)
	for name, want := range map[string]string{"Deployment/j-junction-operator": "--max-concurrent-reconciles=1000000", "Deployment/j-junction-softupf": "--device-id=4000000000"} {
		o := objs[name]
		if o == nil {
			t.Fatalf("%s not rendered; rendered %v", name, names(objs))
		}
		args, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if !strings.Contains(fmt.Sprint(args), want) {
			t.Errorf("%s: want %s in %v", name, want, args)
		}
	}
}

// With n4.enabled the operator's pods open the N4 ports (UDP), the leader labels its own pod
// (the flag, POD_NAME, RBAC to patch pods in the release namespace) and the N4 Service selects
// that label besides the operator's pods (docs/n4.md); without it none of that is rendered.
func TestN4ServiceReachesTheLeaderOnly(t *testing.T) {
	objs := render(t, "--set", "n4.enabled=true", "--set", "n4.ports={8805,8806}", "--set", "n4.service.type=LoadBalancer")
	svc := objs["Service/j-junction-n4"]
	if svc == nil {
		t.Fatalf("no Service j-n4; rendered %v", names(objs))
	}
	sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	if sel["atsss.junction.dev/n4-leader"] != "true" || sel["app.kubernetes.io/component"] != "operator" || sel["app.kubernetes.io/instance"] != "j" {
		t.Errorf("N4 Service selector %v, want the operator's pods with atsss.junction.dev/n4-leader=true", sel)
	}
	if typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type"); typ != "LoadBalancer" {
		t.Errorf("N4 Service type %q", typ)
	}
	// Behind a load balancer the SMF's own address must reach the endpoint (spec.n4.allowedSMFs
	// goes by it); a ClusterIP Service has no external traffic, and the API server refuses the
	// field there.
	if policy, _, _ := unstructured.NestedString(svc.Object, "spec", "externalTrafficPolicy"); policy != "Local" {
		t.Errorf("N4 Service externalTrafficPolicy %q behind a load balancer, want Local", policy)
	}
	inCluster := render(t, "--set", "n4.enabled=true")["Service/j-junction-n4"]
	if _, set, _ := unstructured.NestedString(inCluster.Object, "spec", "externalTrafficPolicy"); set {
		t.Error("an externalTrafficPolicy on the ClusterIP N4 Service")
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if got := fmt.Sprint(ports); len(ports) != 2 || !strings.Contains(got, "port:8805") || !strings.Contains(got, "port:8806") || strings.Contains(got, "TCP") {
		t.Errorf("N4 Service ports %v, want UDP 8805 and 8806", ports)
	}
	containers, _, _ := unstructured.NestedSlice(objs["Deployment/j-junction-operator"].Object, "spec", "template", "spec", "containers")
	c := fmt.Sprint(containers)
	for _, want := range []string{"--n4-leader-label", "POD_NAME", "containerPort:8805", "containerPort:8806", "protocol:UDP"} {
		if !strings.Contains(c, want) {
			t.Errorf("operator container lacks %s: %v", want, c)
		}
	}
	rules, _, _ := unstructured.NestedSlice(objs["Role/j-junction-leader-election"].Object, "rules")
	if r := fmt.Sprint(rules); !strings.Contains(r, "resources:[pods]") || !strings.Contains(r, "verbs:[patch]") {
		t.Errorf("leader-election Role %v, want patch on pods", rules)
	}

	off := render(t)
	if off["Service/j-junction-n4"] != nil {
		t.Error("an N4 Service without n4.enabled")
	}
	containers, _, _ = unstructured.NestedSlice(off["Deployment/j-junction-operator"].Object, "spec", "template", "spec", "containers")
	rules, _, _ = unstructured.NestedSlice(off["Role/j-junction-leader-election"].Object, "rules")
	if strings.Contains(fmt.Sprint(containers), "n4") || strings.Contains(fmt.Sprint(rules), "pods") {
		t.Error("N4 flags, ports or pod RBAC without n4.enabled")
	}
}

// With n4.networkPolicy.from the operator's pods take N4 from those peers alone, on every N4
// port, and TCP (metrics, probes) from anywhere; without it, or without N4, there is no policy.
func TestN4NetworkPolicyAdmitsTheSMFsAlone(t *testing.T) {
	objs := render(t, "--set", "n4.enabled=true", "--set", "n4.ports={8805,8806}",
		"--set", "n4.networkPolicy.from[0].ipBlock.cidr=192.0.2.0/24",
		"--set", "n4.networkPolicy.from[1].namespaceSelector.matchLabels.core=smf")
	np := objs["NetworkPolicy/j-junction-n4"]
	if np == nil {
		t.Fatalf("no NetworkPolicy j-junction-n4; rendered %v", names(objs))
	}
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	pod, _, _ := unstructured.NestedStringMap(objs["Deployment/j-junction-operator"].Object, "spec", "template", "metadata", "labels")
	if sel["app.kubernetes.io/component"] != "operator" || sel["app.kubernetes.io/instance"] != "j" || pod["app.kubernetes.io/component"] != "operator" {
		t.Errorf("podSelector %v: want the operator's pods (labels %v)", sel, pod)
	}
	if types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes"); !reflect.DeepEqual(types, []string{"Ingress"}) {
		t.Errorf("policyTypes %v, want Ingress", types)
	}
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if len(ingress) != 2 {
		t.Fatalf("ingress %v: want a rule for N4 and one for TCP", ingress)
	}
	n4, tcp := ingress[0].(map[string]any), ingress[1].(map[string]any)
	if from := fmt.Sprint(n4["from"]); from != "[map[ipBlock:map[cidr:192.0.2.0/24]] map[namespaceSelector:map[matchLabels:map[core:smf]]]]" {
		t.Errorf("N4 rule from %s, want the two peers of the values", from)
	}
	if ports := fmt.Sprint(n4["ports"]); ports != "[map[port:8805 protocol:UDP] map[port:8806 protocol:UDP]]" {
		t.Errorf("N4 rule ports %s, want UDP 8805 and 8806", ports)
	}
	if _, from := tcp["from"]; from || fmt.Sprint(tcp["ports"]) != "[map[protocol:TCP]]" {
		t.Errorf("second rule %v, want every TCP port from anywhere", tcp)
	}
	if render(t, "--set", "n4.enabled=true")["NetworkPolicy/j-junction-n4"] != nil {
		t.Error("a NetworkPolicy without n4.networkPolicy.from")
	}
	if render(t, "--set", "n4.networkPolicy.from[0].ipBlock.cidr=192.0.2.0/24")["NetworkPolicy/j-junction-n4"] != nil {
		t.Error("an N4 NetworkPolicy without n4.enabled")
	}
}

func names(objs map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for n := range objs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// pipeline.create alone makes the ConfigMap the software UPF needs (a GitOps tool's values cannot
// read files): the P4Info is this release's p4/p4info.txtpb, byte for byte, and no device config.
func TestPipelineCarriesTheP4Info(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(root, "p4", "p4info.txtpb"))
	if err != nil {
		t.Fatal(err)
	}
	cm := render(t, "--set", "pipeline.create=true")["ConfigMap/junction-upf-pipeline"]
	if cm == nil {
		t.Fatal("pipeline.create=true rendered no ConfigMap junction-upf-pipeline")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if data["p4info.txtpb"] != string(want) || data["device_config"] != "" {
		t.Errorf("the pipeline ConfigMap: p4info.txtpb of %d bytes (p4/p4info.txtpb has %d), device_config %q", len(data["p4info.txtpb"]), len(want), data["device_config"])
	}
}

// A device config that is not text (a bf-p4c pipeline) reaches the ConfigMap byte for byte.
func TestBinaryDeviceConfigSurvives(t *testing.T) {
	blob := []byte{0x00, 0xff, 0xfe, 0x80, 'b', 'f', 0xc3, 0x28, 0x0a}
	dir := t.TempDir()
	dev, p4info := filepath.Join(dir, "pipeline.bin"), filepath.Join(dir, "p4info.txtpb")
	if err := os.WriteFile(dev, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p4info, []byte("pkg_info {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "--set", "pipeline.create=true", "--set-file", "pipeline.p4info="+p4info, "--set-file", "pipeline.deviceConfig="+dev)
	var cm *unstructured.Unstructured
	for name, o := range objs {
		if strings.HasPrefix(name, "ConfigMap/") {
			cm = o
		}
	}
	if cm == nil {
		t.Fatalf("no pipeline ConfigMap; rendered %v", names(objs))
	}
	enc, _, _ := unstructured.NestedString(cm.Object, "binaryData", "device_config")
	got, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || !bytes.Equal(got, blob) {
		t.Errorf("binaryData.device_config = %q (%v), want %x byte for byte", enc, err, blob)
	}
}

// helm install, upgrade and uninstall against a real kube-apiserver with no CRDs yet: the chart's
// CRDs and every object are accepted, an upgrade changes what it should, and uninstall removes
// the release's objects (CRDs stay, as Helm keeps crds/).
func TestInstallUpgradeUninstall(t *testing.T) {
	c := startCluster(t)
	kubeconfig, k8s := c.kubeconfig, c.k8s
	helmAt := func(args ...string) {
		t.Helper()
		if out, err := run(t, append(args, "--kubeconfig", kubeconfig, "-n", "junction-system")...); err != nil {
			t.Fatalf("helm %s: %v\n%s", args[0], err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	replicas := func() (int32, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "junction-system", Name: "j-junction-operator"}, d); err != nil {
			return 0, err
		}
		return *d.Spec.Replicas, nil
	}

	// The software UPF without a Secret of its own: the chart issues its P4Runtime PKI with helm
	// (envtest has no cert-manager).
	installable := installableOptional()
	helmAt(append([]string{"install", "j", chart, "--create-namespace"}, installable...)...)
	if n, err := replicas(); err != nil || n != 2 {
		t.Fatalf("after install: operator replicas %d, %v; want 2", n, err)
	}
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	if err := k8s.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds.Items {
		names = append(names, c.GetName())
	}
	if strings.Join(names, ",") != "addresspools.atsss.junction.dev,atssssessions.atsss.junction.dev,p4runtimetargets.atsss.junction.dev,steeringpolicies.atsss.junction.dev,userplanefunctions.atsss.junction.dev" {
		t.Fatalf("CRDs after install: %v", names)
	}
	ds := &appsv1.DaemonSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "junction-system", Name: "j-junction-ue-agent"}, ds); err != nil {
		t.Fatalf("UE agent DaemonSet: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "junction-system", Name: "j-junction-softupf"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("software UPF Deployment: %v", err)
	}
	pki := map[string]map[string][]byte{}
	for _, name := range []string{"junction-p4runtime-tls", "j-junction-softupf-tls"} {
		sec := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "junction-system", Name: name}, sec); err != nil {
			t.Fatalf("P4Runtime TLS Secret %s: %v", name, err)
		}
		for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
			if len(sec.Data[k]) == 0 {
				t.Fatalf("P4Runtime TLS Secret %s: no %s", name, k)
			}
		}
		pki[name] = sec.Data
	}

	// What hack/kind.sh applies after the chart (kustomize build hack/kind/objects) is accepted.
	kinds := map[string]int{}
	for _, u := range kustomizeBuild(t, "hack/kind/objects") {
		if err := k8s.Create(ctx, u); err != nil {
			t.Fatalf("hack/kind/objects: %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		kinds[u.GetKind()]++
	}
	if kinds["UserPlaneFunction"] != 1 || kinds["ATSSSSession"] < 4 || kinds["SteeringPolicy"] < 4 || kinds["Deployment"] != 2 { // the gNB emulator and the W-AGF
		t.Fatalf("hack/kind/objects: %v", kinds)
	}

	helmAt(append([]string{"upgrade", "j", chart, "--set", "operator.replicas=3"}, installable...)...)
	if n, err := replicas(); err != nil || n != 3 {
		t.Fatalf("after upgrade: operator replicas %d, %v; want 3", n, err)
	}
	// The upgrade keeps the issued certificates: new ones would not match what a running UPF
	// and operator hold until both reload.
	for name, data := range pki {
		sec := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "junction-system", Name: name}, sec); err != nil || !reflect.DeepEqual(sec.Data, data) {
			t.Errorf("after upgrade: Secret %s changed (%v)", name, err)
		}
	}

	helmAt("uninstall", "j")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := replicas()
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operator Deployment is still there after uninstall: %v", errors.Join(err, io.EOF))
		}
		time.Sleep(200 * time.Millisecond)
	}
	files, _ := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	if err := k8s.List(ctx, crds); err != nil || len(crds.Items) != len(files) {
		t.Fatalf("CRDs after uninstall: %d of the chart's %d, %v; Helm keeps crds/", len(crds.Items), len(files), err)
	}
}

// installableOptional is allOptional without what needs foreign CRDs.
func installableOptional() []string {
	var out []string
next:
	for i := 0; i < len(allOptional); i += 2 {
		for _, p := range needForeignCRDs {
			if strings.HasPrefix(allOptional[i+1], p) {
				continue next
			}
		}
		out = append(out, allOptional[i], allOptional[i+1])
	}
	return out
}
