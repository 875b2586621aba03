package gnb

import (
	"context"
	"net/netip"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// CacheOptions restricts the cache to the sessions that name node n3 in the role's leg: the API
// server filters them.
func CacheOptions(role Role, n3 netip.Addr) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&junctionv1.ATSSSSession{}: {Field: fields.OneTermEqualSelector(role.SelectField(), n3.String())},
	}}
}

// Controller keeps the data path's table equal to the sessions that name the node. Every event
// rebuilds the whole table (a gNB or W-AGF here serves few UEs); a session that cannot be
// served gets a Warning event, once per distinct reason.
type Controller struct {
	client.Client
	Role     Role
	N3       netip.Addr
	Datapath *Datapath
	Recorder record.EventRecorder
	Log      logr.Logger

	mu       sync.Mutex
	reported map[string]string // session key -> the last reason reported
}

// all is the one request every event maps to.
var all = reconcile.Request{NamespacedName: types.NamespacedName{Name: "bearers"}}

// SetupWithManager watches sessions and UPFs.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{all} })
	return ctrl.NewControllerManagedBy(mgr).Named(string(c.Role)).
		Watches(&junctionv1.ATSSSSession{}, toAll).
		Watches(&junctionv1.UserPlaneFunction{}, toAll).
		Complete(c)
}

// Reconcile rebuilds the table.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	var sessions junctionv1.ATSSSSessionList
	if err := c.List(ctx, &sessions); err != nil {
		return ctrl.Result{}, err
	}
	var upfs junctionv1.UserPlaneFunctionList
	if err := c.List(ctx, &upfs); err != nil {
		return ctrl.Result{}, err
	}
	t, errs := BuildTable(c.Role, c.N3, sessions.Items, upfs.Items)
	c.Datapath.SetTable(t)
	c.Log.V(1).Info("Bearers updated", "bearers", t.Len(), "errors", len(errs))
	c.report(sessions.Items, errs)
	return ctrl.Result{}, nil
}

func (c *Controller) report(sessions []junctionv1.ATSSSSession, errs []BearerError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reported == nil {
		c.reported = map[string]string{}
	}
	byKey := map[string]*junctionv1.ATSSSSession{}
	for i := range sessions {
		byKey[sessions[i].Namespace+"/"+sessions[i].Name] = &sessions[i]
	}
	now := map[string]string{}
	for _, be := range errs {
		now[be.Session] = be.Error()
		if c.reported[be.Session] != be.Error() {
			c.Log.Info("Session not served", "session", be.Session, "reason", be.Error())
			if s := byKey[be.Session]; s != nil && c.Recorder != nil {
				c.Recorder.Event(s, corev1.EventTypeWarning, c.Role.NotServedReason(), be.Error())
			}
		}
	}
	c.reported = now
}
