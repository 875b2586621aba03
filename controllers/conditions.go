package controllers

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Condition reasons and event reasons (CamelCase, as Kubernetes conventions ask).
const (
	ReasonPrimary      = "Primary"
	ReasonBackup       = "Backup"
	ReasonDisconnected = "Disconnected"
	ReasonConnecting   = "Connecting"
	// Another UserPlaneFunction names the same device and programs it.
	ReasonDuplicateDevice = "DuplicateDevice"
	// Connected, but another controller is primary: nothing written here lands.
	ReasonUPFNotPrimary     = "UPFNotPrimary"
	ReasonPipelineInstalled = "PipelineInstalled"
	ReasonPipelineMismatch  = "PipelineMismatch"
	ReasonPushFailed        = "PushFailed"
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	ReasonInvalidPipeline   = "InvalidPipeline"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonInvalidTLS        = "InvalidTLS"
	ReasonReplaying         = "Replaying"
	ReasonReady             = "Ready"
	ReasonProgrammed        = "Programmed"
	ReasonUPFNotFound       = "UPFNotFound"
	ReasonUPFNotReady       = "UPFNotReady"
	ReasonUPFNotConnected   = "UPFNotConnected"
	ReasonTableFull         = "TableFull"
	ReasonConflict          = "AddressConflict"
	ReasonInvalidSpec       = "InvalidSpec"
	ReasonIndexesExhausted  = "IndexesExhausted"
	ReasonPolicyNotFound    = "PolicyNotFound"
	ReasonPolicyPending     = "PolicyPending"
	ReasonWriteFailed       = "WriteFailed"
	ReasonNoUPF             = "NoUserPlaneFunction"
	ReasonPathDown          = "PathDown"
	ReasonAllPathsUp        = "AllPathsUp"
	ReasonNotMeasured       = "NotMeasured"
	ReasonDeleting          = "Deleting"
	ReasonEntriesRemoved    = "EntriesRemoved"
	ReasonIndexesAllocated  = "IndexesAllocated"
	ReasonPathsSuspended    = "PathUpdatesSuspended"
	ReasonPathsResumed      = "PathUpdatesResumed"
	// The device refused a register write (BMv2's P4Runtime server writes no registers).
	ReasonRegisterWriteRefused = "RegisterWriteRefused"
	// The device refused the digest configuration or the clone session the pipeline needs.
	ReasonDeviceSetupFailed = "DeviceSetupFailed"
	// The device refused to delete entries no object wants any more (retried).
	ReasonDeleteRefused = "DeleteRefused"
)

func setCondition(conds *[]metav1.Condition, generation int64, typ string, ok bool, reason, msg string) (changed bool) {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: generation})
}

func setUnknown(conds *[]metav1.Condition, generation int64, typ, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: reason, Message: msg, ObservedGeneration: generation})
}

// stalledReasons are the not-Ready reasons the operator cannot get past by retrying: the object,
// or one it names, has to change (a full table counts: room comes from deleting something).
// Every other reason is transient, and the object is Reconciling meanwhile.
var stalledReasons = map[string]bool{
	ReasonTableFull: true, ReasonConflict: true, ReasonInvalidSpec: true, ReasonIndexesExhausted: true,
	ReasonUPFNotFound: true, ReasonPolicyNotFound: true, ReasonConfigMapNotFound: true, ReasonSecretNotFound: true,
	ReasonInvalidPipeline: true, ReasonInvalidTLS: true, ReasonPipelineMismatch: true, ReasonRegisterWriteRefused: true,
	ReasonDuplicateDevice: true,
}

// setProgressConditions derives Reconciling and Stalled from Ready, as the last step before the
// status is written: Ready True clears both; a stalled reason sets Stalled; any other state
// (Ready False for a transient reason, Unknown, or not decided yet) sets Reconciling.
func setProgressConditions(conds *[]metav1.Condition, generation int64) {
	ready := meta.FindStatusCondition(*conds, junctionv1.ConditionReady)
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue:
		meta.RemoveStatusCondition(conds, junctionv1.ConditionReconciling)
		meta.RemoveStatusCondition(conds, junctionv1.ConditionStalled)
	case ready != nil && ready.Status == metav1.ConditionFalse && stalledReasons[ready.Reason]:
		meta.RemoveStatusCondition(conds, junctionv1.ConditionReconciling)
		setCondition(conds, generation, junctionv1.ConditionStalled, true, ready.Reason, ready.Message)
	default:
		reason, msg := "Progressing", "the operator has not decided yet"
		if ready != nil {
			reason, msg = ready.Reason, ready.Message
		}
		meta.RemoveStatusCondition(conds, junctionv1.ConditionStalled)
		setCondition(conds, generation, junctionv1.ConditionReconciling, true, reason, msg)
	}
}

// reasonOf maps a programming error to the condition reason that explains it.
func reasonOf(err error) string {
	var full *TableFullError
	var conflict *ConflictError
	var le *loadError
	var pse *PathStateError
	switch {
	case err == nil:
		return ReasonProgrammed
	case errors.As(err, &full):
		return ReasonTableFull
	case errors.As(err, &conflict):
		return ReasonConflict
	case errors.As(err, &le):
		return le.Reason
	case errors.As(err, &pse):
		return ReasonRegisterWriteRefused
	case errors.Is(err, errNotSynced), errors.Is(err, errStopped):
		return ReasonUPFNotConnected
	}
	return ReasonWriteFailed
}

// firstError returns the first non-nil error of a per-owner result, in the given owner order.
func firstError(res map[string]error, owners ...string) error {
	for _, o := range owners {
		if err := res[o]; err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
	}
	return nil
}

// conditionReason is the reason of a condition ("" when absent), read before it is changed.
func conditionReason(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Reason
	}
	return ""
}

// ensureFinalizer adds Junction's finalizer to a live object, first of all, so that its
// entries are always removed from the UPF before the object goes.
func ensureFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if obj.GetDeletionTimestamp() != nil || controllerutil.ContainsFinalizer(obj, finalizerName) {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.AddFinalizer(obj, finalizerName)
	return c.Patch(ctx, obj, patch)
}

// patchStatus writes the status when it changed; a deleted object is not an error.
//
// The patch is a JSON merge patch locked to the resourceVersion the operator last saw (after's):
// a merge patch replaces status.conditions whole, and the UE agent writes its AgentReady
// condition and status.agent into the same status (DESIGN.md, data flow 6). Without the lock, a
// stale copy would put back an old AgentReady; with it, the API server answers 409 Conflict and
// the reconcile runs again from a fresh read (IsConflict: requeue, not an error).
func patchStatus(ctx context.Context, c client.Client, before, after client.Object, bs, as any) error {
	if equality.Semantic.DeepEqual(bs, as) {
		return nil
	}
	if err := c.Status().Patch(ctx, after, lockedMergeFrom(before, after)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// lockedMergeFrom is a merge patch from before to after that applies only to the object version
// after was read at (or last written as).
func lockedMergeFrom(before, after client.Object) client.Patch {
	base := before.DeepCopyObject().(client.Object)
	base.SetResourceVersion(after.GetResourceVersion())
	return client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
}
