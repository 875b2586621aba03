package steer

// The downlink reorder buffer of one sequenced session (paper V-B: the UE "implements a
// reordering buffer to restore packet order for downlink traffic"; with redundant mode it also
// removes the second copy of every packet).
//
// A packet's way: Push(seq) ─> at the expected seq: delivered, then every held packet that now
// follows in order ─> ahead of it, within the window: held ─> behind it: delivered once if it
// never was (late), else dropped (duplicate) ─> far from it: set aside, and a run of such
// packets resynchronizes. Expire, called at Deadline, gives up on the gaps in front of packets
// held for the timeout.
//
// Sequence numbers are the UPF's (docs/pipeline.md): 1, 2, ..., 2^32-1, then 1 again (0 is
// skipped and means "unsequenced"). Distances are taken modulo 2^32-1 over that cycle, so the
// wrap-around is one step like any other. The buffer keeps a position counter (uint64, never
// wraps) for the expected seq; a held packet at distance d sits in slot (pos+d) mod (cap+1),
// and a bitmap over the last historyLen positions says which were delivered.

import (
	"math"
	"time"
)

// Tuning constants of the reorder buffer.
const (
	// DefaultBufferTimeout is the reorder timeout until SetTimeout gives one from the legs'
	// RTTs: a few times the 5G/WiFi RTT difference of the paper's testbed (2-5 ms vs 7-15 ms).
	DefaultBufferTimeout = 50 * time.Millisecond
	// historyLen is how many sequence numbers behind the expected one the buffer remembers as
	// delivered or not, and how far from it a sequence number counts as "far": 4096 packets is
	// 400 ms at 10k packets/s, more than the lag of redundant mode's slower copy or of a late
	// packet on any real pair of legs.
	historyLen = 4096
	// skewPeriod is the span of one half of the skew's windowed maximum: the estimate follows a
	// queue that grows at once and one that drains within two periods, slower than TCP's
	// sawtooth moves a queue (seconds), faster than a user moves.
	skewPeriod = time.Second
	// skewScan bounds how many slots behind a filled gap are searched for the packet that waited
	// longest (normally the very next one).
	skewScan = 64
	// legRecent is how long a leg that delivered nothing still counts for the loss rule: a leg
	// that stopped (lost, or unused by the mode) must not keep its gaps waiting for the
	// other leg's, nor make them look lost.
	legRecent = time.Second
	// lossSlack is how far beyond a gap every leg must have delivered for it to be lost: a leg
	// that reorders a little within itself (a router's queues) does not make a packet a few
	// behind look lost.
	lossSlack = 3
	// MaxLegs bounds the leg numbers PushFrom takes: 1 (3GPP) and 2 (non-3GPP).
	MaxLegs = 2
	// resyncAfter consecutive far packets (each within historyLen of the one before) restart the
	// buffer at the first of them: one stray is dropped, while a sender whose counter jumped
	// (a UPF restart resets session_seq) is followed after two packets.
	resyncAfter = 3
)

// ReorderStats are the buffer's counters since it was built. Every pushed packet ends up
// delivered (Delivered), dropped (Duplicate + Stale) or still held (Reorder.Len).
type ReorderStats struct {
	// Delivered counts the packets handed to deliver, in order or not.
	Delivered uint64
	// Late counts delivered packets that arrived behind the expected sequence number (after
	// their gap had been given up on) and had not been delivered before.
	Late uint64
	// Duplicate counts packets dropped because their sequence number was already delivered or
	// held: redundant mode's second copies, mostly.
	Duplicate uint64
	// TimedOut counts sequence numbers given up on because a packet behind them waited the
	// timeout.
	TimedOut uint64
	// Overflow counts held packets released before their gap filled to make room in a full
	// window (released, never dropped).
	Overflow uint64
	// Lost counts sequence numbers given up on because every leg had delivered a packet beyond
	// them (PushFrom).
	Lost uint64
	// Resync counts restarts at a far sequence number.
	Resync uint64
	// Stale counts far packets dropped because no run of them followed (strays, or copies too
	// old to tell whether they were delivered).
	Stale uint64
}

type heldPacket[T any] struct {
	v    T
	at   time.Time
	full bool
}

