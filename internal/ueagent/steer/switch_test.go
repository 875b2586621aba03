package steer

import (
	"math"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// TestSwitcher walks one session's uplink through switches, one packet per step, with the
// expectations of docs/pipeline.md "Uplink reorder contract".
func TestSwitcher(t *testing.T) {
	type step struct {
		name    string
		at      time.Duration // since t0
		leg     contract.Access
		timeout time.Duration
		want    Decision
	}
	cp, ep, ex := wire.MarkCurrentPath, wire.MarkEpoch, wire.MarkExPath
	var s Switcher
	for _, st := range []step{
		{"the first packet ever is not a switch", 0, g, ms(12), Decision{}},
		{"packets that stay on the leg are unmarked", ms(1), g, ms(12), Decision{}},
		{"no path changes nothing", ms(2), no, ms(12), Decision{}},
		{"a switch sends the EX-PATH marker of the new epoch (1) on the old leg and marks the packet CURRENT_PATH with the timeout in µs",
			ms(10), n, ms(12), Decision{Marks: cp | ep, Seq: 12000, ExPath: g, MarkerMarks: ex | ep}},
		{"packets within the timeout after the switch stay marked, without a new marker",
			ms(21.999), n, ms(12), Decision{Marks: cp | ep, Seq: 12000}},
		{"the timeout is the switch's: a later call's timeout does not change seq",
			ms(21.9995), n, ms(50), Decision{Marks: cp | ep, Seq: 12000}},
		{"packets from the timeout on are unmarked", ms(22), n, ms(12), Decision{}},
		{"switching back toggles the epoch back to 0", ms(30), g, ms(5), Decision{Marks: cp, Seq: 5000, ExPath: n, MarkerMarks: ex}},
		{"a switch within the marking window starts a new epoch and window", ms(31), n, ms(8), Decision{Marks: cp | ep, Seq: 8000, ExPath: g, MarkerMarks: ex | ep}},
		{"the new window runs from its own switch", ms(38.5), n, ms(8), Decision{Marks: cp | ep, Seq: 8000}},
		{"and ends at its own timeout", ms(39), n, ms(8), Decision{}},
	} {
		t.Run(st.name, func(t *testing.T) {
			if got := s.Next(t0.Add(st.at), st.leg, st.timeout); got != st.want {
				t.Errorf("got %+v, want %+v", got, st.want)
			}
		})
	}
	if s.Switches() != 3 || s.Leg() != n || s.Epoch() != 1 {
		t.Errorf("after the walk: %d switches on %v epoch %d, want 3 on non-3GPP epoch 1", s.Switches(), s.Leg(), s.Epoch())
	}
}

func TestSwitcherMarksAreValidJunctionHeaders(t *testing.T) {
	var s Switcher
	s.Next(t0, g, ms(10))
	for i, leg := range []contract.Access{n, g, n} {
		d := s.Next(t0.Add(time.Duration(i+1)*time.Second), leg, ms(10))
		marker := wire.Header{Type: wire.TypeData, Marks: d.MarkerMarks, Seq: 0x0a2d0007}
		if err := marker.Check(); err != nil || !marker.IsExPathMarker() {
			t.Errorf("switch %d: the marker %v is not a valid EX-PATH marker: %v", i, d.MarkerMarks, err)
		}
		data := wire.Header{Type: wire.TypeData, Marks: d.Marks, Proto: wire.ProtoIPv4, Length: 20, Seq: d.Seq}
		if err := data.Check(); err != nil {
			t.Errorf("switch %d: data marks %v: %v", i, d.Marks, err)
		}
		if d.Marks.Epoch() != d.MarkerMarks.Epoch() {
			t.Errorf("switch %d: the data's epoch %d differs from the marker's %d", i, d.Marks.Epoch(), d.MarkerMarks.Epoch())
		}
	}
}

func TestSwitcherReset(t *testing.T) {
	var s Switcher
	s.Next(t0, g, ms(10))
	s.Next(t0.Add(ms(1)), n, ms(10)) // epoch 1, marking
	s.Reset()
	if d := s.Next(t0.Add(ms(2)), g, ms(10)); d != (Decision{}) {
		t.Errorf("after Reset the next packet is not a switch, got %+v", d)
	}
	if d := s.Next(t0.Add(ms(3)), n, ms(10)); d.MarkerMarks != wire.MarkExPath || d.ExPath != g {
		t.Errorf("the epoch survives Reset: the next switch goes back to epoch 0, got %+v", d)
	}
}

func TestSwitcherSeqSaturates(t *testing.T) {
	var s Switcher
	s.Next(t0, g, 0)
	if d := s.Next(t0, n, 2*time.Hour); d.Seq != math.MaxUint32 {
		t.Errorf("a timeout beyond 2^32 µs gives seq %d, want %d", d.Seq, uint32(math.MaxUint32))
	}
	s.Next(t0, g, 0)
	if d := s.Next(t0, n, 0); d.Marks != 0 || d.ExPath != g {
		t.Errorf("a zero timeout sends the marker but marks nothing, got %+v", d)
	}
}

func TestReorderTimeout(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		rttOld, rttNew, rttVar time.Duration
		want                   time.Duration
	}{
		{"the old leg's extra RTT plus four RTT variations", ms(30), ms(10), ms(2), ms(28)},
		{"a slower new leg needs only the variation margin", ms(10), ms(30), ms(2), ms(8)},
		{"equal legs without variation get the 1 ms minimum", ms(10), ms(10), 0, ms(1)},
		{"unknown RTTs get the 1 ms minimum", 0, 0, 0, ms(1)},
		{"the timeout is at most 200 ms", ms(500), ms(10), 0, ms(200)},
		{"a huge variation is capped too", ms(20), ms(10), time.Second, ms(200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReorderTimeout(tc.rttOld, tc.rttNew, tc.rttVar); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
