package chart

// The conventions platform teams expect of a chart (cert-manager's, kube-prometheus-stack's):
// extension points, names, namespaces and labels, the ServiceMonitor and the alerts' runbooks,
// CRDs that outlive the release, Pod Security.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var extensionValues = filepath.Join("testdata", "extension-values.yaml")

// podTemplate returns the pod template of a Deployment or DaemonSet and its first container.
func podTemplate(t *testing.T, o *unstructured.Unstructured) (meta, spec, container map[string]any) {
	t.Helper()
	if o == nil {
		t.Fatal("object not rendered")
	}
	meta, _, _ = unstructured.NestedMap(o.Object, "spec", "template", "metadata")
	spec, _, _ = unstructured.NestedMap(o.Object, "spec", "template", "spec")
	cs, _ := spec["containers"].([]any)
	if len(cs) == 0 {
		t.Fatalf("%s has no containers", o.GetName())
	}
	return meta, spec, cs[0].(map[string]any)
}

// The schema accepts global (the chart as a dependency) and the keys users reach for, and each
// lands where it should; it still refuses their misspellings.
func TestExtensionPoints(t *testing.T) {
	objs := render(t, "-f", extensionValues)
	for kind, name := range map[string]string{"Deployment": "edge-junction-operator", "Deployment/": "edge-junction-softupf", "DaemonSet": "edge-junction-ue-agent"} {
		o := objs[strings.TrimSuffix(kind, "/")+"/"+name]
		meta, spec, c := podTemplate(t, o)
		labels, _ := meta["labels"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		if labels["tier"] == nil || annotations["example.com/owner"] != "ran" {
			t.Errorf("%s: pod labels %v, annotations %v: want podLabels and podAnnotations", name, labels, annotations)
		}
		if labels["team"] != "ran" || o.GetLabels()["team"] != "ran" {
			t.Errorf("%s: commonLabels missing (object %v, pod %v)", name, o.GetLabels(), labels)
		}
		if spec["priorityClassName"] == nil || spec["priorityClassName"] == "system-node-critical" && strings.HasSuffix(name, "ue-agent") {
			t.Errorf("%s: priorityClassName %v, want the values'", name, spec["priorityClassName"])
		}
		if !strings.HasPrefix(c["image"].(string), "ghcr.io/junction-atsss/junction@sha256:0123") {
			t.Errorf("%s: image %v, want image.digest", name, c["image"])
		}
		args, env := fmt.Sprint(c["args"]), fmt.Sprint(c["env"])
		if !strings.Contains(args, "--leader-election-lease-duration=30s") && !strings.Contains(args, "--log-level=debug") && !strings.Contains(args, "--min-status-interval=5s") {
			t.Errorf("%s: args %s lack extraArgs", name, args)
		}
		if !strings.Contains(env, "GOMAXPROCS") && !strings.Contains(env, "GOGC") {
			t.Errorf("%s: env %s lacks extraEnv", name, env)
		}
		if strings.HasSuffix(name, "ue-agent") {
			// The agent's own arguments and environment stay: extraArgs and extraEnv add to them.
			if !strings.Contains(args, "--node-name=$(NODE_NAME)") || !strings.Contains(env, "NODE_NAME") {
				t.Errorf("the UE agent lost its own args or env: %s %s", args, env)
			}
			if r := fmt.Sprint(c["resources"]); !strings.Contains(r, "memory:512Mi") {
				t.Errorf("the UE agent's resources %s, want ueAgent.resources", r)
			}
		}
		if r := fmt.Sprint(c["resources"]); strings.HasSuffix(name, "softupf") && !strings.Contains(r, "memory:2Gi") {
			t.Errorf("the software UPF's resources %s, want softupf.resources", r)
		}
	}
	if objs["ConfigMap/edge-junction-extra"] == nil || objs["PriorityClass/j-edge-critical"] == nil {
		t.Errorf("extraObjects (as YAML and as a templated string) not rendered: %v", names(objs))
	}
	if cm := objs["ConfigMap/edge-junction-extra"]; cm != nil && cm.Object["data"].(map[string]any)["release"] != "j" {
		t.Errorf("extraObjects are not templated: %v", cm.Object["data"])
	}
	spread, _, _ := unstructured.NestedSlice(objs["Deployment/edge-junction-operator"].Object, "spec", "template", "spec", "topologySpreadConstraints")
	if len(spread) != 1 || !strings.Contains(fmt.Sprint(spread), "topology.kubernetes.io/zone") {
		t.Errorf("operator topologySpreadConstraints %v, want the values' (zones)", spread)
	}
	// nameOverride is the chart's name in every name and in app.kubernetes.io/name (the chart's
	// README, "Names and namespaces"); the pipeline and the TLS Secret keep the names their values give.
	renamed := render(t, "--set", "nameOverride=ran", "--set", "ueAgent.enabled=true", "--set", "softupf.enabled=true", "--set", "pipeline.create=true")
	for name, o := range renamed {
		if n := o.GetName(); !strings.HasPrefix(n, "j-ran-") && n != "junction-upf-pipeline" && n != "junction-p4runtime-tls" {
			t.Errorf("nameOverride=ran: %s does not start with j-ran-", name)
		}
	}
	if l := renamed["Deployment/j-ran-operator"]; l == nil || l.GetLabels()["app.kubernetes.io/name"] != "ran" {
		t.Errorf("nameOverride=ran: no Deployment/j-ran-operator labelled app.kubernetes.io/name=ran: %v", names(renamed))
	}
	// Without ueAgent.resources the agent keeps ue-daemonset's (one fact, one place).
	_, _, c := podTemplate(t, render(t, "--set", "ueAgent.enabled=true")["DaemonSet/j-junction-ue-agent"])
	if r := fmt.Sprint(c["resources"]); !strings.Contains(r, "memory:256Mi") {
		t.Errorf("the UE agent's default resources %s, want ue-daemonset's", r)
	}

	for _, tc := range []struct{ set, want string }{
		{"operator.podLabel.a=b", "podLabel"},
		{"ueAgent.resource.limits.cpu=1", "resource"},
		{"softupf.extraArg={--x}", "extraArg"},
		{"metrics.serviceMonitor.label.release=kps", "label"},
		{"fullNameOverride=x", "fullNameOverride"},
		{"extraObject[0].kind=ConfigMap", "extraObject"},
		{"image.digest=latest", "digest"},
		{"p4runtimeTLS.namespace=tenant", "namespace"}, // upfNamespace now
		{"n4.service.externalTrafficPolicy=local", "externalTrafficPolicy"},
		{"n4.networkPolicy.from[0].cidr=192.0.2.0/24", "cidr"}, // a peer's ipBlock.cidr
	} {
		out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "--set", tc.set)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: %v, want the schema to refuse it naming %s:\n%s", tc.set, err, tc.want, out)
		}
	}
}

