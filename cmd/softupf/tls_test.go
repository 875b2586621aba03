package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
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
)

// pkiFiles writes a CA, a server certificate for 127.0.0.1 and a client certificate, both
// signed by the CA, as PEM files in dir.
type pkiFiles struct {
	ca, serverCert, serverKey string
	ca2                       string // a CA that signed nothing here
	client                    tls.Certificate
	pool                      *x509.CertPool
}

func writePKI(t *testing.T, dir string) pkiFiles {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, k, write(name+".crt", "CERTIFICATE", der)
	}
	caCert, caKey, caPath := ca("ca")
	_, _, ca2Path := ca("other-ca")
	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	sDER, sKey := leaf(2, x509.ExtKeyUsageServerAuth)
	sKeyDER, _ := x509.MarshalECPrivateKey(sKey)
	cDER, cKey := leaf(3, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pkiFiles{
		ca: caPath, ca2: ca2Path, pool: pool,
		serverCert: write("server.crt", "CERTIFICATE", sDER), serverKey: write("server.key", "EC PRIVATE KEY", sKeyDER),
		client: tls.Certificate{Certificate: [][]byte{cDER}, PrivateKey: cKey},
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
		return credentials.NewTLS(&tls.Config{RootCAs: pki.pool, Certificates: cert, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	}

	server := serve(t, tlsFiles{cert: pki.serverCert, key: pki.serverKey})
	if err := capabilities(server, client()); err != nil {
		t.Errorf("TLS: a client that trusts the CA is refused: %v", err)
	}
	if err := capabilities(server, insecure.NewCredentials()); err == nil {
		t.Error("TLS: a plaintext client got an answer")
	}

	mutual := serve(t, tlsFiles{cert: pki.serverCert, key: pki.serverKey, clientCA: pki.ca})
	if err := capabilities(mutual, client(pki.client)); err != nil {
		t.Errorf("mutual TLS: a client certificate from the CA is refused: %v", err)
	}
	if err := capabilities(mutual, client()); err == nil {
		t.Error("mutual TLS: a client without a certificate got an answer")
	}
	other := serve(t, tlsFiles{cert: pki.serverCert, key: pki.serverKey, clientCA: pki.ca2})
	if err := capabilities(other, client(pki.client)); err == nil {
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
