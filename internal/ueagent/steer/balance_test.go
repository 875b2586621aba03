package steer

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
)

// links feeds a Balancer as two legs would: every 50 ms a probe reply with each leg's queueing
// delay, and the bytes each delivered at its rate (bytes a second).
type links struct {
	b        *Balancer
	now      time.Time
	rx3, rxn uint64
	steers   bool
}

func newLinks() *links { return &links{b: NewBalancer(), now: t0, steers: true} }

// run feeds n replies with the queues q3 and qn (ms; -1: the leg is down) at rates r3 and rn.
func (l *links) run(n int, q3, qn float64, r3, rn float64) contract.AutonomousShare {
	us := func(q float64) uint32 {
		if q < 0 {
			return 0
		}
		return uint32(q*1000) + 1
	}
	var s contract.AutonomousShare
	for range n {
		l.now = l.now.Add(50 * time.Millisecond)
		l.rx3 += uint64(r3 / 20)
		l.rxn += uint64(rn / 20)
		s = l.b.Update(l.now, us(q3), us(qn), l.rx3, l.rxn, l.steers)
	}
	return s
}

// TestBalancer follows docs/pipeline.md, "Autonomous load balance": a leg's queue weighs its
// delay x its rate^(3/4) x the mean rate^(1/4); the split moves a quarter of 1/128 per reply
// toward the leg holding less, a whole 1/128 beyond 64 kB of difference; within 8 kB it stays;
// it stays while the difference closes fast; with a leg down it stays; it never leaves 1..127;
// the shares sent dither around it.
//
// At 80 and 20 Mbit/s (10 and 2.5 MB/s, mean 6.25) the weights are 8.89 and 3.14 MB/s: 5G
// queued 20 ms weighs 62.9 kB, balanced by WiFi queued 7.07 ms (70.7 kB of bytes).
func TestBalancer(t *testing.T) {
	const mbit = 1e6 / 8 // bytes a second
	t.Run("starts even", func(t *testing.T) {
		if s := NewBalancer().Share(); s != 64 {
			t.Errorf("share %d, want 64", s)
		}
	})
	t.Run("balanced: WiFi 80 Mbit/s queued 7.07 ms, 5G 20 Mbit/s queued 20 ms", func(t *testing.T) {
		l := newLinks()
		if s := l.run(40, 20, 7.07, 20*mbit, 80*mbit); s != 64 || l.b.split != 64 {
			t.Errorf("share %d, split %.2f, want 64 (62.9 kB weighed on each leg)", s, l.b.split)
		}
	})
	for _, c := range []struct {
		name   string
		q3, qn float64 // the legs' queues, ms
		step   float64
	}{
		// 62.9 kB against 44.5: 18.4 kB apart.
		{"equal bytes (5G 20 ms, WiFi 5 ms) are too few on WiFi: a quarter step to non-3GPP", 20, 5, -0.25},
		// 31.4 kB against 35.6: 4.1 kB apart.
		{"within 8 kB the split stays", 10, 4, 0},
		// 31.4 kB against 106.7: 75.3 kB apart.
		{"beyond 64 kB a whole step to 3GPP", 10, 12, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLinks()
			l.run(20, c.q3, c.qn, 20*mbit, 80*mbit) // rates measured
			before := l.b.split
			l.run(1, c.q3, c.qn, 20*mbit, 80*mbit)
			if got := l.b.split - before; got != c.step {
				t.Errorf("split moved %+.2f from %.2f, want %+.2f", got, before, c.step)
			}
		})
	}
	t.Run("5G holding more moves the share to non-3GPP", func(t *testing.T) {
		l := newLinks()
		if s := l.run(10, 40, 1, 20*mbit, 80*mbit); s >= 64 {
			t.Errorf("share %d, want below 64 (100 kB on 5G, 10 kB on WiFi)", s)
		}
	})
	t.Run("a difference closing faster than in a second holds the share", func(t *testing.T) {
		l := newLinks()
		l.run(20, 10, 20, 20*mbit, 80*mbit) // 31 kB against 178 kB
		before := l.b.split
		// WiFi's queue falls 4 ms a reply: 36 kB every 50 ms, 711 kB a second against a
		// difference of under 150 kB.
		for q := 16.0; q > 8; q -= 4 {
			if l.run(1, 10, q, 20*mbit, 80*mbit); l.b.split != before {
				t.Fatalf("split %.2f with WiFi's queue falling to %.0f ms, want %.2f held", l.b.split, q, before)
			}
		}
	})
	t.Run("a leg down holds the share", func(t *testing.T) {
		l := newLinks()
		if s := l.run(40, -1, 30, 0, 80*mbit); s != 64 {
			t.Errorf("share %d, want 64 (no 3GPP leg to balance with)", s)
		}
	})
	t.Run("a session not steered by the share leaves it", func(t *testing.T) {
		l := newLinks()
		l.steers = false
		if s := l.run(40, 10, 20, 20*mbit, 80*mbit); s != 64 {
			t.Errorf("share %d, want 64 (175 kB apart, but no autonomous steering)", s)
		}
	})
	t.Run("steering starts from the legs' capacities, the rates they last carried with a queue", func(t *testing.T) {
		l := newLinks()
		l.steers = false
		l.run(40, 20, 20, 60*mbit, 60*mbit) // equal links, both queued
		l.run(40, 0, 20, 0, 80*mbit)        // WiFi alone: 80 Mbit/s
		l.run(40, 20, 0, 20*mbit, 0)        // 5G alone, now slower: 20 Mbit/s
		l.run(20, 0, 0, 1*mbit, 1*mbit)     // light traffic, no queue: not a capacity
		l.steers = true
		// 128 x 20 / (20 + 80) = 25.6, sent as 26, 25, 26, 25, 26 while the queues are
		// balanced (light traffic on both, no queue).
		var sent []contract.AutonomousShare
		for range 5 {
			sent = append(sent, l.run(1, 0, 0, 1*mbit, 1*mbit))
		}
		if math.Abs(l.b.split-25.6) > 0.01 || !slices.Equal(sent, []contract.AutonomousShare{26, 25, 26, 25, 26}) {
			t.Errorf("split %.2f sent as %v, want 25.6 sent as 26, 25, 26, 25, 26 (the capacities)", l.b.split, sent)
		}
	})
	t.Run("the end of a download, its queue still in the samples, leaves the capacity", func(t *testing.T) {
		l := newLinks()
		l.steers = false
		l.run(40, 0, 20, 0, 80*mbit) // WiFi alone: 80 Mbit/s
		l.run(6, 0, 20, 0, 0)        // the download ends: no more bytes, the last replies still queued
		l.run(40, 20, 0, 20*mbit, 0) // 5G alone: 20 Mbit/s
		l.steers = true
		if s := l.run(1, 20, 0, 20*mbit, 0); s != 26 {
			t.Errorf("share %d, want 26 from 80 and 20 Mbit/s", s)
		}
	})
	t.Run("a queue on a leg that carries under 1 Mbit/s leaves its capacity", func(t *testing.T) {
		l := newLinks()
		l.steers = false
		l.run(40, 20, 20, 60*mbit, 60*mbit) // equal links, both queued: 60 Mbit/s each
		l.run(20, 0, 0, 0, 0)               // no download
		l.run(20, 20, 0, 20*mbit, 0)        // 5G alone, now slower: 20 Mbit/s
		l.run(20, 20, 8, 20*mbit, 0.1*mbit) // an idle WiFi leg's replies 8 ms late for 1 s
		l.run(10, 20, 0, 20*mbit, 0)
		l.steers = true
		// 128 x 20 / (20 + 60) = 32, not the 127 that the idle leg's rate would give.
		if l.run(1, 20, 0, 20*mbit, 0); math.Abs(l.b.split-32) > 0.01 {
			t.Errorf("split %.2f, want 32 (the capacities 20 and 60 Mbit/s)", l.b.split)
		}
	})
	t.Run("a queue shorter than half a second leaves the capacity", func(t *testing.T) {
		l := newLinks()
		l.steers = false
		l.run(40, 20, 20, 60*mbit, 60*mbit) // equal links, both queued: 60 Mbit/s each
		l.run(2, 0, 0, 5*mbit, 5*mbit)      // the download ends, the rates decaying
		l.run(9, 20, 8, 5*mbit, 5*mbit)     // replies late for 450 ms: not an episode
		l.run(20, 0, 0, 0, 0)
		l.run(40, 20, 0, 20*mbit, 0) // 5G alone, now slower: 20 Mbit/s for 2 s
		l.steers = true
		// 128 x 20 / (20 + 60) = 32; WiFi's capacity taken from the late replies (its rate
		// decaying toward 5 Mbit/s) would put the split above 50.
		if l.run(1, 20, 0, 20*mbit, 0); math.Abs(l.b.split-32) > 0.01 {
			t.Errorf("split %.2f, want 32 (the capacities 20 and 60 Mbit/s)", l.b.split)
		}
	})
	t.Run("the share stays within 1..127", func(t *testing.T) {
		l := newLinks()
		if s := l.run(200, 0, 50, 1*mbit, 80*mbit); s != contract.AutonomousShareMax {
			t.Errorf("share %d, want %d after WiFi held more for 10 s", s, contract.AutonomousShareMax)
		}
		l = newLinks()
		if s := l.run(200, 50, 0, 80*mbit, 1*mbit); s != contract.AutonomousShareMin {
			t.Errorf("share %d, want %d after 3GPP held more for 10 s", s, contract.AutonomousShareMin)
		}
	})
}

