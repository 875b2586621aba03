package installcheck

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/junction-atsss/junction/internal/testenv"
)

const (
	ns    = "junction-system"
	lease = "junction-operator.atsss.junction.dev"
	// leaderTimeout bounds how long a fresh manager takes to acquire a free Lease.
	leaderTimeout = 30 * time.Second
)

// The check against a real API server, through each state an installation passes: no CRDs (each
// kind named), CRDs but no operator yet, an operator leading (a controller-runtime manager with
// leader election, as cmd/manager runs it), the operator stopped (it releases its Lease), a
// leader that stopped renewing; and with leader election off, the Deployment's ready replicas.
func TestCheck(t *testing.T) {
	assets, err := testenv.AssetsDir()
	testenv.Require(t, "the envtest control plane (make tools)", err)
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(cfg Config) error { return Check(ctx, c, cfg, time.Now()) }
	withLease := Config{Namespace: ns, Deployment: "junction-operator", Lease: lease}

	err = check(withLease)
	for _, kind := range []string{"AddressPool", "ATSSSSession", "P4RuntimeTarget", "SteeringPolicy", "UserPlaneFunction"} {
		if err == nil || !strings.Contains(err.Error(), kind+" is not served") {
			t.Errorf("without CRDs: %v, want %s named as not served", err, kind)
		}
	}

	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := check(withLease); err == nil || strings.Contains(err.Error(), "not served") || !strings.Contains(err.Error(), "no operator has led yet") {
		t.Errorf("CRDs, no operator: %v, want only the missing Lease", err)
	}

	mgrCtx, stop := context.WithCancel(ctx)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		LeaderElection: true, LeaderElectionID: lease, LeaderElectionNamespace: ns, LeaderElectionReleaseOnCancel: true,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	waitCtx, cancel := context.WithTimeout(ctx, leaderTimeout)
	defer cancel()
	if err := Wait(waitCtx, c, withLease, testenv.PollInterval); err != nil {
		t.Fatalf("an operator leading: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := check(withLease); err == nil || !strings.Contains(err.Error(), "no operator leads") {
		t.Errorf("the operator stopped: %v, want the Lease without a holder", err)
	}

	// A leader that was cut off: its last renewal older than the Lease's duration.
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("operator-pod-1")
	l.Spec.LeaseDurationSeconds = ptr.To[int32](15)
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Minute)}
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := check(withLease); err == nil || !strings.Contains(err.Error(), "operator-pod-1 stopped renewing") {
		t.Errorf("a stale leader: %v, want it named", err)
	}

	// Leader election off: the Deployment's ready replicas, which kube-controller-manager writes
	// (envtest runs none; the test writes the status it would).
	noLease := Config{Namespace: ns, Deployment: "junction-operator"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "junction-operator"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "junction"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "junction"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "junction"}}},
			},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := check(noLease); err == nil || !strings.Contains(err.Error(), "no ready replica") {
		t.Errorf("no ready replica: %v", err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas = 1, 1
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := check(noLease); err != nil {
		t.Errorf("a ready replica: %v", err)
	}
}
