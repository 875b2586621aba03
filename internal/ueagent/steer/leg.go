package steer

// One access leg's probes and failure detection (paper V-E and Fig. 8, docs/junction-header.md
// "The probe exchange"). The UE probes each leg every Idle interval, every Busy interval while
// traffic flows; the UPF's PROBE_REPLY gives the RTT; a run of unanswered probes (silent
// failure) or netlink (the address or link is gone) takes the leg down.
//
// A probe's way: NextProbe due ─> Sent (ue_ts, remembered with its send time and timeout)
// ─> PROBE_REPLY ─> Reply matches ue_ts ─> RTT sample, srtt/rttvar, the leg Up ─> PROBE_ACK
// (caller). Or: Tick past the probe's timeout ─> missed; MissThreshold in a row ─> Down.

import (
	"math/bits"
	"time"
)

// Clock is the UE's microsecond clock for ue_ts: microseconds since an epoch, low 32 bits
// (docs/pipeline.md: time differences are taken modulo 2^32). One clock serves all the legs of
// a session.
type Clock struct{ epoch time.Time }

// NewClock returns a clock counting from epoch.
func NewClock(epoch time.Time) *Clock { return &Clock{epoch: epoch} }

// Micros is t on the clock.
func (c *Clock) Micros(t time.Time) uint32 { return uint32(t.Sub(c.epoch).Microseconds()) }

// LegState is what the UE knows about a leg.
type LegState uint8

const (
	// LegUnknown: no probe answered yet.
	LegUnknown LegState = iota
	// LegUp: the last probe exchange succeeded and the link is there.
	LegUp
	// LegDown: probes went unanswered, or netlink says the address or link is gone.
	LegDown
)

func (s LegState) String() string {
	switch s {
	case LegUnknown:
		return "Unknown"
	case LegUp:
		return "Up"
	case LegDown:
		return "Down"
	}
	return "LegState(?)"
}

// Reasons of leg states and events (CamelCase, as condition reasons).
const (
	ReasonProbeTimeout  = "ProbeTimeout"       // MissThreshold probes in a row unanswered
	ReasonProbeReply    = "ProbeReply"         // a probe was answered
	ReasonAwaitingReply = "AwaitingProbeReply" // no probe answered yet
)

// Probe timing constants.
const (
	// busyWindow: traffic within the last second makes the leg busy (the paper's "if the
	// JUNCTION-UE is active, the probing rate is increased").
	busyWindow = time.Second
	// initialProbeTimeout is the timeout of probes before the first RTT sample: RFC 6298's
	// initial RTO.
	initialProbeTimeout = time.Second
	// minProbeTimeout keeps a fast leg's timeout above the UE's and UPF's scheduling jitter.
	minProbeTimeout = 20 * time.Millisecond
	// maxProbeTimeout bounds how long a probe is waited for, whatever the RTT estimate.
	maxProbeTimeout = 2 * time.Second
	// probeTimeoutRTTs: a probe is missed after 3 smoothed RTTs (or srtt + 4 rttvar when the
	// leg jitters more than that).
	probeTimeoutRTTs = 3
	// probeRing is how many recent probes a reply may answer: the 8 last sent (a reply to an
	// older one, or to none, is stale or spoofed).
	probeRing = 8
	// eventQueue is how many events wait for Event; each call makes at most one.
	eventQueue = 4
	// LossWindow is how many of the leg's last resolved probes Loss counts (2 s of probes while
	// busy, 20 s idle). A probe counts lost when it times out, and answered again if its reply
	// comes late (within probeRing probes): the figure is the path's packet loss, as the Rel-17
	// threshold means it, not its delay spikes. Counted as losses, one reply 20 ms late on a
	// loaded UE (a 10 ms leg times out after 20-30 ms) puts the leg over a 5% threshold while
	// its window holds fewer than 20 probes.
	LossWindow = 20
	// LossMinProbes is how many resolved probes a loss figure needs before it is shown.
	LossMinProbes = LossWindow / 2
)

