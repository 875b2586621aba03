package ueagent

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/ueagent/steer"
)

// condition is the AgentReady condition the agent writes; the zero value means "derive it from
// the legs".
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func notReady(reason, message string) condition {
	return condition{status: metav1.ConditionFalse, reason: reason, message: message}
}

// LegView is one leg's state as the tunnel reports it.
type LegView struct {
	Access    contract.Access
	State     junctionv1.LegState
	Reason    string
	Interface string
	RTT       time.Duration
	LastProbe time.Time
	// LossPercent over LossProbes probes (steer.Leg.Loss).
	LossPercent, LossProbes int
}

// agentView is the status the agent writes for a session: its view of the legs and the
// AgentReady condition. Ready means the tunnel exists and at least one leg works; a forced
// condition (the session cannot be built) wins.
func agentView(node, tun string, generation int64, legs []LegView, unresolved []string, forced condition) (junctionv1.AgentStatus, condition) {
	st := junctionv1.AgentStatus{NodeName: node, Interface: tun, ObservedGeneration: generation}
	var parts []string
	up := false
	for _, l := range legs {
		al := junctionv1.AgentLeg{Access: apiAccess(l.Access), State: l.State, Reason: l.Reason, Interface: l.Interface}
		if l.RTT > 0 {
			al.RTT = junctionv1.Duration(l.RTT.Round(time.Microsecond).String())
		}
		if !l.LastProbe.IsZero() {
			t := metav1.NewTime(l.LastProbe.Truncate(time.Second))
			al.LastProbe = &t
		}
		if l.LossProbes >= steer.LossMinProbes {
			p := int32(l.LossPercent)
			al.LossPercent = &p
		}
		st.Legs = append(st.Legs, al)
		desc := fmt.Sprintf("%s %s", al.Access, l.State)
		switch {
		case l.State == junctionv1.LegUp:
			up = true
			if al.RTT != "" {
				desc += fmt.Sprintf(" (%s)", al.RTT)
			}
		case l.Reason != "":
			desc += fmt.Sprintf(" (%s)", l.Reason)
		}
		parts = append(parts, desc)
	}
	c := forced
	if c.reason == "" {
		c = condition{status: metav1.ConditionTrue, reason: "TunnelUp", message: "legs: " + strings.Join(parts, ", ")}
		if !up {
			c.status, c.reason = metav1.ConditionFalse, "NoWorkingLeg"
		}
	}
	if len(unresolved) > 0 {
		c.message += "; policies not found or without an application ID yet: " + strings.Join(unresolved, ", ")
	}
	return st, c
}

// legStatesEqual reports whether two views differ only in RTTs, losses and probe times, which are
// written at most once per status interval; anything else is written at once.
func legStatesEqual(a, b junctionv1.AgentStatus) bool {
	if a.NodeName != b.NodeName || a.Interface != b.Interface || a.ObservedGeneration != b.ObservedGeneration || len(a.Legs) != len(b.Legs) {
		return false
	}
	for i := range a.Legs {
		x, y := a.Legs[i], b.Legs[i]
		if x.Access != y.Access || x.State != y.State || x.Reason != y.Reason || x.Interface != y.Interface {
			return false
		}
	}
	return true
}

func apiAccess(a contract.Access) junctionv1.Access {
	if a == contract.AccessNon3GPP {
		return junctionv1.AccessNon3GPP
	}
	return junctionv1.Access3GPP
}