// Two operator replicas are spread over nodes by default (a soft constraint); one needs none.
func TestOperatorReplicasSpreadOverNodes(t *testing.T) {
	spread := func(args ...string) string {
		_, spec, _ := podTemplate(t, render(t, args...)["Deployment/j-junction-operator"])
		return fmt.Sprint(spec["topologySpreadConstraints"])
	}
	if s := spread(); !strings.Contains(s, "kubernetes.io/hostname") || !strings.Contains(s, "ScheduleAnyway") || !strings.Contains(s, "component:operator") {
		t.Errorf("two replicas: topologySpreadConstraints %s, want a soft spread over hostnames of the operator's pods", s)
	}
	if s := spread("--set", "operator.replicas=1"); s != "<nil>" {
		t.Errorf("one replica: topologySpreadConstraints %s, want none", s)
	}
}

// Every object carries the chart's labels, the UE agent's included; every namespaced object is in
// the chart's namespace (namespaceOverride), but the pipeline and the P4Runtime TLS Secret, which
// are where the UserPlaneFunctions read them (upfNamespace), and the agent's RoleBindings, which
// are in the namespaces it serves.
func TestLabelsAndNamespaces(t *testing.T) {
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "PriorityClass": true,
		"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	args := append(slices.Clone(allOptional), "--set", "namespaceOverride=ran-system", "--set", "upfNamespace=tenant-a",
		"--set", "ueAgent.namespaces={tenant-a}", "--set", "n4.enabled=true", "--set", "n4.networkPolicy.from[0].ipBlock.cidr=192.0.2.0/24")
	objs := render(t, args...)
	for name, o := range objs {
		l := o.GetLabels()
		if l["app.kubernetes.io/instance"] != "j" || !strings.HasPrefix(l["helm.sh/chart"], "junction-") || l["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s: labels %v lack the chart's (instance, helm.sh/chart, managed-by)", name, l)
		}
		want := "ran-system"
		switch {
		case clusterScoped[o.GetKind()]:
			want = ""
		case name == "ConfigMap/junction-upf-pipeline", name == "Certificate/j-junction-p4runtime-client",
			name == "RoleBinding/j-junction-ue-agent", name == "Role/j-junction-operator-secrets", name == "RoleBinding/j-junction-operator-secrets":
			want = "tenant-a" // upfNamespace: the operator reads Secrets there alone by default
		}
		if o.GetNamespace() != want {
			t.Errorf("%s: namespace %q, want %q", name, o.GetNamespace(), want)
		}
	}
	if len(objs) < 25 {
		t.Errorf("only %d objects rendered: %v", len(objs), names(objs))
	}
	// Bindings name the operator's ServiceAccount where it is: namespaceOverride's namespace.
	for _, b := range []string{"ClusterRoleBinding/j-junction-operator", "RoleBinding/j-junction-operator-secrets"} {
		if subjects, _, _ := unstructured.NestedSlice(objs[b].Object, "subjects"); len(subjects) != 1 || subjects[0].(map[string]any)["namespace"] != "ran-system" {
			t.Errorf("%s binds %v, want the operator's ServiceAccount in ran-system", b, subjects)
		}
	}
	// The agent's pods are told apart from another release's.
	ds := objs["DaemonSet/j-junction-ue-agent"]
	if sel, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "selector", "matchLabels"); sel["app.kubernetes.io/instance"] != "j" {
		t.Errorf("UE agent selector %v: another release's agents would match", sel)
	}
}