// LegConfig tunes a leg's probing.
type LegConfig struct {
	// Idle is the probe interval of a leg without recent traffic.
	Idle time.Duration
	// Busy is the probe interval while traffic flowed on the leg in the last second.
	Busy time.Duration
	// MissThreshold consecutive missed probes take the leg down.
	MissThreshold int
}

// DefaultLegConfig: the paper's 1 s probes, 10 per second while busy, down after 3 misses.
func DefaultLegConfig() LegConfig {
	return LegConfig{Idle: time.Second, Busy: 100 * time.Millisecond, MissThreshold: 3}
}

// Event is a change of a leg's state the caller acts on.
type Event struct {
	From, To LegState
	Reason   string
	At       time.Time
	// RTT is the smoothed RTT after the change: LINK_UP's rtt_us.
	RTT time.Duration
}

// SendLinkDown reports whether the UPF must be told (LINK_DOWN for this access, sent on the
// other leg, which still works): any change to Down, since the UPF may still hold an RTT for the
// access from an earlier life of the agent.
func (e Event) SendLinkDown() bool { return e.To == LegDown && e.From != LegDown }

// SendLinkUp reports whether the UPF must be told the leg is back (LINK_UP with RTT, on this
// leg): a leg that was down answered a probe. A leg's first ever answer needs none: the
// PROBE_ACK that follows writes its RTT.
func (e Event) SendLinkUp() bool { return e.From == LegDown && e.To == LegUp }

type probeSlot uint8

const (
	slotFree    probeSlot = iota
	slotPending           // sent, waiting for its reply or its timeout
	slotMissed            // timed out; a late reply still counts
)

type probe struct {
	sent, deadline time.Time
	ts             uint32
	state          probeSlot
	// lostAt is the leg's outcomeSeq when its miss was counted in the loss window (0: not
	// counted), so that a late reply can take it back.
	lostAt uint64
}

// Leg is one access leg's probe and failure state. A new leg has no address: it does not probe
// until LinkUp. It is not safe for concurrent use.
type Leg struct {
	cfg   LegConfig
	clock *Clock

	present      bool // the leg's address is on the node and its link up
	presentSince time.Time
	sentAny      bool // a probe was sent since the leg became present
	lastSent     time.Time
	lastTS       uint32
	lastTraffic  time.Time
	traffic      bool

	state     LegState
	reason    string
	sampled   bool    // srtt and rttvar hold an estimate
	base      baseRTT // the smallest recent RTT sample (QueueDelay)
	srtt      time.Duration
	rttvar    time.Duration
	lastReply time.Time
	missed    int

	probes [probeRing]probe
	nextP  int

	events [eventQueue]Event
	evHead int
	evLen  int

	sent, replies, lost uint64
	// outcomes holds the last lossN resolved probes, newest in bit 0: 1 lost, 0 answered;
	// outcomeSeq counts the outcomes ever recorded.
	outcomes   uint32
	lossN      int
	outcomeSeq uint64
}

// NewLeg returns a leg that stamps its probes with clock. Zero fields of cfg take
// DefaultLegConfig's values.
func NewLeg(clock *Clock, cfg LegConfig) *Leg {
	def := DefaultLegConfig()
	if cfg.Idle <= 0 {
		cfg.Idle = def.Idle
	}
	if cfg.Busy <= 0 {
		cfg.Busy = def.Busy
	}
	if cfg.MissThreshold <= 0 {
		cfg.MissThreshold = def.MissThreshold
	}
	return &Leg{cfg: cfg, clock: clock, reason: ReasonAwaitingReply}
}

// Traffic notes data sent or received on the leg at now; it reports whether the leg just
// became busy (its next probe moved earlier: re-arm the probe timer).
func (l *Leg) Traffic(now time.Time) (becameBusy bool) {
	was := l.busy(now)
	l.lastTraffic, l.traffic = now, true
	return !was
}

