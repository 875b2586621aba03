package smf

import (
	"reflect"
	"testing"
)

func TestParseSteering(t *testing.T) {
	five := uint8(5)
	for in, want := range map[string]Steering{
		"active-standby":             {Mode: ActiveStandby, Active: ThreeGPP},
		"active-standby:non3gpp":     {Mode: ActiveStandby, Active: NonThreeGPP},
		"smallest-delay":             {Mode: SmallestDelay},
		"load-balance:70":            {Mode: LoadBalancing, Weight3GPP: 70},
		"load-balance:autonomous":    {Mode: LoadBalancing, Autonomous: true},
		"priority:non3gpp:30":        {Mode: PriorityBased, High: NonThreeGPP, RTTms: 30},
		"redundant":                  {Mode: Redundant},
		"load-balance:50,loss=5":     {Mode: LoadBalancing, Weight3GPP: 50, LossPercent: &five},
		"active-standby:3gpp,rtt=40": {Mode: ActiveStandby, RTTms: 40},
	} {
		got, err := ParseSteering(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v (%v), want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fastest", "load-balance:101", "priority:3gpp", "priority:wifi:30", "redundant,loss=101", "smallest-delay,jitter=3"} {
		if _, err := ParseSteering(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
