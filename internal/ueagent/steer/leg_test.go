package steer

import (
	"slices"
	"testing"
	"time"
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// upLeg is a present leg whose first probe (sent at t0) was answered after rtt.
func upLeg(t *testing.T, rtt time.Duration) *Leg {
	t.Helper()
	l := NewLeg(NewClock(t0), DefaultLegConfig())
	l.LinkUp(t0)
	ts := l.Sent(t0)
	if _, ok := l.Reply(at(rtt), ts); !ok {
		t.Fatal("the first reply was not accepted")
	}
	l.Event()
	return l
}

func wantEvent(t *testing.T, l *Leg, from, to LegState, reason string, linkDown, linkUp bool) Event {
	t.Helper()
	e, ok := l.Event()
	if !ok {
		t.Fatalf("no event, want %v -> %v", from, to)
	}
	if e.From != from || e.To != to || e.Reason != reason || e.SendLinkDown() != linkDown || e.SendLinkUp() != linkUp {
		t.Errorf("got %v -> %v (%s) LINK_DOWN %v LINK_UP %v, want %v -> %v (%s) LINK_DOWN %v LINK_UP %v",
			e.From, e.To, e.Reason, e.SendLinkDown(), e.SendLinkUp(), from, to, reason, linkDown, linkUp)
	}
	if e2, more := l.Event(); more {
		t.Errorf("one more event: %+v", e2)
	}
	return e
}

func noEvent(t *testing.T, l *Leg) {
	t.Helper()
	if e, ok := l.Event(); ok {
		t.Errorf("unexpected event %v -> %v (%s)", e.From, e.To, e.Reason)
	}
}

func TestLegProbeSchedule(t *testing.T) {
	t.Run("a leg without an address never probes", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		if p, d := l.NextProbe(t0), l.NextDeadline(t0); !p.IsZero() || !d.IsZero() {
			t.Errorf("NextProbe %v NextDeadline %v, want zero (never)", p, d)
		}
		if ts := l.Sent(t0); ts != 0 || l.ProbesSent() != 0 {
			t.Errorf("Sent on an absent leg returned %d and counted %d probes", ts, l.ProbesSent())
		}
		if l.State() != LegUnknown || l.Reason() != ReasonAwaitingReply {
			t.Errorf("state %v (%s), want Unknown (%s)", l.State(), l.Reason(), ReasonAwaitingReply)
		}
	})
	t.Run("a leg probes at once when its address appears, then every second while idle", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(at(ms(5)))
		if got := l.NextProbe(at(ms(7))); !got.Equal(at(ms(5))) {
			t.Errorf("first probe due %v, want at the address's appearance", got)
		}
		l.Sent(at(ms(7)))
		if got := l.NextProbe(at(ms(8))); !got.Equal(at(ms(1007))) {
			t.Errorf("next probe due %v, want 1 s after the last", got)
		}
	})
	t.Run("a leg probes every 100 ms while traffic flowed in the last second", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(t0)
		l.Sent(t0)
		if !l.Traffic(at(ms(50))) {
			t.Error("the first traffic should make the leg busy")
		}
		if l.Traffic(at(ms(60))) {
			t.Error("more traffic on a busy leg should not say it became busy")
		}
		if got := l.NextProbe(at(ms(60))); !got.Equal(at(ms(100))) {
			t.Errorf("next probe due %v, want 100 ms after the last", got)
		}
		l.Sent(at(ms(100)))
		if got := l.NextProbe(at(ms(1059))); !got.Equal(at(ms(200))) {
			t.Errorf("999 ms after the traffic the next probe is due %v, want 100 ms after the last", got)
		}
		if got := l.NextProbe(at(ms(1060))); !got.Equal(at(ms(1100))) {
			t.Errorf("a second after the traffic the next probe is due %v, want 1 s after the last", got)
		}
	})
	t.Run("an idle leg that lost a probe is probed every 100 ms until its window is clean", func(t *testing.T) {
		l := upLeg(t, ms(10)) // up at 10 ms RTT: timeout 30 ms
		now := at(time.Second)
		l.Sent(now)
		now = now.Add(ms(100))
		l.Tick(now) // missed
		if _, n := l.Loss(); n != 2 {
			t.Fatalf("%d resolved probes, want 2", n)
		}
		for i := range LossWindow {
			ts := l.Sent(now)
			if _, ok := l.Reply(now.Add(ms(10)), ts); !ok {
				t.Fatalf("probe %d: reply not accepted", i)
			}
			want := now.Add(ms(100))
			if i == LossWindow-1 {
				want = now.Add(time.Second) // the loss left the window: idle again
			}
			if got := l.NextProbe(now.Add(ms(10))); !got.Equal(want) {
				t.Fatalf("after %d answered probes the next is due %v after the last, want %v", i+1, got.Sub(now), want.Sub(now))
			}
			now = now.Add(ms(100))
		}
		for range 3 { // MissThreshold: down, with losses in its window
			l.Sent(now)
			now = now.Add(time.Second)
			l.Tick(now)
		}
		if l.State() != LegDown {
			t.Fatalf("leg %v after three misses, want down", l.State())
		}
		l.Sent(now)
		if got := l.NextProbe(now); !got.Equal(now.Add(time.Second)) {
			t.Errorf("a down leg with losses in its window: next probe %v after the last, want 1 s (idle)", got.Sub(now))
		}
	})
	t.Run("NextDeadline is the earlier of the next probe and a probe's timeout", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(t0)
		l.Sent(t0) // no RTT yet: waited for 1 s, the next probe also due at 1 s
		l.Traffic(t0)
		if got := l.NextDeadline(t0); !got.Equal(at(ms(100))) {
			t.Errorf("got %v, want the busy probe at 100 ms", got)
		}
		l2 := upLeg(t, ms(10)) // timeout 30 ms
		l2.Sent(at(ms(500)))
		if got := l2.NextDeadline(at(ms(500))); !got.Equal(at(ms(530))) {
			t.Errorf("got %v, want the probe's timeout at 530 ms", got)
		}
	})
	t.Run("LinkUp on a leg that has its address changes nothing", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(t0)
		l.Sent(t0)
		l.LinkUp(at(ms(10)))
		if got := l.NextProbe(at(ms(10))); !got.Equal(at(time.Second)) {
			t.Errorf("next probe due %v, want 1 s after the last", got)
		}
	})
}

