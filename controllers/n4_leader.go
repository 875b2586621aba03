package controllers

// The N4 address must reach the leader, which alone runs the N4 endpoints (n4.go). With the
// chart's n4 Service, that address is a Service whose selector adds LabelN4Leader: the leader
// sets the label on its own pod once elected, and every replica clears it from its own pod when
// it starts (a leader that lost its lease exits and restarts as a follower).

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelN4Leader marks the operator pod that leads, which the chart's N4 Service selects.
const LabelN4Leader = "atsss.junction.dev/n4-leader"

// LeaderPodLabel sets LabelN4Leader on the operator's own pod while it leads.
type LeaderPodLabel struct {
	Client    client.Client
	Pod       types.NamespacedName
	OnFailure func(error)
}

// Clear removes the label from the pod: what a replica does before it may lead.
func (l *LeaderPodLabel) Clear(ctx context.Context) error { return l.set(ctx, nil) }

// Start sets the label (manager.Runnable, leader only) and returns: the pod loses it when the
// process restarts.
func (l *LeaderPodLabel) Start(ctx context.Context) error {
	v := "true"
	if err := l.set(ctx, &v); err != nil && l.OnFailure != nil {
		l.OnFailure(err)
	}
	return nil
}

// NeedLeaderElection: the leader only.
func (l *LeaderPodLabel) NeedLeaderElection() bool { return true }

// set merge-patches the label to v (nil removes it).
func (l *LeaderPodLabel) set(ctx context.Context, v *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]*string{LabelN4Leader: v}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: l.Pod.Name, Namespace: l.Pod.Namespace}}
	return l.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
}