func (l *Leg) busy(now time.Time) bool {
	return l.traffic && now.Sub(l.lastTraffic) < busyWindow
}

// NextProbe is when the next PROBE is due: at once when the leg's address appears, then one
// interval after the last probe: Busy while traffic flowed in the last second or while the leg
// is Up and its loss window holds a lost probe (a loss threshold waits on that figure: at Idle it
// would take 20 s to clear), else Idle. After a missed probe on a leg not yet Down, the next goes one probe timeout
// after the last instead (as BFD confirms a suspected failure): a silent failure is declared
// after MissThreshold timeouts, not MissThreshold intervals. Zero: never (the leg has no address).
func (l *Leg) NextProbe(now time.Time) time.Time {
	interval := l.cfg.Idle
	if l.busy(now) || (l.state == LegUp && l.outcomes != 0) {
		interval = l.cfg.Busy
	}
	switch {
	case !l.present:
		return time.Time{}
	case !l.sentAny:
		return l.presentSince
	case l.missed > 0 && l.state != LegDown:
		return l.lastSent.Add(min(interval, l.probeTimeout()))
	}
	return l.lastSent.Add(interval)
}

// NextDeadline is the earliest of NextProbe and the timeout of a probe waiting for its reply:
// when Tick and Sent have something to do. Zero: never.
func (l *Leg) NextDeadline(now time.Time) time.Time {
	d := l.NextProbe(now)
	for i := range l.probes {
		if p := &l.probes[i]; p.state == slotPending && (d.IsZero() || p.deadline.Before(d)) {
			d = p.deadline
		}
	}
	return d
}

// Sent records a PROBE sent at now and returns its ue_ts: the clock at now, made different from
// the previous probe's. A leg without an address records nothing and returns 0.
func (l *Leg) Sent(now time.Time) (ueTS uint32) {
	if !l.present {
		return 0
	}
	ts := l.clock.Micros(now)
	if l.sentAny && ts == l.lastTS {
		ts++
	}
	p := &l.probes[l.nextP]
	if p.state == slotPending { // eight probes within one timeout: the oldest is given up
		l.miss(now, p)
	}
	*p = probe{sent: now, deadline: now.Add(l.probeTimeout()), ts: ts, state: slotPending}
	l.nextP = (l.nextP + 1) % probeRing
	l.sentAny, l.lastSent, l.lastTS = true, now, ts
	l.sent++
	return ts
}

// probeTimeout is how long a probe sent now is waited for: initialProbeTimeout before the first
// sample, then max(3 srtt, srtt + 4 rttvar) within [minProbeTimeout, maxProbeTimeout]. It may
// exceed the probe interval: several probes may be outstanding, each with its own timeout.
func (l *Leg) probeTimeout() time.Duration {
	if !l.sampled {
		return initialProbeTimeout
	}
	t := max(probeTimeoutRTTs*l.srtt, l.srtt+rttVarFactor*l.rttvar)
	return min(max(t, minProbeTimeout), maxProbeTimeout)
}

// Tick counts the probes whose timeout has passed at now as missed; MissThreshold in a row
// take the leg Down (ReasonProbeTimeout).
func (l *Leg) Tick(now time.Time) {
	for i := range probeRing { // oldest first
		p := &l.probes[(l.nextP+i)%probeRing]
		if p.state == slotPending && !now.Before(p.deadline) {
			l.miss(now, p)
		}
	}
}

func (l *Leg) miss(now time.Time, p *probe) {
	p.state = slotMissed
	l.lost++
	if l.state == LegUp {
		// Probes to a leg not up yet, or already known down, measure the wait or the outage,
		// not the leg: counted, they would keep it "lossy" for a whole window once it is up.
		l.outcome(true)
		p.lostAt = l.outcomeSeq
	}
	l.missed++
	if l.missed >= l.cfg.MissThreshold && l.state != LegDown {
		l.transition(now, LegDown, ReasonProbeTimeout)
	}
}