type farPacket[T any] struct {
	v   T
	at  time.Time
	seq uint32
}

// Reorder puts one session's sequenced downlink packets back in order. It is not safe for
// concurrent use; deliver and drop are called from within Push, Expire, Flush and Reset and
// must not call back into the buffer.
type Reorder[T any] struct {
	deliver, drop func(T)
	timeout       time.Duration

	slots  []heldPacket[T] // capacity+1; the slot of the expected seq is always empty
	nheld  int
	oldest time.Time // a lower bound of the arrival of the oldest held packet

	started bool
	next    uint32 // the expected sequence number
	pos     uint64 // the expected sequence number's position (steps since the start)
	hist    []uint64
	histLen uint64 // bits of hist: positions pos-histLen .. pos-1

	far  [resyncAfter - 1]farPacket[T]
	nfar int

	// window is how many sequence numbers ahead of the expected one are held: 1..Cap.
	window int
	// skew: the longest wait behind a gap, this skew period (skewCur, which started at
	// skewStart) and the one before (skewPrev). gaveUp is when Expire or makeRoom last gave up
	// on a gap, and gaveUpWait how long the packet behind it had waited then.
	skewCur, skewPrev time.Duration
	skewStart         time.Time
	gaveUp            time.Time
	gaveUpWait        time.Duration

	// legs: the furthest sequence number each leg delivered (by leg number - 1) and when.
	legSeq [MaxLegs]uint32
	legAt  [MaxLegs]time.Time

	stats ReorderStats
}

// NewReorder returns a buffer that holds at most capacity packets (at least 1): a packet at most
// window sequence numbers ahead of the expected one is held, the window being capacity until
// SetWindow. Every packet pushed is passed exactly once to deliver or to drop (duplicates,
// strays), unless it is still held. The timeout is DefaultBufferTimeout until SetTimeout.
func NewReorder[T any](capacity int, deliver, drop func(T)) *Reorder[T] {
	capacity = max(capacity, 1)
	h := max(historyLen, (capacity+63)/64*64)
	return &Reorder[T]{
		deliver: deliver, drop: drop, timeout: DefaultBufferTimeout,
		slots: make([]heldPacket[T], capacity+1), window: capacity,
		hist: make([]uint64, h/64), histLen: uint64(h),
	}
}

// SetWindow sets how many sequence numbers ahead of the expected one are held, within 1..Cap.
// Held packets beyond a smaller window stay until they are released in order or time out.
func (r *Reorder[T]) SetWindow(n int) { r.window = min(max(n, 1), r.Cap()) }

// Window is how many sequence numbers ahead of the expected one are held.
func (r *Reorder[T]) Window() int { return r.window }

// Skew is the longest a packet waited behind a gap that then filled, or that a late packet
// shows the wait would have had to be, over the last one to two skew periods at now: the
// arrival-time skew between the legs that the timeout must cover. Zero with no gap seen.
func (r *Reorder[T]) Skew(now time.Time) time.Duration {
	r.rollSkew(now)
	return max(r.skewCur, r.skewPrev)
}

// rollSkew starts a new skew period when the current one is over.
func (r *Reorder[T]) rollSkew(now time.Time) {
	switch since := now.Sub(r.skewStart); {
	case since < skewPeriod:
	case since < 2*skewPeriod:
		r.skewPrev, r.skewCur, r.skewStart = r.skewCur, 0, r.skewStart.Add(skewPeriod)
	default:
		r.skewPrev, r.skewCur, r.skewStart = 0, 0, now
	}
}

// sampleSkew records that a packet waited w behind a gap.
func (r *Reorder[T]) sampleSkew(now time.Time, w time.Duration) {
	r.rollSkew(now)
	r.skewCur = max(r.skewCur, w)
}

// gapFilled samples the wait of the packets held behind the gap the expected packet fills at
// now: the first held packet within skewScan behind it (they arrived in order, so it waited
// longest).
func (r *Reorder[T]) gapFilled(now time.Time) {
	n := uint64(len(r.slots))
	for d := uint64(1); d <= skewScan && d < n; d++ {
		if s := &r.slots[(r.pos+d)%n]; s.full {
			r.sampleSkew(now, now.Sub(s.at))
			return
		}
	}
}

