package controllers

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/programmer"
)

// setStatus shows the runtime's connection, pipeline, replay and table usage.
func (r *UserPlaneFunctionReconciler) setStatus(upf *junctionv1.UserPlaneFunction, rt *upfRuntime, pipe *pipelineSpec, upfErr error) {
	st := rt.state()
	if st.deposed {
		return // the new leader's status, not this process's stale view
	}
	ps := rt.prog.Status()
	s := &upf.Status
	g := upf.Generation
	wasConnected := meta.IsStatusConditionTrue(s.Conditions, junctionv1.ConditionConnected)
	wasDisconnected := meta.IsStatusConditionFalse(s.Conditions, junctionv1.ConditionConnected)

	ready, reason, msg := true, ReasonReady, "primary, pipeline in place, desired state replayed"
	fail := func(rs, m string) {
		if ready {
			ready, reason, msg = false, rs, m
		}
	}
	// refused is a failure the device reported: besides the condition it gets a Warning event
	// when it becomes the reason.
	warn := false
	refused := func(rs, m string) {
		warn = warn || ready
		fail(rs, m)
	}
	switch {
	case st.primary:
		setCondition(&s.Conditions, g, junctionv1.ConditionConnected, true, ReasonPrimary,
			fmt.Sprintf("primary controller with election ID %s (generation %d)", st.electionID, st.generation))
		if !wasConnected {
			r.Recorder.Event(upf, corev1.EventTypeNormal, ReasonPrimary, "Connected as the primary controller")
		}
	case st.connecting:
		// Not known yet, not down: a takeover or a start must not read as an outage.
		m := fmt.Sprintf("connecting to %s", upf.Spec.P4Runtime.Address)
		setUnknown(&s.Conditions, g, junctionv1.ConditionConnected, ReasonConnecting, m)
		fail(ReasonConnecting, m)
	case st.connected:
		m := fmt.Sprintf("connected as a backup with election ID %s: another controller is primary", st.electionID)
		setCondition(&s.Conditions, g, junctionv1.ConditionConnected, false, ReasonBackup, m)
		fail(ReasonBackup, m)
	default:
		m := fmt.Sprintf("not connected to %s", upf.Spec.P4Runtime.Address)
		if st.connErr != nil {
			m += ": " + st.connErr.Error()
		}
		setCondition(&s.Conditions, g, junctionv1.ConditionConnected, false, ReasonDisconnected, m)
		if !wasDisconnected { // connected, connecting or new: each outage gets one event
			r.Recorder.Event(upf, corev1.EventTypeWarning, ReasonDisconnected, m)
		}
		fail(ReasonDisconnected, m)
	}

	switch {
	case st.pipelineOK && st.cookie == pipe.cookie:
		setCondition(&s.Conditions, g, junctionv1.ConditionPipelineReady, true, ReasonPipelineInstalled,
			fmt.Sprintf("the device runs the pipeline of ConfigMap %s (cookie %s)", upf.Spec.Pipeline.ConfigMapRef.Name, cookieHex(st.cookie)))
		s.PipelineCookie = cookieHex(st.cookie)
	case st.pipelineErr != nil:
		if setCondition(&s.Conditions, g, junctionv1.ConditionPipelineReady, false, st.pipelineReason, st.pipelineErr.Error()) {
			r.Recorder.Event(upf, corev1.EventTypeWarning, st.pipelineReason, st.pipelineErr.Error())
		}
		fail(st.pipelineReason, st.pipelineErr.Error())
	default:
		setUnknown(&s.Conditions, g, junctionv1.ConditionPipelineReady, ReasonDisconnected, "the pipeline is checked once the operator is primary")
		fail(ReasonDisconnected, "the pipeline is checked once the operator is primary")
	}

	switch {
	case ps.ReplayErr != nil:
		fail(ReasonReplaying, "replaying the desired state failed: "+ps.ReplayErr.Error())
	case !ps.Synced:
		fail(ReasonReplaying, "the desired state is being replayed")
	}
	if upfErr != nil {
		refused(reasonOf(upfErr), "the UPF's own entries: "+upfErr.Error())
	}
	if ps.ResetPending > 0 {
		refused(ReasonRegisterWriteRefused, fmt.Sprintf("the device refused the path-state reset of %d users (their sessions are not programmed): %v",
			ps.ResetPending, ps.ResetErr))
	}
	if n, err := rt.pathWriteError(nil); n > 0 {
		refused(ReasonRegisterWriteRefused, fmt.Sprintf("the device refused path monitoring's register writes for %d users: %v", n, err))
	}
	if ps.StaleErr != nil {
		refused(ReasonDeleteRefused, ps.StaleErr.Error()+" (retried)")
	}
	if st.setupErr != nil && st.pipelineOK {
		refused(ReasonDeviceSetupFailed, st.setupErr.Error()+" (retried)")
	}
	prevReason := ""
	if c := meta.FindStatusCondition(s.Conditions, junctionv1.ConditionReady); c != nil {
		prevReason = c.Reason // read before setCondition changes the condition in place
	}
	if setCondition(&s.Conditions, g, junctionv1.ConditionReady, ready, reason, msg) && warn && prevReason != reason {
		r.Recorder.Event(upf, corev1.EventTypeWarning, reason, msg)
	}

	s.ElectionID = st.electionID
	if !ps.LastSync.IsZero() {
		t := metav1.NewTime(ps.LastSync.Truncate(time.Second))
		s.LastReplay = &t
	}
	s.Sessions = int32(ps.Usage[programmer.TableSessions])
	s.Users = int32(rt.users.Used())
	s.TunnelPeers = int32(rt.peers.Used())
	s.Tables = tableUsage(pipe, ps.Usage)
	for _, t := range s.Tables {
		tableEntries.WithLabelValues(rt.key.String(), t.Name).Set(float64(t.Used))
		tableSize.WithLabelValues(rt.key.String(), t.Name).Set(float64(t.Size))
	}
}

// tableUsage lists every table of the P4Info with the entries on the device and its size.
func tableUsage(pipe *pipelineSpec, usage map[string]int) []junctionv1.TableUsage {
	var out []junctionv1.TableUsage
	for _, t := range pipe.info.GetTables() {
		name := t.GetPreamble().GetName()
		out = append(out, junctionv1.TableUsage{Name: name, Used: int64(usage[name]), Size: t.GetSize()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
