package main

// P4Runtime over mutual TLS (--tls-cert, --tls-key, --tls-client-ca). Without the client CA, or
// without TLS, anyone who reaches the port can program the switch: that takes --insecure, except
// plaintext on loopback (a controller on the same machine, as `make run` and the tests have). The files are
// read again at every handshake, so a rotated Secret (cert-manager renews in place) takes effect
// on the controller's next connection without a restart; they are read once at start as well, so
// that a bad file stops the UPF there.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// tlsFiles are the PEM files of the P4Runtime server's TLS.
type tlsFiles struct {
	cert, key string // the server's certificate chain and key; both or neither
	clientCA  string // CA bundle that client certificates must chain to ("": no client certificate asked)
}

func (f tlsFiles) enabled() bool { return f.cert != "" }

// check names the flag that is missing or misused.
func (f tlsFiles) check() error {
	switch {
	case (f.cert == "") != (f.key == ""):
		return fmt.Errorf("--tls-cert and --tls-key go together")
	case f.clientCA != "" && f.cert == "":
		return fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first")
	}
	return nil
}

// checkExposure refuses, without insecure, a server that would let anyone who reaches addr
// program the UPF: plaintext beyond loopback, or TLS that authenticates no client.
func (f tlsFiles) checkExposure(addr string, insecure bool) error {
	if insecure {
		return nil
	}
	if f.enabled() && f.clientCA == "" {
		return fmt.Errorf("--tls-cert without --tls-client-ca authenticates no controller: give the CA of the controller's certificate, or --insecure to serve any client")
	}
	if !f.enabled() && !loopback(addr) {
		return fmt.Errorf("--grpc-addr %s is not a loopback address: P4Runtime there needs --tls-cert, --tls-key and --tls-client-ca (mutual TLS), or --insecure for plaintext", addr)
	}
	return nil
}

// loopback reports whether addr (host:port) listens on loopback only; an empty host or a
// wildcard listens on every address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// config reads the files into a server configuration: TLS 1.2 at least, and with a client CA a
// client certificate required and verified against it.
func (f tlsFiles) config() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", f.clientCA)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// serverOptions are the gRPC server's credentials: none when TLS is off.
func (f tlsFiles) serverOptions() ([]grpc.ServerOption, error) {
	if !f.enabled() {
		return nil, nil
	}
	if _, err := f.config(); err != nil {
		return nil, err
	}
	perHandshake := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return f.config() },
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(perHandshake))}, nil
}