// Every cluster-scoped name holds the chart's name, whatever the release is called, so that a
// release named like another chart (prometheus, cert-manager) cannot take that chart's names.
func TestClusterScopedNamesCannotCollide(t *testing.T) {
	for release, prefix := range map[string]string{"cert-manager": "cert-manager-junction-", "junction": "junction-", "my-junction-ran": "my-junction-ran-"} {
		out, err := run(t, "template", release, chart, "--kube-version", "1.33.0", "--set", "ueAgent.enabled=true", "--show-only", "templates/rbac.yaml", "--show-only", "templates/ue-agent.yaml")
		if err != nil {
			t.Fatalf("%s: %v\n%s", release, err, out)
		}
		n := 0
		for _, m := range regexp.MustCompile(`(?m)^kind: (Cluster\w+)\nmetadata:\n(?:  [^\n]*\n)*?  name: (\S+)`).FindAllStringSubmatch(out, -1) {
			n++
			if !strings.HasPrefix(m[2], prefix) || !strings.Contains(m[2], "junction") {
				t.Errorf("release %s: %s %s, want the prefix %s", release, m[1], m[2], prefix)
			}
		}
		if n < 4 {
			t.Errorf("release %s: %d cluster-scoped objects found:\n%s", release, n, out)
		}
	}
}

