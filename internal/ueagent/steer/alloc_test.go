package steer

import (
	"testing"
	"time"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

// The per-packet calls allocate nothing.

func wantNoAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(200, f); n != 0 {
		t.Errorf("%s allocates %.1f times per run, want 0", name, n)
	}
}

func TestPerPacketCallsDoNotAllocate(t *testing.T) {
	c, err := NewClassifier([]desired.Policy{
		pol("video", 7, 10, junctionv1.TrafficDescriptor{DestinationPrefixes: prefixes("198.51.100.0/24"), Protocol: junctionv1.ProtocolTCP, DestinationPorts: ports(443, 443)}, apiSmallest),
		pol("all", 1, 100, junctionv1.TrafficDescriptor{SourcePrefixes: prefixes("10.45.0.0/16")}, apiLB30),
	}, junctionv1.ATSSSSessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	hit := pkt{src: ue, dst: server, proto: tcp, sport: 40000, dport: 443}.bytes()
	miss := pkt{src: "10.46.0.1", dst: "203.0.113.1", proto: udp}.bytes()
	bad := hit[:19]
	wantNoAllocs(t, "Classify", func() {
		c.Classify(hit)
		c.Classify(miss)
		c.Classify(bad)
	})

	s := desired.Steering{Mode: contract.ModeAutonomousLoadBalance}
	var seq uint32
	wantNoAllocs(t, "Choose", func() {
		seq++
		Choose(s, Path{RTT: 10000}, Path{RTT: 20000}, 70, seq)
		Choose(desired.Steering{Mode: contract.ModeRedundant}, Path{RTT: 10000}, Path{RTT: 20000}, 0, seq)
	})

	var sw Switcher
	now := t0
	wantNoAllocs(t, "Switcher.Next", func() {
		now = now.Add(time.Millisecond)
		leg := contract.Access3GPP
		if now.UnixMilli()%7 == 0 {
			leg = contract.AccessNon3GPP
		}
		sw.Next(now, leg, ReorderTimeout(ms(20), ms(10), ms(1)))
	})

	var delivered, dropped int
	r := NewReorder(64, func(int) { delivered++ }, func(int) { dropped++ })
	r.SetTimeout(ms(10))
	var next uint32 = maxSeq - 1000 // crosses the wrap
	wantNoAllocs(t, "Reorder", func() {
		now = now.Add(time.Millisecond)
		a, b := next, seqAfter(next)
		next = seqAfter(b)
		r.PushFrom(now, 2, b, 1) // swapped pair: held, then released
		r.PushFrom(now, 1, a, 1)
		r.Push(now, a, 1)                        // duplicate
		r.Push(now, seqAfter(seqAfter(next)), 1) // a gap, held until Expire
		r.Expire(now.Add(ms(10)))
		r.Deadline()
		r.Push(now, next+1_000_000, 1) // far: set aside, then dropped as stale
		r.Push(now, 0, 1)              // unsequenced
		// The timer's adaptation (issue 31).
		timeout := AdaptiveTimeout(ms(5), r.Skew(now))
		r.SetTimeout(timeout)
		r.SetWindow(ReorderWindow(8000, timeout))
	})
	wantNoAllocs(t, "Reorder resync", func() {
		now = now.Add(time.Millisecond)
		next += 1_000_000
		for range resyncAfter {
			r.Push(now, next, 1)
			next = seqAfter(next)
		}
	})
	if r.Stats().Resync == 0 {
		t.Error("the resync run did not resync")
	}
	if delivered == 0 || dropped == 0 {
		t.Errorf("the reorder run delivered %d and dropped %d packets: it did not exercise the buffer", delivered, dropped)
	}

	l := NewLeg(NewClock(t0), DefaultLegConfig())
	l.LinkUp(t0)
	wantNoAllocs(t, "Leg", func() {
		now = now.Add(10 * time.Millisecond)
		l.Traffic(now)
		ts := l.Sent(now)
		l.Reply(now.Add(time.Millisecond), ts)
		l.Tick(now)
		l.NextDeadline(now)
		l.Event()
		l.PathRTT()
	})
}
