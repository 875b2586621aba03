package steer

import (
	"math"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
)

// Balancer decides autonomous load balance's split (docs/pipeline.md, "Autonomous load
// balance"): the 3GPP share that keeps the legs' queues balanced. A leg's queue is its RTT above
// its base RTT (Leg.QueueDelay) weighed by the rate it carries (both ways: the downlink it
// delivers here, the uplink the UE sends), both measured at the UE: delay x rate^(3/4) x (the
// legs' mean rate)^(1/4), in bytes when the rates are equal. At balance the faster leg holds
// (its rate / the other's)^(1/4) times the other's bytes, 1.41 times at 80/20 Mbit/s. The split
// moves a quarter step of 1/128 toward the leg holding less (a step beyond balanceFar), unless
// the difference is within balanceDeadband or already closing fast enough to be gone within
// balanceClose; the share each reply carries dithers between the two nearest 1/128 so that on
// average it is the split.
//
// Why between bytes and delays: equal delays put as many milliseconds of queue on the fast leg
// as on the slow one, four times the bytes on a leg four times faster, and its buffer overflowed
// first (2,200-2,400 retransmissions per 20 s download at 80/20). Equal bytes fill both buffers
// together but hold the fast leg's queue so short that it runs empty when TCP backs off: 95% of
// what the links carry alone. Of the weights tried, 3/4 alone kept both targets in every
// download of the sweep (docs/results.md, "Unequal links"). Why quarter steps: at a 20% share one step of 1/128 is 4% of the throughput
// when 5G sets it, so whole steps settled a step too far toward 5G. Why the closing guard:
// stepping on while the queues already move the right way swung the share past its point and
// back every second.
type Balancer struct {
	split float64 // the 3GPP share decided, in 1/128, with a fraction
	share contract.AutonomousShare
	carry float64 // what the shares sent so far fell short of the split, summed (the dither)
	e     float64 // the last difference, kB: non-3GPP's queue minus 3GPP's
	at    time.Time

	rateAt time.Time
	bytes  [3]uint64  // each access's bytes carried at rateAt (index: contract.Access)
	rate   [3]float64 // each access's rate, bytes a second
	// capacity is each access's highest rate in the last episode of balanceEpisode or longer
	// in which its queue held balanceQueued or more and it carried balanceCarries: a leg with a
	// standing queue carries what it can. The highest: the rate falls at the end of a download
	// while the queue drains and the last samples still show it. Episodes shorter than
	// balanceEpisode leave it: at the end of a download, while the measured rate decays, a
	// reply a few ms late starts one at a fraction of the rate.
	capacity [3]float64
	queued   [3]bool      // the queue held balanceQueued at the last Update: the episode goes on
	episode  [3]time.Time // when each access's episode began
	peak     [3]float64   // each access's highest rate in its episode
	active   bool         // the last Update steered
}

const (
	balanceDeadband = 8.0  // kB
	balanceFar      = 64.0 // kB: a difference beyond it moves the split a whole step
	balanceStep     = 0.25 // of 1/128: what a reply moves the split within balanceFar
	// balanceWeight is the power of a leg's own rate in its queue's weight (1: bytes; 0:
	// delays).
	balanceWeight = 0.75
	balanceClose  = time.Second
	// balanceRateInterval is the shortest interval a delivered rate is measured over.
	balanceRateInterval = 100 * time.Millisecond
	// balanceQueued is the queueing delay at which a leg counts as carrying its capacity.
	balanceQueued = 5 * time.Millisecond
	// balanceCarries is the rate, bytes a second (1 Mbit/s), below which a leg's queue is not
	// its capacity: on a leg that carries only probes the delay is someone else's traffic or a
	// reply the UE itself was slow to read.
	balanceCarries = 1e6 / 8
	// balanceEpisode is how long a leg must stay queued for its rate to be its capacity.
	balanceEpisode = 500 * time.Millisecond
)

// NewBalancer starts at an even split.
func NewBalancer() *Balancer {
	return &Balancer{split: float64(contract.AutonomousShareEven), share: contract.AutonomousShareEven}
}

// Share is the share as last sent.
func (b *Balancer) Share() contract.AutonomousShare { return b.share }

