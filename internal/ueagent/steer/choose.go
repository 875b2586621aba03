package steer

// The steering decision (docs/pipeline.md, "Steering decision"), the same function the UPF
// applies to the downlink, applied by the UE to its uplink.

import (
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

// Path is one access's path state as the decision reads it.
type Path struct {
	// RTT in µs; 0 is an unavailable access (absent leg, leg down or never measured).
	RTT uint32
	// Loss is the leg's measured loss in percent (0 until measured).
	Loss uint8
}

// paths is the path state of both accesses.
type paths struct{ p3, pn Path }

func (p paths) of(a contract.Access) Path {
	if a == contract.Access3GPP {
		return p.p3
	}
	return p.pn
}

// avail is the pipeline's avail(a); the caller folds leg presence into the RTT (0 when absent).
func (p paths) avail(a contract.Access) bool { return p.of(a).RTT != 0 }

// ok is avail(a) meeting the thresholds: RTT within rtt_threshold_us and loss below
// loss_limit_pct (0: none).
func (p paths) ok(a contract.Access, s desired.Steering) bool {
	x := p.of(a)
	return x.RTT != 0 && (s.RTTThresholdUS == 0 || x.RTT <= s.RTTThresholdUS) &&
		(s.LossLimitPct == 0 || x.Loss < s.LossLimitPct)
}

// faster is the access with the smaller RTT, a tie going to 3GPP; meaningful when both are
// available.
func (p paths) faster() contract.Access {
	if p.pn.RTT < p.p3.RTT {
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
// of both accesses, the uplink's autonomous load-balance share and the packet's sequence number
// (the modes that split a flow use it; 0 for a packet without one). first is AccessNone when no
// access is available (the UPF's NO_PATH). second is set only by redundant mode with both
// accesses available: the copy on non-3GPP, first being 3GPP. A mode the pipeline does not know
// steers like active-standby, as the pipeline does.
func Choose(s desired.Steering, p3, pn Path, share contract.AutonomousShare, seq uint32) (first, second contract.Access) {
	p := paths{p3, pn}
	a := contract.Access3GPP // the parameter access A; anything but non-3GPP means 3GPP
	if s.Access == contract.AccessNon3GPP {
		a = contract.AccessNon3GPP
	}
	b := a.Other()
	ok3, okN := p.ok(contract.Access3GPP, s), p.ok(contract.AccessNon3GPP, s)
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
		ratio := uint32(s.Ratio3GPP)
		if s.Mode == contract.ModeAutonomousLoadBalance {
			ratio = share.Ratio3GPP()
		}
		if seq%contract.RatioScale < ratio {
			return contract.Access3GPP, contract.AccessNone
		}
		return contract.AccessNon3GPP, contract.AccessNone

	case contract.ModePriorityBased:
		switch {
		case p.ok(a, s):
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
		case p.ok(a, s):
			return a, contract.AccessNone
		case p.ok(b, s):
			return b, contract.AccessNone
		case p.avail(a):
			return a, contract.AccessNone
		case p.avail(b):
			return b, contract.AccessNone
		}
		return contract.AccessNone, contract.AccessNone
	}
}