func TestLegProbeTimestamps(t *testing.T) {
	t.Run("ue_ts is microseconds since the clock's epoch", func(t *testing.T) {
		l := NewLeg(NewClock(t0.Add(-ms(1))), DefaultLegConfig())
		l.LinkUp(t0)
		if ts := l.Sent(at(1500 * time.Microsecond)); ts != 2500 {
			t.Errorf("got %d, want 2500", ts)
		}
	})
	t.Run("ue_ts keeps the low 32 bits", func(t *testing.T) {
		l := NewLeg(NewClock(t0.Add(-(1<<32)*time.Microsecond)), DefaultLegConfig())
		l.LinkUp(t0)
		if ts := l.Sent(at(7 * time.Microsecond)); ts != 7 {
			t.Errorf("got %d, want 7", ts)
		}
	})
	t.Run("two probes in the same microsecond get different ue_ts", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(t0)
		a, b := l.Sent(at(ms(1))), l.Sent(at(ms(1)))
		if a == b {
			t.Errorf("both probes carry %d", a)
		}
		if _, ok := l.Reply(at(ms(3)), b); !ok {
			t.Error("the second probe's reply was not accepted")
		}
	})
	t.Run("a reply's RTT survives the clock's wrap", func(t *testing.T) {
		l := NewLeg(NewClock(t0.Add(-(1<<32-100)*time.Microsecond)), DefaultLegConfig())
		l.LinkUp(t0)
		ts := l.Sent(t0)
		if rtt, ok := l.Reply(at(ms(1)), ts); !ok || rtt != ms(1) {
			t.Errorf("got %v %v, want 1ms true", rtt, ok)
		}
	})
}