// The ServiceMonitor is one kube-prometheus-stack's Prometheus selects (labels), authorizes with
// a token (authorization, not the deprecated bearerTokenFile) allowed to get /metrics, and
// verifies the operator's certificate against a CA instead of skipping verification.
func TestServiceMonitor(t *testing.T) {
	sm := func(args ...string) (*unstructured.Unstructured, map[string]any, map[string]*unstructured.Unstructured) {
		objs := render(t, append([]string{"--set", "metrics.serviceMonitor.enabled=true"}, args...)...)
		o := objs["ServiceMonitor/j-junction-operator"]
		if o == nil {
			t.Fatalf("no ServiceMonitor: %v", names(objs))
		}
		eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
		return o, eps[0].(map[string]any), objs
	}
	o, ep, objs := sm("--api-versions", "cert-manager.io/v1", "--set", "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
		"--set", "metrics.serviceMonitor.scrapeTimeout=20s")
	if o.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v, want release=kube-prometheus-stack", o.GetLabels())
	}
	if ep["bearerTokenFile"] != nil || ep["scrapeTimeout"] != "20s" {
		t.Errorf("endpoint %v: want no bearerTokenFile and scrapeTimeout 20s", ep)
	}
	if a := fmt.Sprint(ep["authorization"]); !strings.Contains(a, "type:Bearer") || !strings.Contains(a, "name:j-junction-metrics-scraper-token") {
		t.Errorf("authorization %s, want a Bearer token from the scraper's Secret", a)
	}
	tls := fmt.Sprint(ep["tlsConfig"])
	if strings.Contains(tls, "insecureSkipVerify") || !strings.Contains(tls, "name:j-junction-metrics-tls") || !strings.Contains(tls, "serverName:j-junction-operator-metrics.junction-system.svc") {
		t.Errorf("tlsConfig %s, want verification against the metrics certificate's CA", tls)
	}
	// The token's ServiceAccount may read /metrics, and only that.
	crb := objs["ClusterRoleBinding/j-junction-metrics-scraper"]
	if crb == nil || fmt.Sprint(crb.Object["roleRef"]) != "map[apiGroup:rbac.authorization.k8s.io kind:ClusterRole name:j-junction-metrics-reader]" {
		t.Errorf("scraper binding %v", crb)
	}
	if s := objs["Secret/j-junction-metrics-scraper-token"]; s == nil || s.GetAnnotations()["kubernetes.io/service-account.name"] != "j-junction-metrics-scraper" {
		t.Errorf("no token Secret of the scraper's ServiceAccount: %v", names(objs))
	}
	// cert-manager issues the certificate the operator serves.
	if c := objs["Certificate/j-junction-metrics-tls"]; c == nil || !strings.Contains(fmt.Sprint(c.Object["spec"]), "j-junction-operator-metrics.junction-system.svc") {
		t.Errorf("no metrics Certificate for the Service's names: %v", names(objs))
	}
	_, _, c := podTemplate(t, objs["Deployment/j-junction-operator"])
	if !strings.Contains(fmt.Sprint(c["args"]), "--metrics-cert-dir=/etc/junction/metrics-tls") || !strings.Contains(fmt.Sprint(c["volumeMounts"]), "metrics-tls") {
		t.Errorf("the operator does not serve the issued certificate: args %v, mounts %v", c["args"], c["volumeMounts"])
	}

	// A Secret of your own works the same way, without cert-manager.
	_, ep, objs = sm("--set", "metrics.tls.secretName=my-metrics-tls")
	if tls := fmt.Sprint(ep["tlsConfig"]); !strings.Contains(tls, "name:my-metrics-tls") || strings.Contains(tls, "insecure") {
		t.Errorf("tlsConfig %s, want the CA of metrics.tls.secretName", tls)
	}
	if objs["Certificate/j-junction-metrics-tls"] != nil {
		t.Error("a Certificate besides metrics.tls.secretName")
	}
	// Neither: the chart says what to provide, unless told to skip verification.
	out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "--set", "metrics.serviceMonitor.enabled=true")
	if err == nil || !strings.Contains(out, "metrics.tls.secretName") || !strings.Contains(out, "ca.crt") {
		t.Errorf("a ServiceMonitor with nothing to verify the certificate with: %v, want an error saying what to provide:\n%s", err, out)
	}
	_, ep, _ = sm("--set", "metrics.serviceMonitor.insecureSkipVerify=true")
	if !strings.Contains(fmt.Sprint(ep["tlsConfig"]), "insecureSkipVerify:true") {
		t.Errorf("insecureSkipVerify asked for, tlsConfig %v", ep["tlsConfig"])
	}
}