// BufferTimeout is the downlink reorder timeout from the legs' smoothed RTTs and RTT
// variations: how much later a packet sent at the same time may come on the slower leg,
// |srtt3 - srttN|, plus 4 times the larger variation (RFC 6298's K), clamped to
// [MinReorderTimeout, MaxReorderTimeout] (see there why). An unknown RTT is 0, which makes the
// difference the other leg's whole RTT: an overestimate the clamp bounds.
func BufferTimeout(rtt3, rttN, var3, varN time.Duration) time.Duration {
	diff := rtt3 - rttN
	if diff < 0 {
		diff = -diff
	}
	return clampTimeout(diff + rttVarFactor*max(var3, varN, 0))
}

// Bounds of the downlink reorder window (ReorderWindow).
const (
	// MinReorderWindow: the window never shrinks below the fixed size the buffer had before it
	// adapted (1,024 packets: 120 ms at 100 Mbit/s of 1,470-byte frames), so a rate estimate
	// that lags a burst costs nothing against it.
	MinReorderWindow = 1024
	// MaxReorderWindow bounds memory: the slots are allocated at it, and a full window holds as
	// many receive buffers (4,096 of 9.2 kB: 38 MB per session at most, only while a gap is
	// awaited). It covers MaxReorderTimeout up to 20,000 packets a second (240 Mbit/s of
	// 1,470-byte frames); faster downlinks wait less than the timeout before Overflow.
	MaxReorderWindow = 4096
	// reorderMargin (in quarters) covers the bursts and growth the last estimates missed: a
	// quarter more than measured, for the window as for the timeout.
	reorderMargin = 5
)

// AdaptiveTimeout is the downlink reorder timeout from the legs' RTTs (rttTimeout, from
// BufferTimeout) and the skew the buffer measured (Reorder.Skew): the larger of the two, the
// skew with a quarter more, clamped to [MinReorderTimeout, MaxReorderTimeout]. The RTTs alone
// miss a queue that grows between probes and the smoothing's lag; the skew alone knows nothing
// before the first gap.
func AdaptiveTimeout(rttTimeout, skew time.Duration) time.Duration {
	return clampTimeout(max(rttTimeout, skew*reorderMargin/4))
}

// ReorderWindow is how many packets ahead of a gap the buffer must hold to wait timeout for it
// when packets arrive at pps a second: all that arrive meanwhile, with a quarter more, within
// [MinReorderWindow, MaxReorderWindow].
func ReorderWindow(pps float64, timeout time.Duration) int {
	n := pps * timeout.Seconds() * reorderMargin / 4
	if n >= MaxReorderWindow {
		return MaxReorderWindow
	}
	return max(int(math.Ceil(n)), MinReorderWindow)
}

// SetTimeout sets how long a held packet waits for the gaps in front of it (negative: 0).
func (r *Reorder[T]) SetTimeout(d time.Duration) { r.timeout = max(d, 0) }

// Timeout is the current timeout.
func (r *Reorder[T]) Timeout() time.Duration { return r.timeout }

// Len is the number of packets the buffer holds.
func (r *Reorder[T]) Len() int { return r.nheld + r.nfar }

// Cap is the number of packets the window can hold.
func (r *Reorder[T]) Cap() int { return len(r.slots) - 1 }

// Stats returns the counters.
func (r *Reorder[T]) Stats() ReorderStats { return r.stats }

// Next is the expected sequence number (0 before the first packet).
func (r *Reorder[T]) Next() uint32 { return r.next }

