package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Cache indexes that map a referenced object to the objects referring to it.
const (
	indexSessionUPF      = "spec.upfRef.name"
	indexSessionPolicy   = "spec.policyRefs.name"
	indexSessionSelector = "spec.policySelector"
	indexUPFConfigMap    = "spec.pipeline.configMapRef.name"
	indexUPFSecret       = "spec.p4runtime.tls.secretRef.name"
	indexUPFDevice       = "spec.p4runtime.device" // port, device ID and role: candidates for one P4Runtime device (devicePeers)
	indexTargetDevice    = "spec.device"           // the same of a P4RuntimeTarget: candidates for a UPF's grant (grantOf)
)

// indexer registers the field indexes on a manager's cache.
type indexer interface {
	IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error
}

func setupIndexes(ctx context.Context, idx indexer) error {
	for _, i := range []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&junctionv1.ATSSSSession{}, indexSessionUPF, func(o client.Object) []string {
			return []string{o.(*junctionv1.ATSSSSession).Spec.UPFRef.Name}
		}},
		{&junctionv1.ATSSSSession{}, indexSessionPolicy, func(o client.Object) []string {
			s := o.(*junctionv1.ATSSSSession)
			out := make([]string, len(s.Spec.PolicyRefs))
			for i, r := range s.Spec.PolicyRefs {
				out[i] = r.Name
			}
			return out
		}},
		{&junctionv1.ATSSSSession{}, indexSessionSelector, func(o client.Object) []string {
			if o.(*junctionv1.ATSSSSession).Spec.PolicySelector != nil {
				return []string{"true"}
			}
			return nil
		}},
		{&junctionv1.UserPlaneFunction{}, indexUPFConfigMap, func(o client.Object) []string {
			return []string{o.(*junctionv1.UserPlaneFunction).Spec.Pipeline.ConfigMapRef.Name}
		}},
		{&junctionv1.UserPlaneFunction{}, indexUPFDevice, func(o client.Object) []string {
			return []string{upfDevice(o.(*junctionv1.UserPlaneFunction)).key()}
		}},
		{&junctionv1.P4RuntimeTarget{}, indexTargetDevice, func(o client.Object) []string {
			return []string{targetDevice(o.(*junctionv1.P4RuntimeTarget)).key()}
		}},
		{&junctionv1.UserPlaneFunction{}, indexUPFSecret, func(o client.Object) []string {
			if t := o.(*junctionv1.UserPlaneFunction).Spec.P4Runtime.TLS; t != nil {
				return []string{t.SecretRef.Name}
			}
			return nil
		}},
	} {
		if err := idx.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return err
		}
	}
	return nil
}

// deletingPredicate passes updates that start an object's deletion.
func deletingPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	}}
}

// upfChangedForDependents passes UPF events that can change what its sessions and policies
// can do: creation, deletion, a spec change, a replay, or a change of its conditions.
func upfChangedForDependents() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*junctionv1.UserPlaneFunction)
			n, ok2 := e.ObjectNew.(*junctionv1.UserPlaneFunction)
			if !ok1 || !ok2 {
				return false
			}
			if o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status.LastReplay, n.Status.LastReplay) {
				return true
			}
			for _, t := range []string{junctionv1.ConditionConnected, junctionv1.ConditionPipelineReady, junctionv1.ConditionReady} {
				a, b := meta.FindStatusCondition(o.Status.Conditions, t), meta.FindStatusCondition(n.Status.Conditions, t)
				if (a == nil) != (b == nil) || (a != nil && (a.Status != b.Status || a.Reason != b.Reason)) {
					return true
				}
			}
			return (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// policyChangedForSessions passes policy events that change the sessions selecting it: a
// spec or label change, a new application ID, creation and deletion.
func policyChangedForSessions() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*junctionv1.SteeringPolicy)
			n, ok2 := e.ObjectNew.(*junctionv1.SteeringPolicy)
			if !ok1 || !ok2 {
				return false
			}
			return o.Generation != n.Generation ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Status.ApplicationID, n.Status.ApplicationID) ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// enqueueAfter is handler.EnqueueRequestsFromMapFunc with the requests added after d: events
// that arrive meanwhile for the same object coalesce into one reconcile.
func enqueueAfter(d time.Duration, fn handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range fn(ctx, o) {
			q.AddAfter(req, d)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectOld, q)
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}