// The UE agents' PodMonitor selects this release's agents, authorizes with the scraper's token
// and verifies their one certificate by the name it is for, j-junction-ue-agent-metrics (they
// listen on node addresses, which no name leads to); cert-manager issues it from the metrics CA
// and every agent serves it (values.yaml, ueAgent.metrics).
func TestUEAgentPodMonitor(t *testing.T) {
	pm := func(args ...string) (map[string]any, map[string]*unstructured.Unstructured) {
		objs := render(t, append([]string{"--set", "ueAgent.enabled=true", "--set", "ueAgent.metrics.podMonitor.enabled=true"}, args...)...)
		o := objs["PodMonitor/j-junction-ue-agent"]
		if o == nil {
			t.Fatalf("no PodMonitor: %v", names(objs))
		}
		meta, _, c := podTemplate(t, objs["DaemonSet/j-junction-ue-agent"])
		sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		labels, _ := meta["labels"].(map[string]any)
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("PodMonitor selects %s=%s; the agents' pods have %v", k, v, labels)
			}
		}
		eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "podMetricsEndpoints")
		ep := eps[0].(map[string]any)
		if !strings.Contains(fmt.Sprint(c["ports"]), "name:"+fmt.Sprint(ep["port"])) || ep["scheme"] != "https" {
			t.Errorf("endpoint %v: want https on a port the agent has (%v)", ep, c["ports"])
		}
		return ep, objs
	}
	ep, objs := pm("--api-versions", "cert-manager.io/v1", "--set", "metrics.enabled=false",
		"--set", "ueAgent.metrics.podMonitor.labels.release=kube-prometheus-stack")
	if o := objs["PodMonitor/j-junction-ue-agent"]; o.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("PodMonitor labels %v, want release=kube-prometheus-stack", o.GetLabels())
	}
	if a := fmt.Sprint(ep["authorization"]); !strings.Contains(a, "type:Bearer") || !strings.Contains(a, "name:j-junction-metrics-scraper-token") {
		t.Errorf("authorization %s, want a Bearer token from the scraper's Secret", a)
	}
	if tls := fmt.Sprint(ep["tlsConfig"]); strings.Contains(tls, "insecure") || !strings.Contains(tls, "serverName:j-junction-ue-agent-metrics") || !strings.Contains(tls, "name:j-junction-ue-agent-metrics-tls") {
		t.Errorf("tlsConfig %s, want the name j-junction-ue-agent-metrics verified against its certificate's CA", tls)
	}
	// The scraper may read /metrics even without the operator's metrics.
	if objs["ClusterRole/j-junction-metrics-reader"] == nil || objs["ClusterRoleBinding/j-junction-metrics-scraper"] == nil {
		t.Errorf("no reader role or scraper binding: %v", names(objs))
	}
	if c := objs["Certificate/j-junction-ue-agent-metrics-tls"]; c == nil || !strings.Contains(fmt.Sprint(c.Object["spec"]), "dnsNames:[j-junction-ue-agent-metrics]") ||
		!strings.Contains(fmt.Sprint(c.Object["spec"]), "name:j-junction-metrics-ca") {
		t.Errorf("no agents' Certificate for j-junction-ue-agent-metrics from the metrics CA: %v", names(objs))
	}
	served := func(objs map[string]*unstructured.Unstructured, secret string) {
		t.Helper()
		_, spec, c := podTemplate(t, objs["DaemonSet/j-junction-ue-agent"])
		args, vols := fmt.Sprint(c["args"]), fmt.Sprint(spec["volumes"])
		if secret == "" {
			if strings.Contains(args, "--metrics-cert-dir") {
				t.Errorf("the agents are given a certificate directory: %s", args)
			}
			return
		}
		if !strings.Contains(args, "--metrics-cert-dir=/etc/junction/metrics-tls") || !strings.Contains(fmt.Sprint(c["volumeMounts"]), "mountPath:/etc/junction/metrics-tls") ||
			!strings.Contains(vols, "secretName:"+secret) {
			t.Errorf("the agents do not serve %s: args %s, volumes %s", secret, args, vols)
		}
	}
	served(objs, "j-junction-ue-agent-metrics-tls")

	// A Secret of your own, without cert-manager.
	ep, objs = pm("--set", "ueAgent.metrics.tls.secretName=agent-metrics")
	if tls := fmt.Sprint(ep["tlsConfig"]); !strings.Contains(tls, "name:agent-metrics") || strings.Contains(tls, "insecure") {
		t.Errorf("tlsConfig %s, want the CA of ueAgent.metrics.tls.secretName", tls)
	}
	if objs["Certificate/j-junction-ue-agent-metrics-tls"] != nil {
		t.Error("a Certificate besides ueAgent.metrics.tls.secretName")
	}
	served(objs, "agent-metrics")
	// Neither: the chart says what to provide, unless told to skip verification.
	out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "--set", "ueAgent.enabled=true", "--set", "ueAgent.metrics.podMonitor.enabled=true")
	if err == nil || !strings.Contains(out, "ueAgent.metrics.tls.secretName") || !strings.Contains(out, "ca.crt") {
		t.Errorf("a PodMonitor with nothing to verify the certificates with: %v, want an error saying what to provide:\n%s", err, out)
	}
	ep, objs = pm("--set", "ueAgent.metrics.podMonitor.insecureSkipVerify=true")
	if !strings.Contains(fmt.Sprint(ep["tlsConfig"]), "insecureSkipVerify:true") {
		t.Errorf("insecureSkipVerify asked for, tlsConfig %v", ep["tlsConfig"])
	}
	served(objs, "")
}

