package ueagent

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/test/netns"
)

// TestKindDataplane runs hack/kind/dataplane.sh, the user plane of `make kind-up`, on namespaces
// that stand in for kind's nodes (a bridge for the node network between them), with the software
// UPF, the gNB emulator and the W-AGF given the flags of their kind pods (hack/kind/values.yaml;
// the Deployments hack/kind/objects builds, with only their Role), a UE agent per UE node, and
// config/samples applied: the script's own check must carry a line through alice's, bob's and
// carol's sessions to the data network and back, and alice's two legs (the gNB's VXLAN radio and
// the WiFi cell's) and carol's fixed line (over N3 through the W-AGF) must come up.
func TestKindDataplane(t *testing.T) {
	script := filepath.Join(testenv.RepoRoot(), "hack", "kind", "dataplane.sh")
	prefix := netns.UniqueName("jk") + "-" // the script's namespaces on the "core node"
	// runScript runs the script on a node: in its network namespace and, as docker exec does on a
	// kind node, in the caller's mount namespace (ip netns exec would give the script a private
	// one, and the namespaces it creates would be seen by nobody else).
	runScript := func(node *netns.Namespace, args ...string) error {
		cmd := exec.Command("nsenter", append([]string{"--net=" + node.Path(), "bash", script}, args...)...)
		cmd.Env = append(cmd.Environ(), "NETNS_PREFIX="+prefix)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("dataplane.sh %s on %s: %w\n%s", strings.Join(args, " "), node, err, out)
		}
		return nil
	}

	// kind's node network: the core node and three UE nodes on one bridge.
	network := netns.ForTest(t, "jknet")
	run(t, network, "ip", "link", "add", "nodes", "type", "bridge")
	run(t, network, "ip", "link", "set", "nodes", "up")
	addNode := func(role string, addr netip.Addr) *netns.Namespace {
		n := netns.ForTest(t, "jk"+role)
		must(t, netns.AddVeth(netns.Link{Name: "eth0", NS: n}, netns.Link{Name: "to-" + role, NS: network}))
		run(t, network, "ip", "link", "set", "to-"+role, "master", "nodes")
		must(t, n.AddAddress("eth0", netip.PrefixFrom(addr, 24)))
		return n
	}
	coreAddr := netip.MustParseAddr("172.18.0.2")
	core := addNode("core", coreAddr)
	ueNodes := []struct {
		name string // the samples' node; in kind, hack/kind/objects maps it to a worker
		addr netip.Addr
		line bool // its wlan0 is a fixed line to the W-AGF (carol's 5G-RG)
		ns   *netns.Namespace
	}{{name: "ue-node-a", addr: netip.MustParseAddr("172.18.0.3")}, {name: "ue-node-b", addr: netip.MustParseAddr("172.18.0.4")},
		{name: "ue-node-c", addr: netip.MustParseAddr("172.18.0.5"), line: true}}
	for i := range ueNodes {
		ueNodes[i].ns = addNode(fmt.Sprintf("ue%d", i), ueNodes[i].addr)
	}

	var coreArgs []string
	for _, n := range ueNodes {
		a := n.addr.String()
		if n.line {
			a += "/line"
		}
		coreArgs = append(coreArgs, a)
	}
	must(t, runScript(core, append([]string{"core"}, coreArgs...)...))
	t.Cleanup(func() {
		if err := runScript(core, "down"); err != nil {
			t.Error(err)
		}
	})

	// The software UPF as its pod runs it: gRPC in its own network, the ports of
	// hack/kind/values.yaml in the core node's namespace.
	// P4Runtime in mutual TLS, as the chart issues it: the UPF's server certificate and the
	// operator's client certificate (the Secret config/samples/upf.yaml names) from one CA.
	upfGRPC := testenv.FreeAddr(t)
	pki, dir := testenv.NewPKI(t), t.TempDir()
	tlsArgs := []string{"--tls-cert", testenv.WriteFile(t, dir, "tls.crt", pki.ServerCert), "--tls-key", testenv.WriteFile(t, dir, "tls.key", pki.ServerKey),
		"--tls-client-ca", testenv.WriteFile(t, dir, "ca.crt", pki.CA)}
	start(t, "softupf", slices.Concat([]string{"--grpc-addr", upfGRPC, "--device-id", "1", "--cpu-port", "255"}, tlsArgs, kindUPFPorts(t, prefix))...)
	tb := &testbed{t: t, ns: newK8sNamespace(t), status: scenarioStatus}
	objs, err := testenv.Samples(k8s.Scheme(), tb.ns, upfGRPC)
	must(t, err)
	tb.createPipeline("junction-upf-pipeline")
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tb.ns, Name: "junction-p4runtime-tls"}, Data: pki.ClientSecretData()})
	create(t, objs...)
	startOperator(t, tb.ns, scenarioStatus.operator)
	// The gNB emulator as its pod runs it: also with /proc/sys read-only, as in a container.
	readOnlySysctl := []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec "$0" "$@"`}
	emulators := kindEmulatorArgs(t, tb.ns, prefix)
	for _, name := range []string{"junction-gnb-emulator", "junction-gnb-emulator-w-agf"} {
		if emulators[name] == nil {
			t.Fatalf("hack/kind/objects builds no Deployment %s", name)
		}
		startWrapped(t, readOnlySysctl, "gnb-emulator", emulators[name]...)
	}

	// Each UE node: its sessions' UE addresses (hack/kind.sh reads them the same way, from the
	// API), the script's part, and the node's agent.
	for i, n := range ueNodes {
		var threeGPP, wifi []string
		for _, o := range objs {
			if s, ok := o.(*junctionv1.ATSSSSession); ok && s.Spec.UE.NodeName == n.name {
				if l := s.Spec.AccessLegs.ThreeGPP; l != nil {
					threeGPP = append(threeGPP, string(l.UEAddress))
				}
				if l := s.Spec.AccessLegs.NonThreeGPP; l != nil {
					wifi = append(wifi, string(l.UEAddress))
				}
			}
		}
		must(t, runScript(n.ns, "ue", coreAddr.String(), fmt.Sprint(i), strings.Join(threeGPP, ","), strings.Join(wifi, ",")))
		if n.line {
			must(t, runScript(core, "line", strings.Join(wifi, ",")))
		}
		start(t, "ue-agent", append([]string{"--kubeconfig", kubeconfig, "--node-name", n.name, "--netns", n.ns.Name,
			"--namespace", tb.ns, "--metrics-addr", "0", "--health-addr", "0"}, scenarioStatus.agent...)...)
	}

	for _, c := range []struct {
		session string
		node    *netns.Namespace
	}{{"alice-internet", ueNodes[0].ns}, {"bob-internet", ueNodes[1].ns}, {"carol-branch", ueNodes[2].ns}} {
		s := tb.waitReady(c.session)
		must(t, runScript(c.node, "check", string(s.Spec.SessionAddress)))
	}
	tb.legState("alice-internet", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("alice-internet", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	// carol's line answers the agent's probes only through the W-AGF and the UPF, over N3.
	tb.legState("carol-branch", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
}

// kindEmulatorArgs applies the emulators' ServiceAccount, Role and RoleBinding of what
// hack/kind/objects builds (gnb.yaml) in namespace ns and returns each emulator Deployment's flags
// by name (the gNB's, and the W-AGF's of w-agf/), for an emulator that runs as that
// ServiceAccount (a user of its name and groups, as the API server sees the pod), with its
// namespaces under prefix and no metrics or health ports.
func kindEmulatorArgs(t *testing.T, ns, prefix string) map[string][]string {
	t.Helper()
	const sa = "junction-gnb-emulator"
	out, err := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "kustomize"), "build", filepath.Join(testenv.RepoRoot(), "hack", "kind", "objects")).CombinedOutput()
	if err != nil {
		t.Fatalf("kustomize build hack/kind/objects: %v\n%s", err, out)
	}
	args := map[string][]string{}
	for _, doc := range strings.Split(string(out), "\n---") {
		u := &unstructured.Unstructured{}
		must(t, yaml.Unmarshal([]byte(doc), &u.Object))
		u.SetNamespace(ns)
		switch {
		case u.GetKind() == "Deployment" && strings.HasPrefix(u.GetName(), sa):
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			raw, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			for _, a := range raw {
				switch {
				case strings.HasPrefix(a, "--namespace="):
					a = "--namespace=" + ns
				case strings.HasPrefix(a, "--netns=/run/netns/jx-"):
					a = "--netns=/run/netns/" + prefix + strings.TrimPrefix(a, "--netns=/run/netns/jx-")
				case strings.HasPrefix(a, "--metrics-addr="), strings.HasPrefix(a, "--health-addr="):
					a = a[:strings.Index(a, "=")+1] + "0"
				}
				args[u.GetName()] = append(args[u.GetName()], a)
			}
		case u.GetName() == sa && slices.Contains([]string{"ServiceAccount", "Role", "RoleBinding"}, u.GetKind()):
			if u.GetKind() == "RoleBinding" {
				subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
				for _, s := range subjects {
					s.(map[string]any)["namespace"] = ns
				}
				must(t, unstructured.SetNestedSlice(u.Object, subjects, "subjects"))
			}
			must(t, k8s.Create(context.Background(), u))
		}
	}
	user, err := env.AddUser(envtest.User{Name: "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}, nil)
	must(t, err)
	kc, err := user.KubeConfig()
	must(t, err)
	path := filepath.Join(t.TempDir(), "gnb-kubeconfig")
	must(t, os.WriteFile(path, kc, 0o600))
	for name := range args {
		args[name] = append([]string{"--kubeconfig", path}, args[name]...)
	}
	return args
}

// kindUPFPorts are the software UPF's port flags of hack/kind/values.yaml, with its namespace
// under prefix.
func kindUPFPorts(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "hack", "kind", "values.yaml"))
	must(t, err)
	var v struct {
		SoftUPF struct {
			PortsNetns string `json:"portsNetns"`
			Ports      []struct {
				Number    int    `json:"number"`
				Interface string `json:"interface"`
			} `json:"ports"`
		} `json:"softupf"`
	}
	must(t, yaml.Unmarshal(b, &v))
	if !strings.HasPrefix(v.SoftUPF.PortsNetns, "jx-") || len(v.SoftUPF.Ports) != 3 {
		t.Fatalf("hack/kind/values.yaml: softupf %+v: want three ports in a jx- namespace", v.SoftUPF)
	}
	args := []string{"--ports-netns", prefix + strings.TrimPrefix(v.SoftUPF.PortsNetns, "jx-")}
	for _, p := range v.SoftUPF.Ports {
		args = append(args, "-i", fmt.Sprintf("%d@%s", p.Number, p.Interface))
	}
	return args
}
