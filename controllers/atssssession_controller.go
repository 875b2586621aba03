package controllers

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/desired"
)

// Finalizer that keeps an object until its entries are off the UPF and its indexes are freed.
const finalizerName = "atsss.junction.dev/entries"

// DefaultMaxConcurrentReconciles is how many sessions are reconciled at once. A session's
// reconcile spends most of its time waiting for its status write while the API server is
// busy (half a second at 10,000 creates): the workers are latency-bound, and with 64 the
// operator fell behind a burst of creates (docs/operator.md, "Benchmark").
const DefaultMaxConcurrentReconciles = 128

// Requeue delays when nothing will trigger a retry by itself.
const (
	requeueTableFull = 30 * time.Second
	requeueWaiting   = time.Minute
)

// ATSSSSessionReconciler programs each MA PDU session into its UPF.
type ATSSSSessionReconciler struct {
	client.Client
	Fleet    *Fleet
	Recorder record.EventRecorder
	// MaxConcurrentReconciles (default DefaultMaxConcurrentReconciles) lets many sessions share
	// one write.
	MaxConcurrentReconciles int
	// Now is the clock (tests substitute it); default time.Now.
	Now func() time.Time

	metrics sessionMetrics // junction_sessions, junction_session_programming_seconds
}

// Reconcile follows the cluster-api skeleton (fetch, deferred status write, reconcileNormal or
// reconcileDelete) without a finalizer: the UPF's programmer holds every session's desired
// entries, so a session that is gone (NotFound) has its entries removed and its indexes freed
// then, and one deleted while the operator was down has its entries deleted by the replay that
// follows the restart, which deletes whatever no object wants. That saves each session an API
// write, the API server being what limits how fast sessions are programmed.
func (r *ATSSSSessionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	s := &junctionv1.ATSSSSession{}
	key := sessionKey(req.Namespace, req.Name)
	// Held until the entries are written, not through the status write (n4_direct.go).
	unlock := r.Fleet.direct.lock(key)
	defer unlock()
	spec, direct := r.Fleet.direct.get(key)
	if err := r.Get(ctx, req.NamespacedName, s); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if direct && spec != nil {
			return ctrl.Result{}, nil // an N4 session the endpoint programmed: its object is on the way
		}
		r.metrics.observe(req.NamespacedName, "", "", false, 0)
		_, err := r.removeEntries(ctx, req.NamespacedName)
		return ctrl.Result{}, err
	}
	if direct {
		if spec == nil {
			return ctrl.Result{}, nil // deleted over N4: its object goes soon
		}
		s.Spec = *spec // newer than the object the cache holds, or the same
	}
	// Sessions programmed by earlier versions carry a finalizer; it goes, once.
	if s.DeletionTimestamp == nil && controllerutil.ContainsFinalizer(s, finalizerName) {
		if err := removeFinalizer(ctx, r.Client, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := s.DeepCopy()
	release := false // set by reconcileDelete once the entries are gone
	defer func() {
		// A failed reconcile has not observed this generation (cluster-api, kstatus).
		if retErr == nil {
			s.Status.ObservedGeneration = s.Generation
		}
		setProgressConditions(&s.Status.Conditions, s.Generation)
		r.metrics.observe(req.NamespacedName, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.UPFRef.Name}.String(),
			conditionReason(s.Status.Conditions, junctionv1.ConditionProgrammed),
			meta.IsStatusConditionTrue(before.Status.Conditions, junctionv1.ConditionProgrammed), r.now().Sub(s.CreationTimestamp.Time))
		if err := writeStatus(ctx, r.Client, &before.Status, &s.Status, s); apierrors.IsConflict(err) || apierrors.IsConflict(retErr) {
			// The UE agent wrote its status fields meanwhile: run again on the new version.
			res, retErr = ctrl.Result{Requeue: true}, nil
			return
		} else if err != nil {
			retErr = errors.Join(retErr, err)
		}
		if release && retErr == nil {
			retErr = removeFinalizer(ctx, r.Client, s)
		}
	}()
	defer unlock() // before the status write above
	if s.DeletionTimestamp != nil {
		var err error
		release, err = r.reconcileDelete(ctx, s)
		return ctrl.Result{}, err
	}
	if !direct {
		if err := r.Fleet.checkAddresses(ctx, s); isRefused(err) {
			return ctrl.Result{}, r.refuseAddresses(ctx, s, err)
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.reconcileNormal(ctx, s)
}

func (r *ATSSSSessionReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager watches sessions, the UPFs and policies they reference, and the runtime's
// notifications (replays, room in a full table, changed paths).
func (r *ATSSSSessionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	n := r.MaxConcurrentReconciles
	if n <= 0 {
		n = DefaultMaxConcurrentReconciles
	}
	r.Fleet.init()
	return ctrl.NewControllerManagedBy(mgr).
		For(&junctionv1.ATSSSSession{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletingPredicate()))).
		Watches(&junctionv1.UserPlaneFunction{}, handler.EnqueueRequestsFromMapFunc(r.sessionsOfUPF), builder.WithPredicates(upfChangedForDependents())).
		Watches(&junctionv1.SteeringPolicy{}, handler.EnqueueRequestsFromMapFunc(r.sessionsOfPolicy), builder.WithPredicates(policyChangedForSessions())).
		Watches(&junctionv1.AddressPool{}, handler.EnqueueRequestsFromMapFunc(addrpool.SessionsOf(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.Fleet.sessionEvents.ch, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: n}).
		Named("atssssession").
		Complete(r)
}

// sessionsOfUPF and sessionsOfPolicy read only the names of the objects they list, so they list
// the cache's objects uncopied (a UPF event lists all of its sessions, 100,000 here).
func (r *ATSSSSessionReconciler) sessionsOfUPF(ctx context.Context, o client.Object) []reconcile.Request {
	var list junctionv1.ATSSSSessionList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexSessionUPF: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "Listing the sessions of a UPF failed", "userplanefunction", o.GetName())
		return nil
	}
	return requestsFor(list.Items)
}

// sessionsOfPolicy: the sessions that name the policy or have a selector, and those that name a
// policy it may take whole (desired.CoveredBy), whose shadow note it changes without being
// selected by them.
func (r *ATSSSSessionReconciler) sessionsOfPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	log := logf.FromContext(ctx)
	names := []string{o.GetName()}
	if q, ok := o.(*junctionv1.SteeringPolicy); ok {
		var all junctionv1.SteeringPolicyList
		if err := r.List(ctx, &all, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			log.Error(err, "Listing policies failed")
			return nil
		}
		names = append(names, desired.CoveredBy(*q, all.Items)...)
	}
	var out []reconcile.Request
	for _, name := range names {
		var byRef junctionv1.ATSSSSessionList
		if err := r.List(ctx, &byRef, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexSessionPolicy: name}, client.UnsafeDisableDeepCopy); err != nil {
			log.Error(err, "Listing the sessions of a policy failed", "steeringpolicy", name)
			return nil
		}
		out = append(out, requestsFor(byRef.Items)...)
	}
	var bySelector junctionv1.ATSSSSessionList
	if err := r.List(ctx, &bySelector, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexSessionSelector: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing the sessions with a policy selector failed")
		return nil
	}
	return append(out, requestsFor(bySelector.Items)...)
}

func requestsFor(items []junctionv1.ATSSSSession) []reconcile.Request {
	out := make([]reconcile.Request, len(items))
	for i := range items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&items[i])}
	}
	return out
}
