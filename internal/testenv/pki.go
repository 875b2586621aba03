package testenv

import (
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
	"testing"
	"time"
)

// PKI is a test CA with a server certificate for 127.0.0.1 and ServerName and a client
// certificate it signed, valid for an hour, in PEM as Secrets and files hold them.
// ServerName is the DNS name in a PKI's server certificate, for a client that checks a name
// rather than the address it dials (as a PodMonitor scraping the UE agents does).
const ServerName = "softupf"

type PKI struct {
	CA                    []byte // the CA certificate
	ServerCert, ServerKey []byte
	ClientCert, ClientKey []byte
	Pool                  *x509.CertPool // holds the CA
}

// NewPKI makes a PKI with fresh P-256 keys.
func NewPKI(t testing.TB) PKI {
	t.Helper()
	p, err := GeneratePKI(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// GeneratePKI is NewPKI outside a test (`make run`), its certificates valid for validFor.
func GeneratePKI(validFor time.Duration) (PKI, error) {
	var firstErr error
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return k
	}
	encode := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	caKey := key()
	if firstErr != nil {
		return PKI{}, firstErr
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "junction test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return PKI{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return PKI{}, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP, names ...string) (certPEM, keyPEM []byte) {
		k := key()
		if firstErr != nil {
			return nil, nil
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: names,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			firstErr = err
			return nil, nil
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			firstErr = err
			return nil, nil
		}
		return encode("CERTIFICATE", der), encode("EC PRIVATE KEY", kb)
	}
	p := PKI{CA: encode("CERTIFICATE", caDER), Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	p.ServerCert, p.ServerKey = leaf(2, "softupf", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)}, ServerName)
	p.ClientCert, p.ClientKey = leaf(3, "junction-operator", x509.ExtKeyUsageClientAuth, nil)
	return p, firstErr
}

// ClientSecretData is what a UserPlaneFunction's spec.p4runtime.tls.secretRef names for mutual
// TLS: the CA that signed the switch's certificate and the operator's client certificate.
func (p PKI) ClientSecretData() map[string][]byte {
	return map[string][]byte{"ca.crt": p.CA, "tls.crt": p.ClientCert, "tls.key": p.ClientKey}
}

// ServerPair and ClientPair are the certificates with their keys, as tls.Config takes them.
func (p PKI) ServerPair(t testing.TB) tls.Certificate { return keyPair(t, p.ServerCert, p.ServerKey) }
func (p PKI) ClientPair(t testing.TB) tls.Certificate { return keyPair(t, p.ClientCert, p.ClientKey) }

func keyPair(t testing.TB, cert, key []byte) tls.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// WriteFile writes b to a file name in dir (0600) and returns its path.
func WriteFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
