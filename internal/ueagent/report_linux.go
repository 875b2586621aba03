package ueagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// statusState is what the agent last wrote for a session, and when.
type statusState struct {
	view junctionv1.AgentStatus
	cond condition
	at   time.Time
}

// report writes the agent's view of a session by server-side apply, when it changed: state
// changes at most once per MinStatusInterval, RTT-only changes once per StatusInterval. It
// requeues itself so that a change held back is written later.
func (a *Agent) report(ctx context.Context, s *junctionv1.ATSSSSession, t *Tunnel, unresolved []string, forced condition) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(s)
	var legs []LegView
	tunName := ""
	if t != nil {
		legs, tunName = t.Legs(), t.Name()
	}
	view, cond := agentView(a.opts.NodeName, tunName, s.Generation, legs, unresolved, forced)
	resync := ctrl.Result{RequeueAfter: a.opts.StatusInterval}

	a.mu.Lock()
	last := a.status[key]
	a.mu.Unlock()
	onObject := s.Status.Agent != nil && equality.Semantic.DeepEqual(*s.Status.Agent, view) && sameCondition(s, cond)
	if onObject || last != nil && equality.Semantic.DeepEqual(last.view, view) && last.cond == cond {
		return resync, nil
	}
	significant := last == nil || !legStatesEqual(last.view, view) || last.cond != cond
	if last != nil {
		wait := a.opts.StatusInterval
		if significant {
			wait = a.opts.MinStatusInterval
		}
		if since := time.Since(last.at); since < wait {
			return ctrl.Result{RequeueAfter: wait - since}, nil
		}
	}
	if err := a.apply(ctx, s, view, cond); err != nil {
		a.metrics.statusWrite.WithLabelValues("error").Inc()
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	a.metrics.statusWrite.WithLabelValues("ok").Inc()
	a.recordEvents(s, last, view, cond)
	a.mu.Lock()
	a.status[key] = &statusState{view: view, cond: cond, at: time.Now()}
	a.mu.Unlock()
	return resync, nil
}

// sameCondition reports whether the object already carries this AgentReady condition.
func sameCondition(s *junctionv1.ATSSSSession, c condition) bool {
	old := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionAgentReady)
	return old != nil && old.Status == c.status && old.Reason == c.reason && old.Message == c.message && old.ObservedGeneration == s.Generation
}

// apply writes status.agent and the AgentReady condition under the agent's field manager. The
// object sent holds only those fields, so the agent owns nothing else and erases nothing else.
func (a *Agent) apply(ctx context.Context, s *junctionv1.ATSSSSession, view junctionv1.AgentStatus, c condition) error {
	agent, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&view)
	if err != nil {
		return err
	}
	since := metav1.Now()
	if old := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionAgentReady); old != nil && old.Status == c.status {
		since = old.LastTransitionTime
	}
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&metav1.Condition{
		Type: junctionv1.ConditionAgentReady, Status: c.status, Reason: c.reason, Message: c.message,
		ObservedGeneration: s.Generation, LastTransitionTime: since,
	})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": junctionv1.GroupVersion.String(),
		"kind":       "ATSSSSession",
		"metadata":   map[string]any{"name": s.Name, "namespace": s.Namespace},
		"status":     map[string]any{"agent": agent, "conditions": []any{cond}},
	}}
	return a.Status().Patch(ctx, u, client.Apply, client.FieldOwner(junctionv1.FieldManagerUEAgent), client.ForceOwnership)
}

// recordEvents records a leg's change of state and the condition's, as a person watching
// `kubectl describe` wants them: warnings when a leg is lost, normal events when it returns.
func (a *Agent) recordEvents(s *junctionv1.ATSSSSession, last *statusState, view junctionv1.AgentStatus, c condition) {
	prev := map[junctionv1.Access]junctionv1.LegState{}
	if last != nil {
		for _, l := range last.view.Legs {
			prev[l.Access] = l.State
		}
	}
	for _, l := range view.Legs {
		was, known := prev[l.Access]
		if known && was == l.State || !known && l.State == junctionv1.LegUp {
			continue
		}
		typ, reason := corev1.EventTypeWarning, "Leg"+string(l.State)
		if l.State == junctionv1.LegUp {
			typ = corev1.EventTypeNormal
		}
		a.recorder.Eventf(s, typ, reason, "%s leg %s on %s: %s", l.Access, l.State, a.opts.NodeName, l.Reason)
	}
	if c.status == metav1.ConditionFalse && (last == nil || last.cond.reason != c.reason) {
		a.recorder.Event(s, corev1.EventTypeWarning, c.reason, c.message)
	}
}
