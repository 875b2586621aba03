package smf

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSteering reads a steering as the emulator's flags write it:
//
//	active-standby[:3gpp|non3gpp]    the active access (default 3gpp)
//	smallest-delay
//	load-balance:<3GPP percent>|autonomous
//	priority:<3gpp|non3gpp>:<RTT threshold in ms>
//	redundant
//
// followed by optional ",rtt=<ms>" and ",loss=<percent>" thresholds.
func ParseSteering(s string) (Steering, error) {
	var st Steering
	parts := strings.Split(s, ",")
	f := strings.Split(parts[0], ":")
	access := func(v string) (Access, error) {
		switch v {
		case "3gpp":
			return ThreeGPP, nil
		case "non3gpp":
			return NonThreeGPP, nil
		}
		return 0, fmt.Errorf("steering %q: access %q is not 3gpp or non3gpp", s, v)
	}
	var err error
	switch {
	case f[0] == "active-standby" && len(f) <= 2:
		st.Mode = ActiveStandby
		if len(f) == 2 {
			st.Active, err = access(f[1])
		}
	case f[0] == "smallest-delay" && len(f) == 1:
		st.Mode = SmallestDelay
	case f[0] == "load-balance" && len(f) == 2:
		st.Mode = LoadBalancing
		if f[1] == "autonomous" {
			st.Autonomous = true
			break
		}
		var p uint64
		if p, err = strconv.ParseUint(f[1], 10, 8); err != nil || p > 100 {
			return st, fmt.Errorf("steering %q: %q is not a 3GPP percent (0-100) or autonomous", s, f[1])
		}
		st.Weight3GPP = uint8(p)
	case f[0] == "priority" && len(f) == 3:
		st.Mode = PriorityBased
		if st.High, err = access(f[1]); err != nil {
			return st, err
		}
		var ms uint64
		if ms, err = strconv.ParseUint(f[2], 10, 16); err != nil || ms == 0 {
			return st, fmt.Errorf("steering %q: %q is not an RTT threshold in ms", s, f[2])
		}
		st.RTTms = uint16(ms)
	case f[0] == "redundant" && len(f) == 1:
		st.Mode = Redundant
	default:
		return st, fmt.Errorf("steering %q: want active-standby[:access], smallest-delay, load-balance:<percent>|autonomous, priority:<access>:<ms> or redundant", s)
	}
	if err != nil {
		return st, err
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		n, perr := strconv.ParseUint(v, 10, 16)
		switch {
		case k == "rtt" && perr == nil && n > 0:
			st.RTTms = uint16(n)
		case k == "loss" && perr == nil && n <= 100:
			l := uint8(n)
			st.LossPercent = &l
		default:
			return st, fmt.Errorf("steering %q: %q is not rtt=<ms> or loss=<percent>", s, p)
		}
	}
	return st, nil
}
