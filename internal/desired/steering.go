package desired

import (
	"fmt"
	"math"
	"time"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
)

// Encodings of docs/pipeline.md ("Encodings shared by every part").
const (
	maxPriority          = 65535
	defaultApplicationID = 0 // traffic no policy matches
)

// Steering is a steering mode as the pipeline's action parameters encode it.
type Steering struct {
	Mode           contract.Mode
	Access         contract.Access
	Ratio3GPP      uint8
	RTTThresholdUS uint32
	// LossLimitPct is loss_limit_pct: 0 none, else an access meets the threshold while its
	// loss (percent) is below it, so a packetLossPercent p is written as p+1.
	LossLimitPct uint8
}

// NeedsSequence reports whether the mode sends one session's packets on both accesses, so the
// session needs its own sequence counter (a session_overrides entry) for the UE to reorder or
// remove duplicates (paper V-C3, "design limitation").
func (s Steering) NeedsSequence() bool {
	switch s.Mode {
	case contract.ModeLoadBalance, contract.ModeAutonomousLoadBalance, contract.ModePriorityBased, contract.ModeRedundant:
		return true
	}
	return false
}

// Spreads reports whether the mode puts one flow's packets on both accesses at once (load-balance
// splits them, redundant duplicates them), so a move of the whole flow from one access to the
// other, which the uplink reorder contract marks, does not happen in it.
func (s Steering) Spreads() bool {
	switch s.Mode {
	case contract.ModeLoadBalance, contract.ModeAutonomousLoadBalance, contract.ModeRedundant:
		return true
	}
	return false
}

func accessCode(a junctionv1.Access) contract.Access {
	if a == junctionv1.AccessNon3GPP {
		return contract.AccessNon3GPP
	}
	return contract.Access3GPP
}

// micros converts an API duration to microseconds; empty is 0 (no threshold).
func micros(field string, d junctionv1.Duration) (uint32, error) {
	if d == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	us := v.Microseconds()
	if us < 1 || us > math.MaxUint32 {
		return 0, fmt.Errorf("%s: %s is out of range", field, d)
	}
	return uint32(us), nil
}

// EncodeSteering turns an API steering mode and optional Rel-17 thresholds into pipeline
// parameters. Priority-based carries its own RTT threshold; for the other modes the RTT threshold
// marks an access as not meeting the thresholds. The packet-loss threshold applies in every mode
// that reads thresholds, against the loss the UE agents report in their probes.
func EncodeSteering(m junctionv1.SteeringMode, th *junctionv1.Thresholds) (Steering, error) {
	var s Steering
	var err error
	if th != nil {
		if s.RTTThresholdUS, err = micros("thresholds.rtt", th.RTT); err != nil {
			return s, err
		}
		if p := th.PacketLossPercent; p != nil {
			if *p < 0 || *p > 100 {
				return s, fmt.Errorf("thresholds.packetLossPercent: %d is not between 0 and 100", *p)
			}
			s.LossLimitPct = uint8(*p + 1)
		}
	}
	switch m.Mode {
	case junctionv1.ModeActiveStandby:
		if m.ActiveStandby == nil {
			return s, fmt.Errorf("steering.activeStandby: required for mode ActiveStandby")
		}
		s.Mode, s.Access = contract.ModeActiveStandby, accessCode(m.ActiveStandby.Active)
	case junctionv1.ModeSmallestDelay:
		s.Mode = contract.ModeSmallestDelay
	case junctionv1.ModeLoadBalance:
		lb := m.LoadBalance
		switch {
		case lb == nil:
			return s, fmt.Errorf("steering.loadBalance: required for mode LoadBalance")
		case lb.Autonomous:
			s.Mode = contract.ModeAutonomousLoadBalance
		case lb.ThreeGPPPercent != nil:
			s.Mode = contract.ModeLoadBalance
			s.Ratio3GPP = uint8(math.Round(float64(*lb.ThreeGPPPercent) * contract.RatioScale / 100))
		default:
			return s, fmt.Errorf("steering.loadBalance: set threeGPPPercent or autonomous")
		}
	case junctionv1.ModePriorityBased:
		pb := m.PriorityBased
		if pb == nil {
			return s, fmt.Errorf("steering.priorityBased: required for mode PriorityBased")
		}
		s.Mode, s.Access = contract.ModePriorityBased, accessCode(pb.PriorityAccess)
		if s.RTTThresholdUS, err = micros("steering.priorityBased.rttThreshold", pb.RTTThreshold); err != nil {
			return s, err
		}
	case junctionv1.ModeRedundant:
		s.Mode = contract.ModeRedundant
	default:
		return s, fmt.Errorf("steering.mode: unknown mode %q", m.Mode)
	}
	return s, nil
}

// params are the steering parameters in the order both actions declare them.
func (s Steering) params() []Param {
	return []Param{
		{"mode", u8(uint8(s.Mode))},
		{"access", u8(uint8(s.Access))},
		{"ratio_3gpp", u8(s.Ratio3GPP)},
		{"rtt_threshold_us", u32(s.RTTThresholdUS)},
		{"loss_limit_pct", u8(s.LossLimitPct)},
	}
}

// ReadsRTTComparison reports whether the mode's choice turns on how the accesses' RTTs compare
// with each other or with a threshold: smallest-delay, and priority-based with an RTT threshold.
// Only those choices flip-flop when the RTTs cross, so only users with such a mode are guarded
// by the operator's flip-flop detection (docs/pipeline.md, "The flip-flop guard, by mode").
// Active-standby and the load-balance modes read no comparison while both accesses meet their
// thresholds; the autonomous share is the UE's, which a suspension does not freeze.
func (s Steering) ReadsRTTComparison() bool {
	switch s.Mode {
	case contract.ModeSmallestDelay:
		return true
	case contract.ModePriorityBased:
		return s.RTTThresholdUS != 0
	}
	return false
}
