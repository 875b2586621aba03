package chart

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/junction-atsss/junction/internal/testenv"
)

// The software UPF pod gets its P4 ports from the values, on Multus networks, the host's
// interfaces or a named network namespace of the node, and no capability but CAP_NET_RAW
// (Dockerfile: packet sockets) and, to enter that namespace, CAP_SYS_ADMIN.
func TestSoftUPFPod(t *testing.T) {
	objs := render(t, allOptional...)
	dep := objs["Deployment/j-junction-softupf"]
	if dep == nil {
		t.Fatal("Deployment/j-junction-softupf not rendered")
	}
	pod, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	c := pod["containers"].([]any)[0].(map[string]any)
	for _, arg := range []string{"-i=1@n3", "-i=3@n6", "--grpc-addr=0.0.0.0:9559", "--device-id=1", "--cpu-port=255", "--port-kind=packet"} {
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
	if port, _, _ := unstructured.NestedSlice(objs["Service/j-junction-softupf"].Object, "spec", "ports"); len(port) != 1 || port[0].(map[string]any)["port"] != float64(9559) {
		t.Errorf("Service ports %v: want P4Runtime on 9559", port)
	}

	host := render(t, "--set", "softupf.enabled=true", "--set", "softupf.hostNetwork=true", "--set", "softupf.ports[0].number=1", "--set", "softupf.ports[0].interface=ens1f0")
	pod, _, _ = unstructured.NestedMap(host["Deployment/j-junction-softupf"].Object, "spec", "template", "spec")
	if pod["hostNetwork"] != true || pod["dnsPolicy"] != "ClusterFirstWithHostNet" {
		t.Errorf("host network: hostNetwork %v, dnsPolicy %v", pod["hostNetwork"], pod["dnsPolicy"])
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(host["Deployment/j-junction-softupf"].Object, "spec", "template", "metadata", "annotations"); ok {
		t.Error("a Multus annotation without networks")
	}
	if strings.Contains(fmt.Sprint(pod["volumes"]), "netns") {
		t.Errorf("volumes %v without portsNetns", pod["volumes"])
	}

	// AF_XDP ports (docs/softupf.md): an XDP program to load and UMEM to lock.
	for _, kind := range []string{"xdp", "auto"} {
		_, _, c := podOf(t, "--set", "softupf.portKind="+kind)
		if !contains(c["args"], "--port-kind="+kind) {
			t.Errorf("portKind %s: args %v lack --port-kind=%s", kind, c["args"], kind)
		}
		caps, _, _ := unstructured.NestedFieldNoCopy(c, "securityContext", "capabilities")
		if want := (map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_RAW", "NET_ADMIN", "BPF", "IPC_LOCK"}}); !reflect.DeepEqual(caps, want) {
			t.Errorf("portKind %s: capabilities %v, want %v", kind, caps, want)
		}
	}

	// Real-time readers: the flag, and CAP_SYS_NICE to take the priority.
	_, _, c = podOf(t, "--set", "softupf.realtimePriority=10")
	caps, _, _ := unstructured.NestedFieldNoCopy(c, "securityContext", "capabilities")
	if want := (map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_RAW", "SYS_NICE"}}); !contains(c["args"], "--realtime-priority=10") || !reflect.DeepEqual(caps, want) {
		t.Errorf("realtimePriority 10: args %v, capabilities %v; want --realtime-priority=10 and %v", c["args"], caps, want)
	}
	if out, err := run(t, "template", "j", chart, "--kube-version", "1.33.0", "--set", "softupf.realtimePriority=100"); err == nil || !strings.Contains(out, "realtimePriority") {
		t.Errorf("softupf.realtimePriority=100: %v, want the schema to refuse it:\n%s", err, out)
	}

	// kind (hack/kind.sh): the ports in the core node's jx-upf, made by hack/kind/dataplane.sh.
	inNetns := render(t, "-f", filepath.Join(root, "hack", "kind", "values.yaml"))
	pod, _, _ = unstructured.NestedMap(inNetns["Deployment/j-junction-softupf"].Object, "spec", "template", "spec")
	c = pod["containers"].([]any)[0].(map[string]any)
	if !contains(c["args"], "--ports-netns=/run/netns/jx-upf") || !contains(c["args"], "-i=1@u-n3") || !contains(c["args"], "-i=3@u-n6") {
		t.Errorf("args %v: want the ports in /run/netns/jx-upf", c["args"])
	}
	sc = c["securityContext"].(map[string]any)
	if want := (map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_RAW", "SYS_ADMIN"}}); !reflect.DeepEqual(sc["capabilities"], want) {
		t.Errorf("capabilities %v: want %v", sc["capabilities"], want)
	}
	// The node's netns, and the P4Runtime certificates the chart issued.
	wantMount := []any{map[string]any{"name": "netns", "mountPath": "/run/netns", "mountPropagation": "HostToContainer", "readOnly": true},
		map[string]any{"name": "p4runtime-tls", "mountPath": "/etc/junction/p4runtime-tls", "readOnly": true}}
	wantVolume := []any{map[string]any{"name": "netns", "hostPath": map[string]any{"path": "/run/netns", "type": "Directory"}},
		map[string]any{"name": "p4runtime-tls", "secret": map[string]any{"secretName": "j-junction-softupf-tls"}}}
	if !reflect.DeepEqual(c["volumeMounts"], wantMount) || !reflect.DeepEqual(pod["volumes"], wantVolume) {
		t.Errorf("mounts %v, volumes %v: want the node's /run/netns, read-only, HostToContainer", c["volumeMounts"], pod["volumes"])
	}
	if sel, _, _ := unstructured.NestedStringMap(pod, "nodeSelector"); sel["junction.dev/core"] != "true" {
		t.Errorf("nodeSelector %v: want the core node that hack/kind/dataplane.sh wires", sel)
	}
}

// podOf renders the software UPF with one port and the extra values, and returns its pod spec
// and container.
func podOf(t *testing.T, args ...string) (objs map[string]*unstructured.Unstructured, pod, c map[string]any) {
	t.Helper()
	base := []string{"--set", "softupf.enabled=true", "--set", "softupf.ports[0].number=1", "--set", "softupf.ports[0].interface=n3"}
	objs = render(t, append(base, args...)...)
	pod, _, _ = unstructured.NestedMap(objs["Deployment/j-junction-softupf"].Object, "spec", "template", "spec")
	return objs, pod, pod["containers"].([]any)[0].(map[string]any)
}

const tlsDir = "/etc/junction/p4runtime-tls/"

var mutualArgs = []string{"--tls-cert=" + tlsDir + "tls.crt", "--tls-key=" + tlsDir + "tls.key", "--tls-client-ca=" + tlsDir + "ca.crt"}

// servesMutualTLSFrom checks the software UPF's pod and container serve mutual TLS (no
// --insecure) from Secret secret, its only volume.
func servesMutualTLSFrom(t *testing.T, pod, c map[string]any, secret string) {
	t.Helper()
	for _, arg := range mutualArgs {
		if !contains(c["args"], arg) {
			t.Errorf("args %v lack %s", c["args"], arg)
		}
	}
	if contains(c["args"], "--insecure") {
		t.Errorf("args %v hold --insecure", c["args"])
	}
	wantVol := map[string]any{"name": "p4runtime-tls", "secret": map[string]any{"secretName": secret}}
	if vols, _ := pod["volumes"].([]any); len(vols) != 1 || !reflect.DeepEqual(vols[0], wantVol) {
		t.Errorf("volumes %v, want only %v", pod["volumes"], wantVol)
	}
}

// With softupf.tls.secretName the software UPF serves P4Runtime in mutual TLS from that Secret,
// mounted read-only; softupf.tls.mutual=false drops the client CA and says --insecure.
func TestSoftUPFTLSFromASecret(t *testing.T) {
	objs, pod, c := podOf(t, "--set", "softupf.tls.secretName=upf-tls")
	servesMutualTLSFrom(t, pod, c, "upf-tls")
	wantMount := map[string]any{"name": "p4runtime-tls", "mountPath": "/etc/junction/p4runtime-tls", "readOnly": true}
	if mounts, _ := c["volumeMounts"].([]any); len(mounts) != 1 || !reflect.DeepEqual(mounts[0], wantMount) {
		t.Errorf("volume mounts %v, want only %v", c["volumeMounts"], wantMount)
	}
	if objs["Secret/j-junction-softupf-tls"] != nil || objs["Secret/junction-p4runtime-tls"] != nil {
		t.Error("the chart issued certificates beside softupf.tls.secretName")
	}

	_, _, c = podOf(t, "--set", "softupf.tls.secretName=upf-tls", "--set", "softupf.tls.mutual=false")
	if !contains(c["args"], "--tls-cert="+tlsDir+"tls.crt") || contains(c["args"], "--tls-client-ca="+tlsDir+"ca.crt") || !contains(c["args"], "--insecure") {
		t.Errorf("server TLS: args %v, want the certificate, no client CA, and --insecure", c["args"])
	}
}

// By default the software UPF serves mutual TLS with certificates the chart issues: the UPF's for
// its Service's names and the operator's, from one CA. The two Secrets are checked the way they
// are used: the UPF's side as cmd/softupf loads it (a client certificate required from ca.crt),
// the operator's as a UserPlaneFunction names it (ca.crt, tls.crt, tls.key; the Service's name).
func TestSoftUPFIsMutualTLSByDefault(t *testing.T) {
	objs, pod, c := podOf(t)
	servesMutualTLSFrom(t, pod, c, "j-junction-softupf-tls")
	secret := func(name string) map[string][]byte {
		o := objs["Secret/"+name]
		if o == nil {
			t.Fatalf("Secret %s not rendered; rendered %v", name, names(objs))
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		out := map[string][]byte{}
		for k, v := range data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("Secret %s key %s: %v", name, k, err)
			}
			out[k] = b
		}
		if typ, _, _ := unstructured.NestedString(o.Object, "type"); typ != "kubernetes.io/tls" {
			t.Errorf("Secret %s of type %q", name, typ)
		}
		return out
	}
	server, client := secret("j-junction-softupf-tls"), secret("junction-p4runtime-tls")
	if err := handshake(server, client, "j-junction-softupf.junction-system.svc"); err != nil {
		t.Errorf("mutual TLS with the chart's certificates: %v", err)
	}
	// The UPF refuses a client whose certificate another CA signed.
	other := testenv.NewPKI(t)
	stranger := map[string][]byte{"ca.crt": client["ca.crt"], "tls.crt": other.ClientCert, "tls.key": other.ClientKey}
	if err := handshake(server, stranger, "j-junction-softupf.junction-system.svc"); err == nil {
		t.Error("the UPF accepted a client certificate from another CA")
	}

	// Plaintext is what softupf.insecure asks for, and then nothing is issued.
	objs, pod, c = podOf(t, "--set", "softupf.insecure=true")
	for _, a := range c["args"].([]any) {
		if strings.HasPrefix(a.(string), "--tls") {
			t.Errorf("softupf.insecure: arg %s", a)
		}
	}
	if !contains(c["args"], "--insecure") {
		t.Errorf("softupf.insecure: args %v lack --insecure", c["args"])
	}
	if _, ok := pod["volumes"]; ok || objs["Secret/j-junction-softupf-tls"] != nil {
		t.Errorf("softupf.insecure: volumes %v, or a Secret issued", pod["volumes"])
	}

	// With cert-manager's API in the cluster, cert-manager issues and renews instead.
	objs, _, _ = podOf(t, "--api-versions", "cert-manager.io/v1")
	for _, want := range []string{"Issuer/j-junction-softupf-selfsigned", "Certificate/j-junction-softupf-ca", "Issuer/j-junction-softupf-ca", "Certificate/j-junction-softupf-tls", "Certificate/j-junction-p4runtime-client"} {
		if objs[want] == nil {
			t.Errorf("cert-manager: %s not rendered; rendered %v", want, names(objs))
		}
	}
	if objs["Secret/j-junction-softupf-tls"] != nil || objs["Secret/junction-p4runtime-tls"] != nil {
		t.Error("cert-manager: helm issued Secrets too")
	}
	if sn, _, _ := unstructured.NestedString(objs["Certificate/j-junction-p4runtime-client"].Object, "spec", "secretName"); sn != "junction-p4runtime-tls" {
		t.Errorf("cert-manager: the operator's certificate goes to Secret %q", sn)
	}
	if dns, _, _ := unstructured.NestedStringSlice(objs["Certificate/j-junction-softupf-tls"].Object, "spec", "dnsNames"); !slices.Contains(dns, "j-junction-softupf.junction-system.svc") {
		t.Errorf("cert-manager: the UPF's certificate names %v", dns)
	}
}

// handshake runs a TLS handshake between the UPF's side, configured from server's Secret data as
// cmd/softupf does with --tls-client-ca, and the operator's, from client's as a
// UserPlaneFunction's mutual TLS does, checking the UPF's certificate for serverName.
func handshake(server, client map[string][]byte, serverName string) error {
	pool := func(pem []byte) *x509.CertPool {
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(pem)
		return p
	}
	sp, err := tls.X509KeyPair(server["tls.crt"], server["tls.key"])
	if err != nil {
		return fmt.Errorf("server pair: %w", err)
	}
	cp, err := tls.X509KeyPair(client["tls.crt"], client["tls.key"])
	if err != nil {
		return fmt.Errorf("client pair: %w", err)
	}
	// Over TCP, not net.Pipe: the UPF's refusal of a client certificate comes after the client's
	// handshake in TLS 1.3, and an unbuffered pipe would block its alert.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer lis.Close()
	errs := make(chan error, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			errs <- err
			return
		}
		defer conn.Close()
		errs <- tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{sp}, ClientCAs: pool(server["ca.crt"]),
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}).Handshake()
	}()
	conn, err := net.DialTimeout("tcp", lis.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	cerr := tls.Client(conn, &tls.Config{RootCAs: pool(client["ca.crt"]), Certificates: []tls.Certificate{cp}, ServerName: serverName, MinVersion: tls.VersionTLS12}).Handshake()
	return errors.Join(cerr, <-errs)
}

