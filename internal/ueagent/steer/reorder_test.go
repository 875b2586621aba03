package steer

import (
	"math"
	"slices"
	"testing"
	"time"
)

// op is one step on a reorder buffer: push seq at t0+at, or Expire at t0+at.
type op struct {
	at     time.Duration
	seq    uint32
	expire bool
}

func push(at time.Duration, seqs ...uint32) []op {
	out := make([]op, len(seqs))
	for i, s := range seqs {
		out[i] = op{at: at, seq: s}
	}
	return out
}

func expire(at time.Duration) []op { return []op{{at: at, expire: true}} }

func ops(groups ...[]op) []op { return slices.Concat(groups...) }

// harness is a buffer whose packets are their own sequence numbers.
type harness struct {
	r                  *Reorder[uint32]
	delivered, dropped []uint32
}

func newHarness(capacity int, timeout time.Duration) *harness {
	h := &harness{}
	h.r = NewReorder(capacity, func(v uint32) { h.delivered = append(h.delivered, v) }, func(v uint32) { h.dropped = append(h.dropped, v) })
	h.r.SetTimeout(timeout)
	return h
}

func (h *harness) run(os []op) {
	for _, o := range os {
		if o.expire {
			h.r.Expire(t0.Add(o.at))
		} else {
			h.r.Push(t0.Add(o.at), o.seq, o.seq)
		}
	}
}

const maxSeq = math.MaxUint32

