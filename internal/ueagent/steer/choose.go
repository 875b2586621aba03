package steer

// The steering decision (docs/pipeline.md, "Steering decision"), the same function the UPF
// applies to the downlink, applied by the UE to its uplink.

import (
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/wire"
)

// Specification constants of the modes.
const (
	ratioUnits    = 128 // load-balance: ratio_3gpp is in 1/128 of the packets
	autoLBPeriod  = 4   // autonomous load-balance: of every 4 packets...
	autoLBSlowSeq = 3   // ...the one with seq%4 == 3 goes on the slower access
)

// paths is the path state the decision reads: RTTs in µs, 0 for an unavailable access.
type paths struct{ r3, rn uint32 }

func (p paths) rtt(a wire.Access) uint32 {
	if a == wire.Access3GPP {
		return p.r3
	}
	return p.rn
}

// avail is the pipeline's avail(a); the caller folds leg presence into the RTT (0 when absent).
func (p paths) avail(a wire.Access) bool { return p.rtt(a) != 0 }

// ok is avail(a) within the threshold (0: none).
func (p paths) ok(a wire.Access, threshold uint32) bool {
	return p.avail(a) && (threshold == 0 || p.rtt(a) <= threshold)
}

// faster is the access with the smaller RTT, a tie going to 3GPP; meaningful when both are
// available.
func (p paths) faster() wire.Access {
	if p.rn < p.r3 {
		return wire.AccessNon3GPP
	}
	return wire.Access3GPP
}

// smallest is smallest-delay over the accesses that good3 and goodN admit.
func (p paths) smallest(good3, goodN bool) wire.Access {
	switch {
	case good3 && goodN:
		return p.faster()
	case good3:
		return wire.Access3GPP
	case goodN:
		return wire.AccessNon3GPP
	}
	return wire.AccessNone
}

// Choose picks the access(es) a packet leaves on, given its steering parameters, the path state
// of both accesses (RTT in µs, 0 when the access is unavailable: absent leg, leg down or never
// measured) and the packet's sequence number (the modes that split a flow use it; 0 for a
// packet without one). first is AccessNone when no access is available (the UPF's NO_PATH).
// second is set only by redundant mode with both accesses available: the copy on non-3GPP,
// first being 3GPP. A mode the pipeline does not know steers like active-standby, as the
// pipeline does.
func Choose(s desired.Steering, r3, rn uint32, seq uint32) (first, second wire.Access) {
	p := paths{r3, rn}
	a := wire.Access3GPP // the parameter access A; anything but non-3GPP means 3GPP
	if s.Access == uint8(wire.AccessNon3GPP) {
		a = wire.AccessNon3GPP
	}
	b := a.Other()
	th := s.RTTThresholdUS
	ok3, okN := p.ok(wire.Access3GPP, th), p.ok(wire.AccessNon3GPP, th)
	av3, avN := p.avail(wire.Access3GPP), p.avail(wire.AccessNon3GPP)

	switch s.Mode {
	case modeSmallestDelay:
		return p.smallest(av3, avN), wire.AccessNone

	case modeLoadBalance, modeAutonomousLB:
		if !ok3 || !okN {
			if x := p.smallest(ok3, okN); x != wire.AccessNone {
				return x, wire.AccessNone
			}
			return p.smallest(av3, avN), wire.AccessNone
		}
		if s.Mode == modeLoadBalance {
			if seq%ratioUnits < uint32(s.Ratio3GPP) {
				return wire.Access3GPP, wire.AccessNone
			}
			return wire.AccessNon3GPP, wire.AccessNone
		}
		if seq%autoLBPeriod == autoLBSlowSeq {
			return p.faster().Other(), wire.AccessNone
		}
		return p.faster(), wire.AccessNone

	case modePriority:
		switch {
		case p.ok(a, th):
			return a, wire.AccessNone
		case p.avail(b):
			return b, wire.AccessNone // overflow
		case p.avail(a):
			return a, wire.AccessNone
		}
		return wire.AccessNone, wire.AccessNone

	case modeRedundant:
		if av3 && avN {
			return wire.Access3GPP, wire.AccessNon3GPP
		}
		return p.smallest(av3, avN), wire.AccessNone

	default: // active-standby
		switch {
		case p.ok(a, th):
			return a, wire.AccessNone
		case p.ok(b, th):
			return b, wire.AccessNone
		case p.avail(a):
			return a, wire.AccessNone
		case p.avail(b):
			return b, wire.AccessNone
		}
		return wire.AccessNone, wire.AccessNone
	}
}
