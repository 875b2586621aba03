package dataplane

// The downlink steering decision (docs/pipeline.md, "Steering decision"), a pure function of
// the session's legs, the user's path state and the steering parameters.

// Accesses and steering modes, as encoded in the P4Info contract.
const (
	AccessNone    = 0
	Access3GPP    = 1
	AccessNon3GPP = 2

	ModeActiveStandby = 1
	ModeSmallestDelay = 2
	ModeLoadBalance   = 3
	ModePriority      = 4
	ModeRedundant     = 5
	ModeAutonomousLB  = 6
)

// Specification constants of the modes.
const (
	ratioUnits    = 128 // ratio_3gpp is in 1/128 of the packets
	autoLBPeriod  = 4   // autonomous load-balance: 3 of every 4 packets on the faster access
	autoLBSlowSeq = 3
)

// paths is what the decision reads: leg presence and RTTs, indexed by access (1, 2).
type paths struct {
	present [3]bool
	rtt     [3]uint32
}

func other(a uint8) uint8 {
	if a == Access3GPP {
		return AccessNon3GPP
	}
	return Access3GPP
}

func (p *paths) avail(a uint8) bool { return p.present[a] && p.rtt[a] != 0 }

func (p *paths) ok(a uint8, threshold uint32) bool {
	return p.avail(a) && (threshold == 0 || p.rtt[a] <= threshold)
}

// smallest picks the access with the smaller RTT among those good(a) accepts (tie: 3GPP).
func (p *paths) smallest(good func(uint8) bool) uint8 {
	g3, gn := good(Access3GPP), good(AccessNon3GPP)
	switch {
	case g3 && gn:
		if p.rtt[AccessNon3GPP] < p.rtt[Access3GPP] {
			return AccessNon3GPP
		}
		return Access3GPP
	case g3:
		return Access3GPP
	case gn:
		return AccessNon3GPP
	}
	return AccessNone
}

// decide returns the chosen access and, for redundant, the second access (or AccessNone).
// AccessNone as the first result means no path.
func decide(p *paths, s steering, seq uint32) (first, second uint8) {
	a := uint8(Access3GPP)
	if s.access == AccessNon3GPP {
		a = AccessNon3GPP
	}
	b := other(a)
	th := s.threshold
	avail := p.avail
	ok := func(x uint8) bool { return p.ok(x, th) }
	// loadBalanceFallback is load-balance without both accesses ok.
	loadBalanceFallback := func() uint8 {
		if x := p.smallest(ok); x != AccessNone {
			return x
		}
		return p.smallest(avail)
	}

	switch s.mode {
	case ModeSmallestDelay:
		return p.smallest(avail), AccessNone
	case ModeLoadBalance:
		if ok(Access3GPP) && ok(AccessNon3GPP) {
			if seq%ratioUnits < uint32(s.ratio) {
				return Access3GPP, AccessNone
			}
			return AccessNon3GPP, AccessNone
		}
		return loadBalanceFallback(), AccessNone
	case ModeAutonomousLB:
		if ok(Access3GPP) && ok(AccessNon3GPP) {
			fast := p.smallest(avail)
			if seq%autoLBPeriod != autoLBSlowSeq {
				return fast, AccessNone
			}
			return other(fast), AccessNone
		}
		return loadBalanceFallback(), AccessNone
	case ModePriority:
		switch {
		case avail(a) && (th == 0 || p.rtt[a] <= th):
			return a, AccessNone
		case avail(b):
			return b, AccessNone // overflow
		case avail(a):
			return a, AccessNone
		}
		return AccessNone, AccessNone
	case ModeRedundant:
		switch {
		case avail(Access3GPP) && avail(AccessNon3GPP):
			return Access3GPP, AccessNon3GPP
		case avail(Access3GPP):
			return Access3GPP, AccessNone
		case avail(AccessNon3GPP):
			return AccessNon3GPP, AccessNone
		}
		return AccessNone, AccessNone
	default: // active-standby, and any unknown mode
		for _, x := range [...]uint8{a, b} {
			if ok(x) {
				return x, AccessNone
			}
		}
		for _, x := range [...]uint8{a, b} {
			if avail(x) {
				return x, AccessNone
			}
		}
		return AccessNone, AccessNone
	}
}
