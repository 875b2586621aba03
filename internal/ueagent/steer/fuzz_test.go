package steer

import (
	"testing"
	"time"
)

// FuzzReorder pushes a random sequence stream (small steps, reordering, copies, far jumps,
// unsequenced packets, timeouts) and checks that no sequence number is delivered twice between
// resyncs, that every packet is delivered or dropped exactly once, and that nothing is lost:
// delivered + dropped + held == pushed at every step, delivered + dropped == pushed after Flush.
func FuzzReorder(f *testing.F) {
	f.Add(uint32(1), uint8(8), []byte{4, 1, 4, 2, 3, 1, 4, 0, 0, 9, 5, 3})
	f.Add(uint32(maxSeq-3), uint8(4), []byte{4, 1, 4, 7, 4, 2, 3, 3, 0, 15, 4, 1})
	f.Add(uint32(100), uint8(2), []byte{1, 1, 4, 1, 4, 1, 1, 200, 4, 1, 4, 1, 2, 0, 0, 15})
	f.Fuzz(func(t *testing.T, start uint32, capacity uint8, ops []byte) {
		var (
			r        *Reorder[int]
			seqs     []uint32 // by push index
			outcome  []int8   // 0 held, 1 delivered, 2 dropped
			era      = map[uint32]bool{}
			eraStamp uint64
			out      int
		)
		settle := func(i int, how int8) {
			if outcome[i] != 0 {
				t.Fatalf("packet %d (seq %d) handed out twice", i, seqs[i])
			}
			outcome[i] = how
			out++
		}
		r = NewReorder(int(capacity%32)+1,
			func(i int) {
				settle(i, 1)
				if st := r.Stats().Resync; st != eraStamp {
					eraStamp = st
					clear(era)
				}
				if s := seqs[i]; s != 0 {
					if era[s] {
						t.Fatalf("seq %d delivered twice", s)
					}
					era[s] = true
				}
			},
			func(i int) { settle(i, 2) })
		r.SetTimeout(5 * time.Millisecond)
		if start == 0 {
			start = 1
		}
		seq, now := start, t0
		for i := 0; i+1 < len(ops); i += 2 {
			kind, x := ops[i]%8, ops[i+1]
			now = now.Add(time.Duration(x%8) * time.Millisecond)
			s := seq
			switch kind {
			case 0:
				r.Expire(now)
				continue
			case 1: // a far jump, ahead or behind
				seq += uint32(x)<<16 | 1
				s = seq
			case 2:
				s = 0
			case 3: // an old one (a late packet or a copy)
				s = seq - uint32(x%32)
			default: // mostly forward, a little reordered
				seq += uint32(x % 4)
				s = seq - uint32(x%3)
			}
			if kind != 2 && s == 0 {
				s = 1
			}
			if seq == 0 {
				seq = 1
			}
			seqs, outcome = append(seqs, s), append(outcome, 0)
			r.Push(now, s, len(seqs)-1)
			if out+r.Len() != len(seqs) {
				t.Fatalf("after %d pushes: %d handed out + %d held", len(seqs), out, r.Len())
			}
		}
		r.Flush()
		st := r.Stats()
		if r.Len() != 0 || out != len(seqs) || int(st.Delivered+st.Duplicate+st.Stale) != len(seqs) {
			t.Fatalf("after Flush: %d held, %d handed out, stats %+v, of %d pushed", r.Len(), out, st, len(seqs))
		}
	})
}