// Push takes one downlink packet with its sequence number; arrival is now. It reports whether
// the packet is held. Whatever it reports, v belongs to the buffer from now on: it is held, or
// deliver or drop has already been called with it.
//
//   - seq 0 (an unsequenced packet) is delivered at once and changes nothing; callers
//     normally send such packets straight on.
//   - The first packet sets the expected sequence number (after Reset too).
//   - The expected packet is delivered, then the run of held packets that follows it.
//   - A packet 1..Window ahead is held; one already held is a duplicate (dropped).
//   - A packet further ahead (up to historyLen) releases the oldest held packets, giving up
//     on the gaps in front of them, until it fits (Overflow).
//   - A packet behind (up to historyLen) is delivered if it never was (Late), else dropped
//     (Duplicate).
//   - A gap that fills samples the skew (how long the first packet behind it waited); a Late
//     packet samples it too (the wait given up on, plus the time since).
//   - A packet further than historyLen either way is far: it is set aside. An in-range packet
//     drops the set-aside ones (Stale); resyncAfter far packets in a row, each within
//     historyLen of the one before, resynchronize: the held packets are delivered in order,
//     the history is forgotten and the buffer restarts at the lowest sequence number of the
//     run (Resync).
//     Far packets that wait the timeout resynchronize too (Expire).
func (r *Reorder[T]) Push(now time.Time, seq uint32, v T) (held bool) {
	if seq == 0 {
		r.out(v)
		return false
	}
	if !r.started {
		r.started, r.next, r.pos = true, seq, r.histLen
	}
	if d := seqDist(r.next, seq); d > int64(r.histLen) || d < -int64(r.histLen) {
		return r.pushFar(now, seq, v)
	}
	r.dropFar()
	w := int64(r.window)
	for {
		d := seqDist(r.next, seq)
		switch {
		case d < 0:
			r.late(now, d, v)
			return false
		case d == 0:
			if r.nheld > 0 {
				r.gapFilled(now)
			}
			r.out(v)
			r.step(true)
			r.releaseRun()
			return false
		case d <= w:
			return r.hold(now, d, v)
		}
		r.makeRoom(now, uint64(d-w))
	}
}

// PushFrom is Push for a packet that arrived on leg (1..MaxLegs; others: Push alone). Each leg
// delivers in order, so once every leg that delivered within legRecent has delivered beyond the
// gap in front of the held packets, with at least two such legs, the gap is lost: it is given up
// on at once (Lost) and the packets behind it go on.
func (r *Reorder[T]) PushFrom(now time.Time, leg int, seq uint32, v T) (held bool) {
	held = r.Push(now, seq, v)
	if leg < 1 || leg > MaxLegs || seq == 0 {
		return held
	}
	i := leg - 1
	if r.legAt[i].IsZero() || seqDist(r.legSeq[i], seq) > 0 || now.Sub(r.legAt[i]) >= legRecent {
		r.legSeq[i] = seq
	}
	r.legAt[i] = now
	for r.nheld > 0 && r.legsPast(now, r.next) {
		r.stats.Lost++
		r.step(false)
		r.releaseRun()
	}
	return held
}

// legsPast reports whether two legs or more delivered within legRecent and every one of them
// delivered lossSlack or more beyond seq.
func (r *Reorder[T]) legsPast(now time.Time, seq uint32) bool {
	n := 0
	for i := range r.legAt {
		if r.legAt[i].IsZero() || now.Sub(r.legAt[i]) >= legRecent {
			continue
		}
		if seqDist(seq, r.legSeq[i]) < lossSlack {
			return false
		}
		n++
	}
	return n >= 2
}

// Expire gives up on the gaps in front of every held packet that has waited the timeout at
// now: those packets and the runs that follow them are delivered, the sequence numbers given up
// on are counted TimedOut (and delivered Late should they still come). Far packets set aside for
// the timeout resynchronize the buffer. Call it at Deadline; an early call does no harm.
func (r *Reorder[T]) Expire(now time.Time) {
	if r.nfar > 0 && !now.Before(r.far[0].at.Add(r.timeout)) {
		r.resyncPending()
	}
	if r.nheld == 0 {
		return
	}
	cutoff := now.Add(-r.timeout)
	n := uint64(len(r.slots))
	last := uint64(0) // the furthest held packet that has waited the timeout
	for d := uint64(1); d < n; d++ {
		if s := &r.slots[(r.pos+d)%n]; s.full && !s.at.After(cutoff) {
			last = d
		}
	}
	if last > 0 {
		r.noteGiveUp(now)
	}
	for i := uint64(0); i < last; i++ {
		if s := &r.slots[r.pos%n]; s.full {
			r.take(s)
		} else {
			r.stats.TimedOut++
			r.step(false)
		}
	}
	r.releaseRun()
	r.oldest = time.Time{}
	for d := uint64(1); d < n && r.nheld > 0; d++ {
		if s := &r.slots[(r.pos+d)%n]; s.full && (r.oldest.IsZero() || s.at.Before(r.oldest)) {
			r.oldest = s.at
		}
	}
}

