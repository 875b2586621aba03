package chart

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/agentauthz"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/ueagent"
)

// TestAgentReadsOnlyItsNodesSessions runs ueAgent.nodeScopedReads as a cluster would: a
// kube-apiserver started with the authorization configuration and webhook kubeconfig the chart
// renders for the control plane (only their file paths, the webhook's address and the name its
// test certificate is for changed), the agents' RBAC as the chart renders it, and the operator's
// authorizer with the flags the chart's Deployment gives it. Then the agent's pod-bound token
// on node ue-node-a: the agent's own watch (ueagent.CacheOptions) syncs and holds its node's
// session only; listing another node's sessions, all sessions, or getting one by name is
// refused (docs/threat-model.md); so is its node's list with a token bound to no pod. Without
// the webhook's allowance (the chart's RBAC alone) the agent's own list is refused too: the
// ClusterRole grants no session reads.
func TestAgentReadsOnlyItsNodesSessions(t *testing.T) {
	ctx := context.Background()
	objs := render(t, "--set", "ueAgent.enabled=true", "--set", "ueAgent.nodeScopedReads.enabled=true",
		"--set", "ueAgent.nodeScopedReads.tls.secretName=authz-tls")
	var cm, operator *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-agent-authorizer"):
			cm = o
		case o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "-operator"):
			operator = o
		}
	}
	if cm == nil || operator == nil {
		t.Fatalf("the chart renders no agent-authorizer ConfigMap or no operator Deployment: %v", names(objs))
	}

	// The operator's authorizer, from its container's flags.
	authz := agentauthz.Authorizer{}
	var port string
	containers, _, _ := unstructured.NestedSlice(operator.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--agent-authorizer-users":
			authz.Users = strings.Split(v, ",")
		case "--agent-authorizer-namespaces":
			authz.Namespaces = strings.Split(v, ",")
		case "--agent-authorizer-bind-address":
			port = strings.TrimPrefix(v, ":")
		}
	}
	if len(authz.Users) != 1 || port == "" {
		t.Fatalf("the operator's flags name no agent user or no authorizer port: %v", args)
	}
	pki := testenv.NewPKI(t)
	dir := t.TempDir()
	testenv.WriteFile(t, dir, "tls.crt", pki.ServerCert)
	testenv.WriteFile(t, dir, "tls.key", pki.ServerKey)
	caFile := testenv.WriteFile(t, dir, "ca.crt", pki.CA)
	addr := testenv.FreeAddr(t)
	srvCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() { _ = agentauthz.Server{Authorizer: authz, Addr: addr, CertDir: dir}.Start(srvCtx) }()
	testenv.Eventually(t, 10*time.Second, "the authorizer listening", func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})

	// The control plane's files, as the chart renders them.
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var kubeconfig map[string]any
	if err := yaml.Unmarshal([]byte(data["kubeconfig"]), &kubeconfig); err != nil {
		t.Fatalf("the rendered kubeconfig: %v", err)
	}
	webhook := kubeconfig["clusters"].([]any)[0].(map[string]any)["cluster"].(map[string]any)
	if !strings.HasSuffix(webhook["server"].(string), "/authorize") {
		t.Errorf("the kubeconfig's server %v is not the authorizer's path /authorize", webhook["server"])
	}
	webhook["server"], webhook["tls-server-name"], webhook["certificate-authority"] = "https://"+addr+"/authorize", testenv.ServerName, caFile
	kc, err := yaml.Marshal(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kcFile := testenv.WriteFile(t, dir, "kubeconfig", kc)
	var authzConfig map[string]any
	if err := yaml.Unmarshal([]byte(data["authorization-config.yaml"]), &authzConfig); err != nil {
		t.Fatalf("the rendered authorization configuration: %v", err)
	}
	webhooks := 0
	for _, a := range authzConfig["authorizers"].([]any) {
		if w, ok := a.(map[string]any)["webhook"].(map[string]any); ok {
			w["connectionInfo"].(map[string]any)["kubeConfigFile"] = kcFile
			webhooks++
		}
	}
	if webhooks != 1 {
		t.Fatalf("the authorization configuration has %d webhooks, want the agent authorizer alone", webhooks)
	}
	ac, err := yaml.Marshal(authzConfig)
	if err != nil {
		t.Fatal(err)
	}

	// The API server that asks the authorizer.
	assets, err := testenv.AssetsDir()
	testenv.Require(t, "the envtest control plane (make tools)", err)
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}}
	env.ControlPlane.GetAPIServer().Configure().Disable("authorization-mode").Set("authorization-config", testenv.WriteFile(t, dir, "authorization-config.yaml", ac))
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	if err := junctionv1.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	create := func(o client.Object) {
		t.Helper()
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	const agentNS, tenant = "junction-system", "tenant"
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}})
	var agentSA string
	for _, o := range objs {
		if strings.HasSuffix(o.GetName(), "-ue-agent") && (o.GetKind() == "ServiceAccount" || o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding") {
			if err := admin.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
			}
			if o.GetKind() == "ServiceAccount" {
				agentSA = o.GetName()
			}
		}
	}
	if want := "system:serviceaccount:" + agentNS + ":" + agentSA; authz.Users[0] != want {
		t.Errorf("the operator authorizes %s, the agents run as %s", authz.Users[0], want)
	}
	samples, err := testenv.Samples(scheme.Scheme, tenant, "127.0.0.1:9559")
	if err != nil {
		t.Fatal(err)
	}
	var sessions []*junctionv1.ATSSSSession
	for _, node := range []string{"ue-node-a", "ue-node-b"} {
		for _, o := range samples {
			if s, ok := o.(*junctionv1.ATSSSSession); ok {
				s = s.DeepCopy()
				s.Name, s.Spec.UE.NodeName = "on-"+node, node
				create(s)
				sessions = append(sessions, s)
				break
			}
		}
	}
	if len(sessions) != 2 {
		t.Fatal("config/samples has no session")
	}
	mine, theirs := sessions[0], sessions[1]

	// The agent's token as the kubelet gets it: bound to its pod, which is on ue-node-a.
	create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ue-node-a"}})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "agent-on-a"},
		Spec:       corev1.PodSpec{ServiceAccountName: agentSA, NodeName: "ue-node-a", Containers: []corev1.Container{{Name: "ue-agent", Image: "junction"}}},
	}
	create(pod)
	tokenFor := func(bound *authenticationv1.BoundObjectReference) *rest.Config {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: agentSA}}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: bound}}
		if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatalf("TokenRequest: %v", err)
		}
		return &rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
	}
	agentCfg := tokenFor(&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
	agent, err := client.New(agentCfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	unbound, err := client.New(tokenFor(nil), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// The agent's own watch, as it starts it.
	opts := ueagent.CacheOptions("ue-node-a")
	opts.Scheme = scheme.Scheme
	agentCache, err := cache.New(agentCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	cacheCtx, stopCache := context.WithCancel(ctx)
	t.Cleanup(stopCache)
	go func() { _ = agentCache.Start(cacheCtx) }()
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := agentCache.GetInformer(syncCtx, &junctionv1.ATSSSSession{}, cache.BlockUntilSynced(true)); err != nil {
		t.Fatalf("the agent's watch of its node's sessions did not sync: %v", err)
	}
	if !agentCache.WaitForCacheSync(syncCtx) {
		t.Fatal("the agent's cache did not start")
	}
	var cached junctionv1.ATSSSSessionList
	if err := agentCache.List(ctx, &cached); err != nil {
		t.Fatal(err)
	}
	if len(cached.Items) != 1 || cached.Items[0].Name != mine.Name {
		t.Errorf("the agent's watch holds %d sessions, want only %s", len(cached.Items), mine.Name)
	}

	onNode := func(node string) client.ListOption {
		return client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(junctionv1.SessionNodeNameField, node)}
	}
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"another node's sessions", func() error {
			return agent.List(ctx, &junctionv1.ATSSSSessionList{}, onNode("ue-node-b"))
		}},
		{"another node's sessions in one namespace", func() error {
			return agent.List(ctx, &junctionv1.ATSSSSessionList{}, onNode("ue-node-b"), client.InNamespace(tenant))
		}},
		{"every session", func() error { return agent.List(ctx, &junctionv1.ATSSSSessionList{}) }},
		{"sessions not of another node", func() error {
			return agent.List(ctx, &junctionv1.ATSSSSessionList{}, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector(junctionv1.SessionNodeNameField, "ue-node-b")})
		}},
		{"another node's session by name", func() error {
			return agent.Get(ctx, client.ObjectKeyFromObject(theirs), &junctionv1.ATSSSSession{})
		}},
		{"its own node's session by name (a get shows no field selector)", func() error {
			return agent.Get(ctx, client.ObjectKeyFromObject(mine), &junctionv1.ATSSSSession{})
		}},
		{"another node's session status by name", func() error {
			return agent.SubResource("status").Get(ctx, theirs, &junctionv1.ATSSSSession{})
		}},
		{"its node's sessions with a token bound to no pod", func() error {
			return unbound.List(ctx, &junctionv1.ATSSSSessionList{}, onNode("ue-node-a"))
		}},
	} {
		if err := tc.read(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: want Forbidden, got %v", tc.name, err)
		}
	}
	var listed junctionv1.ATSSSSessionList
	if err := agent.List(ctx, &listed, onNode("ue-node-a"), client.InNamespace(tenant)); err != nil {
		t.Errorf("its node's sessions in one namespace: %v", err)
	} else if len(listed.Items) != 1 || listed.Items[0].Name != mine.Name {
		t.Errorf("its node's sessions in one namespace: %d listed, want only %s", len(listed.Items), mine.Name)
	}

	// With the authorizer stopped the API server falls back to no opinion: RBAC alone, which
	// grants the agents no session reads.
	stop()
	testenv.Eventually(t, 10*time.Second, "the authorizer stopped", func() error {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return fmt.Errorf("still listening")
		}
		return nil
	})
	// The API server caches an allowed decision for authorizedTTL: a selector it has not seen
	// (another namespace) is a new decision.
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	create(other)
	// The API server answers 500 rather than 403 when an authorizer it asked failed.
	if err := agent.List(ctx, &junctionv1.ATSSSSessionList{}, onNode("ue-node-a"), client.InNamespace(other.Name)); !apierrors.IsForbidden(err) && !apierrors.IsInternalError(err) {
		t.Errorf("its node's sessions with the authorizer down: want a refusal (RBAC grants no session reads), got %v", err)
	}
}
