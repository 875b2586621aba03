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

// SteeringPolicyReconciler gives each policy a stable application ID and writes its
// `applications` entries to every UserPlaneFunction of its namespace: a policy is a UPF-wide
// rule whose M entries every session on the UPF shares, so they are in place before the
// first session that selects it.
type SteeringPolicyReconciler struct {
	client.Client
	Fleet    *Fleet
	Recorder record.EventRecorder
}

// Reconcile: fetch, finalizer first, deferred status write, reconcileNormal or reconcileDelete.
func (r *SteeringPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	p := &junctionv1.SteeringPolicy{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if added, err := ensureFinalizer(ctx, r.Client, p); err != nil {
		return ctrl.Result{}, err
	} else if added {
		return afterFinalizer, nil
	}
	before := p.DeepCopy()
	release := false // set by reconcileDelete once the entries are gone
	defer func() {
		// A failed reconcile has not observed this generation (cluster-api, kstatus).
		if retErr == nil {
			p.Status.ObservedGeneration = p.Generation
		}
		setProgressConditions(&p.Status.Conditions, p.Generation)
		if err := writeStatus(ctx, r.Client, &before.Status, &p.Status, p); err != nil {
			retErr = errors.Join(retErr, err)
		}
		if release && retErr == nil {
			retErr = removeFinalizer(ctx, r.Client, p)
		}
	}()
	if p.DeletionTimestamp != nil {
		var err error
		release, err = r.reconcileDelete(ctx, p)
		return ctrl.Result{}, err
	}
	return r.reconcileNormal(ctx, p)
}

// reconcileNormal: application ID (recorded before any entry) → entries on every UPF → status.
func (r *SteeringPolicyReconciler) reconcileNormal(ctx context.Context, p *junctionv1.SteeringPolicy) (ctrl.Result, error) {
	wasReady := meta.IsStatusConditionTrue(p.Status.Conditions, junctionv1.ConditionReady)
	id, _, err := r.Fleet.appID(ctx, p)
	if err != nil {
		r.setReady(p, false, ReasonIndexesExhausted, err.Error())
		return ctrl.Result{RequeueAfter: requeueWaiting}, nil
	}
	if p.Status.ApplicationID == nil || *p.Status.ApplicationID != int32(id) {
		before := p.DeepCopy()
		v := int32(id)
		p.Status.ApplicationID = &v
		if err := r.Status().Patch(ctx, p, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("recording the application ID before programming: %w", err)
		}
	}
	if n, err := r.countSessions(ctx, p); err == nil {
		p.Status.Sessions = n
	} else {
		return ctrl.Result{}, err
	}

	entries, err := desired.ApplicationEntries(desired.Policy{Name: p.Name, AppID: id, Spec: p.Spec})
	if err != nil {
		r.setReady(p, false, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}
	p.Status.Entries = int32(len(entries))

	rts, notReady, err := r.Fleet.runtimesIn(ctx, p.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	owner := policyOwner(p.Namespace, p.Name)
	problems := map[string][]string{} // reason → UPFs
	// UPFs that should hold the entries and cannot; a duplicate that waits is not one (runtimesIn).
	if len(notReady) > 0 {
		problems[ReasonUPFNotReady] = notReady
	}
	var full []string
	written := 0
	for _, rt := range rts {
		res, err := rt.prog.Apply(ctx, programmer.Change{Owner: owner, Entries: entries})
		if err != nil {
			return ctrl.Result{}, err
		}
		if werr := res[owner]; werr != nil {
			reason := reasonOf(werr)
			problems[reason] = append(problems[reason], rt.key.Name)
			if reason == ReasonTableFull {
				full = append(full, fmt.Sprintf("%s: %v", rt.key.Name, werr))
			}
			continue
		}
		written++
	}

	ok, o := policyWriteOutcome(id, len(entries), written, problems, full, wasReady, p.Status.ObservedGeneration == p.Generation)
	if o.reason != "" {
		if note := thresholdsUnread(p.Spec); note != "" {
			o.msg += "; " + note
			if c := meta.FindStatusCondition(p.Status.Conditions, junctionv1.ConditionReady); c == nil || !strings.Contains(c.Message, note) {
				r.Recorder.Event(p, corev1.EventTypeWarning, ReasonThresholdNotEnforced, note)
			}
		}
		r.setReady(p, ok, o.reason, o.msg)
	}
	return o.result()
}

// thresholdsUnread says when a policy's thresholds mean nothing: smallest-delay and redundant
// use every available access whatever its RTT or loss (docs/pipeline.md, "Steering decision").
// Accepted, not silently: the Ready message and a Warning event say so.
func thresholdsUnread(spec junctionv1.SteeringPolicySpec) string {
	if m := spec.Steering.Mode; spec.Thresholds != nil && (m == junctionv1.ModeSmallestDelay || m == junctionv1.ModeRedundant) {
		return fmt.Sprintf("thresholds are not enforced: mode %s reads none", m)
	}
	return ""
}

// reconcileDelete: entries removed from every UPF → application ID freed → the finalizer goes (after the status).
func (r *SteeringPolicyReconciler) reconcileDelete(ctx context.Context, p *junctionv1.SteeringPolicy) (release bool, _ error) {
	if !controllerutil.ContainsFinalizer(p, finalizerName) {
		return false, nil
	}
	if err := r.Fleet.wait(ctx); err != nil {
		return false, err
	}
	owner := policyOwner(p.Namespace, p.Name)
	// A UPF not configured is left out: its first replay deletes what nobody wants.
	rts, _, err := r.Fleet.runtimesIn(ctx, p.Namespace)
	if err != nil {
		return false, err
	}
	for _, rt := range rts {
		res, err := rt.prog.Apply(ctx, programmer.Change{Owner: owner})
		if err != nil {
			return false, err
		}
		if werr := res[owner]; werr != nil && !errors.Is(werr, programmer.ErrNotSynced) {
			r.setReady(p, false, ReasonDeleting, fmt.Sprintf("removing the entries from %s failed: %v", rt.key.Name, werr))
			return false, werr
		}
	}
	if err := r.Fleet.releaseApp(ctx, p); err != nil {
		return false, err
	}
	r.Recorder.Event(p, corev1.EventTypeNormal, ReasonEntriesRemoved, "Entries removed and application ID freed")
	r.setReady(p, false, ReasonEntriesRemoved, "entries removed from every UserPlaneFunction")
	return true, nil
}

// countSessions counts the sessions that select the policy, by name or by selector. It only
// reads the cache's objects, so it lists them uncopied (a copy of every session per count
// was a tenth of the operator's CPU at 10,000 sessions).
func (r *SteeringPolicyReconciler) countSessions(ctx context.Context, p *junctionv1.SteeringPolicy) (int32, error) {
	var byRef, bySelector junctionv1.ATSSSSessionList
	if err := r.List(ctx, &byRef, client.InNamespace(p.Namespace), client.MatchingFields{indexSessionPolicy: p.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	if err := r.List(ctx, &bySelector, client.InNamespace(p.Namespace), client.MatchingFields{indexSessionSelector: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	n := int32(0)
	seen := map[string]bool{}
	for _, l := range [][]junctionv1.ATSSSSession{byRef.Items, bySelector.Items} {
		for i := range l {
			s := &l[i]
			if !seen[s.Name] && s.DeletionTimestamp == nil && desired.Selects(s, p) {
				seen[s.Name] = true
				n++
			}
		}
	}
	return n, nil
}

func (r *SteeringPolicyReconciler) setReady(p *junctionv1.SteeringPolicy, ok bool, reason, msg string) {
	prev := conditionReason(p.Status.Conditions, junctionv1.ConditionReady)
	setCondition(&p.Status.Conditions, p.Generation, junctionv1.ConditionReady, ok, reason, msg)
	if !ok && warnable(reason) && prev != reason {
		r.Recorder.Event(p, corev1.EventTypeWarning, reason, msg)
	}
}

// SetupWithManager watches policies, the sessions that select them (for the count), UPFs (to
// write to new or reconnected ones) and the runtime's notices (room in a full table).
func (r *SteeringPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Fleet.init()
	return ctrl.NewControllerManagedBy(mgr).
		For(&junctionv1.SteeringPolicy{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletingPredicate()))).
		Watches(&junctionv1.ATSSSSession{}, enqueueAfter(sessionCountDelay, r.policiesOfSession), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletingPredicate()))).
		Watches(&junctionv1.UserPlaneFunction{}, handler.EnqueueRequestsFromMapFunc(r.policiesInNamespace), builder.WithPredicates(upfChangedForDependents())).
		WatchesRawSource(source.Channel(r.Fleet.policyEvents.ch, &handler.EnqueueRequestForObject{})).
		Named("steeringpolicy").
		Complete(r)
}

// sessionCountDelay is how long a policy waits after a session event before it counts its
// sessions again: a burst of sessions then costs each policy one count and one status write
// per delay instead of one per session, the API server being what limits how fast sessions
// are programmed. status.sessions lags by at most this much.
const sessionCountDelay = time.Second

// policiesOfSession requests the policies whose session count the session is part of (the map
// handler calls it with the old and the new object of an update): those it names and, for a
// selector, those that match it, not every policy of the namespace.
func (r *SteeringPolicyReconciler) policiesOfSession(ctx context.Context, o client.Object) []reconcile.Request {
	s, ok := o.(*junctionv1.ATSSSSession)
	if !ok {
		return nil
	}
	var all []junctionv1.SteeringPolicy
	if s.Spec.PolicySelector != nil {
		var list junctionv1.SteeringPolicyList
		if err := r.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
			logf.FromContext(ctx).Error(err, "Listing policies failed")
			return nil
		}
		all = list.Items
	}
	return policiesCounting(s, all)
}

// policiesCounting are the policies that count session s: every name in its policyRefs (a
// policy appearing later counts it too) and those of all that its selector matches.
func policiesCounting(s *junctionv1.ATSSSSession, all []junctionv1.SteeringPolicy) []reconcile.Request {
	var out []reconcile.Request
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: s.Namespace, Name: name}})
		}
	}
	for _, ref := range s.Spec.PolicyRefs {
		add(ref.Name)
	}
	if s.Spec.PolicySelector != nil {
		sel, _, pending := desired.SelectPolicies(s, all)
		for _, p := range sel {
			add(p.Name)
		}
		for _, name := range pending {
			add(name)
		}
	}
	return out
}

func (r *SteeringPolicyReconciler) policiesInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list junctionv1.SteeringPolicyList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		logf.FromContext(ctx).Error(err, "Listing policies failed")
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}
