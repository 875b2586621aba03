package uedaemonset

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/junction-atsss/junction/internal/nodecmd"
	"github.com/junction-atsss/junction/internal/testenv"
)

// TestAgentMetricsServeOnlyAuthorizedScrapers: the agent's /metrics on the node's address
// (--metrics-secure, the default) answers over HTTPS, and only a scraper whose token may get
// /metrics: the agent checks each token with a TokenReview and a SubjectAccessReview, as its
// ServiceAccount (the base's ClusterRole must allow both). No token: 401; a token that may not:
// 403; plain HTTP: not served. It serves the certificate of --metrics-cert-dir, which a scraper
// verifies by the name it is for (the chart's PodMonitor: serverName and the CA).
func TestAgentMetricsServeOnlyAuthorizedScrapers(t *testing.T) {
	install(t, "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
	for _, sa := range []string{"scraper", "stranger"} {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}})
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	create(t, reader)
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: "scraper"}}})

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	// The certificate the chart gives every agent (--metrics-cert-dir): for a name, not the
	// node's address, which the PodMonitor checks as its serverName.
	pki, certDir := testenv.NewPKI(t), t.TempDir()
	testenv.WriteFile(t, certDir, "tls.crt", pki.ServerCert)
	testenv.WriteFile(t, certDir, "tls.key", pki.ServerKey)
	cfg := &rest.Config{Host: k8sConfig.Host, BearerToken: token(t, nil), TLSClientConfig: rest.TLSClientConfig{CAData: k8sConfig.CAData}}
	mgr, err := nodecmd.NewManager(cfg, cache.Options{}, "", nodecmd.Metrics{Addr: addr, Secure: true, CertDir: certDir}, "0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the agent's manager: %v", err)
		}
	})

	verifying := func(name string) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool, ServerName: name}}}
	}
	hc := verifying(testenv.ServerName)
	get := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var body strings.Builder
		_, _ = fmt.Fprint(&body, resp.Status)
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		body.Write(buf[:n])
		return resp.StatusCode, body.String(), nil
	}
	testenv.Eventually(t, 30*time.Second, "the agent's metrics endpoint answering", func() error {
		_, _, err := get("https", "")
		return err
	})
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount that may not get /metrics", tokenOf(t, "stranger", nil), http.StatusForbidden},
		{"a ServiceAccount that may", tokenOf(t, "scraper", nil), http.StatusOK},
	} {
		code, body, err := get("https", tc.token)
		if err != nil || code != tc.want {
			t.Errorf("%s: %d (%v), want %d: %.200s", tc.name, code, err, tc.want, body)
		}
	}
	if code, _, err := get("http", tokenOf(t, "scraper", nil)); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP served the metrics")
	}
	// The scraper verified the certificate of the directory: a name it is not for fails.
	hc = verifying("elsewhere.example")
	if _, _, err := get("https", tokenOf(t, "scraper", nil)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a scraper checking another name: %v, want a certificate error", err)
	}
}
