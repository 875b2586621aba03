package chart

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/junction-atsss/junction/internal/testenv"
)

// The software UPF pod gets its P4 ports from the values, on Multus networks, the host's
// interfaces or a named network namespace of the node, and no capability but CAP_NET_RAW
// (Dockerfile: packet sockets) and, to enter that namespace, CAP_SYS_ADMIN.
func TestSoftUPFPod(t *testing.T) {
	objs := render(t, allOptional...)
	dep := objs["Deployment/j-softupf"]
	if dep == nil {
		t.Fatal("Deployment/j-softupf not rendered")
	}
	pod, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	c := pod["containers"].([]any)[0].(map[string]any)
	for _, arg := range []string{"-i=1@n3", "-i=3@n6", "--grpc-addr=0.0.0.0:9559", "--device-id=1", "--cpu-port=255"} {
		if !contains(c["args"], arg) {
			t.Errorf("args %v lack %s", c["args"], arg)
		}
	}
	sc := c["securityContext"].(map[string]any)
	want := map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_RAW"}}
	if !reflect.DeepEqual(sc["capabilities"], want) || sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true {
		t.Errorf("security context %v: want only NET_RAW added, no privilege escalation, a read-only root", sc)
	}
	if pod["hostNetwork"] != false {
		t.Errorf("hostNetwork %v with Multus networks", pod["hostNetwork"])
	}
	ann, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "metadata", "annotations", "k8s.v1.cni.cncf.io/networks")
	var nets []map[string]string
	if err := json.Unmarshal([]byte(ann), &nets); err != nil || len(nets) != 2 || nets[0]["name"] != "n3-net" || nets[1]["interface"] != "n6" {
		t.Errorf("Multus annotation %q (%v): want the two networks of the values", ann, err)
	}
	if port, _, _ := unstructured.NestedSlice(objs["Service/j-softupf"].Object, "spec", "ports"); len(port) != 1 || port[0].(map[string]any)["port"] != float64(9559) {
		t.Errorf("Service ports %v: want P4Runtime on 9559", port)
	}

	host := render(t, "--set", "softupf.enabled=true", "--set", "softupf.hostNetwork=true", "--set", "softupf.ports[0].number=1", "--set", "softupf.ports[0].interface=ens1f0")
	pod, _, _ = unstructured.NestedMap(host["Deployment/j-softupf"].Object, "spec", "template", "spec")
	if pod["hostNetwork"] != true || pod["dnsPolicy"] != "ClusterFirstWithHostNet" {
		t.Errorf("host network: hostNetwork %v, dnsPolicy %v", pod["hostNetwork"], pod["dnsPolicy"])
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(host["Deployment/j-softupf"].Object, "spec", "template", "metadata", "annotations"); ok {
		t.Error("a Multus annotation without networks")
	}
	if _, ok := pod["volumes"]; ok {
		t.Errorf("volumes %v without portsNetns", pod["volumes"])
	}

	// kind (hack/kind.sh): the ports in the core node's jx-upf, made by hack/kind/dataplane.sh.
	inNetns := render(t, "-f", filepath.Join(root, "hack", "kind", "values.yaml"))
	pod, _, _ = unstructured.NestedMap(inNetns["Deployment/j-softupf"].Object, "spec", "template", "spec")
	c = pod["containers"].([]any)[0].(map[string]any)
	if !contains(c["args"], "--ports-netns=/run/netns/jx-upf") || !contains(c["args"], "-i=1@u-n3") || !contains(c["args"], "-i=3@u-n6") {
		t.Errorf("args %v: want the ports in /run/netns/jx-upf", c["args"])
	}
	sc = c["securityContext"].(map[string]any)
	if want := (map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_RAW", "SYS_ADMIN"}}); !reflect.DeepEqual(sc["capabilities"], want) {
		t.Errorf("capabilities %v: want %v", sc["capabilities"], want)
	}
	wantMount := []any{map[string]any{"name": "netns", "mountPath": "/run/netns", "mountPropagation": "HostToContainer", "readOnly": true}}
	wantVolume := []any{map[string]any{"name": "netns", "hostPath": map[string]any{"path": "/run/netns", "type": "Directory"}}}
	if !reflect.DeepEqual(c["volumeMounts"], wantMount) || !reflect.DeepEqual(pod["volumes"], wantVolume) {
		t.Errorf("mounts %v, volumes %v: want the node's /run/netns, read-only, HostToContainer", c["volumeMounts"], pod["volumes"])
	}
	if sel, _, _ := unstructured.NestedStringMap(pod, "nodeSelector"); sel["junction.dev/core"] != "true" {
		t.Errorf("nodeSelector %v: want the core node that hack/kind/dataplane.sh wires", sel)
	}
}

// writeCA writes a CA certificate (PEM) and returns its path: the ca.crt of a TLS Secret made
// from files.
func writeCA(t *testing.T) string {
	return testenv.WriteFile(t, t.TempDir(), "ca.crt", testenv.NewPKI(t).CA)
}

// With softupf.tls.secretName the software UPF serves P4Runtime over TLS from that Secret's
// tls.crt and tls.key, mounted read-only, and with softupf.tls.mutual also asks for a client
// certificate from its ca.crt; without it, no TLS flag and no Secret volume.
func TestSoftUPFTLSFromASecret(t *testing.T) {
	base := []string{"--set", "softupf.enabled=true", "--set", "softupf.ports[0].number=1", "--set", "softupf.ports[0].interface=n3"}
	podOf := func(args ...string) (map[string]any, map[string]any) {
		objs := render(t, append(base, args...)...)
		pod, _, _ := unstructured.NestedMap(objs["Deployment/j-softupf"].Object, "spec", "template", "spec")
		return pod, pod["containers"].([]any)[0].(map[string]any)
	}
	const dir = "/etc/junction/p4runtime-tls/"
	pod, c := podOf("--set", "softupf.tls.secretName=upf-tls", "--set", "softupf.tls.mutual=true")
	for _, arg := range []string{"--tls-cert=" + dir + "tls.crt", "--tls-key=" + dir + "tls.key", "--tls-client-ca=" + dir + "ca.crt"} {
		if !contains(c["args"], arg) {
			t.Errorf("mutual: args %v lack %s", c["args"], arg)
		}
	}
	wantVol := map[string]any{"name": "p4runtime-tls", "secret": map[string]any{"secretName": "upf-tls"}}
	if vols, _ := pod["volumes"].([]any); len(vols) != 1 || !reflect.DeepEqual(vols[0], wantVol) {
		t.Errorf("volumes %v, want only %v", pod["volumes"], wantVol)
	}
	wantMount := map[string]any{"name": "p4runtime-tls", "mountPath": "/etc/junction/p4runtime-tls", "readOnly": true}
	if mounts, _ := c["volumeMounts"].([]any); len(mounts) != 1 || !reflect.DeepEqual(mounts[0], wantMount) {
		t.Errorf("volume mounts %v, want only %v", c["volumeMounts"], wantMount)
	}

	_, c = podOf("--set", "softupf.tls.secretName=upf-tls")
	if !contains(c["args"], "--tls-cert="+dir+"tls.crt") || contains(c["args"], "--tls-client-ca="+dir+"ca.crt") {
		t.Errorf("server TLS: args %v, want the certificate and no client CA", c["args"])
	}

	pod, c = podOf()
	for _, a := range c["args"].([]any) {
		if strings.HasPrefix(a.(string), "--tls") {
			t.Errorf("no softupf.tls: arg %s", a)
		}
	}
	if _, ok := pod["volumes"]; ok {
		t.Errorf("no softupf.tls: volumes %v", pod["volumes"])
	}
}
