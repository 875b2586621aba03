package operator

import (
	"context"
	"crypto/tls"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
)

// TestMutualTLSFromASecret connects to a UPF that requires client certificates, with the CA
// and the operator's certificate from a Secret; a Secret that lacks the client key is
// reported, not retried blindly.
func TestMutualTLSFromASecret(t *testing.T) {
	ns := newNamespace(t)
	pki := testenv.NewPKI(t)
	u := startSoftUPFTLS(t, "127.0.0.1:0",
		&tls.Config{Certificates: []tls.Certificate{pki.ServerPair(t)}, ClientCAs: pki.Pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pki.ClientPair(t)}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4rt-tls"}, Data: map[string][]byte{"ca.crt": pki.CA}}
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
	cur.Data["tls.crt"], cur.Data["tls.key"] = pki.ClientCert, pki.ClientKey
	if err := k8s.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries over mutual TLS", func() error { return sameEntries(u, sch, ns, "upf") })
}
