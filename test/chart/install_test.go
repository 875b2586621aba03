package chart

// The chart against a real kube-apiserver (envtest) with the Prometheus Operator's and
// cert-manager's CRDs: every documented values combination installs, the objects of their kinds
// meet their schemas, the README's install steps run as written, and Pod Security admits each
// component where the READMEs say.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/junction-atsss/junction/internal/testenv"
)

// cluster is an envtest API server with the given CRDs (foreignCRDs: cert-manager's and the
// Prometheus Operator's, at the versions hack/tools.sh foreign-crds fetches), a kubeconfig file
// for helm and kubectl (namespace default, as a user's), and an uncached client.
type cluster struct {
	kubeconfig string
	k8s        client.Client
}

var foreignCRDs = filepath.Join(root, "bin", "foreign-crds")

func startCluster(t *testing.T, crds ...string) *cluster {
	t.Helper()
	assets, err := testenv.AssetsDir()
	testenv.Require(t, "the envtest control plane (make tools)", err)
	for _, dir := range crds {
		// envtest skips a missing directory, and the chart then fails for want of its CRDs.
		_, err := os.Stat(dir)
		testenv.Require(t, "CRDs in "+dir+" (make tools)", err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crds}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "helm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := os.WriteFile(c.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	if c.k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) get(t *testing.T, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := c.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Errorf("%s %s/%s: %v", kind, ns, name, err)
		return nil
	}
	return u
}

// Every values combination the READMEs document installs, each as a release of its own in one
// cluster (so that their cluster-scoped names must not collide either).
func TestDocumentedCombinationsInstall(t *testing.T) {
	c := startCluster(t, foreignCRDs)
	if err := c.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}); err != nil {
		t.Fatal(err)
	}
	p4info := filepath.Join(root, "p4", "p4info.txtpb")
	pem := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(pem, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		what      string
		args      []string
		nodeParts bool // the software UPF or the UE agent: the namespace must be privileged
	}{
		{"defaults", nil, false},
		{"every optional part (cert-manager for the certificates)", allOptional, true},
		{"the kind cluster's values (hack/kind.sh)", []string{"-f", filepath.Join(root, "hack", "kind", "values.yaml"),
			"--set", "pipeline.create=true", "--set-file", "pipeline.p4info=" + p4info}, true},
		{"the software UPF, its PKI from helm", []string{"--set", "softupf.enabled=true", "--set", "softupf.tls.issuer=helm"}, true},
		{"the software UPF, its PKI from cert-manager", []string{"--set", "softupf.enabled=true", "--set", "softupf.tls.issuer=certManager"}, true},
		{"the software UPF in plaintext", []string{"--set", "softupf.enabled=true", "--set", "softupf.insecure=true", "--set", "softupf.hostNetwork=true"}, true},
		{"a switch of your own, its TLS Secret from files, UPFs in tenant-a", []string{"--set", "upfNamespace=tenant-a",
			"--set", "p4runtimeTLS.secretName=own-switch-tls", "--set", "p4runtimeTLS.create=true",
			"--set-file", "p4runtimeTLS.caCrt=" + pem, "--set-file", "p4runtimeTLS.tlsCrt=" + pem, "--set-file", "p4runtimeTLS.tlsKey=" + pem,
			"--set", "pipeline.name=tenant-pipeline", "--set", "pipeline.create=true", "--set-file", "pipeline.p4info=" + p4info}, false},
		{"a ServiceMonitor with a metrics Secret of your own", []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.tls.secretName=my-metrics-tls"}, false},
		{"a ServiceMonitor that skips verification", []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.tls.issuer=none", "--set", "metrics.serviceMonitor.insecureSkipVerify=true"}, false},
		{"UE agents for chosen namespaces", []string{"--set", "ueAgent.enabled=true", "--set", "ueAgent.namespaces={tenant-a}"}, true},
		{"N4 behind a load balancer, from the SMFs' network alone", []string{"--set", "n4.enabled=true", "--set", "n4.service.type=LoadBalancer",
			"--set", "n4.networkPolicy.from[0].ipBlock.cidr=192.0.2.0/24"}, false},
		{"one replica without leader election", []string{"--set", "operator.replicas=1", "--set", "operator.leaderElection=false"}, false},
		{"the extension points", []string{"-f", extensionValues}, true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			name := fmt.Sprintf("c%02d", i)
			args := append([]string{"install", name, chart, "-n", "ns-" + name, "--create-namespace", "--kubeconfig", c.kubeconfig}, tc.args...)
			out, err := run(t, args...)
			if err != nil {
				t.Fatalf("helm install: %v\n%s", err, out)
			}
			// NOTES: the node components need a privileged namespace, and say so.
			if says := strings.Contains(out, "kubectl label namespace ns-"+name+" pod-security.kubernetes.io/enforce=privileged"); says != tc.nodeParts {
				t.Errorf("NOTES say the namespace must be privileged: %v, want %v:\n%s", says, tc.nodeParts, out)
			}
			if tc.what == "the kind cluster's values (hack/kind.sh)" && !strings.Contains(out, "portsNetns is for test beds") {
				t.Errorf("NOTES do not mark portsNetns as test beds only:\n%s", out)
			}
			if out, err := run(t, "get", "manifest", name, "-n", "ns-"+name, "--kubeconfig", c.kubeconfig); err != nil || !strings.Contains(out, "kind: Deployment") {
				t.Errorf("the release %s holds no operator Deployment: %v\n%s", name, err, out)
			}
		})
	}
	// The TLS Secret and pipeline of the switch of your own are where its UPFs read them.
	c.get(t, "v1", "Secret", "tenant-a", "own-switch-tls")
	c.get(t, "v1", "ConfigMap", "tenant-a", "tenant-pipeline")
}