// Deadline is when Expire has something to do: the oldest held (or set-aside) packet's arrival
// plus the timeout; zero when the buffer is empty. It may be early (after a release the oldest
// packet is not searched for again until Expire), never late.
func (r *Reorder[T]) Deadline() time.Time {
	var d time.Time
	if r.nheld > 0 {
		d = r.oldest.Add(r.timeout)
	}
	if r.nfar > 0 {
		if f := r.far[0].at.Add(r.timeout); d.IsZero() || f.Before(d) {
			d = f
		}
	}
	return d
}

// Flush delivers every held packet in order, giving up on the gaps (not counted), and drops the
// set-aside far packets (Stale). The expected sequence number moves past the last held packet,
// the history is kept: the buffer can go on.
func (r *Reorder[T]) Flush() {
	r.releaseAll()
	r.dropFar()
}

// Reset flushes and forgets the sequence: the next packet starts a new one.
func (r *Reorder[T]) Reset() {
	r.Flush()
	r.forget()
}

func (r *Reorder[T]) forget() {
	r.started, r.next, r.pos = false, 0, 0
	clear(r.hist)
}

// out delivers v.
func (r *Reorder[T]) out(v T) {
	r.stats.Delivered++
	r.deliver(v)
}

// step moves the expected sequence number on by one, recording whether its packet was
// delivered.
func (r *Reorder[T]) step(delivered bool) {
	i := r.pos % r.histLen
	if delivered {
		r.hist[i/64] |= 1 << (i % 64)
	} else {
		r.hist[i/64] &^= 1 << (i % 64)
	}
	r.pos++
	r.next = seqAfter(r.next)
}

// take delivers the held packet in the expected sequence number's slot s.
func (r *Reorder[T]) take(s *heldPacket[T]) {
	v := s.v
	*s = heldPacket[T]{}
	r.nheld--
	r.out(v)
	r.step(true)
}

// releaseRun delivers the held packets that follow the expected sequence number without a gap.
func (r *Reorder[T]) releaseRun() {
	n := uint64(len(r.slots))
	for r.nheld > 0 {
		s := &r.slots[r.pos%n]
		if !s.full {
			break
		}
		r.take(s)
	}
	if r.nheld == 0 {
		r.oldest = time.Time{}
	}
}

// hold keeps v at distance d (1..Cap) ahead of the expected sequence number.
func (r *Reorder[T]) hold(now time.Time, d int64, v T) bool {
	s := &r.slots[(r.pos+uint64(d))%uint64(len(r.slots))]
	if s.full {
		r.stats.Duplicate++
		r.drop(v)
		return false
	}
	*s = heldPacket[T]{v: v, at: now, full: true}
	if r.nheld == 0 || now.Before(r.oldest) {
		r.oldest = now
	}
	r.nheld++
	return true
}

// late handles v at distance d < 0 (within the history).
func (r *Reorder[T]) late(now time.Time, d int64, v T) {
	p := r.pos - uint64(-d)
	i := p % r.histLen
	if r.hist[i/64]&(1<<(i%64)) != 0 {
		r.stats.Duplicate++
		r.drop(v)
		return
	}
	r.hist[i/64] |= 1 << (i % 64)
	r.stats.Late++
	if !r.gaveUp.IsZero() {
		// Given up on too soon: the packet behind the gap had waited gaveUpWait then, and the
		// gap's own packet came now.
		r.sampleSkew(now, r.gaveUpWait+now.Sub(r.gaveUp))
	}
	r.out(v)
}