func TestReorder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  int
		ops       []op
		delivered []uint32
		dropped   []uint32
		held      int
		stats     ReorderStats
	}{
		{"in-order packets are delivered at once", 8, push(0, 1, 2, 3),
			[]uint32{1, 2, 3}, nil, 0, ReorderStats{Delivered: 3}},
		{"the first packet sets the expected sequence number", 8, push(0, 1000, 1001),
			[]uint32{1000, 1001}, nil, 0, ReorderStats{Delivered: 2}},
		{"a packet ahead of the expected one is held", 8, push(0, 1, 3, 4),
			[]uint32{1}, nil, 2, ReorderStats{Delivered: 1}},
		{"a held run is released in order as soon as the gap fills", 8, push(0, 1, 3, 4, 2),
			[]uint32{1, 2, 3, 4}, nil, 0, ReorderStats{Delivered: 4}},
		{"gaps fill in any order", 8, push(0, 1, 5, 3, 2, 4),
			[]uint32{1, 2, 3, 4, 5}, nil, 0, ReorderStats{Delivered: 5}},
		{"a delivered packet's copy is dropped as a duplicate (redundant mode)", 8, push(0, 1, 1, 2, 2, 3, 3),
			[]uint32{1, 2, 3}, []uint32{1, 2, 3}, 0, ReorderStats{Delivered: 3, Duplicate: 3}},
		{"a copy of a held packet is dropped as a duplicate", 8, push(0, 1, 3, 3),
			[]uint32{1}, []uint32{3}, 1, ReorderStats{Delivered: 1, Duplicate: 1}},
		{"the gap stays open before the timeout", 8, ops(push(0, 1, 3), expire(ms(9.999))),
			[]uint32{1}, nil, 1, ReorderStats{Delivered: 1}},
		{"a gap is skipped when the oldest held packet has waited the timeout", 8, ops(push(0, 1, 3), push(ms(5), 5), expire(ms(10))),
			[]uint32{1, 3}, nil, 1, ReorderStats{Delivered: 2, TimedOut: 1}},
		{"each held packet waits the timeout from its own arrival", 8, ops(push(0, 1, 3), push(ms(5), 5), expire(ms(10)), expire(ms(15))),
			[]uint32{1, 3, 5}, nil, 0, ReorderStats{Delivered: 3, TimedOut: 2}},
		{"an expired packet releases the younger ones in front of it", 8, ops(push(0, 1), push(ms(1), 5), push(ms(2), 3), expire(ms(11))),
			[]uint32{1, 3, 5}, nil, 0, ReorderStats{Delivered: 3, TimedOut: 2}},
		{"a packet whose gap was skipped is delivered late, once", 8, ops(push(0, 1, 3), expire(ms(10)), push(ms(11), 2, 2)),
			[]uint32{1, 3, 2}, []uint32{2}, 0, ReorderStats{Delivered: 3, Late: 1, TimedOut: 1, Duplicate: 1}},
		{"a full window releases the oldest held packets rather than dropping", 4, push(0, 1, 3, 4, 5, 6, 7),
			[]uint32{1, 3, 4, 5, 6, 7}, nil, 0, ReorderStats{Delivered: 6, Overflow: 4}},
		{"a full window releases only what makes room", 4, push(0, 1, 4, 6, 8),
			[]uint32{1, 4}, nil, 2, ReorderStats{Delivered: 2, Overflow: 1}},
		{"a slide past several numbers releases the held packets it passes", 4, push(0, 1, 3, 5, 8),
			[]uint32{1, 3}, nil, 2, ReorderStats{Delivered: 2, Overflow: 1}},
		{"a packet skipped by an overflow is delivered late", 4, push(0, 1, 3, 4, 5, 6, 7, 2),
			[]uint32{1, 3, 4, 5, 6, 7, 2}, nil, 0, ReorderStats{Delivered: 7, Overflow: 4, Late: 1}},
		{"sequence numbers wrap from 2^32-1 to 1, skipping 0", 8, push(0, maxSeq-1, maxSeq, 1, 2),
			[]uint32{maxSeq - 1, maxSeq, 1, 2}, nil, 0, ReorderStats{Delivered: 4}},
		{"reordering across the wrap is put right", 8, push(0, maxSeq-1, 2, 1, maxSeq),
			[]uint32{maxSeq - 1, maxSeq, 1, 2}, nil, 0, ReorderStats{Delivered: 4}},
		{"a copy from before the wrap is a duplicate after it", 8, push(0, maxSeq, 1, 2, maxSeq),
			[]uint32{maxSeq, 1, 2}, []uint32{maxSeq}, 0, ReorderStats{Delivered: 3, Duplicate: 1}},
		{"seq 0 is unsequenced: delivered at once, the sequence unchanged", 8, push(0, 1, 3, 0, 2),
			[]uint32{1, 0, 2, 3}, nil, 0, ReorderStats{Delivered: 4}},
		{"a large jump is held aside, then followed after three packets", 8, push(0, 1, 2, 1_000_000, 1_000_001),
			[]uint32{1, 2}, nil, 2, ReorderStats{Delivered: 2}},
		{"three far packets in a row resynchronize", 8, push(0, 1, 2, 1_000_000, 1_000_001, 1_000_002, 1_000_003),
			[]uint32{1, 2, 1_000_000, 1_000_001, 1_000_002, 1_000_003}, nil, 0, ReorderStats{Delivered: 6, Resync: 1}},
		{"a UPF restart that resets the counter to 1 resynchronizes", 8, push(0, 3_000_000, 3_000_001, 1, 2, 3, 4),
			[]uint32{3_000_000, 3_000_001, 1, 2, 3, 4}, nil, 0, ReorderStats{Delivered: 6, Resync: 1}},
		{"held packets are delivered in order on a resync", 8, push(0, 1, 3, 4, 1_000_000, 1_000_001, 1_000_002),
			[]uint32{1, 3, 4, 1_000_000, 1_000_001, 1_000_002}, nil, 0, ReorderStats{Delivered: 6, Resync: 1}},
		{"a far run reordered among itself comes out in order after the resync", 8, push(0, 1, 1_000_001, 1_000_002, 1_000_000),
			[]uint32{1, 1_000_000, 1_000_001, 1_000_002}, nil, 0, ReorderStats{Delivered: 4, Resync: 1}},
		{"a lone far packet is dropped as stale when the sequence goes on", 8, push(0, 1, 2, 900_000, 3),
			[]uint32{1, 2, 3}, []uint32{900_000}, 0, ReorderStats{Delivered: 3, Stale: 1}},
		{"far packets far from each other are strays, not a run", 8, push(0, 1, 900_000, 1_900_000, 2_900_000, 2),
			[]uint32{1, 2}, []uint32{900_000, 1_900_000, 2_900_000}, 0, ReorderStats{Delivered: 2, Stale: 3}},
		{"far packets that wait the timeout resynchronize", 8, ops(push(0, 1, 900_000), expire(ms(10))),
			[]uint32{1, 900_000}, nil, 0, ReorderStats{Delivered: 2, Resync: 1}},
		// After 1 and 4097 (the 8 in front of 4097 timed out), 4098 is expected: 2 is 4096 behind,
		// the history's reach, and 1 is one further.
		{"a packet as far behind as the history reaches is judged by it, one further is far", 8,
			ops(push(0, 1, historyLen+1), expire(ms(10)), push(ms(11), 2, 2, 1)),
			[]uint32{1, historyLen + 1, 2}, []uint32{2}, 1, ReorderStats{Delivered: 3, Late: 1, Duplicate: 1, TimedOut: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(tc.capacity, ms(10))
			h.run(tc.ops)
			if !slices.Equal(h.delivered, tc.delivered) {
				t.Errorf("delivered %v, want %v", h.delivered, tc.delivered)
			}
			if !slices.Equal(h.dropped, tc.dropped) {
				t.Errorf("dropped %v, want %v", h.dropped, tc.dropped)
			}
			if h.r.Len() != tc.held {
				t.Errorf("holds %d, want %d", h.r.Len(), tc.held)
			}
			if h.r.Stats() != tc.stats {
				t.Errorf("stats %+v, want %+v", h.r.Stats(), tc.stats)
			}
		})
	}
}