func TestLegReplies(t *testing.T) {
	t.Run("a reply to an outstanding probe gives the RTT and brings the leg up", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(t0)
		ts := l.Sent(t0)
		rtt, ok := l.Reply(at(ms(12)), ts)
		if !ok || rtt != ms(12) {
			t.Fatalf("got %v %v, want 12ms true", rtt, ok)
		}
		// RFC 6298: the first sample R gives srtt = R, rttvar = R/2.
		if l.RTT() != ms(12) || l.RTTVar() != ms(6) || l.PathRTT() != 12000 || !l.Up() {
			t.Errorf("srtt %v rttvar %v path %d up %v, want 12ms 6ms 12000 true", l.RTT(), l.RTTVar(), l.PathRTT(), l.Up())
		}
		if !l.LastReply().Equal(at(ms(12))) || l.RepliesReceived() != 1 {
			t.Errorf("last reply %v, %d replies", l.LastReply(), l.RepliesReceived())
		}
		// The first ever reply needs no LINK_UP: the PROBE_ACK writes the RTT.
		e := wantEvent(t, l, LegUnknown, LegUp, ReasonProbeReply, false, false)
		if e.RTT != ms(12) || !e.At.Equal(at(ms(12))) {
			t.Errorf("event RTT %v at %v", e.RTT, e.At)
		}
	})
	t.Run("later samples are smoothed with gains 1/8 and 1/4", func(t *testing.T) {
		l := upLeg(t, ms(12))
		ts := l.Sent(at(time.Second))
		l.Reply(at(time.Second+ms(20)), ts)
		// rttvar = 3/4*6 + 1/4*|12-20| = 6.5 ms; srtt = 7/8*12 + 1/8*20 = 13 ms.
		if l.RTT() != ms(13) || l.RTTVar() != ms(6.5) {
			t.Errorf("srtt %v rttvar %v, want 13ms 6.5ms", l.RTT(), l.RTTVar())
		}
		noEvent(t, l)
	})
	for _, tc := range []struct {
		name string
		ts   func(l *Leg) uint32
	}{
		{"a reply matching no probe (spoofed) is ignored", func(l *Leg) uint32 { return l.Sent(at(time.Second)) + 12345 }},
		{"a second reply to the same probe is ignored", func(l *Leg) uint32 {
			ts := l.Sent(at(time.Second))
			l.Reply(at(time.Second+ms(1)), ts)
			return ts
		}},
		{"a reply to a probe older than the last eight is ignored", func(l *Leg) uint32 {
			first := l.Sent(at(time.Second))
			for i := 1; i <= 8; i++ {
				l.Sent(at(time.Second + time.Duration(i)*ms(1)))
			}
			return first
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := upLeg(t, ms(12))
			ts := tc.ts(l)
			replies, srtt := l.RepliesReceived(), l.RTT()
			if rtt, ok := l.Reply(at(2*time.Second), ts); ok {
				t.Errorf("accepted with RTT %v", rtt)
			}
			if l.RepliesReceived() != replies || l.RTT() != srtt {
				t.Errorf("an ignored reply changed the counters or the RTT")
			}
		})
	}
	t.Run("a reply on a leg without its address is ignored", func(t *testing.T) {
		l := upLeg(t, ms(12))
		ts := l.Sent(at(time.Second))
		l.LinkDown(at(time.Second+ms(1)), "LinkDown")
		l.Event()
		if _, ok := l.Reply(at(time.Second+ms(2)), ts); ok {
			t.Error("accepted")
		}
	})
}

