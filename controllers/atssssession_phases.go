package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
)

// reconcileNormal: UPF → policies → indexes → entries → status (with the indexes).
func (r *ATSSSSessionReconciler) reconcileNormal(ctx context.Context, s *junctionv1.ATSSSSession) (ctrl.Result, error) {
	wasProgrammed := meta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionProgrammed)

	upf := &junctionv1.UserPlaneFunction{}
	err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.UPFRef.Name}, upf)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && upf.DeletionTimestamp != nil):
		r.notProgrammed(s, ReasonUPFNotFound, fmt.Sprintf("UserPlaneFunction %s does not exist (spec.upfRef)", s.Spec.UPFRef.Name))
		return ctrl.Result{}, nil // the UPF watch brings the session back when it appears
	case err != nil:
		return ctrl.Result{}, err
	}
	rt, err := r.Fleet.runtime(ctx, upf)
	if err != nil {
		var le *loadError
		if errors.As(err, &le) {
			r.notProgrammed(s, ReasonUPFNotReady, fmt.Sprintf("UserPlaneFunction %s: %v", upf.Name, err))
			return ctrl.Result{RequeueAfter: requeueWaiting}, nil
		}
		return ctrl.Result{}, err
	}
	if st := rt.state(); st.deposed {
		return ctrl.Result{}, nil // the newer leader reconciles the session
	} else if st.connected && !st.primary {
		// Another controller holds the device: what this operator wrote may be gone, and
		// nothing it writes lands. The UPF's Connected condition brings the session back.
		r.notProgrammed(s, ReasonUPFNotPrimary, fmt.Sprintf("UserPlaneFunction %s: another controller is primary on the device", upf.Name))
		return ctrl.Result{}, nil
	}

	var policies junctionv1.SteeringPolicyList
	if err := r.List(ctx, &policies, client.InNamespace(s.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	sel, missing, pending := desired.SelectPolicies(s, policies.Items)
	p, err := rt.program(ctx, s, upf, sel)
	if p.acquired {
		recordAllocation(&s.Status, p.alloc)
	}
	var specErr *invalidSpecError
	switch {
	case errors.As(err, &specErr) && specErr.unsupported:
		r.notProgrammed(s, ReasonNotSupportedByPipeline, err.Error())
		return ctrl.Result{}, nil
	case errors.As(err, &specErr):
		r.notProgrammed(s, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	case errors.Is(err, errIndexesExhausted):
		r.notProgrammed(s, ReasonIndexesExhausted, err.Error())
		return ctrl.Result{RequeueAfter: requeueTableFull}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	a, werr, entries := p.alloc, p.werr, p.entries

	kind, _ := desired.Lookup(s.Spec, sel)
	s.Status.Lookup = kind
	s.Status.Steering = steeringSummary(s, sel)
	r.pathStatus(s, rt, a.user)

	if werr != nil {
		o := sessionWriteOutcome(upf.Name, werr, wasProgrammed, s.Status.ObservedGeneration == s.Generation)
		if o.reason != "" {
			r.notProgrammed(s, o.reason, o.msg)
		}
		return o.result()
	}
	r.programmed(s, upf.Name, entries)

	user := a.user
	if _, err := rt.pathWriteError(&user); err != nil {
		// Path monitoring cannot suspend or write this user's path state: programmed, not Ready.
		r.setReady(s, false, ReasonRegisterWriteRefused, fmt.Sprintf(
			"UserPlaneFunction %s refused path monitoring's register write for user %d: %v", upf.Name, user, err))
		return ctrl.Result{}, nil
	}
	note := shadowNote(desired.Shadows(sel, policies.Items))
	if note != "" {
		if c := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionReady); c == nil || !strings.Contains(c.Message, note) {
			r.Recorder.Event(s, corev1.EventTypeWarning, ReasonPolicyShadowed, note)
		}
		note = "; " + note
	}
	switch {
	case len(missing) > 0:
		r.setReady(s, false, ReasonPolicyNotFound, fmt.Sprintf("SteeringPolicy %s does not exist; the session is programmed without it", strings.Join(missing, ", "))+note)
	case len(pending) > 0:
		r.setReady(s, false, ReasonPolicyPending, fmt.Sprintf("SteeringPolicy %s has no application ID yet", strings.Join(pending, ", "))+note)
	default:
		r.setReady(s, true, ReasonReady, "programmed with every policy it selects"+note)
	}
	return ctrl.Result{}, nil
}

// shadowNote names the selected policies that never steer the session's downlink
// (desired.Shadows): accepted, as the paper's UPF-wide policies allow, but not silently.
func shadowNote(sh []desired.Shadow) string {
	if len(sh) == 0 {
		return ""
	}
	parts := make([]string, len(sh))
	for i, x := range sh {
		parts[i] = fmt.Sprintf("%s by %s", x.Policy, x.By)
	}
	return "selected SteeringPolicies taken whole on the UPF by ones the session does not select: " + strings.Join(parts, ", ") +
		" (the downlink follows the unselected policy, the UE agent's uplink the selected one; select it too, or narrow its traffic descriptor)"
}

// reconcileDelete: a deleted session that other finalizers keep has its entries removed, says
// so, and lets go of the finalizer earlier versions put on it.
func (r *ATSSSSessionReconciler) reconcileDelete(ctx context.Context, s *junctionv1.ATSSSSession) (release bool, _ error) {
	removed, err := r.removeEntries(ctx, client.ObjectKeyFromObject(s))
	if err != nil {
		r.setProgrammed(s, false, ReasonDeleting, fmt.Sprintf("removing the entries failed: %v", err))
		return false, err
	}
	if removed || meta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionProgrammed) {
		r.setProgrammed(s, false, ReasonEntriesRemoved, "entries removed from the UPF")
	}
	return controllerutil.ContainsFinalizer(s, finalizerName), nil
}

// removeEntries removes a deleted session's entries (Fleet.removeSession), with an
// EntriesRemoved event; removed is false when no UPF held any.
func (r *ATSSSSessionReconciler) removeEntries(ctx context.Context, key types.NamespacedName) (removed bool, _ error) {
	from, _, err := r.Fleet.removeSession(ctx, key, false)
	for _, upf := range from {
		ref := &junctionv1.ATSSSSession{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		r.Recorder.Event(ref, corev1.EventTypeNormal, ReasonEntriesRemoved, "Entries removed from UserPlaneFunction "+upf+" and indexes freed")
	}
	return len(from) > 0, err
}

// recordAllocation writes the allocation into the status; true when it changed.
func recordAllocation(st *junctionv1.ATSSSSessionStatus, a sessionAlloc) bool {
	i32 := func(v uint32) *int32 { x := int32(v); return &x }
	user := i32(a.user)
	var peer, seq, usage, flows *int32
	if a.gnb != "" {
		peer = i32(uint32(a.peer))
	}
	if a.seq != nil {
		seq = i32(*a.seq)
	}
	if a.usage != 0 {
		usage = i32(a.usage)
	}
	if a.flows != nil {
		flows = i32(*a.flows)
	}
	eq := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if eq(st.UserIndex, user) && eq(st.TunnelPeerIndex, peer) && eq(st.SequenceIndex, seq) && eq(st.UsageIndex, usage) && eq(st.QoSFlowIndex, flows) {
		return false
	}
	st.UserIndex, st.TunnelPeerIndex, st.SequenceIndex, st.UsageIndex, st.QoSFlowIndex = user, peer, seq, usage, flows
	return true
}

// programmed sets Programmed=True (the first time is timed by sessionMetrics).
func (r *ATSSSSessionReconciler) programmed(s *junctionv1.ATSSSSession, upf string, entries int) {
	r.setProgrammed(s, true, ReasonProgrammed, fmt.Sprintf("%d entries on UserPlaneFunction %s", entries, upf))
}

// notProgrammed sets Programmed and Ready to False with one reason; a new reason of a
// problem an operator must act on also gets a Warning event.
func (r *ATSSSSessionReconciler) notProgrammed(s *junctionv1.ATSSSSession, reason, msg string) {
	prev := conditionReason(s.Status.Conditions, junctionv1.ConditionProgrammed)
	r.setProgrammed(s, false, reason, msg)
	r.setReady(s, false, reason, msg)
	if prev != reason && warnable(reason) {
		r.Recorder.Event(s, corev1.EventTypeWarning, reason, msg)
	}
}

func warnable(reason string) bool {
	switch reason {
	case ReasonUPFNotFound, ReasonUPFNotReady, ReasonUPFNotPrimary, ReasonTableFull, ReasonConflict, ReasonInvalidSpec, ReasonNotSupportedByPipeline, ReasonIndexesExhausted, ReasonWriteFailed, ReasonPolicyNotFound,
		ReasonRegisterWriteRefused:
		return true
	}
	return false
}

func (r *ATSSSSessionReconciler) setProgrammed(s *junctionv1.ATSSSSession, ok bool, reason, msg string) {
	setCondition(&s.Status.Conditions, s.Generation, junctionv1.ConditionProgrammed, ok, reason, msg)
}

func (r *ATSSSSessionReconciler) setReady(s *junctionv1.ATSSSSession, ok bool, reason, msg string) {
	prev := conditionReason(s.Status.Conditions, junctionv1.ConditionReady)
	setCondition(&s.Status.Conditions, s.Generation, junctionv1.ConditionReady, ok, reason, msg)
	if !ok && (reason == ReasonPolicyNotFound || reason == ReasonRegisterWriteRefused) && prev != reason {
		r.Recorder.Event(s, corev1.EventTypeWarning, reason, msg)
	}
}
