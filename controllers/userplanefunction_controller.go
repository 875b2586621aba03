package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/programmer"
)

// upfStatusDelay is how long a change of what a UPF's status counts (table usage, sessions,
// users, tunnel peers) may wait for its status write: the changes of a burst share one write,
// and status.tables and status.sessions lag by at most this much.
const upfStatusDelay = time.Second

// UserPlaneFunctionReconciler keeps one P4Runtime connection per UserPlaneFunction, its
// pipeline, its own entries (addresses, endpoints, routes) and its status.
type UserPlaneFunctionReconciler struct {
	client.Client
	Fleet    *Fleet
	Recorder record.EventRecorder
}

// Reconcile: fetch, finalizer first, deferred status write, reconcileNormal or reconcileDelete.
func (r *UserPlaneFunctionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	upf := &junctionv1.UserPlaneFunction{}
	if err := r.Get(ctx, req.NamespacedName, upf); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Fleet.remove(req.NamespacedName) // deleted without our finalizer (e.g. forced)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if added, err := ensureFinalizer(ctx, r.Client, upf); err != nil {
		return ctrl.Result{}, err
	} else if added {
		return afterFinalizer, nil
	}
	before := upf.DeepCopy()
	defer func() {
		// A failed reconcile has not observed this generation (cluster-api, kstatus).
		if retErr == nil {
			upf.Status.ObservedGeneration = upf.Generation
		}
		setProgressConditions(&upf.Status.Conditions, upf.Generation)
		if err := writeStatus(ctx, r.Client, &before.Status, &upf.Status, upf); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	if upf.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, upf)
	}
	return r.reconcileNormal(ctx, upf)
}

func (r *UserPlaneFunctionReconciler) reconcileNormal(ctx context.Context, upf *junctionv1.UserPlaneFunction) (ctrl.Result, error) {
	pipe, err := loadPipeline(ctx, r.Client, upf)
	if err != nil {
		var le *loadError
		if !errors.As(err, &le) {
			return ctrl.Result{}, err
		}
		r.notReady(upf, junctionv1.ConditionPipelineReady, le.Reason, le.Error())
		return ctrl.Result{}, nil // the ConfigMap watch brings the UPF back
	}
	r.plaintext(upf)
	grant, err := checkGrant(ctx, r.Client, &r.Fleet.hosts, upf)
	if err != nil {
		var le *loadError
		if !errors.As(err, &le) {
			return ctrl.Result{}, err
		}
		r.Fleet.remove(client.ObjectKeyFromObject(upf)) // a grant taken back: stop programming the device
		meta.RemoveStatusCondition(&upf.Status.Conditions, junctionv1.ConditionDeviceConflict)
		r.notReady(upf, junctionv1.ConditionConnected, le.Reason, le.Error())
		return ctrl.Result{}, nil // the P4RuntimeTarget watch brings the UPF back
	}
	cp, err := loadConnParams(ctx, r.Client, upf, grant.Spec.TLSServerName)
	if err != nil {
		var le *loadError
		if !errors.As(err, &le) {
			return ctrl.Result{}, err
		}
		r.notReady(upf, junctionv1.ConditionConnected, le.Reason, le.Error())
		return ctrl.Result{}, nil // the Secret watch brings the UPF back
	}
	if err := r.deviceConflict(ctx, upf); err != nil {
		return ctrl.Result{}, err
	}
	rt, err := r.Fleet.runtime(ctx, upf)
	if err != nil {
		var le *loadError
		if !errors.As(err, &le) {
			return ctrl.Result{}, err
		}
		r.notReady(upf, junctionv1.ConditionConnected, le.Reason, le.Error())
		return ctrl.Result{}, nil // the UPF watch brings it back when the other one goes
	}
	rt.configure(cp, pipe, upf)

	var upfErr error
	entries, err := desired.UPFEntries(upf.Spec)
	if err != nil {
		upfErr = &loadError{ReasonInvalidSpec, err}
	} else {
		res, err := rt.prog.Apply(ctx, programmer.Change{Owner: ownerUPF, Entries: entries})
		if err != nil {
			return ctrl.Result{}, err
		}
		upfErr = res[ownerUPF]
	}
	r.setStatus(upf, rt, pipe, upfErr)
	return ctrl.Result{}, nil // the runtime asks for a reconcile when what the status shows changes
}

// reconcileDelete: disconnect (the device keeps its entries: it is no longer ours to manage)
// → finalizer removed. Sessions on the UPF report UPFNotFound.
func (r *UserPlaneFunctionReconciler) reconcileDelete(ctx context.Context, upf *junctionv1.UserPlaneFunction) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(upf, finalizerName) {
		return ctrl.Result{}, nil
	}
	key := client.ObjectKeyFromObject(upf)
	r.Fleet.remove(key)
	tableEntries.DeletePartialMatch(map[string]string{"upf": key.String()})
	tableSize.DeletePartialMatch(map[string]string{"upf": key.String()})
	logf.FromContext(ctx).Info("Disconnected from a deleted UPF")
	patch := client.MergeFrom(upf.DeepCopy())
	controllerutil.RemoveFinalizer(upf, finalizerName)
	return ctrl.Result{}, r.Patch(ctx, upf, patch)
}

