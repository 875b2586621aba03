package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
)

// TestGitOpsHealth puts each kind in each state the GitOps tools tell apart and reads the objects
// back from the API server: kstatus (what Flux and `kubectl wait --for` judge by) must say Current
// for a Ready object, InProgress while the operator is still working, Failed for a terminal error;
// and Argo CD's health check (gitops/argocd/health.lua, run in gopher-lua as Argo CD runs it) must
// say Healthy, Progressing and Degraded for the same objects. A stalled object recovers: once the
// missing ConfigMap appears the UPF is Current and Healthy.
func TestGitOpsHealth(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "gitops", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}

	// Working objects, and terminal errors beside them: a policy that finds the applications
	// table full, a session naming a UPF that does not exist.
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	cm, _ := pipelineConfigMap(t, ns, "pipeline", tableSize("applications", 1))
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	grantDevice(t, upf)
	create(t, cm, upf)
	startOperator(t, ns, operatorOptions{})
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	video := loadBalancePolicy(ns, "video", 10, 50, "198.18.10.0/24")
	create(t, video)
	waitCondition(t, programTimeout, video, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	full := activeStandbyPolicy(ns, "full", 20, "198.18.20.0/24")
	good := session(ns, "good", "imsi-001010000000001", "10.60.0.1", "upf", "n", "")
	lost := session(ns, "lost", "imsi-001010000000002", "10.60.0.2", "elsewhere", "n", "")
	create(t, full, good, lost)

	// Work in progress: a UPF whose P4Runtime address answers nothing, and what depends on it.
	nsWaiting := newNamespace(t)
	silent := testenv.FreeAddr(t)
	cmWaiting, _ := pipelineConfigMap(t, nsWaiting, "pipeline", nil)
	upfWaiting := newUPF(nsWaiting, "upf", silent, "pipeline")
	policyWaiting := loadBalancePolicy(nsWaiting, "video", 10, 50, "198.18.10.0/24")
	sessionWaiting := session(nsWaiting, "waiting", "imsi-001010000000003", "10.60.0.3", "upf", "n", "")
	grantDevice(t, upfWaiting)
	create(t, cmWaiting, upfWaiting, policyWaiting, sessionWaiting)
	startOperator(t, nsWaiting, operatorOptions{})

	// A UPF whose pipeline ConfigMap does not exist (a dangling reference).
	nsDangling := newNamespace(t)
	u2 := startSoftUPF(t, "127.0.0.1:0")
	upfDangling := newUPF(nsDangling, "upf", u2.addr, "pipeline")
	grantDevice(t, upfDangling)
	create(t, upfDangling)
	startOperator(t, nsDangling, operatorOptions{})

	for _, tc := range []struct {
		obj     client.Object
		kstatus status.Status
		argo    string
		reason  string // of Stalled, for Failed
	}{
		{upf, status.CurrentStatus, "Healthy", ""},
		{video, status.CurrentStatus, "Healthy", ""},
		{good, status.CurrentStatus, "Healthy", ""},
		{full, status.FailedStatus, "Degraded", "TableFull"},
		// A reference that may yet appear (the same sync applies it next) is waited for.
		{lost, status.InProgressStatus, "Progressing", ""},
		{upfDangling, status.InProgressStatus, "Progressing", ""},
		{upfWaiting, status.InProgressStatus, "Progressing", ""},
		{policyWaiting, status.InProgressStatus, "Progressing", ""},
		{sessionWaiting, status.InProgressStatus, "Progressing", ""},
	} {
		checkHealth(t, tc.obj, tc.kstatus, tc.argo, tc.reason, script)
	}

	cmDangling, _ := pipelineConfigMap(t, nsDangling, "pipeline", nil)
	create(t, cmDangling)
	checkHealth(t, upfDangling, status.CurrentStatus, "Healthy", "", script)
}

// checkHealth waits until kstatus computes want for obj (and, for Failed, names the reason) and
// the Argo CD health check says wantArgo, both of the same object read: while the operator's
// first status writes land (the indexes before the conditions) the two may differ for a moment.
func checkHealth(t *testing.T, obj client.Object, want status.Status, wantArgo, reason string, script []byte) {
	t.Helper()
	name := fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
	eventually(t, programTimeout, name+" is "+want.String()+" and "+wantArgo, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		res, err := status.Compute(u)
		if err != nil {
			return err
		}
		if res.Status != want {
			return fmt.Errorf("kstatus %s: %s", res.Status, res.Message)
		}
		if reason != "" {
			c, _ := condition(obj, junctionv1.ConditionStalled)
			if c.Reason != reason {
				return fmt.Errorf("Stalled for %q (%s), want %s", c.Reason, c.Message, reason)
			}
		}
		got, msg, err := testenv.ArgoHealth(script, u.Object)
		if err != nil {
			t.Fatalf("%s: the Argo CD health check: %v", name, err)
		}
		if got != wantArgo {
			return fmt.Errorf("Argo CD says %s (%s), kstatus %s", got, msg, res.Status)
		}
		return nil
	})
}
