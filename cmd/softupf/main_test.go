package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/ports"
	"github.com/junction-atsss/junction/p4"
)

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"-i", "1@veth0", "--i", "2@veth1", "--grpc-addr", "127.0.0.1:9600", "--cpu-port", "510"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.Mapping{{Port: 1, Iface: "veth0"}, {Port: 2, Iface: "veth1"}}
	if len(o.ports) != 2 || o.ports[0] != want[0] || o.ports[1] != want[1] {
		t.Errorf("ports = %v, want %v", o.ports, want)
	}
	if o.grpcAddr != "127.0.0.1:9600" || o.cpuPort != 510 || o.deviceID != 1 || o.portKind != ports.KindAuto {
		t.Errorf("options = %+v", o)
	}
	for arg, want := range map[string]ports.Kind{"auto": ports.KindAuto, "xdp": ports.KindXDP, "packet": ports.KindPacket} {
		if o, err := parseFlags([]string{"--port-kind", arg}); err != nil || o.portKind != want {
			t.Errorf("--port-kind %s: %v, %v; want %v", arg, o, err, want)
		}
	}
	if o, err := parseFlags([]string{"--realtime-priority", "99"}); err != nil || o.rtPriority != 99 {
		t.Errorf("--realtime-priority 99: %v, %v", o, err)
	}
	for _, bad := range [][]string{{"-i", "veth0"}, {"--cpu-port", "512"}, {"extra"}, {"--port-kind", "af_xdp"},
		{"--realtime-priority", "100"}, {"--realtime-priority", "-1"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestCheckP4Info(t *testing.T) {
	dp, err := dataplane.New(dataplane.Config{Pool: dataplane.NewPool(4), MaxHeld: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "p4info.txtpb")
	if err := os.WriteFile(good, p4.P4InfoText(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkP4Info(dp, good); err != nil {
		t.Errorf("the checked-in P4Info is refused: %v", err)
	}
	bad := filepath.Join(dir, "bad.txtpb")
	text := strings.ReplaceAll(string(p4.P4InfoText()), `"rtt_non3gpp"`, `"rtt_wifi"`) // name and alias
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkP4Info(dp, bad); err == nil || !strings.Contains(err.Error(), `"rtt_non3gpp"`) {
		t.Errorf("checkP4Info = %v, want an error naming rtt_non3gpp", err)
	}
}

// The UPF does not serve P4Runtime that anyone who reaches it can use unless --insecure says so:
// plaintext only on loopback, TLS only with a client CA.
func TestNoUnauthenticatedP4RuntimeWithoutInsecure(t *testing.T) {
	dir := t.TempDir()
	pki := writePKI(t, dir)
	mutual := []string{"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--tls-client-ca", pki.ca}
	for _, tc := range []struct {
		name string
		args []string
		want string // "": accepted
	}{
		{"plaintext on the default address (loopback) is accepted", nil, ""},
		{"plaintext on localhost is accepted", []string{"--grpc-addr", "localhost:9559"}, ""},
		{"plaintext on every address is refused", []string{"--grpc-addr", "0.0.0.0:9559"}, "--grpc-addr 0.0.0.0:9559 is not a loopback address"},
		{"plaintext on an empty host is refused", []string{"--grpc-addr", ":9559"}, "--insecure"},
		{"plaintext on a node address is refused", []string{"--grpc-addr", "192.0.2.7:9559"}, "--tls-client-ca"},
		{"plaintext on every address with --insecure is accepted", []string{"--grpc-addr", "0.0.0.0:9559", "--insecure"}, ""},
		{"TLS without a client CA is refused", []string{"--grpc-addr", "0.0.0.0:9559", "--tls-cert", pki.serverCert, "--tls-key", pki.serverKey},
			"--tls-cert without --tls-client-ca"},
		{"TLS without a client CA on loopback is refused too", []string{"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey}, "--tls-client-ca"},
		{"TLS without a client CA with --insecure is accepted", []string{"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--insecure"}, ""},
		{"mutual TLS on every address is accepted", append([]string{"--grpc-addr", "0.0.0.0:9559"}, mutual...), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("parseFlags = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
