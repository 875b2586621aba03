package operator

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
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
	u := mutualTLSUPF(t, pki)
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4rt-tls"}, Data: map[string][]byte{"ca.crt": pki.CA}}
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	upf.Spec.P4Runtime.Insecure = false
	upf.Spec.P4Runtime.TLS = &junctionv1.P4RuntimeTLS{Mode: junctionv1.TLSMutual, SecretRef: junctionv1.LocalObjectReference{Name: "p4rt-tls"}}
	s := session(ns, "s1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10")
	grantDevice(t, upf)
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

// mutualTLSUPF is a software UPF that refuses clients without a certificate from pki's CA.
func mutualTLSUPF(t *testing.T, pki testenv.PKI) *softUPF {
	return startSoftUPFTLS(t, "127.0.0.1:0",
		&tls.Config{Certificates: []tls.Certificate{pki.ServerPair(t)}, ClientCAs: pki.Pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pki.ClientPair(t)}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
}

// A tls block that names only its Secret is mutual TLS: the operator presents the Secret's client
// certificate to a UPF that requires one, and a Secret without it is reported naming the mode.
func TestTLSIsMutualByDefault(t *testing.T) {
	ns := newNamespace(t)
	pki := testenv.NewPKI(t)
	u := mutualTLSUPF(t, pki)
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	full := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4rt-tls"}, Data: pki.ClientSecretData()}
	caOnly := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca-only"}, Data: map[string][]byte{"ca.crt": pki.CA}}
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	upf.Spec.P4Runtime.Insecure = false
	upf.Spec.P4Runtime.TLS = &junctionv1.P4RuntimeTLS{SecretRef: junctionv1.LocalObjectReference{Name: "p4rt-tls"}}
	other := newUPF(ns, "other", "127.0.0.2:9559", "pipeline")
	other.Spec.P4Runtime.Insecure = false
	other.Spec.P4Runtime.TLS = &junctionv1.P4RuntimeTLS{SecretRef: junctionv1.LocalObjectReference{Name: "ca-only"}}
	s := session(ns, "s1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10")
	grantDevice(t, upf, other)
	create(t, cm, full, caOnly, upf, other, s)
	startOperator(t, ns, operatorOptions{})

	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries over mutual TLS", func() error { return sameEntries(u, sch, ns, "upf") })
	if c, err := condition(upf, junctionv1.ConditionInsecure); err != nil || c.Status != "" {
		t.Errorf("Insecure condition %+v (%v) on a TLS UPF", c, err)
	}
	if upf.Spec.P4Runtime.TLS.Mode != junctionv1.TLSMutual {
		t.Errorf("spec.p4runtime.tls.mode defaulted to %q, want MutualTLS", upf.Spec.P4Runtime.TLS.Mode)
	}

	waitCondition(t, programTimeout, other, junctionv1.ConditionConnected, metav1.ConditionFalse, "InvalidTLS")
	if c, _ := condition(other, junctionv1.ConditionConnected); !strings.Contains(c.Message, "spec.p4runtime.tls.mode") {
		t.Errorf("InvalidTLS message %q does not name spec.p4runtime.tls.mode", c.Message)
	}
}

// Plaintext is what a UPF asks for with spec.p4runtime.insecure: it works, and the status (the
// Insecure condition) and a Warning event say so, until the UPF asks for TLS.
func TestPlaintextIsReported(t *testing.T) {
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	upf := newUPF(ns, "upf", u.addr, "pipeline") // insecure: true
	grantDevice(t, upf)
	create(t, cm, upf)
	startOperator(t, ns, operatorOptions{})

	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, programTimeout, upf, junctionv1.ConditionInsecure, metav1.ConditionTrue, "Plaintext")
	if c, _ := condition(upf, junctionv1.ConditionInsecure); !strings.Contains(c.Message, "spec.p4runtime.insecure") {
		t.Errorf("Insecure message %q does not name spec.p4runtime.insecure", c.Message)
	}
	eventually(t, programTimeout, "a Plaintext event", func() error { return findEvent(ns, "upf", "Warning", "Plaintext") })
	eventually(t, programTimeout, "entries in plaintext", func() error { return sameEntries(u, sch, ns, "upf") })

	// Asking for TLS ends the plaintext connection and the condition.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4rt-tls"}, Data: map[string][]byte{"ca.crt": testenv.NewPKI(t).CA}}
	create(t, secret)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(upf), upf); err != nil {
		t.Fatal(err)
	}
	upf.Spec.P4Runtime.Insecure = false
	upf.Spec.P4Runtime.TLS = &junctionv1.P4RuntimeTLS{Mode: junctionv1.TLSServerOnly, SecretRef: junctionv1.LocalObjectReference{Name: "p4rt-tls"}}
	if err := k8s.Update(context.Background(), upf); err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "the Insecure condition gone", func() error {
		if c, err := condition(upf, junctionv1.ConditionInsecure); err != nil || c.Status != "" {
			return fmt.Errorf("Insecure is %q (%v)", c.Status, err)
		}
		return nil
	})
	waitCondition(t, programTimeout, upf, junctionv1.ConditionConnected, metav1.ConditionFalse, "")
}
