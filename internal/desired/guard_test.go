package desired

import (
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// docs/pipeline.md, "The flip-flop guard, by mode": the modes whose choice turns on the RTT
// comparison (smallest-delay; priority-based, whose choice turns on an RTT threshold) are the
// ones the guard watches.
func TestReadsRTTComparison(t *testing.T) {
	autonomous := junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}
	priority := func(th junctionv1.Duration) junctionv1.SteeringMode {
		return junctionv1.SteeringMode{Mode: junctionv1.ModePriorityBased, PriorityBased: &junctionv1.PriorityBased{PriorityAccess: junctionv1.AccessNon3GPP, RTTThreshold: th}}
	}
	spec := func(modeOverride *junctionv1.SteeringMode, own ...junctionv1.PolicySteering) junctionv1.ATSSSSessionSpec {
		return junctionv1.ATSSSSessionSpec{ModeOverride: modeOverride, PolicySteering: own}
	}
	for _, tc := range []struct {
		name     string
		spec     junctionv1.ATSSSSessionSpec
		policies []Policy
		want     bool
	}{
		{"a session with no policy steers by the default, active-standby, and reads no comparison", spec(nil), nil, false},
		{"a session whose policy is smallest delay reads the comparison", spec(nil), []Policy{policy("sd", 1, 10, junctionv1.TrafficDescriptor{}, smallestDelay)}, true},
		{"active-standby reads none", spec(nil), []Policy{policy("as", 1, 10, junctionv1.TrafficDescriptor{}, activeWiFi)}, false},
		{"load balance reads none", spec(nil), []Policy{policy("lb", 1, 10, junctionv1.TrafficDescriptor{}, loadBalance30)}, false},
		{"autonomous load balance reads none (its share is the UE's, which a suspension does not freeze)", spec(nil), []Policy{policy("auto", 1, 10, junctionv1.TrafficDescriptor{}, autonomous)}, false},
		{"priority-based with an RTT threshold reads it", spec(nil), []Policy{policy("pb", 1, 10, junctionv1.TrafficDescriptor{}, priority("30ms"))}, true},
		{"priority-based without a threshold reads none", spec(nil), []Policy{policy("pb", 1, 10, junctionv1.TrafficDescriptor{}, priority(""))}, false},
		{"one smallest-delay policy among others is enough", spec(nil), []Policy{
			policy("lb", 1, 10, junctionv1.TrafficDescriptor{}, loadBalance30), policy("sd", 2, 20, junctionv1.TrafficDescriptor{}, smallestDelay)}, true},
		{"a load-balance mode override hides a smallest-delay policy", spec(&loadBalance30), []Policy{policy("sd", 1, 10, junctionv1.TrafficDescriptor{}, smallestDelay)}, false},
		{"a smallest-delay mode override reads it whatever the policies", spec(&smallestDelay), []Policy{policy("lb", 1, 10, junctionv1.TrafficDescriptor{}, loadBalance30)}, true},
		{"the session's own steering of a policy counts, not the policy's", spec(nil, junctionv1.PolicySteering{Name: "sd", Steering: activeWiFi}),
			[]Policy{policy("sd", 1, 10, junctionv1.TrafficDescriptor{}, smallestDelay)}, false},
		{"the session's own smallest delay counts under a load-balance override", spec(&loadBalance30, junctionv1.PolicySteering{Name: "lb", Steering: smallestDelay}),
			[]Policy{policy("lb", 1, 10, junctionv1.TrafficDescriptor{}, loadBalance30)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadsRTTComparison(Session{Name: "s", Spec: tc.spec, Policies: tc.policies})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
