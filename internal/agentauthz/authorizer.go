// Package agentauthz is the authorization webhook that lets a UE agent read the ATSSSSessions
// of its own node and no others (docs/threat-model.md, "What an agent reads").
//
// RBAC cannot say "sessions whose spec.ue.nodeName is mine": it sees neither field selectors
// nor who the node is. The API server's webhook authorizer sees both (Kubernetes 1.32+, where
// AuthorizeWithSelectors is on by default: a list or watch's field selector arrives parsed in the
// SubjectAccessReview; a pod-bound token carries its node's name in the user's extra), as the
// built-in Node authorizer does for a kubelet's pods. With it, the agent's ClusterRole grants no
// session reads at all and this webhook grants one kind: list and watch of atssssessions limited
// to spec.ue.nodeName=<the token's node>, which is exactly the agent's watch
// (ueagent.CacheOptions). Everything else gets no opinion, so the next authorizer (or none)
// decides: the webhook only ever adds that one permission, and a failing webhook takes it away
// (the API server's failurePolicy NoOpinion), never more.
package agentauthz

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// NodeNameExtra is the user extra a pod-bound service account token carries its node's name
// in (the API server adds it; the token's holder cannot change it).
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// Authorizer decides SubjectAccessReviews for the UE agents.
type Authorizer struct {
	// Users are the agents' user names (system:serviceaccount:<namespace>:<name>).
	Users []string
	// Namespaces limit the reads to sessions of these namespaces (the chart's
	// ueAgent.namespaces); empty: any namespace, a cluster-wide list included.
	Namespaces []string
}

// Decide says whether the request spec describes is allowed, with the reason the API server
// logs and returns in a refusal. It never denies: what it does not allow, another authorizer
// may (and RBAC, which grants the agent no session reads, will not).
func (a Authorizer) Decide(spec authorizationv1.SubjectAccessReviewSpec) (bool, string) {
	if !slices.Contains(a.Users, spec.User) {
		return false, "not a UE agent"
	}
	nodes := spec.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return false, "the agent's token is bound to no node (only a pod's token is)"
	}
	node := nodes[0]
	r := spec.ResourceAttributes
	if r == nil || r.Group != junctionv1.GroupVersion.Group || r.Resource != "atssssessions" || r.Subresource != "" {
		return false, "only ATSSSSession reads are decided here"
	}
	if r.Verb != "list" && r.Verb != "watch" {
		return false, fmt.Sprintf("an agent may only list and watch sessions (by %s), not %s them", junctionv1.SessionNodeNameField, r.Verb)
	}
	if len(a.Namespaces) > 0 && !slices.Contains(a.Namespaces, r.Namespace) {
		return false, fmt.Sprintf("namespace %q is not one the agents serve", r.Namespace)
	}
	if !limitedToNode(r.FieldSelector, node) {
		return false, fmt.Sprintf("an agent may list and watch only the sessions of its node: field selector %s=%s", junctionv1.SessionNodeNameField, node)
	}
	return true, fmt.Sprintf("the sessions of node %s", node)
}

// limitedToNode says whether the parsed field selector keeps only sessions of node. The
// requirements are ANDed, so one "spec.ue.nodeName in (node)" suffices whatever else they say;
// the raw form is not parsed (the API server sends the parsed one; two parsers may disagree).
func limitedToNode(fs *authorizationv1.FieldSelectorAttributes, node string) bool {
	if fs == nil || fs.RawSelector != "" {
		return false
	}
	return slices.ContainsFunc(fs.Requirements, func(r metav1.FieldSelectorRequirement) bool {
		return r.Key == junctionv1.SessionNodeNameField && r.Operator == metav1.FieldSelectorOpIn && slices.Equal(r.Values, []string{node})
	})
}

// ServeHTTP answers a SubjectAccessReview (authorization.k8s.io/v1) POSTed by the API server.
// It reveals nothing but the decision, which follows from the request alone, so it needs no
// client authentication of its own: the API server authenticates it by its certificate.
func (a Authorizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a SubjectAccessReview", http.StatusMethodNotAllowed)
		return
	}
	var review authorizationv1.SubjectAccessReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(w, "decoding the SubjectAccessReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	allowed, reason := a.Decide(review.Spec)
	resp := authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SubjectAccessReview"},
		Status:   authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Server serves the Authorizer over HTTPS on every replica of the operator (the API server
// asks whichever its Service picks; no leader needed: the decision needs no state).
type Server struct {
	Authorizer
	// Addr is where it listens (host:port).
	Addr string
	// CertDir holds tls.crt and tls.key, read again when they change (a renewed certificate).
	CertDir string
}

// NeedLeaderElection: every replica serves (manager.LeaderElectionRunnable).
func (Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends (manager.Runnable).
func (s Server) Start(ctx context.Context) error {
	watcher, err := certwatcher.New(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("the agent authorizer's certificate in %s: %w", s.CertDir, err)
	}
	go func() { _ = watcher.Start(ctx) }()
	mux := http.NewServeMux()
	mux.Handle("/authorize", s.Authorizer)
	srv := &http.Server{
		Addr:              s.Addr,
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: watcher.GetCertificate},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the agent authorizer on %s: %w", s.Addr, err)
	}
	return nil
}
