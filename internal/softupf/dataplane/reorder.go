package dataplane

// Uplink reorder around path switches (docs/pipeline.md, "Uplink reorder contract"). The
// software UPF holds packets in a bounded queue per user; the per-user state lives in the
// reorder_state and reorder_deadline registers so the controller sees (and may reset) it.
//
// A packet's way:
//
//	CURRENT_PATH, epoch E ─ E released ──────────────────────────> out
//	                      ├ not holding ─> hold, deadline = now_us + seq
//	                      ├ holding, deadline passed ─> release the held ones, then this one
//	                      ├ holding ─> hold (whatever the epoch, as on v1model)
//	                      └ queue full (user or total, or no pool buffer to copy a lent
//	                        frame into) ─> release all, then this one, count REORDER_OVERFLOW
//	EX-PATH marker, epoch E ─ holding E ─> release in arrival order, record E released
//	                        ├ not holding ─> record E released
//	                        └ holding another epoch ─> nothing (an older switch's marker)
//	deadline passed (Run's timer) ─> release, record the held epoch released
//
// Held packets have already been filtered, TTL-decremented and routed: releasing only sends.
// They are the pool's: a frame an AF_XDP port lent is copied before it is held (Pool.Own).

import (
	"context"
	"sync"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
)

// Tuning constants.
const (
	// DefaultMaxHeldPerUser bounds one user's queue: ~10 ms of a 1 Gb/s uplink in full frames,
	// the path-delay difference the reorder timeout covers.
	DefaultMaxHeldPerUser = 1024
	// DefaultMaxHeld bounds all queues together, so held packets never starve the port readers
	// of buffers (the pool must be larger than this).
	DefaultMaxHeld = 4096
	// idleWait is how long the release timer sleeps when nothing is held; a new hold wakes it.
	idleWait = time.Hour
)

// reorder_state bits (docs/pipeline.md).
const (
	rsHolding       = 1 << 0
	rsHeldEpoch     = 1 << 1
	rsReleasedValid = 1 << 2
	rsReleasedEpoch = 1 << 3
)

func heldEpoch(s uint32) uint8     { return uint8(s&rsHeldEpoch) >> 1 }
func releasedEpoch(s uint32) uint8 { return uint8(s&rsReleasedEpoch) >> 3 }

type holdQueue struct {
	pkts []*Packet
}

// reorderer holds the queues; one mutex, taken only for marked packets and markers.
type reorderer struct {
	mu         sync.Mutex
	queues     map[uint32]*holdQueue // users with held packets
	spare      []*holdQueue
	total      int
	maxPerUser int
	maxTotal   int
	wake       chan struct{}
}

func (r *reorderer) init(perUser, total int) {
	r.queues = map[uint32]*holdQueue{}
	r.maxPerUser, r.maxTotal = perUser, total
	r.wake = make(chan struct{}, 1)
}

// release sends user's held packets in arrival order and, when s says holding, records the
// held epoch as released. It returns the new state.
func (r *reorderer) release(user, s uint32, out []*Packet) ([]*Packet, uint32) {
	if q := r.queues[user]; q != nil {
		out = append(out, q.pkts...)
		r.total -= len(q.pkts)
		clear(q.pkts)
		q.pkts = q.pkts[:0]
		delete(r.queues, user)
		r.spare = append(r.spare, q)
	}
	if s&rsHolding != 0 {
		s = rsReleasedValid | uint32(heldEpoch(s))<<3
	}
	return out, s
}

// drain drops every held packet (pipeline change).
func (r *reorderer) drain(pool *Pool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for user, q := range r.queues {
		for _, pkt := range q.pkts {
			pool.Put(pkt)
		}
		delete(r.queues, user)
	}
	r.total = 0
}

// expired reports whether deadline has been reached at now (µs, modulo 2^32).
func expired(now, deadline uint32) bool { return int32(now-deadline) >= 0 }

// flushOrphans sends the packets of a user whose holding bit the controller cleared.
func (c *proc) flushOrphans(user, s uint32) {
	if r := &c.p.reorder; s&rsHolding == 0 && r.queues[user] != nil {
		c.out, _ = r.release(user, 0, c.out)
	}
}

