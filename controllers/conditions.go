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
)

// Condition reasons and event reasons (CamelCase, as Kubernetes conventions ask).
const (
	ReasonPrimary           = "Primary"
	ReasonBackup            = "Backup"
	ReasonDisconnected      = "Disconnected"
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
