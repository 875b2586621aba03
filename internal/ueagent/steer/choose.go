package steer

// The steering decision (docs/pipeline.md, "Steering decision"), the same function the UPF
// applies to the downlink, applied by the UE to its uplink.

import (
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

// paths is the path state the decision reads: RTTs in µs, 0 for an unavailable access.
type paths struct{ r3, rn uint32 }

func (p paths) rtt(a contract.Access) uint32 {
	if a == contract.Access3GPP {
		return p.r3
	}
	return p.rn
}

// avail is the pipeline's avail(a); the caller folds leg presence into the RTT (0 when absent).
func (p paths) avail(a contract.Access) bool { return p.rtt(a) != 0 }

// ok is avail(a) within the threshold (0: none).
func (p paths) ok(a contract.Access, threshold uint32) bool {
	return p.avail(a) && (threshold == 0 || p.rtt(a) <= threshold)
}

// faster is the access with the smaller RTT, a tie going to 3GPP; meaningful when both are
// available.
func (p paths) faster() contract.Access {
	if p.rn < p.r3 {
		return contract.AccessNon3GPP
	}
	return contract.Access3GPP
}

// smallest is smallest-delay over the accesses that good3 and goodN admit.
func (p paths) smallest(good3, goodN bool) contract.Access {
	switch {
	case good3 && goodN:
		return p.faster()
	case good3:
		return contract.Access3GPP
	case goodN:
		return contract.AccessNon3GPP
	}
	return contract.AccessNone
}

// Choose picks the access(es) a packet leaves on, given its steering parameters, the path state
// of both accesses (RTT in µs, 0 when the access is unavailable: absent leg, leg down or never
// measured) and the packet's sequence number (the modes that split a flow use it; 0 for a
// packet without one). first is AccessNone when no access is available (the UPF's NO_PATH).
// second is set only by redundant mode with both accesses available: the copy on non-3GPP,
// first being 3GPP. A mode the pipeline does not know steers like active-standby, as the
// pipeline does.
func Choose(s desired.Steering, r3, rn uint32, seq uint32) (first, second contract.Access) {
	p := paths{r3, rn}
	a := contract.Access3GPP // the parameter access A; anything but non-3GPP means 3GPP
	if s.Access == contract.AccessNon3GPP {
		a = contract.AccessNon3GPP
	}
	b := a.Other()
	th := s.RTTThresholdUS
	ok3, okN := p.ok(contract.Access3GPP, th), p.ok(contract.AccessNon3GPP, th)
	av3, avN := p.avail(contract.Access3GPP), p.avail(contract.AccessNon3GPP)

	switch s.Mode {
	case contract.ModeSmallestDelay:
		return p.smallest(av3, avN), contract.AccessNone

	case contract.ModeLoadBalance, contract.ModeAutonomousLoadBalance:
		if !ok3 || !okN {
			if x := p.smallest(ok3, okN); x != contract.AccessNone {
				return x, contract.AccessNone
			}
			return p.smallest(av3, avN), contract.AccessNone
		}
		if s.Mode == contract.ModeLoadBalance {
			if seq%contract.RatioScale < uint32(s.Ratio3GPP) {
				return contract.Access3GPP, contract.AccessNone
			}
			return contract.AccessNon3GPP, contract.AccessNone
		}
		if seq%contract.AutonomousPeriod == contract.AutonomousSlowSeq {
			return p.faster().Other(), contract.AccessNone
		}
		return p.faster(), contract.AccessNone

	case contract.ModePriorityBased:
		switch {
		case p.ok(a, th):
			return a, contract.AccessNone
		case p.avail(b):
			return b, contract.AccessNone // overflow
		case p.avail(a):
			return a, contract.AccessNone
		}
		return contract.AccessNone, contract.AccessNone

	case contract.ModeRedundant:
		if av3 && avN {
			return contract.Access3GPP, contract.AccessNon3GPP
		}
		return p.smallest(av3, avN), contract.AccessNone

	default: // active-standby
		switch {
		case p.ok(a, th):
			return a, contract.AccessNone
		case p.ok(b, th):
			return b, contract.AccessNone
		case p.avail(a):
			return a, contract.AccessNone
		case p.avail(b):
			return b, contract.AccessNone
		}
		return contract.AccessNone, contract.AccessNone
	}
}
