package dataplane

import "github.com/junction-atsss/junction/internal/contract"

// The downlink steering decision (docs/pipeline.md, "Steering decision"), a pure function of
// the session's legs, the user's path state and the steering parameters.

// paths is what the decision reads: leg presence, RTTs and losses (percent), indexed by access
// (1, 2), and the user's autonomous load-balance share.
type paths struct {
	present [3]bool
	rtt     [3]uint32
	loss    [3]uint8
	share   contract.AutonomousShare
}

func (p *paths) avail(a contract.Access) bool { return p.present[a] && p.rtt[a] != 0 }

// ok is avail(a) meeting the steering parameters' thresholds.
func (p *paths) ok(a contract.Access, s steering) bool {
	return p.avail(a) && (s.threshold == 0 || p.rtt[a] <= s.threshold) &&
		(s.lossLimit == 0 || p.loss[a] < s.lossLimit)
}

// smallest picks the access with the smaller RTT among those good(a) accepts (tie: 3GPP).
func (p *paths) smallest(good func(contract.Access) bool) contract.Access {
	g3, gn := good(contract.Access3GPP), good(contract.AccessNon3GPP)
	switch {
	case g3 && gn:
		if p.rtt[contract.AccessNon3GPP] < p.rtt[contract.Access3GPP] {
			return contract.AccessNon3GPP
		}
		return contract.Access3GPP
	case g3:
		return contract.Access3GPP
	case gn:
		return contract.AccessNon3GPP
	}
	return contract.AccessNone
}

// decide returns the chosen access and, for redundant, the second access (or contract.AccessNone).
// contract.AccessNone as the first result means no path.
func decide(p *paths, s steering, seq uint32) (first, second contract.Access) {
	a := contract.Access3GPP
	if s.access == contract.AccessNon3GPP {
		a = contract.AccessNon3GPP
	}
	b := a.Other()
	avail := p.avail
	ok := func(x contract.Access) bool { return p.ok(x, s) }
	// loadBalanceFallback is load-balance without both accesses ok.
	loadBalanceFallback := func() contract.Access {
		if x := p.smallest(ok); x != contract.AccessNone {
			return x
		}
		return p.smallest(avail)
	}

	switch s.mode {
	case contract.ModeSmallestDelay:
		return p.smallest(avail), contract.AccessNone
	case contract.ModeLoadBalance, contract.ModeAutonomousLoadBalance:
		if ok(contract.Access3GPP) && ok(contract.AccessNon3GPP) {
			ratio := uint32(s.ratio)
			if s.mode == contract.ModeAutonomousLoadBalance {
				ratio = p.share.Ratio3GPP()
			}
			if seq%contract.RatioScale < ratio {
				return contract.Access3GPP, contract.AccessNone
			}
			return contract.AccessNon3GPP, contract.AccessNone
		}
		return loadBalanceFallback(), contract.AccessNone
	case contract.ModePriorityBased:
		switch {
		case ok(a):
			return a, contract.AccessNone
		case avail(b):
			return b, contract.AccessNone // overflow
		case avail(a):
			return a, contract.AccessNone
		}
		return contract.AccessNone, contract.AccessNone
	case contract.ModeRedundant:
		switch {
		case avail(contract.Access3GPP) && avail(contract.AccessNon3GPP):
			return contract.Access3GPP, contract.AccessNon3GPP
		case avail(contract.Access3GPP):
			return contract.Access3GPP, contract.AccessNone
		case avail(contract.AccessNon3GPP):
			return contract.AccessNon3GPP, contract.AccessNone
		}
		return contract.AccessNone, contract.AccessNone
	default: // active-standby, and any unknown mode
		for _, x := range [...]contract.Access{a, b} {
			if ok(x) {
				return x, contract.AccessNone
			}
		}
		for _, x := range [...]contract.Access{a, b} {
			if avail(x) {
				return x, contract.AccessNone
			}
		}
		return contract.AccessNone, contract.AccessNone
	}
}