// Every alert links its runbook, a section of docs/runbooks.md, and one fires when the operator's
// metrics vanish (testdata/alerts_test.yaml runs it).
func TestAlertsHaveRunbooks(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\w+)$`).FindAllStringSubmatch(string(doc), -1) {
		sections[strings.ToLower(m[1])] = true
	}
	rule := render(t, "--set", "metrics.prometheusRule.enabled=true")["PrometheusRule/j-junction-operator"]
	if rule == nil {
		t.Fatal("no PrometheusRule")
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	seen := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			name := r["alert"].(string)
			seen[name] = true
			url, _ := r["annotations"].(map[string]any)["runbook_url"].(string)
			base, anchor, _ := strings.Cut(url, "#")
			if base != "https://github.com/junction-atsss/junction/blob/main/docs/runbooks.md" || anchor != strings.ToLower(name) || !sections[anchor] {
				t.Errorf("%s: runbook_url %q, want docs/runbooks.md#%s, a section there", name, url, strings.ToLower(name))
			}
		}
	}
	if !seen["JunctionOperatorMetricsAbsent"] {
		t.Errorf("no alert for the operator's metrics vanishing: %v", keys(seen))
	}
}

// Deleting a CRD deletes every object of its kind: Helm (resource-policy) and Argo CD (no prune,
// no delete with the Application) keep them.
func TestCRDsOutliveTheRelease(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	if bases, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml")); len(files) != len(bases) {
		t.Fatalf("%d CRDs in the chart, %d in config/crd/bases", len(files), len(bases))
	}
	for _, f := range files {
		md := readYAML(t, f)["metadata"].(map[string]any)
		a, _ := md["annotations"].(map[string]any)
		sync, _ := a["argocd.argoproj.io/sync-options"].(string)
		if a["helm.sh/resource-policy"] != "keep" || !strings.Contains(sync, "Prune=false") || !strings.Contains(sync, "Delete=false") {
			t.Errorf("%s: annotations %v, want helm.sh/resource-policy: keep and Argo CD's Prune=false,Delete=false", filepath.Base(f), a)
		}
	}
}

// The software UPF never calls the API server: no ServiceAccount token in its pod.
// Its SYS_ADMIN comes with portsNetns (test beds) only.
func TestSoftUPFPrivileges(t *testing.T) {
	_, spec, c := podTemplate(t, render(t, "--set", "softupf.enabled=true")["Deployment/j-junction-softupf"])
	if spec["automountServiceAccountToken"] != false {
		t.Errorf("software UPF automountServiceAccountToken %v, want false", spec["automountServiceAccountToken"])
	}
	if caps := fmt.Sprint(c["securityContext"]); strings.Contains(caps, "SYS_ADMIN") {
		t.Errorf("SYS_ADMIN without portsNetns: %s", caps)
	}
	_, _, c = podTemplate(t, render(t, "--set", "softupf.enabled=true", "--set", "softupf.portsNetns=jx-upf")["Deployment/j-junction-softupf"])
	if caps := fmt.Sprint(c["securityContext"]); !strings.Contains(caps, "SYS_ADMIN") {
		t.Errorf("portsNetns without SYS_ADMIN: %s", caps)
	}
}

// The operator reads Secrets where upfNamespaces says and in upfNamespace, where the chart puts
// the TLS Secret it makes: a Role in each, and --secret-namespaces naming them; by default in
// upfNamespace alone, and cluster-wide only for upfNamespaces ["*"] (docs/threat-model.md).
func TestSecretNamespacesIncludeTheChartsOwn(t *testing.T) {
	set := []string{"--set", "upfNamespaces={a,b}", "--set", "upfNamespace=c"}
	out, err := run(t, append([]string{"template", "j", chart, "-n", "junction-system", "--kube-version", "1.33.0"}, set...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	roles := map[string]bool{} // by namespace (render keys objects by kind and name)
	for _, doc := range strings.Split(out, "\n---") {
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal([]byte(doc), &u.Object) == nil && u.GetKind() == "Role" && strings.HasSuffix(u.GetName(), "-operator-secrets") {
			roles[u.GetNamespace()] = true
		}
	}
	if len(roles) != 3 || !roles["a"] || !roles["b"] || !roles["c"] {
		t.Errorf("the operator's Secrets Roles are in %v, want a, b and c", roles)
	}
	objs := render(t, set...)
	args, _, _ := unstructured.NestedSlice(objs["Deployment/j-junction-operator"].Object, "spec", "template", "spec", "containers")
	if got := fmt.Sprint(args[0].(map[string]any)["args"]); !strings.Contains(got, "--secret-namespaces=a,b,c") {
		t.Errorf("operator args %s, want --secret-namespaces=a,b,c", got)
	}
	// By default, upfNamespace alone (the release's); every namespace only when asked for.
	for _, tc := range []struct {
		set         []string
		want        string // --secret-namespaces; "" for none (every namespace)
		clusterWide bool   // a ClusterRoleBinding to the Secrets' ClusterRole
	}{
		{nil, "junction-system", false},
		{[]string{"--set", "upfNamespace=c"}, "c", false},
		{[]string{"--set", "upfNamespaces={*}"}, "", true},
	} {
		objs := render(t, tc.set...)
		containers, _, _ := unstructured.NestedSlice(objs["Deployment/j-junction-operator"].Object, "spec", "template", "spec", "containers")
		var got string
		for _, a := range containers[0].(map[string]any)["args"].([]any) {
			if v, ok := strings.CutPrefix(a.(string), "--secret-namespaces="); ok {
				got = v
			}
		}
		_, wide := objs["ClusterRoleBinding/j-junction-operator-secrets"]
		if got != tc.want || wide != tc.clusterWide {
			t.Errorf("%v: --secret-namespaces=%q and a cluster-wide binding %v, want %q and %v", tc.set, got, wide, tc.want, tc.clusterWide)
		}
	}
	if out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "--set", "upfNamespaces={*,a}"); err == nil || !strings.Contains(out, "upfNamespaces") {
		t.Errorf("upfNamespaces={*,a}: %v, want a refusal naming upfNamespaces:\n%s", err, out)
	}
}
