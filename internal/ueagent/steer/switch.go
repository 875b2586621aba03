package steer

// The UE side of the uplink reorder contract (docs/pipeline.md, "Uplink reorder contract";
// paper V-D1). When a single-path mode moves the uplink from leg X to leg Y, the UE toggles the
// 1-bit switch epoch E, sends the EX-PATH marker of E on X ("nothing more of E comes on X"),
// and marks what it sends on Y CURRENT_PATH|E with the reorder timeout in seq for as long as
// that timeout: the UPF holds those packets until the marker or the timeout releases them.
//
// A packet's way: Switcher.Next(now, chosen leg, timeout) ─> a switch? marker on the old leg
// first ─> the packet's marks and seq ─> the Junction header.

import (
	"math"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

// Bounds of the reorder timeouts (ReorderTimeout, BufferTimeout).
const (
	// MinReorderTimeout: below a millisecond the timeout is within the scheduling and timer
	// granularity of both ends (the UPF checks deadlines on recirculation or timer packets), so
	// a smaller one would release at once anyway.
	MinReorderTimeout = time.Millisecond
	// MaxReorderTimeout: holding longer than TCP's minimum retransmission timeout (200 ms on
	// Linux) buys nothing (the sender retransmits what looks lost) while it delays every held
	// packet and keeps a UPF reorder queue (a scarce resource on Tofino) or a UE buffer busy.
	MaxReorderTimeout = 200 * time.Millisecond
	// rttVarFactor is the margin for RTT variation, in units of the RTT variation: RFC 6298's
	// K = 4, which bounds where nearly all samples of a path fall.
	rttVarFactor = 4
)

// ReorderTimeout is the uplink reorder timeout a switch from the old leg to the new one puts in
// seq: how much later than packets sent now on the new leg those sent just before on the old
// leg may arrive. That is rtt_old - rtt_new (docs/pipeline.md; the RTT difference stands for
// the one-way difference, which the UE cannot measure, and overestimates it when the return
// paths are alike) plus a margin of 4 RTT variations (RFC 6298's K), clamped to
// [MinReorderTimeout, MaxReorderTimeout]. A negative difference counts as 0 (the new leg is the
// slower one: only variation can reorder). Unknown inputs are 0, which gives the minimum.
func ReorderTimeout(rttOld, rttNew, rttVar time.Duration) time.Duration {
	return clampTimeout(max(rttOld-rttNew, 0) + rttVarFactor*max(rttVar, 0))
}

func clampTimeout(d time.Duration) time.Duration {
	return min(max(d, MinReorderTimeout), MaxReorderTimeout)
}

// Decision is what Switcher.Next says to do with one uplink data packet.
type Decision struct {
	// Marks and Seq go into the packet's Junction header: CURRENT_PATH|epoch and the timeout in
	// µs during the marking window after a switch, none and 0 otherwise.
	Marks wire.Marks
	Seq   uint32
	// ExPath is the leg to send the EX-PATH marker on before the packet (AccessNone: no
	// marker); MarkerMarks are the marker's marks, EX_PATH|the new epoch. The marker's seq is the
	// session address (docs/junction-header.md), which the caller knows.
	ExPath      contract.Access
	MarkerMarks wire.Marks
}

// Switcher is one session's uplink switch state. The zero value is ready: no leg used yet,
// epoch 0. Feed it every data packet of a single-path decision (not those of modes that spread
// a flow over both legs, desired.Steering.Spreads); it is not safe for concurrent use.
type Switcher struct {
	leg      contract.Access // the leg of the last packet; AccessNone before the first
	epoch    wire.Marks      // 0 or MarkEpoch: the current switch epoch
	since    time.Time       // when the current epoch began
	timeout  time.Duration   // the current epoch's reorder timeout
	marking  bool            // within the marking window of the current epoch
	switches uint64
}

// Next returns the marks and seq for a packet sent at now on leg, and whether an EX-PATH marker
// must go on the old leg first. A leg different from the last packet's is a switch: the epoch
// toggles and the packets on the new leg are marked with timeout (ReorderTimeout, fixed at the
// switch; later calls' timeout is ignored until the next switch) for as long as timeout after
// the switch. The first packet ever is not a switch. AccessNone (no path: the packet is not
// sent) changes nothing.
func (s *Switcher) Next(now time.Time, leg contract.Access, timeout time.Duration) Decision {
	var d Decision
	switch {
	case leg == contract.AccessNone:
		return d
	case s.leg == contract.AccessNone:
		s.leg = leg
		return d
	case leg != s.leg:
		s.epoch ^= wire.MarkEpoch
		d.ExPath, d.MarkerMarks = s.leg, wire.MarkExPath|s.epoch
		s.leg, s.since, s.timeout, s.marking = leg, now, timeout, true
		s.switches++
	}
	if s.marking {
		if now.Sub(s.since) < s.timeout {
			d.Marks, d.Seq = wire.MarkCurrentPath|s.epoch, micros32(s.timeout)
		} else {
			s.marking = false
		}
	}
	return d
}

// Reset forgets the last leg (the next packet is not a switch) and ends a marking window; the
// epoch is kept, so that the next switch still toggles it.
func (s *Switcher) Reset() {
	s.leg, s.marking = contract.AccessNone, false
}

// Leg is the leg of the last packet (AccessNone before the first).
func (s *Switcher) Leg() contract.Access { return s.leg }

// Epoch is the current switch epoch, 0 or 1.
func (s *Switcher) Epoch() uint8 { return s.epoch.Epoch() }

// Switches counts the switches (EX-PATH markers asked for).
func (s *Switcher) Switches() uint64 { return s.switches }

// micros32 is a positive duration in whole microseconds, at least 1 and at most 2^32-1 (the seq
// field); the UPF reads 0 as "no wait".
func micros32(d time.Duration) uint32 {
	us := d.Microseconds()
	switch {
	case us < 1:
		return 1
	case us > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(us)
}