// TestLegQueueDelay: a reply's queueing delay is its RTT above the smallest sample of the last
// 30-60 s (docs/pipeline.md), in µs plus 1; a leg that goes down forgets its base.
func TestLegQueueDelay(t *testing.T) {
	l := upLeg(t, ms(10)) // base 10 ms
	reply := func(sent time.Time, rtt time.Duration) time.Duration {
		t.Helper()
		ts := l.Sent(sent)
		r, ok := l.Reply(sent.Add(rtt), ts)
		if !ok {
			t.Fatal("reply not accepted")
		}
		return r
	}
	if q := l.QueueDelay(reply(at(time.Second), ms(35))); q != 25_001 {
		t.Errorf("QueueDelay = %d, want 25001 (35 ms above a base of 10)", q)
	}
	if q := l.QueueDelay(reply(at(2*time.Second), ms(8))); q != 1 {
		t.Errorf("QueueDelay = %d, want 1 (a new base)", q)
	}
	// 8 ms stays the base through the next bucket (30 s) and is gone after two.
	reply(at(40*time.Second), ms(20))
	if q := l.QueueDelay(ms(20)); q != 12_001 {
		t.Errorf("QueueDelay = %d at 40 s, want 12001 (base 8 ms from the bucket before)", q)
	}
	reply(at(75*time.Second), ms(20))
	if q := l.QueueDelay(ms(25)); q != 5_001 {
		t.Errorf("QueueDelay = %d at 75 s, want 5001 (the 8 ms sample has aged out; base 20 ms)", q)
	}
	l.LinkDown(at(80*time.Second), "LinkDown")
	if q := l.QueueDelay(ms(25)); q != 25_001 {
		t.Errorf("QueueDelay = %d after the link went down, want 25001 (no base)", q)
	}
}
