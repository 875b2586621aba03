package steer

import (
	"math"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
)

// Balancer decides autonomous load balance's split (docs/pipeline.md, "Autonomous load
// balance"): the 3GPP share that keeps as many bytes queued on one leg as on the other. A leg's
// queue is its RTT above its base RTT (Leg.QueueDelay) times the rate it carries (both ways: the
// downlink it delivers here, the uplink the UE sends), both measured at the UE. The share moves
// a step toward the leg holding fewer bytes, unless the difference is within balanceDeadband or
// already closing fast enough to be gone within balanceClose.
//
// Why bytes and not delays: a step of the share moves a saturated pair of links fast (1/128 of
// 100 Mbit/s fills a 20 Mbit/s link's queue by 40 ms a second), and equal delays put as many
// milliseconds of queue on the fast leg as on the slow one, that is four times the bytes on a
// leg four times faster: the fast leg's buffer overflowed first and TCP retransmitted thousands
// of packets a download. With bytes alike both buffers fill together, as load balancing at the
// links' ratio does. Why the closing guard: stepping on while the queues already move the right
// way swung the share past its point and back every second.
type Balancer struct {
	share contract.AutonomousShare
	e     float64 // the last difference, kB: non-3GPP's queue minus 3GPP's
	at    time.Time

	rateAt time.Time
	bytes  [3]uint64  // each access's bytes carried at rateAt (index: contract.Access)
	rate   [3]float64 // each access's rate, bytes a second
	// capacity is each access's highest rate while its queue last held balanceQueued or more:
	// a leg with a standing queue carries what it can. The highest: the rate falls at the end
	// of a download while the queue drains and the last samples still show it.
	capacity [3]float64
	queued   [3]bool // the queue held balanceQueued at the last Update: capacity's episode goes on
	active   bool    // the last Update steered
}

const (
	balanceDeadband = 8.0  // kB
	balanceFar      = 64.0 // kB: a difference beyond it moves the share two steps
	balanceClose    = time.Second
	// balanceRateInterval is the shortest interval a delivered rate is measured over.
	balanceRateInterval = 100 * time.Millisecond
	// balanceQueued is the queueing delay at which a leg counts as carrying its capacity.
	balanceQueued = 5 * time.Millisecond
)

// NewBalancer starts at an even split.
func NewBalancer() *Balancer { return &Balancer{share: contract.AutonomousShareEven} }

// Share is the split as last decided.
func (b *Balancer) Share() contract.AutonomousShare { return b.share }

// Update takes, at now, each leg's latest queueing delay in µs plus 1 (0: the leg is down or has
// no RTT sample; Leg.QueueDelay) and the bytes it has carried so far, and whether the session
// steers by the share (autonomous load balance), and returns the share. It measures the legs'
// rates always but moves the share only while it steers: in another mode the traffic does not
// follow the share, which would run to one end. When steering starts, the share starts from the
// legs' capacities as last seen (the rate each carried when it last had a queue), as a
// saturated pair would split, if both have been seen.
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
		b.setShare(math.Round(contract.RatioScale * c3 / (c3 + cn)))
	}
	b.active = steers
	for a, q := range [3]uint32{0, q3, qn} {
		queued := q > uint32(balanceQueued.Microseconds())
		if queued && (!b.queued[a] || b.rate[a] > b.capacity[a]) {
			b.capacity[a] = b.rate[a]
		}
		b.queued[a] = queued
	}
	if !steers {
		b.at = time.Time{}
		return b.share
	}
	if q3 == 0 || qn == 0 {
		b.at = time.Time{} // one leg: nothing to balance, and no difference to follow
		return b.share
	}
	e := (float64(qn-1)*b.rate[contract.AccessNon3GPP] - float64(q3-1)*b.rate[contract.Access3GPP]) / 1e9
	if b.at.IsZero() || !now.After(b.at) {
		b.e, b.at = e, now
		return b.share
	}
	slope := (e - b.e) / now.Sub(b.at).Seconds()
	b.e, b.at = e, now
	closing := (e > 0 && slope < -e/balanceClose.Seconds()) || (e < 0 && slope > -e/balanceClose.Seconds())
	if closing || math.Abs(e) <= balanceDeadband {
		return b.share
	}
	step := 1.0
	if math.Abs(e) > balanceFar {
		step = 2
	}
	b.setShare(float64(b.share) + math.Copysign(step, e)) // e > 0: non-3GPP holds more, more to 3GPP
	return b.share
}

func (b *Balancer) setShare(s float64) {
	b.share = contract.AutonomousShare(min(max(s, float64(contract.AutonomousShareMin)), float64(contract.AutonomousShareMax)))
}