// The NetworkPolicy admits the operator's pods, and nothing else, to the UPF's P4Runtime port.
func TestSoftUPFNetworkPolicyAdmitsOnlyTheOperator(t *testing.T) {
	objs, _, _ := podOf(t)
	np := objs["NetworkPolicy/j-junction-softupf"]
	if np == nil {
		t.Fatalf("no NetworkPolicy; rendered %v", names(objs))
	}
	labels := func(name string) map[string]string {
		l, _, _ := unstructured.NestedStringMap(objs[name].Object, "spec", "template", "metadata", "labels")
		return l
	}
	matches := func(sel, l map[string]string) bool {
		for k, v := range sel {
			if l[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if !matches(sel, labels("Deployment/j-junction-softupf")) || matches(sel, labels("Deployment/j-junction-operator")) {
		t.Errorf("podSelector %v: want the UPF's pods alone", sel)
	}
	if types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes"); !reflect.DeepEqual(types, []string{"Ingress"}) {
		t.Errorf("policyTypes %v, want Ingress", types)
	}
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if len(ingress) != 1 {
		t.Fatalf("ingress %v: want one rule", ingress)
	}
	rule := ingress[0].(map[string]any)
	from := rule["from"].([]any)
	peer := from[0].(map[string]any)
	fromSel, _, _ := unstructured.NestedStringMap(peer, "podSelector", "matchLabels")
	if len(from) != 1 || len(peer) != 1 || !matches(fromSel, labels("Deployment/j-junction-operator")) || matches(fromSel, labels("Deployment/j-junction-softupf")) {
		t.Errorf("from %v: want the operator's pods (of this namespace) alone", from)
	}
	if ports := fmt.Sprint(rule["ports"]); ports != "[map[port:9559 protocol:TCP]]" {
		t.Errorf("ports %s, want TCP 9559 alone", ports)
	}
	if off := render(t, "--set", "softupf.enabled=true", "--set", "softupf.networkPolicy.enabled=false"); off["NetworkPolicy/j-junction-softupf"] != nil {
		t.Error("a NetworkPolicy with softupf.networkPolicy.enabled=false")
	}
}
