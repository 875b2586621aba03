package main

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
	"github.com/junction-atsss/junction/internal/testenv"
)

// pkiFiles are a testenv.PKI's CA and server certificate as files, and the CA of another PKI.
type pkiFiles struct {
	testenv.PKI
	ca, serverCert, serverKey string
	otherCA                   string // a CA that signed nothing here
}

func writePKI(t *testing.T, dir string) pkiFiles {
	t.Helper()
	p := testenv.NewPKI(t)
	return pkiFiles{PKI: p,
		ca:         testenv.WriteFile(t, dir, "ca.crt", p.CA),
		serverCert: testenv.WriteFile(t, dir, "tls.crt", p.ServerCert),
		serverKey:  testenv.WriteFile(t, dir, "tls.key", p.ServerKey),
		otherCA:    testenv.WriteFile(t, dir, "other-ca.crt", testenv.NewPKI(t).CA),
	}
}

// serve runs the P4Runtime server of newGRPCServer(f) on loopback and returns its address.
func serve(t *testing.T, f tlsFiles) string {
	t.Helper()
	dp, err := dataplane.New(dataplane.Config{Pool: dataplane.NewPool(4), MaxHeld: 1})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := newGRPCServer(f, p4rt.New(dp, p4rt.Options{DeviceID: 1}))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// capabilities is one P4Runtime call over creds.
func capabilities(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = p4v1.NewP4RuntimeClient(conn).Capabilities(ctx, &p4v1.CapabilitiesRequest{})
	return err
}

// With --tls-cert and --tls-key the server speaks TLS only; with --tls-client-ca too, only a
// controller whose certificate chains to that CA gets an answer.
func TestP4RuntimeOverTLS(t *testing.T) {
	pki := writePKI(t, t.TempDir())
	client := func(cert ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: pki.Pool, Certificates: cert, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	}

	server := serve(t, tlsFiles{cert: pki.serverCert, key: pki.serverKey})
	if err := capabilities(server, client()); err != nil {
		t.Errorf("TLS: a client that trusts the CA is refused: %v", err)
	}
	if err := capabilities(server, insecure.NewCredentials()); err == nil {
		t.Error("TLS: a plaintext client got an answer")
	}

	mutual := serve(t, tlsFiles{cert: pki.serverCert, key: pki.serverKey, clientCA: pki.ca})
	if err := capabilities(mutual, client(pki.ClientPair(t))); err != nil {
		t.Errorf("mutual TLS: a client certificate from the CA is refused: %v", err)
	}
	if err := capabilities(mutual, client()); err == nil {
		t.Error("mutual TLS: a client without a certificate got an answer")
	}
	other := serve(t, tlsFiles{cert: pki.serverCert, key: pki.serverKey, clientCA: pki.otherCA})
	if err := capabilities(other, client(pki.ClientPair(t))); err == nil {
		t.Error("mutual TLS: a client certificate from another CA got an answer")
	}
}

func TestTLSFlagsNameWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	pki := writePKI(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", pki.serverCert}, "--tls-cert and --tls-key"},
		{[]string{"--tls-key", pki.serverKey}, "--tls-cert and --tls-key"},
		{[]string{"--tls-client-ca", pki.ca}, "--tls-client-ca needs --tls-cert"},
	} {
		if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	notPEM := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    tlsFiles
		want string
	}{
		{tlsFiles{cert: pki.serverCert, key: filepath.Join(dir, "missing.key")}, "--tls-cert/--tls-key"},
		{tlsFiles{cert: pki.serverCert, key: pki.serverKey, clientCA: notPEM}, "no PEM certificate"},
	} {
		if _, err := newGRPCServer(tc.f, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newGRPCServer(%+v) = %v, want an error naming %s", tc.f, err, tc.want)
		}
	}
}
