package linkem

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// At 8 Mbit/s a 1000-byte frame takes 1 ms on the wire; back-to-back frames leave 1 ms apart,
// each Delay after its serialization ends.
func TestRateAndDelay(t *testing.T) {
	s := NewShaper(Params{Rate: 8e6, Delay: 10 * time.Millisecond, Queue: 10_000}, 1)
	for i := 0; i < 5; i++ {
		d, drop := s.Admit(t0, 1000)
		want := t0.Add(time.Duration(i+1)*time.Millisecond + 10*time.Millisecond)
		if drop != "" || !d.Equal(want) {
			t.Fatalf("frame %d: delivered %v (%s), want %v", i, d.Sub(t0), drop, want.Sub(t0))
		}
	}
	// Idle later: no backlog, the next frame only pays its own serialization.
	d, _ := s.Admit(t0.Add(time.Second), 1000)
	if want := t0.Add(time.Second + 11*time.Millisecond); !d.Equal(want) {
		t.Fatalf("after idle: %v, want %v", d.Sub(t0), want.Sub(t0))
	}
}

// The queue holds Queue bytes waiting for the wire; more is dropped at the tail.
func TestQueueDropsAtTheTail(t *testing.T) {
	s := NewShaper(Params{Rate: 8e6, Queue: 3000}, 1)
	var drops int
	for i := 0; i < 10; i++ {
		if _, drop := s.Admit(t0, 1000); drop == DropQueue {
			drops++
		}
	}
	// At t0 the first three fit (3000 bytes waiting), the other seven do not.
	if drops != 7 || s.Stats().QueueDrops != 7 || s.Stats().Delivered != 3 {
		t.Fatalf("%d drops, stats %+v; want 7 dropped of 10 with a 3000-byte queue", drops, s.Stats())
	}
	// 1 ms later one frame has left: room for one more.
	if _, drop := s.Admit(t0.Add(time.Millisecond), 1000); drop != "" {
		t.Fatalf("after one frame left: %s", drop)
	}
}

func TestJitterKeepsOrder(t *testing.T) {
	s := NewShaper(Params{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}, 7)
	var last time.Time
	var spread time.Duration
	for i := 0; i < 1000; i++ {
		now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		d, _ := s.Admit(now, 100)
		if d.Before(last) {
			t.Fatalf("frame %d delivered before the one ahead of it", i)
		}
		if lat := d.Sub(now); lat < 5*time.Millisecond || lat > 15*time.Millisecond+100*time.Microsecond*1000 {
			t.Fatalf("frame %d: latency %v outside delay ± jitter", i, lat)
		}
		spread = max(spread, d.Sub(now)-5*time.Millisecond)
		last = d
	}
	if spread < 5*time.Millisecond {
		t.Fatalf("latencies spread over %v; want jitter to show", spread)
	}
}

func TestLossModels(t *testing.T) {
	const n = 200_000
	measure := func(p Params) float64 {
		s := NewShaper(p, 42)
		for i := 0; i < n; i++ {
			s.Admit(t0, 100)
		}
		return float64(s.Stats().Lost) / n
	}
	if got := measure(Params{Loss: 0.05}); math.Abs(got-0.05) > 0.0025 {
		t.Errorf("Bernoulli 5%%: measured %.4f", got)
	}
	ge := &GilbertElliott{P: 0.01, R: 0.25, LossBad: 0.5}
	want := ge.P * ge.LossBad / (ge.P + ge.R) // (R*LossGood + P*LossBad)/(P+R), LossGood 0
	if got := measure(Params{Burst: ge}); math.Abs(got-want)/want > 0.05 {
		t.Errorf("Gilbert-Elliott: measured %.4f, want %.4f", got, want)
	}
	s := NewShaper(Params{Down: true}, 1)
	if _, drop := s.Admit(t0, 100); drop != DropDown {
		t.Errorf("down link: %q", drop)
	}
}

// A shared medium: one Shaper for two UEs' downlinks. UE 1's burst queues UE 2's frame behind
// it, so UE 2's latency grows by the burst's serialization time (Fig. 13's effect).
func TestSharedMediumCouplesLatency(t *testing.T) {
	cell := NewShaper(Params{Rate: 8e6, Delay: 5 * time.Millisecond, Queue: 100_000}, 1)
	alone, _ := cell.Admit(t0, 1000) // UE 2 on an idle cell: 1 ms + 5 ms
	if got := alone.Sub(t0); got != 6*time.Millisecond {
		t.Fatalf("idle cell: %v", got)
	}
	later := t0.Add(time.Second)
	for i := 0; i < 20; i++ {
		cell.Admit(later, 1000) // UE 1's burst: 20 ms of serialization
	}
	d, _ := cell.Admit(later, 1000) // UE 2 again
	if got := d.Sub(later); got != 26*time.Millisecond {
		t.Fatalf("behind a 20-frame burst: %v, want 26 ms", got)
	}
}