// deviceConflict sets DeviceConflict when other UserPlaneFunctions name this one's device, on
// each of them, saying which one programs it (deviceHolder), with a Warning event when it
// appears; it removes the condition when the conflict is gone.
func (r *UserPlaneFunctionReconciler) deviceConflict(ctx context.Context, upf *junctionv1.UserPlaneFunction) error {
	peers, err := devicePeers(ctx, r.Client, &r.Fleet.hosts, upf)
	if err != nil {
		return err
	}
	var others []string
	for i := range peers {
		if peers[i].DeletionTimestamp == nil {
			others = append(others, client.ObjectKeyFromObject(&peers[i]).String())
		}
	}
	if len(others) == 0 {
		meta.RemoveStatusCondition(&upf.Status.Conditions, junctionv1.ConditionDeviceConflict)
		return nil
	}
	msg := fmt.Sprintf("UserPlaneFunction %s names the same device (%s, device ID %d); this one programs it",
		strings.Join(others, ", "), upf.Spec.P4Runtime.Address, upf.Spec.P4Runtime.DeviceID)
	if holder := deviceHolder(upf, peers); holder != nil {
		msg = fmt.Sprintf("UserPlaneFunction %s names the same device (%s, device ID %d) and programs it, being older; this one waits",
			client.ObjectKeyFromObject(holder), upf.Spec.P4Runtime.Address, upf.Spec.P4Runtime.DeviceID)
	}
	if setCondition(&upf.Status.Conditions, upf.Generation, junctionv1.ConditionDeviceConflict, true, ReasonDuplicateDevice, msg) {
		r.Recorder.Event(upf, corev1.EventTypeWarning, ReasonDuplicateDevice, msg)
	}
	return nil
}

// plaintext sets the Insecure condition while spec.p4runtime.insecure asks for plaintext, with a
// Warning event when it appears, and removes it otherwise.
func (r *UserPlaneFunctionReconciler) plaintext(upf *junctionv1.UserPlaneFunction) {
	ep := upf.Spec.P4Runtime
	if !ep.Insecure || ep.TLS != nil {
		meta.RemoveStatusCondition(&upf.Status.Conditions, junctionv1.ConditionInsecure)
		return
	}
	msg := fmt.Sprintf("P4Runtime to %s is plaintext (spec.p4runtime.insecure): whoever reaches that address or the path to it can read and rewrite the UPF's entries and pipeline", ep.Address)
	appeared := meta.FindStatusCondition(upf.Status.Conditions, junctionv1.ConditionInsecure) == nil
	setCondition(&upf.Status.Conditions, upf.Generation, junctionv1.ConditionInsecure, true, ReasonPlaintext, msg)
	if appeared {
		r.Recorder.Event(upf, corev1.EventTypeWarning, ReasonPlaintext, msg)
	}
}

// sameDevice requests the other UserPlaneFunctions that name o's device (one appearing or
// going changes who programs it).
func (r *UserPlaneFunctionReconciler) sameDevice(ctx context.Context, o client.Object) []reconcile.Request {
	upf, ok := o.(*junctionv1.UserPlaneFunction)
	if !ok {
		return nil
	}
	peers, err := devicePeers(ctx, r.Client, &r.Fleet.hosts, upf)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing the UPFs of a device failed")
		return nil
	}
	out := make([]reconcile.Request, len(peers))
	for i := range peers {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&peers[i])}
	}
	return out
}

// upfsOfTarget requests the UserPlaneFunctions that may name a P4RuntimeTarget's device (its
// port, device ID and role, in any namespace): the grant decides whether they connect, and so
// which of them programs a device several name. An update maps the old and the new object.
func (r *UserPlaneFunctionReconciler) upfsOfTarget(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*junctionv1.P4RuntimeTarget)
	if !ok {
		return nil
	}
	var list junctionv1.UserPlaneFunctionList
	if err := r.List(ctx, &list, client.MatchingFields{indexUPFDevice: targetDevice(t).key()}, client.UnsafeDisableDeepCopy); err != nil { // read only
		logf.FromContext(ctx).Error(err, "Listing the UPFs of a P4RuntimeTarget failed", "p4runtimetarget", t.Name)
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// notReady records a problem with a referenced object (condition typ) and Ready=False.
func (r *UserPlaneFunctionReconciler) notReady(upf *junctionv1.UserPlaneFunction, typ, reason, msg string) {
	if setCondition(&upf.Status.Conditions, upf.Generation, typ, false, reason, msg) {
		r.Recorder.Event(upf, corev1.EventTypeWarning, reason, msg)
	}
	setCondition(&upf.Status.Conditions, upf.Generation, junctionv1.ConditionReady, false, reason, msg)
}

// SetupWithManager watches UPFs, the P4RuntimeTargets that grant their devices, their ConfigMaps
// and Secrets, and the runtime's notices (those about counts delayed by upfStatusDelay).
func (r *UserPlaneFunctionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Fleet.init()
	return ctrl.NewControllerManagedBy(mgr).
		For(&junctionv1.UserPlaneFunction{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate()))).
		Watches(&junctionv1.UserPlaneFunction{}, handler.EnqueueRequestsFromMapFunc(r.sameDevice),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate()))).
		Watches(&junctionv1.P4RuntimeTarget{}, handler.EnqueueRequestsFromMapFunc(r.upfsOfTarget), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Metadata only: the reconcile reads the object itself (ManagerOptions).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(indexUPFConfigMap)), builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(indexUPFSecret)), builder.OnlyMetadata).
		WatchesRawSource(source.Channel(r.Fleet.upfEvents.ch, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(r.Fleet.upfStatusEvents.ch, enqueueAfter(upfStatusDelay, self))).
		// One UPF's first reconcile restores its runtime (seconds at 100k sessions); the others
		// go on meanwhile. Each UPF is still reconciled by one worker at a time.
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		Named("userplanefunction").
		Complete(r)
}

// self requests the object itself.
func self(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}

func (r *UserPlaneFunctionReconciler) byIndex(field string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list junctionv1.UserPlaneFunctionList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}); err != nil {
			logf.FromContext(ctx).Error(err, "Listing the UPFs that reference an object failed", "index", field, "name", o.GetName())
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
		}
		return out
	}
}

func cookieHex(c uint64) string { return fmt.Sprintf("%016x", c) }