// Reply handles a PROBE_REPLY received at now echoing ueTS. It returns the RTT sample (now minus
// the probe's send time, the UE's y - w) and true when ueTS is one of the last probeRing probes
// sent and not answered yet, even if it was counted missed; anything else (spoofed, answered
// before, too old, or the leg has no address) is ignored: ok false, and no PROBE_ACK should be
// sent. An accepted reply updates srtt and rttvar as RFC 6298 does (gains 1/8 and 1/4; the first
// sample, and the first after the leg was down, sets srtt = R and rttvar = R/2), ends the run of
// misses, and brings the leg Up.
func (l *Leg) Reply(now time.Time, ueTS uint32) (rtt time.Duration, ok bool) {
	if !l.present {
		return 0, false
	}
	var p *probe
	for i := range l.probes {
		if q := &l.probes[i]; q.state != slotFree && q.ts == ueTS {
			p = q
			break
		}
	}
	if p == nil {
		return 0, false
	}
	rtt = max(now.Sub(p.sent), 0)
	if p.state == slotPending {
		l.outcome(false)
	} else if age := l.outcomeSeq - p.lostAt; p.lostAt != 0 && age < uint64(l.lossN) {
		l.outcomes &^= 1 << age // answered late: delayed, not lost
	}
	p.state, p.lostAt = slotFree, 0
	l.replies++
	l.lastReply = now
	l.missed = 0
	l.base.add(now, rtt)
	if !l.sampled || l.state == LegDown {
		l.srtt, l.rttvar, l.sampled = rtt, rtt/2, true
	} else {
		diff := l.srtt - rtt
		if diff < 0 {
			diff = -diff
		}
		l.rttvar = (3*l.rttvar + diff) / 4
		l.srtt = (7*l.srtt + rtt) / 8
	}
	if l.state != LegUp {
		l.transition(now, LegUp, ReasonProbeReply)
	}
	return rtt, true
}

// LinkDown takes the leg Down because netlink says its address or link is gone (reason says
// which, e.g. "AddressNotOnNode", "LinkDown"). It stops probing and forgets the outstanding
// probes. A leg already Down takes the new reason without a new event.
func (l *Leg) LinkDown(now time.Time, reason string) {
	l.present, l.sentAny = false, false
	l.probes = [probeRing]probe{}
	l.missed = 0
	l.outcomes, l.lossN = 0, 0 // a new life of the link starts a new count
	l.base = baseRTT{}         // and may have another path
	if l.state == LegDown {
		l.reason = reason
		return
	}
	l.transition(now, LegDown, reason)
}

// LinkUp says the leg's address and link are there (again): probing starts at once. The state
// does not change until a probe is answered. Calling it on a present leg does nothing.
func (l *Leg) LinkUp(now time.Time) {
	if l.present {
		return
	}
	l.present, l.presentSince, l.sentAny = true, now, false
}

func (l *Leg) transition(now time.Time, to LegState, reason string) {
	e := Event{From: l.state, To: to, Reason: reason, At: now}
	l.state, l.reason = to, reason
	e.RTT = l.srtt
	if l.evLen == eventQueue { // nobody reads events: keep the newest
		l.evHead = (l.evHead + 1) % eventQueue
		l.evLen--
	}
	l.events[(l.evHead+l.evLen)%eventQueue] = e
	l.evLen++
}

// Event returns the oldest state change not yet returned. The caller drains events after each
// call that may change the state (Reply, Tick, Sent, LinkDown) and acts on them: SendLinkDown,
// SendLinkUp. At most eventQueue are kept, the newest.
func (l *Leg) Event() (Event, bool) {
	if l.evLen == 0 {
		return Event{}, false
	}
	e := l.events[l.evHead]
	l.evHead = (l.evHead + 1) % eventQueue
	l.evLen--
	return e, true
}

// State is the leg's state.
func (l *Leg) State() LegState { return l.state }