func TestLegFailureDetection(t *testing.T) {
	t.Run("a probe unanswered for 3 srtt is missed; three in a row take the leg down", func(t *testing.T) {
		l := upLeg(t, ms(10)) // srtt 10 ms, rttvar 5 ms: timeout max(30, 10+20) = 30 ms
		for i := 0; i < 3; i++ {
			sent := at(time.Second + time.Duration(i)*ms(100))
			l.Sent(sent)
			l.Tick(sent.Add(ms(29.999)))
			if l.Missed() != i {
				t.Fatalf("probe %d missed before its timeout", i)
			}
			l.Tick(sent.Add(ms(30)))
			if l.Missed() != i+1 {
				t.Fatalf("probe %d not missed at its timeout", i)
			}
			if i < 2 {
				noEvent(t, l)
			}
		}
		wantEvent(t, l, LegUp, LegDown, ReasonProbeTimeout, true, false)
		if l.State() != LegDown || l.Reason() != ReasonProbeTimeout || l.PathRTT() != 0 || l.ProbesLost() != 3 {
			t.Errorf("state %v (%s) path %d lost %d, want Down (ProbeTimeout) 0 3", l.State(), l.Reason(), l.PathRTT(), l.ProbesLost())
		}
		if l.NextProbe(at(2 * time.Second)).IsZero() {
			t.Error("a leg down for probe timeouts keeps probing")
		}
	})
	t.Run("a fast leg's probes wait at least 20 ms", func(t *testing.T) {
		l := upLeg(t, ms(2)) // 3 srtt = 6 ms, srtt + 4 rttvar = 6 ms
		l.Sent(at(time.Second))
		l.Tick(at(time.Second + ms(19.999)))
		if l.Missed() != 0 {
			t.Error("missed before 20 ms")
		}
		l.Tick(at(time.Second + ms(20)))
		if l.Missed() != 1 {
			t.Error("not missed at 20 ms")
		}
	})
	t.Run("a jittery leg's probes wait srtt + 4 rttvar", func(t *testing.T) {
		l := upLeg(t, ms(10))
		ts := l.Sent(at(time.Second))
		l.Reply(at(time.Second+ms(50)), ts) // rttvar = 3/4*5 + 1/4*40 = 13.75 ms; srtt = 15 ms
		l.Sent(at(2 * time.Second))         // timeout max(45, 15+55) = 70 ms
		l.Tick(at(2*time.Second + ms(69.999)))
		if l.Missed() != 0 {
			t.Error("missed before 70 ms")
		}
		l.Tick(at(2*time.Second + ms(70)))
		if l.Missed() != 1 {
			t.Error("not missed at 70 ms")
		}
	})
	t.Run("before the first reply a probe waits a second", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkUp(t0)
		l.Sent(t0)
		l.Tick(at(ms(999)))
		if l.Missed() != 0 {
			t.Error("missed before 1 s")
		}
		l.Tick(at(time.Second))
		if l.Missed() != 1 {
			t.Error("not missed at 1 s")
		}
	})
	t.Run("a leg that never answers goes down too, and the UPF is told", func(t *testing.T) {
		l := NewLeg(NewClock(t0), LegConfig{MissThreshold: 2})
		l.LinkUp(t0)
		l.Sent(t0)
		l.Sent(at(ms(500)))
		l.Tick(at(2 * time.Second))
		wantEvent(t, l, LegUnknown, LegDown, ReasonProbeTimeout, true, false)
	})
	t.Run("a late reply to a missed probe counts and ends the run of misses", func(t *testing.T) {
		l := upLeg(t, ms(10))
		ts := l.Sent(at(time.Second))
		l.Tick(at(time.Second + ms(30)))
		l.Sent(at(time.Second + ms(100)))
		l.Tick(at(time.Second + ms(130)))
		if l.Missed() != 2 {
			t.Fatalf("missed %d, want 2", l.Missed())
		}
		if rtt, ok := l.Reply(at(time.Second+ms(140)), ts); !ok || rtt != ms(140) {
			t.Errorf("got %v %v, want 140ms true", rtt, ok)
		}
		if l.Missed() != 0 || !l.Up() || l.ProbesLost() != 2 {
			t.Errorf("missed %d up %v lost %d, want 0 true 2", l.Missed(), l.Up(), l.ProbesLost())
		}
		noEvent(t, l)
	})
	t.Run("a reply after being down brings the leg up and asks for LINK_UP with the new RTT", func(t *testing.T) {
		l := upLeg(t, ms(10))
		for i := 0; i < 3; i++ {
			l.Sent(at(time.Second + time.Duration(i)*ms(100)))
		}
		l.Tick(at(2 * time.Second))
		l.Event()
		ts := l.Sent(at(3 * time.Second))
		l.Reply(at(3*time.Second+ms(40)), ts)
		// The estimate restarts after a down leg: srtt = 40 ms, rttvar = 20 ms.
		e := wantEvent(t, l, LegDown, LegUp, ReasonProbeReply, false, true)
		if e.RTT != ms(40) || l.RTTVar() != ms(20) || l.PathRTT() != 40000 {
			t.Errorf("event RTT %v rttvar %v path %d, want 40ms 20ms 40000", e.RTT, l.RTTVar(), l.PathRTT())
		}
	})
}