func TestReorderDeadline(t *testing.T) {
	t.Run("Deadline is zero when nothing is held", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(push(0, 1, 2))
		if d := h.r.Deadline(); !d.IsZero() {
			t.Errorf("got %v, want zero", d)
		}
	})
	t.Run("Deadline is the oldest held packet's arrival plus the timeout", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(ops(push(0, 1), push(ms(2), 3), push(ms(4), 5)))
		if got, want := h.r.Deadline(), t0.Add(ms(12)); !got.Equal(want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("SetTimeout moves the deadline", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(ops(push(0, 1), push(ms(2), 3)))
		h.r.SetTimeout(ms(20))
		if got, want := h.r.Deadline(), t0.Add(ms(22)); !got.Equal(want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("Deadline covers far packets set aside", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(ops(push(0, 1), push(ms(3), 900_000)))
		if got, want := h.r.Deadline(), t0.Add(ms(13)); !got.Equal(want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("an early deadline after a release is harmless: Expire finds the next one", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(ops(push(0, 1, 3), push(ms(5), 5), push(ms(6), 2))) // 2 releases 3; 5 waits from 5 ms
		if d := h.r.Deadline(); d.After(t0.Add(ms(15))) {
			t.Fatalf("deadline %v is late", d)
		}
		h.r.Expire(h.r.Deadline())
		if !slices.Equal(h.delivered, []uint32{1, 2, 3}) {
			t.Errorf("delivered %v before 5's timeout", h.delivered)
		}
		if got, want := h.r.Deadline(), t0.Add(ms(15)); !got.Equal(want) {
			t.Errorf("after Expire the deadline is %v, want %v", got, want)
		}
	})
}

func TestReorderFlushAndReset(t *testing.T) {
	t.Run("Flush delivers the held packets in order, drops far ones, and the sequence goes on", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(push(0, 1, 5, 3, 900_000))
		h.r.Flush()
		h.run(push(ms(1), 4, 6))
		if want := []uint32{1, 3, 5, 4, 6}; !slices.Equal(h.delivered, want) {
			t.Errorf("delivered %v, want %v", h.delivered, want)
		}
		if want := []uint32{900_000}; !slices.Equal(h.dropped, want) {
			t.Errorf("dropped %v, want %v", h.dropped, want)
		}
		if st := h.r.Stats(); st.Late != 1 || st.Stale != 1 || h.r.Len() != 0 {
			t.Errorf("stats %+v, holding %d: want 4 late, 900000 stale, nothing held", st, h.r.Len())
		}
	})
	t.Run("Reset flushes and forgets: the next packet starts a new sequence with no history", func(t *testing.T) {
		h := newHarness(8, ms(10))
		h.run(push(0, 1, 3))
		h.r.Reset()
		h.run(push(ms(1), 100, 101, 1))
		// 1 is 101 behind the new sequence and not known as delivered: late.
		if want := []uint32{1, 3, 100, 101, 1}; !slices.Equal(h.delivered, want) {
			t.Errorf("delivered %v, want %v", h.delivered, want)
		}
		if st := h.r.Stats(); st.Late != 1 || h.r.Len() != 0 || h.dropped != nil {
			t.Errorf("stats %+v holding %d dropped %v, want 1 late, nothing held or dropped", st, h.r.Len(), h.dropped)
		}
	})
	t.Run("a capacity below one holds one packet", func(t *testing.T) {
		h := newHarness(0, ms(10))
		h.run(push(0, 1, 3))
		if want := []uint32{1}; !slices.Equal(h.delivered, want) || h.r.Cap() != 1 || h.r.Len() != 1 {
			t.Errorf("delivered %v holding %d of %d, want %v holding 1 of 1", h.delivered, h.r.Len(), h.r.Cap(), want)
		}
		h.run(push(0, 4)) // no room for 4: 3 is released, 2 given up on
		if want := []uint32{1, 3, 4}; !slices.Equal(h.delivered, want) || h.r.Stats().Overflow != 1 {
			t.Errorf("delivered %v with %d overflow, want %v with 1", h.delivered, h.r.Stats().Overflow, want)
		}
	})
}

func TestSeqDist(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to uint32
		want     int64
	}{
		{"the next number is one step ahead", 1, 2, 1},
		{"1 follows 2^32-1 (0 is skipped)", maxSeq, 1, 1},
		{"2^32-1 is one step behind 1", 1, maxSeq, -1},
		{"across the wrap ahead (4 steps to 2^32-1, 1 to 1, 4 to 5)", maxSeq - 4, 5, 9},
		{"across the wrap behind", 5, maxSeq - 4, -9},
		{"the same number is no step", 77, 77, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := seqDist(tc.from, tc.to); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBufferTimeout(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		rtt3, rttN, var3, varN time.Duration
		want                   time.Duration
	}{
		{"the RTT difference plus four times the larger variation", ms(10), ms(25), ms(1), ms(2), ms(23)},
		{"the order of the legs does not matter", ms(25), ms(10), ms(2), ms(1), ms(23)},
		{"equal legs without variation get the 1 ms minimum", ms(10), ms(10), 0, 0, ms(1)},
		{"an unknown RTT makes the difference the other leg's whole RTT", 0, ms(30), 0, 0, ms(30)},
		{"the timeout is at most 200 ms", ms(10), ms(400), 0, 0, ms(200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BufferTimeout(tc.rtt3, tc.rttN, tc.var3, tc.varN); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