// Capacity is the rate access a last carried with a standing queue, bytes a second (0: not
// seen yet): where the split starts when steering starts.
func (b *Balancer) Capacity(a contract.Access) float64 { return b.capacity[a] }

// Update takes, at now, each leg's latest queueing delay in µs plus 1 (0: the leg is down or has
// no RTT sample; Leg.QueueDelay) and the bytes it has carried so far, and whether the session
// steers by the share (autonomous load balance), and returns the share. It measures the legs'
// rates always but moves the share only while it steers: in another mode the traffic does not
// follow the share, which would run to one end. When steering starts, the share starts from the
// legs' capacities as last seen (the rate each carried when it last had a queue), as a
// saturated pair would split, if both have been seen. While it steers, each call returns the
// next share of the dither.
func (b *Balancer) Update(now time.Time, q3, qn uint32, bytes3, bytesN uint64, steers bool) contract.AutonomousShare {
	bytes := [3]uint64{0, bytes3, bytesN}
	if dt := now.Sub(b.rateAt); b.rateAt.IsZero() || dt >= balanceRateInterval {
		if !b.rateAt.IsZero() {
			for _, a := range []contract.Access{contract.Access3GPP, contract.AccessNon3GPP} {
				b.rate[a] += (float64(bytes[a]-b.bytes[a])/dt.Seconds() - b.rate[a]) / 2
			}
		}
		b.rateAt, b.bytes = now, bytes
	}
	// Steering starts: from the capacities as last seen, before this sample's (a download
	// that has just begun queues before its rate shows).
	if c3, cn := b.capacity[contract.Access3GPP], b.capacity[contract.AccessNon3GPP]; steers && !b.active && c3 > 0 && cn > 0 {
		b.setSplit(contract.RatioScale * c3 / (c3 + cn))
	}
	b.active = steers
	for a, q := range [3]uint32{0, q3, qn} {
		queued := q > uint32(balanceQueued.Microseconds()) && b.rate[a] >= balanceCarries
		if queued && !b.queued[a] {
			b.episode[a], b.peak[a] = now, 0
		}
		if queued {
			b.peak[a] = max(b.peak[a], b.rate[a])
			if now.Sub(b.episode[a]) >= balanceEpisode {
				b.capacity[a] = b.peak[a]
			}
		}
		b.queued[a] = queued
	}
	if !steers {
		b.at = time.Time{}
		return b.share
	}
	if q3 == 0 || qn == 0 {
		b.at = time.Time{} // one leg: nothing to balance, and no difference to follow
		return b.dither()
	}
	r3, rn := b.rate[contract.Access3GPP], b.rate[contract.AccessNon3GPP]
	scale := math.Pow((r3+rn)/2, 1-balanceWeight) // the mean rate's part of the weights: kB when the rates are equal
	e := (float64(qn-1)*math.Pow(rn, balanceWeight) - float64(q3-1)*math.Pow(r3, balanceWeight)) * scale / 1e9
	if b.at.IsZero() || !now.After(b.at) {
		b.e, b.at = e, now
		return b.dither()
	}
	slope := (e - b.e) / now.Sub(b.at).Seconds()
	b.e, b.at = e, now
	closing := (e > 0 && slope < -e/balanceClose.Seconds()) || (e < 0 && slope > -e/balanceClose.Seconds())
	if !closing && math.Abs(e) > balanceDeadband {
		step := balanceStep
		if math.Abs(e) > balanceFar {
			step = 1
		}
		b.setSplit(b.split + math.Copysign(step, e)) // e > 0: non-3GPP holds more, more to 3GPP
	}
	return b.dither()
}

func (b *Balancer) setSplit(s float64) {
	b.split = min(max(s, float64(contract.AutonomousShareMin)), float64(contract.AutonomousShareMax))
}

// dither sends the nearest share that keeps the shares sent, summed, within half a step of the
// split summed.
func (b *Balancer) dither() contract.AutonomousShare {
	b.carry += b.split
	s := math.Round(b.carry)
	b.carry -= s
	b.share = contract.AutonomousShare(s) // within 1..127: the split is
	return b.share
}