func TestLegNetlink(t *testing.T) {
	t.Run("LinkDown takes an up leg down, stops probing and asks for LINK_DOWN", func(t *testing.T) {
		l := upLeg(t, ms(10))
		ts := l.Sent(at(time.Second))
		l.LinkDown(at(time.Second+ms(1)), "AddressNotOnNode")
		wantEvent(t, l, LegUp, LegDown, "AddressNotOnNode", true, false)
		if !l.NextProbe(at(2*time.Second)).IsZero() || !l.NextDeadline(at(2*time.Second)).IsZero() || l.Present() {
			t.Error("a leg without its address still probes")
		}
		if _, ok := l.Reply(at(time.Second+ms(5)), ts); ok {
			t.Error("a probe sent before LinkDown was answered")
		}
		if l.PathRTT() != 0 {
			t.Errorf("path RTT %d, want 0", l.PathRTT())
		}
	})
	t.Run("LinkDown on a down leg changes the reason without an event", func(t *testing.T) {
		l := upLeg(t, ms(10))
		l.LinkDown(at(time.Second), "LinkDown")
		l.Event()
		l.LinkDown(at(2*time.Second), "AddressNotOnNode")
		noEvent(t, l)
		if l.Reason() != "AddressNotOnNode" {
			t.Errorf("reason %s", l.Reason())
		}
	})
	t.Run("LinkUp resumes probing at once; the leg stays down until a reply", func(t *testing.T) {
		l := upLeg(t, ms(10))
		l.LinkDown(at(time.Second), "LinkDown")
		l.Event()
		l.LinkUp(at(5 * time.Second))
		noEvent(t, l)
		if got := l.NextProbe(at(5 * time.Second)); !got.Equal(at(5 * time.Second)) {
			t.Errorf("next probe due %v, want at once", got)
		}
		if l.State() != LegDown {
			t.Errorf("state %v, want Down until a reply", l.State())
		}
		ts := l.Sent(at(5 * time.Second))
		l.Reply(at(5*time.Second+ms(8)), ts)
		wantEvent(t, l, LegDown, LegUp, ReasonProbeReply, false, true)
	})
	t.Run("LinkDown on a leg that never had its address tells the UPF", func(t *testing.T) {
		l := NewLeg(NewClock(t0), DefaultLegConfig())
		l.LinkDown(t0, "AddressNotOnNode")
		wantEvent(t, l, LegUnknown, LegDown, "AddressNotOnNode", true, false)
	})
}

func TestLegEventsKeepTheNewest(t *testing.T) {
	l := NewLeg(NewClock(t0), DefaultLegConfig())
	reasons := []string{"a", "b", "c", "d", "e"}
	for i, r := range reasons {
		l.LinkDown(at(time.Duration(i)*time.Second), r)
		l.LinkUp(at(time.Duration(i)*time.Second + ms(1)))
		ts := l.Sent(at(time.Duration(i)*time.Second + ms(1)))
		l.Reply(at(time.Duration(i)*time.Second+ms(2)), ts)
	}
	var got []string
	for e, ok := l.Event(); ok; e, ok = l.Event() {
		got = append(got, e.Reason)
	}
	// Ten changes (down a, up, down b, up, ...): the queue holds the last four.
	want := []string{"d", ReasonProbeReply, "e", ReasonProbeReply}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want the newest four %v", got, want)
	}
}

// A silent failure on a busy leg is declared after the first missed probe plus MissThreshold-1
// timeouts (each 3 srtt), not MissThreshold probe intervals: probes are retried one timeout apart
// while a failure is suspected.
func TestSilentFailureIsConfirmedAtTimeoutPace(t *testing.T) {
	l := upLeg(t, 10*time.Millisecond) // srtt 10 ms: a probe timeout of 30 ms
	cfg := DefaultLegConfig()
	now := at(time.Second)
	l.Traffic(now) // busy: probes every 100 ms
	failure := now
	var down time.Time
	for step := 0; step < 100 && down.IsZero(); step++ {
		next := l.NextDeadline(now)
		if next.IsZero() {
			t.Fatal("nothing scheduled on a present leg")
		}
		if next.After(now) { // a probe overdue at the failure goes at once
			now = next
		}
		l.Traffic(now) // the application keeps sending
		l.Tick(now)
		if due := l.NextProbe(now); !due.After(now) {
			l.Sent(now) // never answered: the path is silently gone
		}
		if !l.Up() {
			down = now
		}
	}
	// Worst case: a probe interval until the first probe after the failure, then
	// MissThreshold timeouts of 30 ms.
	bound := cfg.Busy + time.Duration(cfg.MissThreshold)*30*time.Millisecond
	if down.IsZero() || down.Sub(failure) > bound {
		t.Fatalf("down after %v, want within %v", down.Sub(failure), bound)
	}
	wantEvent(t, l, LegUp, LegDown, ReasonProbeTimeout, true, false)
	// Down, the leg goes back to the busy interval to notice the path's return.
	last := now
	l.Sent(last)
	if got := l.NextProbe(last).Sub(last); got != cfg.Busy {
		t.Errorf("probe interval while Down: %v, want %v", got, cfg.Busy)
	}
}

