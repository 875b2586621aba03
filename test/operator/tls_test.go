package operator

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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client certificate.
type testPKI struct {
	caPEM                 []byte
	serverPair            tls.Certificate
	clientCert, clientKey []byte
	pool                  *x509.CertPool
}

func newPKI(t *testing.T) testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "junction test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) (certPEM, keyPEM []byte) {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	}
	sc, sk := leaf(2, "softupf", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	cc, ck := leaf(3, "junction-operator", x509.ExtKeyUsageClientAuth, nil)
	pair, err := tls.X509KeyPair(sc, sk)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), serverPair: pair, clientCert: cc, clientKey: ck, pool: pool}
}

// TestMutualTLSFromASecret connects to a UPF that requires client certificates, with the CA
// and the operator's certificate from a Secret; a Secret that lacks the client key is
// reported, not retried blindly.
func TestMutualTLSFromASecret(t *testing.T) {
	ns := newNamespace(t)
	pki := newPKI(t)
	clientPair, err := tls.X509KeyPair(pki.clientCert, pki.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	u := startSoftUPFTLS(t, "127.0.0.1:0",
		&tls.Config{Certificates: []tls.Certificate{pki.serverPair}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{clientPair}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4rt-tls"}, Data: map[string][]byte{"ca.crt": pki.caPEM}}
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	upf.Spec.P4Runtime.TLS = &junctionv1.P4RuntimeTLS{Mode: junctionv1.TLSMutual, SecretRef: junctionv1.LocalObjectReference{Name: "p4rt-tls"}}
	s := session(ns, "s1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10")
	create(t, cm, secret, upf, s)
	startOperator(t, ns, operatorOptions{})

	waitCondition(t, programTimeout, upf, junctionv1.ConditionConnected, metav1.ConditionFalse, "InvalidTLS")
	eventually(t, programTimeout, "an InvalidTLS event", func() error { return findEvent(ns, "upf", "Warning", "InvalidTLS") })

	var cur corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(secret), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Data["tls.crt"], cur.Data["tls.key"] = pki.clientCert, pki.clientKey
	if err := k8s.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries over mutual TLS", func() error { return sameEntries(u, sch, ns, "upf") })
}
