// Package linkem emulates links in user space, since the kernel here has no netem: frames
// crossing a Link (two interfaces bridged at layer 2) pass, per direction, a Shaper with a rate,
// a bounded queue, delay with jitter, random loss (Bernoulli or bursty) and an up/down switch,
// all changeable while traffic flows (a schedule of changes is the caller's loop over Set).
// One Shaper may serve several links: a shared medium, such as a WiFi cell whose UEs load each
// other's queue.
//
//	frame in ─> Down? ─> loss (Bernoulli or Gilbert-Elliott) ─> queue full? ─> serialized at Rate
//	        ─> + Delay ± Jitter (order kept) ─> frame out at its delivery time
package linkem

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Params are one direction's properties.
type Params struct {
	// Rate is the bottleneck in bits per second, frame bytes counted; 0: unlimited.
	Rate float64
	// Queue bounds, in bytes, what waits to be serialized, the arriving frame included (tail
	// drop); 0 with a Rate: DefaultQueue.
	Queue int
	// Delay is the one-way propagation delay added after serialization.
	Delay time.Duration
	// Jitter spreads Delay uniformly over [Delay-Jitter, Delay+Jitter]; frames keep their order.
	Jitter time.Duration
	// Loss drops each frame with this probability (0..1), unless Burst is set.
	Loss float64
	// Burst, when set, drops frames in bursts instead of independently.
	Burst *GilbertElliott
	// Down drops every frame: a lost carrier or a silent failure, depending on whether the
	// caller also takes the interface down.
	Down bool
}

// DefaultQueue is the queue of a rate-limited direction without one: 64 full-size frames.
const DefaultQueue = 64 * 1514

// GilbertElliott is a two-state loss model: each frame first moves Good->Bad with probability
// P or Bad->Good with probability R, then is lost with LossGood or LossBad. The mean loss is
// (R*LossGood + P*LossBad) / (P+R); the mean burst lasts 1/R frames.
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64
}

// Drop reasons, as Stats counts them.
const (
	DropDown  = "down"
	DropLoss  = "loss"
	DropQueue = "queue"
)

// Stats count frames by fate.
type Stats struct {
	Frames, Bytes          uint64 // offered
	Delivered, DeliveredB  uint64 // scheduled for delivery
	Down, Lost, QueueDrops uint64
}

// Shaper is one direction's bottleneck; safe for concurrent use by several links.
type Shaper struct {
	mu          sync.Mutex
	p           Params
	rng         *rand.Rand
	bad         bool      // Gilbert-Elliott state
	busyUntil   time.Time // when the last admitted frame finishes serialization
	lastDeliver time.Time // FIFO: no frame is delivered before the one admitted before it
	stats       Stats
}

// NewShaper returns a shaper with p, its random draws seeded (reproducible runs).
func NewShaper(p Params, seed uint64) *Shaper {
	return &Shaper{p: p, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Set changes the parameters from the next frame on; frames already admitted keep theirs.
func (s *Shaper) Set(p Params) {
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
}

// Params returns the current parameters.
func (s *Shaper) Params() Params {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// Stats returns the counters.
func (s *Shaper) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Admit decides the fate of a frame of n bytes offered at now: dropped (with the reason), or
// delivered at the returned time.
func (s *Shaper) Admit(now time.Time, n int) (deliver time.Time, drop string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.p
	s.stats.Frames++
	s.stats.Bytes += uint64(n)
	switch {
	case p.Down:
		s.stats.Down++
		return time.Time{}, DropDown
	case s.lose():
		s.stats.Lost++
		return time.Time{}, DropLoss
	}
	start := now
	if p.Rate > 0 {
		if s.busyUntil.After(now) {
			backlog := int(s.busyUntil.Sub(now).Seconds() * p.Rate / 8) // bytes still to serialize
			queue := p.Queue
			if queue == 0 {
				queue = DefaultQueue
			}
			if backlog+n > queue {
				s.stats.QueueDrops++
				return time.Time{}, DropQueue
			}
			start = s.busyUntil
		}
		s.busyUntil = start.Add(time.Duration(float64(n*8) / p.Rate * float64(time.Second)))
		start = s.busyUntil
	}
	d := p.Delay
	if p.Jitter > 0 {
		d += time.Duration(s.rng.Int64N(int64(2*p.Jitter)+1)) - p.Jitter
	}
	deliver = start.Add(max(d, 0))
	if deliver.Before(s.lastDeliver) {
		deliver = s.lastDeliver
	}
	s.lastDeliver = deliver
	s.stats.Delivered++
	s.stats.DeliveredB += uint64(n)
	return deliver, ""
}

// lose draws the loss of one frame.
func (s *Shaper) lose() bool {
	if ge := s.p.Burst; ge != nil {
		if s.bad {
			s.bad = s.rng.Float64() >= ge.R
		} else {
			s.bad = s.rng.Float64() < ge.P
		}
		if s.bad {
			return s.rng.Float64() < ge.LossBad
		}
		return s.rng.Float64() < ge.LossGood
	}
	return s.p.Loss > 0 && s.rng.Float64() < s.p.Loss
}