// Loss counts the leg's last LossWindow resolved probes: a timeout is a loss until a late reply
// takes it back, a reply in time is not, and a new life of the link starts a new count.
func TestLegLoss(t *testing.T) {
	clock := NewClock(time.Unix(0, 0))
	l := NewLeg(clock, LegConfig{Idle: 100 * time.Millisecond, Busy: 100 * time.Millisecond, MissThreshold: 100})
	now := time.Unix(10, 0)
	l.LinkUp(now)
	if p, n := l.Loss(); p != 0 || n != 0 {
		t.Fatalf("a new leg: loss %d%% of %d probes, want 0 of 0", p, n)
	}
	// 30 probes: every fourth unanswered, the others answered after 10 ms.
	var late uint32
	for i := range 30 {
		ts := l.Sent(now)
		if i%4 == 3 {
			late = ts
			now = now.Add(3 * time.Second) // past any timeout
			l.Tick(now)
		} else {
			now = now.Add(10 * time.Millisecond)
			if _, ok := l.Reply(now, ts); !ok {
				t.Fatalf("probe %d: reply not accepted", i)
			}
		}
		now = now.Add(90 * time.Millisecond)
	}
	// The last 20 of the 30: probes 10..29, of which 11, 15, 19, 23 and 27 went unanswered.
	if p, n := l.Loss(); p != 25 || n != LossWindow {
		t.Errorf("loss %d%% of %d probes, want 25%% of %d", p, n, LossWindow)
	}
	if _, ok := l.Reply(now, late); !ok {
		t.Fatal("a late reply to a missed probe is still an RTT sample")
	}
	if p, n := l.Loss(); p != 20 || n != LossWindow {
		t.Errorf("after a late reply to probe 27: loss %d%% of %d probes, want 20%% of %d (it was delayed, not lost)", p, n, LossWindow)
	}
	if _, ok := l.Reply(now, late); ok {
		t.Error("a second reply to probe 27 was accepted")
	}
	if p, _ := l.Loss(); p != 20 {
		t.Errorf("after a second reply to probe 27: loss %d%%, want 20%% still", p)
	}
	l.LinkDown(now, "LinkDown")
	if p, n := l.Loss(); p != 0 || n != 0 {
		t.Errorf("after the link went down: loss %d%% of %d probes, want a new count", p, n)
	}
}

func TestLegPathLoss(t *testing.T) {
	clock := NewClock(time.Unix(0, 0))
	l := NewLeg(clock, LegConfig{Idle: 100 * time.Millisecond, Busy: 100 * time.Millisecond, MissThreshold: 3})
	now := time.Unix(10, 0)
	l.LinkUp(now)
	answer := func(i int) {
		ts := l.Sent(now)
		now = now.Add(10 * time.Millisecond)
		if _, ok := l.Reply(now, ts); !ok {
			t.Fatalf("probe %d: reply not accepted", i)
		}
		now = now.Add(90 * time.Millisecond)
	}
	lose := func() {
		l.Sent(now)
		now = now.Add(3 * time.Second) // past any timeout
		l.Tick(now)
	}
	lose() // before the leg is up: the UPF may not know the session yet, not a loss
	for i := range LossMinProbes - 2 {
		answer(i)
	}
	lose()
	if got := l.PathLoss(); got != 0 {
		t.Errorf("after %d probes: path loss %d%%, want 0 (not measured yet)", LossMinProbes-1, got)
	}
	answer(0)
	if got := l.PathLoss(); got != 10 {
		t.Errorf("after %d probes, one lost: path loss %d%%, want 10%%", LossMinProbes, got)
	}
	// Three more misses take the leg down (MissThreshold 3); ten more while it is down do not
	// count: the window still holds 4 misses of 13.
	for range 13 {
		lose()
	}
	if l.State() != LegDown {
		t.Fatalf("leg %v after 13 misses in a row, want down", l.State())
	}
	answer(1)
	if p, n := l.Loss(); p != 29 || n != 14 {
		t.Errorf("back up: loss %d%% of %d probes, want 29%% (4 of 14: the misses while down do not count)", p, n)
	}
}