// noteGiveUp records that the buffer gives up on the gap in front of the expected sequence
// number at now, and how long the first packet held behind it has waited.
func (r *Reorder[T]) noteGiveUp(now time.Time) {
	n := uint64(len(r.slots))
	for d := uint64(1); d <= skewScan && d < n; d++ {
		if s := &r.slots[(r.pos+d)%n]; s.full {
			r.gaveUp, r.gaveUpWait = now, now.Sub(s.at)
			return
		}
	}
	r.gaveUp, r.gaveUpWait = now, 0
}

// makeRoom moves the window on by k sequence numbers, giving up on the gaps it passes; the held
// packets it passes and the run that follows them are delivered early (Overflow).
func (r *Reorder[T]) makeRoom(now time.Time, k uint64) {
	before := r.stats.Delivered
	r.noteGiveUp(now)
	n := uint64(len(r.slots))
	for i := uint64(0); i < k; i++ {
		if s := &r.slots[r.pos%n]; s.full {
			r.take(s)
		} else {
			r.step(false)
		}
	}
	r.releaseRun()
	r.stats.Overflow += r.stats.Delivered - before
}

// pushFar sets aside a packet far from the expected sequence number, or resynchronizes on the
// resyncAfter-th in a row.
func (r *Reorder[T]) pushFar(now time.Time, seq uint32, v T) bool {
	if r.nfar > 0 {
		if d := seqDist(r.far[r.nfar-1].seq, seq); d > int64(r.histLen) || d < -int64(r.histLen) {
			r.dropFar() // not the same run: the earlier ones were strays
		}
	}
	if r.nfar < len(r.far) {
		r.far[r.nfar] = farPacket[T]{v: v, at: now, seq: seq}
		r.nfar++
		return true
	}
	var run [resyncAfter]farPacket[T]
	copy(run[:], r.far[:])
	run[len(r.far)] = farPacket[T]{v: v, at: now, seq: seq}
	r.far, r.nfar = [len(r.far)]farPacket[T]{}, 0
	return r.restart(run[:])
}

// resyncPending resynchronizes on the set-aside far packets alone.
func (r *Reorder[T]) resyncPending() {
	var run [resyncAfter]farPacket[T]
	k := copy(run[:], r.far[:r.nfar])
	r.far, r.nfar = [len(r.far)]farPacket[T]{}, 0
	r.restart(run[:k])
}

// restart delivers the held packets in order, forgets the sequence and replays a run of far
// packets in arrival order, the sequence restarting at the run's lowest sequence number (so
// that a run reordered among itself comes out in order). It returns whether the last packet of
// the run is held.
func (r *Reorder[T]) restart(run []farPacket[T]) (held bool) {
	r.stats.Resync++
	r.releaseAll()
	r.forget()
	start := run[0].seq
	for _, p := range run[1:] {
		if seqDist(start, p.seq) < 0 {
			start = p.seq
		}
	}
	r.started, r.next, r.pos = true, start, r.histLen
	for _, p := range run {
		held = r.Push(p.at, p.seq, p.v)
	}
	return held
}

// releaseAll delivers every held packet in order, giving up on the gaps.
func (r *Reorder[T]) releaseAll() {
	n := uint64(len(r.slots))
	for r.nheld > 0 {
		if s := &r.slots[r.pos%n]; s.full {
			r.take(s)
		} else {
			r.step(false)
		}
	}
	r.oldest = time.Time{}
}

// dropFar drops the set-aside far packets.
func (r *Reorder[T]) dropFar() {
	for i := range r.nfar {
		v := r.far[i].v
		r.far[i] = farPacket[T]{}
		r.stats.Stale++
		r.drop(v)
	}
	r.nfar = 0
}

// seqSpace is the number of sequence numbers in a cycle: 1 .. 2^32-1.
const seqSpace = 1<<32 - 1

// seqDist is how many steps from sequence number from to sequence number to (both non-zero),
// between -(seqSpace-1)/2 and (seqSpace-1)/2: negative when to is behind.
func seqDist(from, to uint32) int64 {
	d := int64(to) - int64(from)
	switch {
	case d > seqSpace/2:
		d -= seqSpace
	case d < -seqSpace/2:
		d += seqSpace
	}
	return d
}

// seqAfter is the sequence number that follows s, skipping 0.
func seqAfter(s uint32) uint32 {
	s++
	if s == 0 {
		s = 1
	}
	return s
}
