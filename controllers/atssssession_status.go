package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

// steeringSummary names the steering modes in effect: the selected policies' modes by
// precedence, each replaced by the session's own steering of it (policySteering) or else by the
// override, then the override's for unmatched traffic (ActiveStandby, the pipeline's default
// application, when there is nothing else).
func steeringSummary(s *junctionv1.ATSSSSession, policies []desired.Policy) string {
	own := map[string]junctionv1.SteeringModeName{}
	for _, ps := range s.Spec.PolicySteering {
		own[ps.Name] = ps.Steering.Mode
	}
	ps := append([]desired.Policy(nil), policies...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Spec.Precedence < ps[j].Spec.Precedence })
	var modes []string
	seen := map[junctionv1.SteeringModeName]bool{}
	add := func(m junctionv1.SteeringModeName) {
		if !seen[m] {
			seen[m] = true
			modes = append(modes, string(m))
		}
	}
	for _, p := range ps {
		m, mine := own[p.Name]
		switch {
		case mine:
		case s.Spec.ModeOverride != nil:
			m = s.Spec.ModeOverride.Mode
		default:
			m = p.Spec.Steering.Mode
		}
		add(m)
	}
	if s.Spec.ModeOverride != nil {
		add(s.Spec.ModeOverride.Mode)
	}
	if len(modes) == 0 {
		return string(junctionv1.ModeActiveStandby)
	}
	return strings.Join(modes, ",")
}

// pathStatus copies the user's path summary (refreshed by path monitoring at a bounded rate)
// into the status and sets Degraded.
func (r *ATSSSSessionReconciler) pathStatus(s *junctionv1.ATSSSSession, rt *upfRuntime, user uint32) {
	if s.Spec.Type == junctionv1.SessionSingleAccess {
		// No Junction tunnel, no probes: nothing measures the one leg (the gNB's GTP-U Echo
		// is answered by the data plane alone).
		setCondition(&s.Status.Conditions, s.Generation, junctionv1.ConditionDegraded, false, ReasonSingleAccess, "a single-access session has one leg and no path state")
		return
	}
	if !legActive(s, contract.Access3GPP) && !legActive(s, contract.AccessNon3GPP) {
		s.Status.Paths = junctionv1.SessionPaths{}
		setCondition(&s.Status.Conditions, s.Generation, junctionv1.ConditionDegraded, false, ReasonNoActiveAccess,
			"no access leg is active (its SMF's FARs buffer or drop: the UE is idle, or its access nodes have not answered): no path to measure")
		return
	}
	sum, ok := rt.mon.Summary(user)
	if !ok {
		setUnknown(&s.Status.Conditions, s.Generation, junctionv1.ConditionDegraded, ReasonNotMeasured, "no probe report from the UE yet")
		return
	}
	st := &s.Status
	path := func(a contract.Access) *junctionv1.PathStatus {
		if !legActive(s, a) { // an inactive leg has no path to show
			return nil
		}
		up, rtt, _ := sum.Path(a)
		ps := &junctionv1.PathStatus{Available: up}
		if rtt > 0 {
			ps.RTT = junctionv1.Duration(rtt.Round(time.Microsecond).String())
		}
		return ps
	}
	st.Paths = junctionv1.SessionPaths{ThreeGPP: path(contract.Access3GPP), NonThreeGPP: path(contract.AccessNon3GPP)}
	switch sum.Active {
	case contract.Access3GPP:
		st.ActiveAccess = junctionv1.Access3GPP
	case contract.AccessNon3GPP:
		st.ActiveAccess = junctionv1.AccessNon3GPP
	default:
		st.ActiveAccess = ""
	}
	if !sum.LastSwitch.IsZero() {
		t := metav1.NewTime(sum.LastSwitch.Truncate(time.Second))
		st.LastPathSwitch = &t
	}
	if sum.Suspended != st.PathUpdatesSuspended {
		if sum.Suspended {
			r.Recorder.Event(s, corev1.EventTypeWarning, ReasonPathsSuspended, "The paths flip-flop: in-data-plane path updates are suspended until they settle")
		} else {
			r.Recorder.Event(s, corev1.EventTypeNormal, ReasonPathsResumed, "The paths settled: in-data-plane path updates resumed")
		}
	}
	st.PathUpdatesSuspended = sum.Suspended

	var down []string
	for _, a := range []contract.Access{contract.Access3GPP, contract.AccessNon3GPP} {
		if up, _, seen := sum.Path(a); legActive(s, a) && seen && !up {
			down = append(down, a.String())
		}
	}
	if len(down) > 0 {
		setCondition(&st.Conditions, s.Generation, junctionv1.ConditionDegraded, true, ReasonPathDown, fmt.Sprintf("access %s unavailable", strings.Join(down, ", ")))
	} else {
		setCondition(&st.Conditions, s.Generation, junctionv1.ConditionDegraded, false, ReasonAllPathsUp, "every access leg is available")
	}
}

// legActive reports whether an MA PDU session's leg of access a is there and active: not
// dropDownlink, not holding the downlink (docs/n4.md, "An access not active").
func legActive(s *junctionv1.ATSSSSession, a contract.Access) bool {
	if a == contract.Access3GPP {
		l := s.Spec.AccessLegs.ThreeGPP
		return l != nil && !l.DropDownlink && !l.BufferDownlink
	}
	l := s.Spec.AccessLegs.NonThreeGPP
	return l != nil && !l.DropDownlink
}