// reorder sends or holds an uplink packet marked CURRENT_PATH with the given epoch; timeout is
// the header's seq, in microseconds. The decisions are those of the v1model program.
func (c *proc) reorder(pkt *Packet, user uint32, epoch uint8, timeout uint32) {
	stReg, dlReg := c.st.regs[rReorderState], c.st.regs[rReorderDeadline]
	if user >= stReg.size {
		c.send(pkt) // no state for this user index: nothing to hold by
		return
	}
	r := &c.p.reorder
	r.mu.Lock()
	defer r.mu.Unlock()
	s := stReg.load(user)
	c.flushOrphans(user, s)
	switch {
	case s&rsReleasedValid != 0 && releasedEpoch(s) == epoch:
		c.send(pkt)
		return
	case s&rsHolding == 0:
		s = s&(rsReleasedValid|rsReleasedEpoch) | rsHolding | uint32(epoch)<<1
		dlReg.store(user, c.clock()+timeout)
		select {
		case r.wake <- struct{}{}:
		default:
		}
	case expired(c.clock(), dlReg.load(user)):
		// The deadline passed before the timer ran: release the held epoch, then this packet.
		c.out, s = r.release(user, s, c.out)
		stReg.store(user, s)
		c.send(pkt)
		return
	}
	// Hold (while holding, packets of any epoch join the queue, as on v1model).
	q := r.queues[user]
	if q == nil {
		if n := len(r.spare); n > 0 {
			q, r.spare = r.spare[n-1], r.spare[:n-1]
		} else {
			q = &holdQueue{}
		}
		r.queues[user] = q
	}
	if len(q.pkts) < r.maxPerUser && r.total < r.maxTotal {
		// A lent frame goes back to its port now: its memory is the port's receive ring.
		if held := c.p.pool.Own(pkt); held != nil {
			q.pkts = append(q.pkts, held)
			r.total++
			stReg.store(user, s)
			return
		}
	}
	// No room: keep the order by sending what is held, then this packet.
	c.st.count(contract.DropReorderOverflow, c.inLen)
	c.out, s = r.release(user, s, c.out)
	c.send(pkt)
	stReg.store(user, s)
}

// marker handles the EX-PATH marker of epoch for user.
func (c *proc) marker(user uint32, epoch uint8) {
	stReg := c.st.regs[rReorderState]
	if user >= stReg.size {
		return
	}
	r := &c.p.reorder
	r.mu.Lock()
	defer r.mu.Unlock()
	s := stReg.load(user)
	switch {
	case s&rsHolding == 0:
		c.flushOrphans(user, s)
		s = rsReleasedValid | uint32(epoch)<<3
	case heldEpoch(s) == epoch:
		c.out, s = r.release(user, s, c.out)
	default:
		return // holding another epoch: a marker of an older switch changes nothing
	}
	stReg.store(user, s)
}

// releaseDue releases every queue whose deadline has passed (or whose state the controller
// cleared) into out, and returns how long until the next deadline.
func (p *Pipeline) releaseDue(out []*Packet) ([]*Packet, time.Duration) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	st := p.st
	r := &p.reorder
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := idleWait
	if st == nil {
		return out, wait
	}
	now := p.now()
	for user := range r.queues {
		s := st.regs[rReorderState].load(user)
		if s&rsHolding == 0 {
			out, _ = r.release(user, 0, out)
			continue
		}
		dl := st.regs[rReorderDeadline].load(user)
		if expired(now, dl) {
			out, s = r.release(user, s, out)
			st.regs[rReorderState].store(user, s)
			continue
		}
		wait = min(wait, time.Duration(int32(dl-now))*time.Microsecond)
	}
	return out, wait
}

// Run releases held packets at their deadlines until ctx is done. Released packets go to the
// Sink. Run is the pipeline's only goroutine; without it, held packets are released only by
// markers and by later packets of the same user.
func (p *Pipeline) Run(ctx context.Context) error {
	timer := time.NewTimer(idleWait)
	defer timer.Stop()
	var out []*Packet
	for {
		var wait time.Duration
		out, wait = p.releaseDue(out[:0])
		if len(out) > 0 {
			p.transmit(out)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-p.reorder.wake:
		}
	}
}