// What the chart makes of other projects' kinds (the Prometheus Operator's monitors and rules,
// cert-manager's certificates and issuers), with every optional part on, is what their CRDs
// accept, field by field: applied strictly (an unknown field is an error) with a server-side dry
// run against the CRDs of the versions hack/tools.sh foreign-crds pins.
func TestForeignKindsMeetTheirCRDs(t *testing.T) {
	c := startCluster(t, foreignCRDs)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "junction-system"}}
	if err := c.k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	objs := render(t, append(allOptional, "--set", "ueAgent.metrics.podMonitor.enabled=true")...)
	seen := map[string]int{}
	for _, name := range names(objs) {
		o := objs[name]
		switch o.GroupVersionKind().Group {
		case "monitoring.coreos.com", "cert-manager.io":
		default:
			continue
		}
		seen[o.GetKind()]++
		if err := c.kubectlApply(o, "--dry-run=server"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule", "Certificate", "Issuer"} {
		if seen[kind] == 0 {
			t.Errorf("no %s rendered to check (rendered: %v)", kind, seen)
		}
	}
}

// The README's install steps, run by a shell as written (helm and kubectl are the project's, the
// files stand-ins for the user's), leave what the UserPlaneFunction applied into default reads:
// its pipeline ConfigMap and its TLS Secret, in its own namespace, and a P4RuntimeTarget granting
// that namespace its device (docs/p4runtime-targets.md). The step that waits for Ready
// needs a running operator, which the envtest API server has not; test/operator covers that.
func TestReadmeInstallSteps(t *testing.T) {
	c := startCluster(t, foreignCRDs)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, line := range strings.Split(shBlock(t, string(readme), "## Install on a cluster"), "\n") {
		if strings.HasPrefix(line, "kubectl wait") {
			continue
		}
		script = append(script, line)
	}

	files := map[string]string{
		"build/p4/v1model/junction_upf.json": "{}", // p4c's output: not built here
		"switch-ca.crt":                      "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
		"operator.crt":                       "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
		"operator.key":                       "-----BEGIN EC PRIVATE KEY-----\n-----END EC PRIVATE KEY-----\n",
	}
	for mine, sample := range map[string]string{"my-pools.yaml": "addresspool.yaml", "my-targets.yaml": "p4runtimetarget.yaml", "my-upf.yaml": "upf.yaml",
		"my-policies.yaml": "policies.yaml", "my-sessions.yaml": "sessions.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "config", "samples", sample))
		if err != nil {
			t.Fatal(err)
		}
		files[mine] = string(b)
	}
	if out, err := c.shell(t, userDir(t, files), strings.Join(script, "\n")); err != nil {
		t.Fatalf("the README's steps: %v\n%s", err, out)
	}

	upfs := &unstructured.UnstructuredList{}
	upfs.SetAPIVersion("atsss.junction.dev/v1alpha1")
	upfs.SetKind("UserPlaneFunctionList")
	if err := c.k8s.List(context.Background(), upfs); err != nil || len(upfs.Items) == 0 {
		t.Fatalf("UserPlaneFunctions after the README's steps: %d, %v", len(upfs.Items), err)
	}
	targets := &unstructured.UnstructuredList{}
	targets.SetAPIVersion("atsss.junction.dev/v1alpha1")
	targets.SetKind("P4RuntimeTargetList")
	if err := c.k8s.List(context.Background(), targets); err != nil {
		t.Fatal(err)
	}
	for _, upf := range upfs.Items {
		addr, _, _ := unstructured.NestedString(upf.Object, "spec", "p4runtime", "address")
		id, _, _ := unstructured.NestedInt64(upf.Object, "spec", "p4runtime", "deviceID")
		granted := false
		for _, g := range targets.Items {
			ns, _, _ := unstructured.NestedString(g.Object, "spec", "namespace")
			gAddr, _, _ := unstructured.NestedString(g.Object, "spec", "address")
			gID, _, _ := unstructured.NestedInt64(g.Object, "spec", "deviceID")
			granted = granted || (ns == upf.GetNamespace() && gAddr == addr && gID == id)
		}
		if !granted {
			t.Errorf("no P4RuntimeTarget grants namespace %s the device at %s (UserPlaneFunction %s)", upf.GetNamespace(), addr, upf.GetName())
		}
		cmName, _, _ := unstructured.NestedString(upf.Object, "spec", "pipeline", "configMapRef", "name")
		secretName, _, _ := unstructured.NestedString(upf.Object, "spec", "p4runtime", "tls", "secretRef", "name")
		// What the operator reads (controllers/pipeline.go): both from the UPF's own namespace.
		if cm := c.get(t, "v1", "ConfigMap", upf.GetNamespace(), cmName); cm != nil {
			if info, _, _ := unstructured.NestedString(cm.Object, "data", "p4info.txtpb"); !strings.Contains(info, "tables") {
				t.Errorf("ConfigMap %s/%s has no P4Info", upf.GetNamespace(), cmName)
			}
		}
		if s := c.get(t, "v1", "Secret", upf.GetNamespace(), secretName); s != nil {
			data, _, _ := unstructured.NestedStringMap(s.Object, "data")
			if data["ca.crt"] == "" || data["tls.crt"] == "" || data["tls.key"] == "" {
				t.Errorf("Secret %s/%s: keys %v, want ca.crt, tls.crt and tls.key", upf.GetNamespace(), secretName, keysOf(data))
			}
		}
	}
	// The upgrade's ServiceMonitor and rules are selected by kube-prometheus-stack's release label.
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if o := c.get(t, "monitoring.coreos.com/v1", kind, "junction-system", "junction-operator"); o != nil && o.GetLabels()["release"] != "kube-prometheus-stack" {
			t.Errorf("%s labels %v, want release=kube-prometheus-stack", kind, o.GetLabels())
		}
	}
	c.get(t, "apps/v1", "DaemonSet", "junction-system", "junction-ue-agent")
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Pod Security: the UE agent (host network, NET_ADMIN) and the software UPF (NET_RAW) are refused
// by the baseline level and admitted by privileged, as the chart's README and NOTES say; the
// operator passes restricted, so it can live in a namespace of that level on its own.
func TestPodSecurityLevels(t *testing.T) {
	c := startCluster(t, foreignCRDs)
	ctx := context.Background()
	for _, level := range []string{"restricted", "baseline", "privileged"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: level, Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
		if err := c.k8s.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	objs := render(t, "--set", "ueAgent.enabled=true", "--set", "softupf.enabled=true", "--set", "softupf.ports[0].number=1", "--set", "softupf.ports[0].interface=n3")
	for _, tc := range []struct {
		workload string
		lowest   string // the lowest level that admits it
	}{
		{"Deployment/j-junction-operator", "restricted"},
		{"Deployment/j-junction-softupf", "privileged"},
		{"DaemonSet/j-junction-ue-agent", "privileged"},
	} {
		tmpl, _, _ := unstructured.NestedMap(objs[tc.workload].Object, "spec", "template")
		b, _ := yaml.Marshal(tmpl)
		admitted := false
		for _, level := range []string{"restricted", "baseline", "privileged"} {
			pod := &corev1.Pod{}
			if err := yaml.Unmarshal(b, pod); err != nil {
				t.Fatal(err)
			}
			pod.Namespace, pod.Name = level, "probe"
			pod.Spec.ServiceAccountName = "" // the release's ServiceAccounts are not in these namespaces
			err := c.k8s.Create(ctx, pod, client.DryRunAll)
			if admitted = admitted || level == tc.lowest; admitted != (err == nil) {
				t.Errorf("%s in a %s namespace: %v, want admitted=%v", tc.workload, level, err, admitted)
			}
		}
	}
}
