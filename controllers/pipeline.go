package controllers

// Reading what a UserPlaneFunction points at: its pipeline ConfigMap and its TLS Secret.

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/programmer"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// pipelineSpec is the pipeline a UPF should run, read from its ConfigMap.
type pipelineSpec struct {
	info         *p4configv1.P4Info
	schema       *upfclient.Schema
	deviceConfig []byte
	cookie       uint64
	policy       upfclient.PushPolicy
}

// loadError is a failure to read a referenced object, with the condition reason it shows as.
type loadError struct {
	Reason string
	Err    error
}

func (e *loadError) Error() string { return e.Err.Error() }
func (e *loadError) Unwrap() error { return e.Err }

func configMapBytes(cm *corev1.ConfigMap, key string) ([]byte, bool) {
	if v, ok := cm.Data[key]; ok {
		return []byte(v), true
	}
	v, ok := cm.BinaryData[key]
	return v, ok
}

// loadPipeline reads the UPF's pipeline ConfigMap: the P4Info (text format) and the optional
// device config.
func loadPipeline(ctx context.Context, c client.Reader, upf *junctionv1.UserPlaneFunction) (*pipelineSpec, error) {
	p := upf.Spec.Pipeline
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: upf.Namespace, Name: p.ConfigMapRef.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &loadError{ReasonConfigMapNotFound, fmt.Errorf("ConfigMap %s not found (spec.pipeline.configMapRef)", p.ConfigMapRef.Name)}
		}
		return nil, err
	}
	infoKey := p.P4InfoKey
	if infoKey == "" {
		infoKey = "p4info.txtpb"
	}
	devKey := p.DeviceConfigKey
	if devKey == "" {
		devKey = "device_config"
	}
	text, ok := configMapBytes(&cm, infoKey)
	if !ok {
		return nil, &loadError{ReasonInvalidPipeline, fmt.Errorf("ConfigMap %s has no key %q (spec.pipeline.p4InfoKey)", cm.Name, infoKey)}
	}
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(text, info); err != nil {
		return nil, &loadError{ReasonInvalidPipeline, fmt.Errorf("ConfigMap %s key %q is not a P4Info in text format: %v", cm.Name, infoKey, err)}
	}
	sch, err := upfclient.NewSchema(info)
	if err != nil {
		return nil, &loadError{ReasonInvalidPipeline, fmt.Errorf("ConfigMap %s key %q: %v", cm.Name, infoKey, err)}
	}
	for _, name := range []string{programmer.TableSessions, "applications", "session_overrides", "tunnel_peers"} {
		if _, err := sch.TableSize(name); err != nil {
			return nil, &loadError{ReasonInvalidPipeline, fmt.Errorf("ConfigMap %s key %q is not a JUNCTION-UPF P4Info: %v", cm.Name, infoKey, err)}
		}
	}
	dev, _ := configMapBytes(&cm, devKey) // empty for the software UPF
	policy := upfclient.PushIfDifferent
	if p.PushPolicy == junctionv1.PushNever {
		policy = upfclient.PushNever
	}
	return &pipelineSpec{info: info, schema: sch, deviceConfig: dev, cookie: upfclient.Cookie(info, dev), policy: policy}, nil
}

// connParams is everything that, when it changes, needs a new P4Runtime connection.
type connParams struct {
	address  string
	deviceID uint64
	role     string
	tls      *tls.Config
	// tlsHash fingerprints the TLS material, so that a rotated Secret reconnects.
	tlsHash string
}

func (a connParams) same(b connParams) bool {
	return a.address == b.address && a.deviceID == b.deviceID && a.role == b.role && a.tlsHash == b.tlsHash
}

// loadConnParams reads the endpoint and, for TLS, the Secret with ca.crt (and tls.crt, tls.key).
// Plaintext needs spec.p4runtime.insecure; the API server requires tls or insecure, but an object
// stored before that rule may have neither, and it is not served in plaintext. grantedName is the
// device grant's tlsServerName: when set, the name the device's certificate is checked for, and
// no plaintext.
func loadConnParams(ctx context.Context, c client.Reader, upf *junctionv1.UserPlaneFunction, grantedName string) (connParams, error) {
	ep := upf.Spec.P4Runtime
	cp := connParams{address: string(ep.Address), deviceID: uint64(ep.DeviceID), role: ep.Role}
	if ep.TLS == nil {
		if !ep.Insecure {
			return cp, &loadError{ReasonTLSRequired, fmt.Errorf("spec.p4runtime.tls is unset and spec.p4runtime.insecure is not true: " +
				"P4Runtime is TLS unless plaintext is asked for; set spec.p4runtime.tls (a Secret with ca.crt, tls.crt and tls.key) or spec.p4runtime.insecure: true")}
		}
		if grantedName != "" {
			return cp, &loadError{ReasonTLSRequired, fmt.Errorf("spec.p4runtime.insecure: the device's P4RuntimeTarget requires it to prove the name %q with its TLS certificate, "+
				"which plaintext cannot; set spec.p4runtime.tls", grantedName)}
		}
		return cp, nil
	}
	if grantedName != "" {
		if ep.TLS.ServerName != "" && ep.TLS.ServerName != grantedName {
			return cp, &loadError{ReasonServerNameNotGranted, fmt.Errorf("spec.p4runtime.tls.serverName %q: the device's P4RuntimeTarget requires its certificate to prove %q; "+
				"leave serverName empty or set it to that name", ep.TLS.ServerName, grantedName)}
		}
		ep.TLS = ep.TLS.DeepCopy()
		ep.TLS.ServerName = grantedName
	}
	var sec corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: upf.Namespace, Name: ep.TLS.SecretRef.Name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return cp, &loadError{ReasonSecretNotFound, fmt.Errorf("Secret %s not found (spec.p4runtime.tls.secretRef)", ep.TLS.SecretRef.Name)}
		}
		return cp, err
	}
	cfg, hash, err := tlsConfig(ep, sec.Data)
	if err != nil {
		return cp, &loadError{ReasonInvalidTLS, fmt.Errorf("Secret %s: %v", sec.Name, err)}
	}
	cp.tls, cp.tlsHash = cfg, hash
	return cp, nil
}

// tlsConfig builds the client TLS configuration from a Secret's data.
func tlsConfig(ep junctionv1.P4RuntimeEndpoint, data map[string][]byte) (*tls.Config, string, error) {
	h := sha256.New()
	ca := data["ca.crt"]
	if len(ca) == 0 {
		return nil, "", fmt.Errorf("key ca.crt is missing or empty")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, "", fmt.Errorf("key ca.crt holds no PEM certificate")
	}
	h.Write(ca)
	serverName := ep.TLS.ServerName
	if serverName == "" {
		host, _, err := net.SplitHostPort(string(ep.Address))
		if err != nil {
			return nil, "", fmt.Errorf("spec.p4runtime.address: %v", err)
		}
		serverName = host
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	// Mutual unless the mode says TLS: an object the API server did not default (a client that
	// bypassed it, or a unit test) gets the safe mode too.
	if ep.TLS.Mode != junctionv1.TLSServerOnly {
		crt, key := data["tls.crt"], data["tls.key"]
		if len(crt) == 0 || len(key) == 0 {
			return nil, "", fmt.Errorf("mode MutualTLS (spec.p4runtime.tls.mode, the default) needs keys tls.crt and tls.key")
		}
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, "", fmt.Errorf("tls.crt and tls.key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
		h.Write(crt)
		h.Write(key)
	}
	fmt.Fprintf(h, "|%s|%s", ep.TLS.Mode, serverName)
	return cfg, hex.EncodeToString(h.Sum(nil)), nil
}
