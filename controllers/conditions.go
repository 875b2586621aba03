package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/programmer"
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
	// Neither spec.p4runtime.tls nor spec.p4runtime.insecure (an object stored before one was
	// required): the operator does not connect.
	ReasonTLSRequired = "TLSRequired"
	// The UPF's spec.p4runtime.tls.serverName is not the name its device's P4RuntimeTarget
	// requires the device's certificate to prove: the operator does not connect.
	ReasonServerNameNotGranted = "ServerNameNotGranted"
	// spec.p4runtime.insecure: P4Runtime in plaintext (the Insecure condition and its event).
	ReasonPlaintext   = "Plaintext"
	ReasonReplaying   = "Replaying"
	ReasonReady       = "Ready"
	ReasonProgrammed  = "Programmed"
	ReasonUPFNotFound = "UPFNotFound"
	// A policy sets thresholds its steering mode does not read.
	ReasonThresholdNotEnforced = "ThresholdNotEnforced"
	ReasonUPFNotReady          = "UPFNotReady"
	ReasonUPFNotConnected      = "UPFNotConnected"
	ReasonTableFull            = "TableFull"
	ReasonConflict             = "AddressConflict"
	ReasonInvalidSpec          = "InvalidSpec"
	// The spec is sound but asks what the UPF's pipeline does not do (an MBR where the pipeline
	// has no policer, downlink buffering where it has no buffer_downlink: a P4 program may leave
	// either out). Over N4: 76 Service not supported, naming unsupportedIE.
	ReasonNotSupportedByPipeline = "NotSupportedByPipeline"
	ReasonIndexesExhausted       = "IndexesExhausted"
	ReasonPolicyNotFound         = "PolicyNotFound"
	ReasonPolicyPending          = "PolicyPending"
	// A policy the session does not select takes traffic a policy it selects describes.
	ReasonPolicyShadowed = "PolicyShadowed"
	ReasonWriteFailed    = "WriteFailed"
	ReasonNoUPF          = "NoUserPlaneFunction"
	ReasonPathDown       = "PathDown"
	ReasonAllPathsUp     = "AllPathsUp"
	ReasonNotMeasured    = "NotMeasured"
	ReasonSingleAccess   = "SingleAccess"
	// An MA PDU session none of whose legs is active (docs/n4.md, "An access not active").
	ReasonNoActiveAccess   = "NoActiveAccess"
	ReasonDeleting         = "Deleting"
	ReasonEntriesRemoved   = "EntriesRemoved"
	ReasonIndexesAllocated = "IndexesAllocated"
	ReasonPathsSuspended   = "PathUpdatesSuspended"
	ReasonPathsResumed     = "PathUpdatesResumed"
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
// Every other reason is transient, and the object is Reconciling meanwhile. A reference to an
// object that does not exist (UPFNotFound, PolicyNotFound, ConfigMapNotFound, SecretNotFound) is
// transient: GitOps applies a set of objects in some order, and the object named may come with
// the same sync; the operator is woken when it does.
var stalledReasons = map[string]bool{
	ReasonTableFull: true, ReasonConflict: true, ReasonInvalidSpec: true, ReasonNotSupportedByPipeline: true, ReasonIndexesExhausted: true,
	ReasonInvalidPipeline: true, ReasonInvalidTLS: true, ReasonPipelineMismatch: true, ReasonRegisterWriteRefused: true,
	ReasonDuplicateDevice: true, ReasonTLSRequired: true, ReasonServerNameNotGranted: true,
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
	var full *programmer.TableFullError
	var conflict *programmer.ConflictError
	var le *loadError
	var pse *programmer.PathStateError
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
	case errors.Is(err, programmer.ErrNotSynced), errors.Is(err, programmer.ErrStopped):
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
// entries are always removed from the UPF before the object goes. It reports whether it added
// it: the reconcile then ends and runs again on the object the API server returned (cluster-api's
// order), requeued because a metadata change does not pass the watches' predicates.
func ensureFinalizer(ctx context.Context, c client.Client, obj client.Object) (added bool, err error) {
	if obj.GetDeletionTimestamp() != nil || controllerutil.ContainsFinalizer(obj, finalizerName) {
		return false, nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.AddFinalizer(obj, finalizerName)
	return true, c.Patch(ctx, obj, patch)
}

// afterFinalizer runs the reconcile again at once on the object with Junction's finalizer. Not
// Requeue: that goes through the controller's rate limiter, whose shared token bucket (10/s)
// would hold a burst of new objects back; RequeueAfter does not.
var afterFinalizer = ctrl.Result{RequeueAfter: time.Millisecond}

// removeFinalizer lets a deleted object go once its entries are gone. It runs after the status
// patch, which is locked to the resourceVersion a metadata patch would change, so that an object
// another finalizer keeps shows why Junction let it go.
func removeFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(obj, finalizerName)
	return client.IgnoreNotFound(c.Patch(ctx, obj, patch))
}

// writeStatus writes the status when it changed; a deleted object is not an error.
//
// The write is an update of the status subresource at the resourceVersion the operator read
// (after's), not a patch: the API server then skips reading, copying and merging the stored
// object, which made a status patch cost it about twice a create, and the status writes are
// what bounds how fast sessions become Programmed (docs/operator.md, "Benchmark"). The resourceVersion
// matters: the UE agent writes its AgentReady condition and status.agent into the same status
// (ue-daemonset/README.md), so a stale copy would put back what the agent had before; instead
// the API server answers 409 Conflict and the reconcile runs again from a fresh read
// (IsConflict: requeue, not an error). Fields written back unchanged keep their field manager.
func writeStatus(ctx context.Context, c client.Client, bs, as any, after client.Object) error {
	if equality.Semantic.DeepEqual(bs, as) {
		return nil
	}
	if err := c.Status().Update(ctx, after); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// outcome is how a reconcile ends after writing to its UPFs: the condition it sets (reason ""
// leaves the condition as it was) and what it returns. A failed write to the device returns err,
// as cluster-api reconcilers do: the controller backs off exponentially, counts the error, and
// the generation stays unobserved. Waiting on something outside the operator (room in a table,
// another object's entries) is not a failure: it requeues after a while.
type outcome struct {
	reason, msg  string
	requeueAfter time.Duration
	err          error
}

// sessionWriteOutcome chooses the Programmed condition and the result of a session's reconcile
// whose write to UserPlaneFunction upf failed with werr (not nil). A session written before and
// unchanged since (wasProgrammed, generationObserved) stays Programmed while its UPF is away:
// the UPF's Connected condition tells that, and the replay writes it back.
func sessionWriteOutcome(upf string, werr error, wasProgrammed, generationObserved bool) outcome {
	switch reason := reasonOf(werr); reason {
	case ReasonTableFull:
		return outcome{reason: reason, msg: fmt.Sprintf("UserPlaneFunction %s: %v; programmed when room appears", upf, werr),
			requeueAfter: requeueTableFull}
	case ReasonUPFNotConnected:
		if wasProgrammed && generationObserved {
			return outcome{}
		}
		return outcome{reason: reason, msg: fmt.Sprintf("UserPlaneFunction %s is not connected; its next replay writes the session", upf)}
	case ReasonConflict:
		return outcome{reason: reason, msg: fmt.Sprintf("UserPlaneFunction %s: %v", upf, werr), requeueAfter: requeueWaiting}
	default:
		err := fmt.Errorf("UserPlaneFunction %s: %w", upf, werr)
		return outcome{reason: reason, msg: err.Error(), err: err}
	}
}

// policyWriteOutcome chooses the Ready condition and the result of a policy's reconcile from
// what each UPF of its namespace did with its entries: problems maps a reason to the UPFs
// (sorted) where it arose, full describes the full tables, written counts the UPFs that hold
// the entries now.
func policyWriteOutcome(appID uint16, entries, written int, problems map[string][]string, full []string, wasReady, generationObserved bool) (ok bool, o outcome) {
	switch {
	case len(full) > 0:
		return false, outcome{reason: ReasonTableFull, msg: "applications table full on " + strings.Join(full, "; ") + "; written when room appears",
			requeueAfter: requeueTableFull}
	case len(problems) == 1 && len(problems[ReasonUPFNotConnected]) > 0 && wasReady && generationObserved:
		// Written before and unchanged since: disconnected UPFs get the entries by their replay,
		// and Ready does not flap on every operator restart.
		return false, outcome{}
	case len(problems) > 0:
		reasons := make([]string, 0, len(problems))
		for rs := range problems {
			reasons = append(reasons, rs)
		}
		sort.Strings(reasons)
		var parts []string
		for _, rs := range reasons {
			parts = append(parts, fmt.Sprintf("%s on %s", rs, strings.Join(problems[rs], ", ")))
		}
		o := outcome{reason: reasons[0], msg: "not written everywhere: " + strings.Join(parts, "; ")}
		if _, failed := problems[ReasonWriteFailed]; failed {
			o.err = errors.New(o.msg)
		}
		return false, o // otherwise UPF status changes bring the policy back
	case written == 0:
		return true, outcome{reason: ReasonNoUPF, msg: "no UserPlaneFunction in the namespace programs a device yet; written to each one that does"}
	}
	return true, outcome{reason: ReasonProgrammed, msg: fmt.Sprintf("application %d: %d entries on %d UserPlaneFunctions", appID, entries, written)}
}

// result is the reconcile's return value for o.
func (o outcome) result() (ctrl.Result, error) {
	return ctrl.Result{RequeueAfter: o.requeueAfter}, o.err
}
