package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
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
	key, owner := sessionKey(s.Namespace, s.Name), sessionOwner(s.Namespace, s.Name)
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
	n, err := sessionNeeds(s, sel)
	if err != nil {
		r.notProgrammed(s, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}
	if _, err := upf.TunnelEndpointIndex(s.Spec.TunnelEndpoint); err != nil {
		r.notProgrammed(s, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}

	// Indexes: recorded in the status by the same patch as Programmed, one API write per
	// session. A restart restores them from there; a session the operator programmed but could
	// not record before it stopped is written again with fresh indexes once the replay removed
	// its old entries (README, "The operator").
	a, err := rt.acquire(key, n)
	if err != nil {
		r.notProgrammed(s, ReasonIndexesExhausted, err.Error())
		return ctrl.Result{RequeueAfter: requeueTableFull}, nil
	}
	recordAllocation(&s.Status, a)

	ds, err := buildSession(s, upf, a, sel)
	if err != nil {
		r.notProgrammed(s, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}
	entries, err := desired.SessionEntries(ds)
	if err != nil {
		r.notProgrammed(s, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}
	owners := []string{}
	var changes []Change
	if a.gnb != "" {
		changes = append(changes, Change{Owner: peerOwner(a.gnb), Entries: []desired.Entry{desired.TunnelPeerEntry(a.peer, netip.MustParseAddr(a.gnb))}})
		owners = append(owners, peerOwner(a.gnb))
	}
	changes = append(changes, Change{Owner: owner, Entries: entries})
	owners = append(owners, owner)
	res, err := rt.prog.Apply(ctx, changes...)
	if err != nil {
		return ctrl.Result{}, err
	}
	werr := firstError(res, owners...)
	if werr == nil {
		peers, users := rt.commit(key, a)
		rt.dropPeers(peers)
		for _, u := range users {
			rt.mon.Forget(u)
		}
	}

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
	r.programmed(s, upf.Name, len(entries))

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

// removeEntries removes a deleted session's entries from the UPF that holds its indexes and
// frees them, with an EntriesRemoved event; removed is false when no UPF held any. A device that
// refuses the deletes keeps the entries and the indexes (an index is free only once no entry
// names it): the error retries. A device that is away deletes them in its replay.
func (r *ATSSSSessionReconciler) removeEntries(ctx context.Context, key types.NamespacedName) (removed bool, _ error) {
	k, owner := sessionKey(key.Namespace, key.Name), sessionOwner(key.Namespace, key.Name)
	for _, rt := range r.Fleet.runtimesHolding(k) {
		res, err := rt.prog.Apply(ctx, Change{Owner: owner})
		if err != nil {
			return removed, err
		}
		if werr := res[owner]; werr != nil && !errors.Is(werr, errNotSynced) {
			return removed, fmt.Errorf("UserPlaneFunction %s: %w", rt.key.Name, werr)
		}
		peers, users := rt.release(k)
		rt.dropPeers(peers)
		for _, u := range users {
			rt.mon.Forget(u)
		}
		removed = true
		ref := &junctionv1.ATSSSSession{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		r.Recorder.Event(ref, corev1.EventTypeNormal, ReasonEntriesRemoved, "Entries removed from UserPlaneFunction "+rt.key.Name+" and indexes freed")
	}
	return removed, nil
}

// recordAllocation writes the allocation into the status; true when it changed.
func recordAllocation(st *junctionv1.ATSSSSessionStatus, a sessionAlloc) bool {
	i32 := func(v uint32) *int32 { x := int32(v); return &x }
	user := i32(a.user)
	var peer, seq *int32
	if a.gnb != "" {
		peer = i32(uint32(a.peer))
	}
	if a.seq != nil {
		seq = i32(*a.seq)
	}
	eq := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if eq(st.UserIndex, user) && eq(st.TunnelPeerIndex, peer) && eq(st.SequenceIndex, seq) {
		return false
	}
	st.UserIndex, st.TunnelPeerIndex, st.SequenceIndex = user, peer, seq
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
	case ReasonUPFNotFound, ReasonUPFNotReady, ReasonUPFNotPrimary, ReasonTableFull, ReasonConflict, ReasonInvalidSpec, ReasonIndexesExhausted, ReasonWriteFailed, ReasonPolicyNotFound,
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
