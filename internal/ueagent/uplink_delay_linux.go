package ueagent

// Uplink delay equalization (steer/delayline.go; docs/pipeline.md, "Uplink delay
// equalization"): while a split mode steers a packet, the faster leg's uplink waits on that
// leg's delay line for the legs' one-way delay difference, and a releaser goroutine sends it when
// due. Once a line holds frames, everything for its leg joins it, so a leg never reorders its
// own frames.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/ueagent/steer"
)

const (
	// upLineFrames is each leg's delay line: 200 ms (steer.MaxUplinkHold) of a 240 Mbit/s leg
	// in full-size frames, as the downlink reorder window.
	upLineFrames = steer.MaxReorderWindow
	// oneWayFresh is how old a leg's one-way sample may be and still set a hold: two idle probe
	// intervals and a half (a busy leg probes ten times a second).
	oneWayFresh = 2500 * time.Millisecond
)

// upDelay is a leg's delay line and what sets its hold.
type upDelay struct {
	hold    atomic.Int64 // ns the leg's split uplink waits
	pending atomic.Int32 // frames on the line, or being sent off it: the uplink joins the line while > 0
	oneWay  atomic.Int64 // the leg's last steer.UplinkOneWay, µs
	at      atomic.Int64 // when it was measured, Unix ns (0: never)

	mu   sync.Mutex // guards line and the releaser's batch, and orders sends off the line
	line *steer.DelayLine
	gso  gsoBatch
}

// splits reports whether s spreads one flow's packets over both legs by a share, the modes whose
// uplink the delay lines even out (redundant mode's copies race on purpose).
func splits(s desired.Steering) bool {
	return s.Mode == contract.ModeLoadBalance || s.Mode == contract.ModeAutonomousLoadBalance
}

// sendOn sends frame on l, through l's delay line when the uplink splits and l is the faster leg
// or when the line holds frames already (they go first). batched: the frame may wait in the TUN
// reader's GSO batch.
func (t *Tunnel) sendOn(now time.Time, l *leg, frame []byte, split, batched bool) {
	var hold time.Duration
	if split {
		hold = time.Duration(l.up.hold.Load())
	}
	if hold == 0 && l.up.pending.Load() == 0 {
		if batched {
			t.gso.add(l, frame)
		} else {
			l.send(frame)
		}
		return
	}
	t.gso.flush() // what the batch holds goes first
	u := &l.up
	u.mu.Lock()
	if !u.line.Push(now, hold, frame) {
		// Full: the oldest frame leaves now, early, to make room.
		f, _ := u.line.Pop(now, true)
		l.send(f)
		u.line.Push(now, hold, frame)
		l.m.upEarly.Inc()
	} else {
		u.pending.Add(1)
	}
	first := u.line.Len() == 1
	u.mu.Unlock()
	l.m.upHeld.Inc()
	if first {
		select {
		case t.upWake <- struct{}{}:
		default:
		}
	}
}

// releaseUplink sends the legs' held frames when they are due.
func (t *Tunnel) releaseUplink() {
	defer t.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-timer.C:
		case <-t.upWake:
		}
		now := time.Now()
		next := now.Add(time.Hour)
		for _, l := range t.legs {
			if l == nil {
				continue
			}
			if d := l.releaseDue(now); !d.IsZero() && d.Before(next) {
				next = d
			}
		}
		rearm(timer, next)
	}
}

// releaseDue sends l's frames due at now, batched, and returns when the next is due (zero: none).
func (l *leg) releaseDue(now time.Time) time.Time {
	u := &l.up
	u.mu.Lock()
	defer u.mu.Unlock()
	k := int32(0)
	for {
		f, ok := u.line.Pop(now, false)
		if !ok {
			break
		}
		u.gso.add(l, f)
		k++
	}
	u.gso.flush()
	u.pending.Add(-k)
	return u.line.Next()
}

// oneWay records a probe's uplink one-way delay on l and sets both legs' holds from the two
// legs' fresh samples: the faster leg holds for the difference, the slower none.
func (t *Tunnel) oneWay(l *leg, ueTS, upfTS uint32, now time.Time) {
	fresh := func(x *leg) bool { at := x.up.at.Load(); return at != 0 && now.Sub(time.Unix(0, at)) < oneWayFresh }
	// Smoothed (gain 1/4): a probe samples a queue that a TCP sender fills and drains within
	// tens of milliseconds. In int32, as the samples are: the clocks' offset is anywhere in the
	// 32 bits, and the difference of two samples wraps as theirs does.
	sample := steer.UplinkOneWay(ueTS, upfTS)
	if fresh(l) {
		prev := int32(l.up.oneWay.Load())
		sample = prev + (sample-prev)/4
	}
	l.up.oneWay.Store(int64(sample))
	l.up.at.Store(now.UnixNano())
	a, b := t.legs[contract.Access3GPP], t.legs[contract.AccessNon3GPP]
	if a == nil || b == nil {
		return
	}
	var ha, hb time.Duration
	if fresh(a) && fresh(b) {
		oa, ob := int32(a.up.oneWay.Load()), int32(b.up.oneWay.Load())
		ha, hb = steer.UplinkHold(oa, ob), steer.UplinkHold(ob, oa)
	}
	a.up.hold.Store(int64(ha))
	b.up.hold.Store(int64(hb))
	a.m.upHold.Set(ha.Seconds())
	b.m.upHold.Set(hb.Seconds())
}