// Up reports whether the leg is Up.
func (l *Leg) Up() bool { return l.state == LegUp }

// Present reports whether the leg has its address (and probes).
func (l *Leg) Present() bool { return l.present }

// Reason says why the leg is in its state: the down reason, ReasonProbeReply when Up,
// ReasonAwaitingReply before the first reply.
func (l *Leg) Reason() string { return l.reason }

// RTT is the smoothed RTT (srtt); 0 before the first reply.
func (l *Leg) RTT() time.Duration { return l.srtt }

// RTTVar is the RTT variation (rttvar); 0 before the first reply.
func (l *Leg) RTTVar() time.Duration { return l.rttvar }

// PathRTT is the leg's path state as the steering decision reads it: srtt in µs (at least 1)
// while the leg is Up and present, else 0 (unavailable).
func (l *Leg) PathRTT() uint32 {
	if l.state != LegUp || !l.present {
		return 0
	}
	return max(micros32(l.srtt), 1)
}

// LastReply is when a probe was last answered (zero: never).
func (l *Leg) LastReply() time.Time { return l.lastReply }

// Missed is the number of probes missed in a row.
func (l *Leg) Missed() int { return l.missed }

// ProbesSent counts the probes sent.
func (l *Leg) ProbesSent() uint64 { return l.sent }

// RepliesReceived counts the replies accepted.
func (l *Leg) RepliesReceived() uint64 { return l.replies }

// ProbesLost counts the probes that timed out (some may have been answered late).
func (l *Leg) ProbesLost() uint64 { return l.lost }

// PathLoss is the leg's loss as the path state carries it (docs/junction-header.md, loss_pct):
// Loss once LossMinProbes probes are resolved, else 0 (not measured yet).
func (l *Leg) PathLoss() uint8 {
	if p, n := l.Loss(); n >= LossMinProbes {
		return uint8(p)
	}
	return 0
}

func (l *Leg) outcome(lost bool) {
	l.outcomes <<= 1
	if lost {
		l.outcomes |= 1
	}
	l.outcomes &= 1<<LossWindow - 1
	l.lossN = min(l.lossN+1, LossWindow)
	l.outcomeSeq++
}

// Loss is the share of the last LossWindow resolved probes that went unanswered, in percent
// (rounded), and how many probes it counts (fewer while the leg is new). Only probes missed
// while the leg is Up count, and only while no late reply has come for them.
func (l *Leg) Loss() (percent, probes int) {
	if l.lossN == 0 {
		return 0, 0
	}
	lost := bits.OnesCount32(l.outcomes)
	return (200*lost + l.lossN) / (2 * l.lossN), l.lossN
}

// QueueDelay is how much of the RTT sample rtt was queueing: the sample above the leg's base RTT
// (the smallest sample of the last 30 to 60 s), in µs plus 1, so that 0 can mean "no sample"
// (Balancer.Update).
func (l *Leg) QueueDelay(rtt time.Duration) uint32 {
	return uint32(max(rtt-l.base.min(), 0).Microseconds()) + 1
}

// baseRTTBucket: the base RTT is the smallest sample of the last one to two buckets, so that a
// path that got slower is believed within a minute; a download that never lets its queue drain
// for that long reads its standing queue as base.
const baseRTTBucket = 30 * time.Second

// baseRTT is a windowed minimum of a leg's RTT samples in two buckets.
type baseRTT struct {
	cur, prev time.Duration // 0: no sample
	start     time.Time     // when cur began
}

func (b *baseRTT) add(now time.Time, rtt time.Duration) {
	rtt = max(rtt, 1)
	switch {
	case b.start.IsZero() || now.Sub(b.start) >= baseRTTBucket:
		b.prev, b.cur, b.start = b.cur, rtt, now
	case rtt < b.cur:
		b.cur = rtt
	}
}

func (b *baseRTT) min() time.Duration {
	if b.prev != 0 && b.prev < b.cur {
		return b.prev
	}
	return b.cur
}
