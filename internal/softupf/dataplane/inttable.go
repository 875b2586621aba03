package dataplane

// intTable is the exact-match tables' store: open addressing with linear probing over one array
// of slots that hold key and value together. A lookup of a present key usually reads one slot,
// one cache line. Go's map reads its directory, a table, a group's control word and then the
// slot, each a cache miss once 100,000 users' entries no longer fit the CPU's caches: the
// sessions and overrides lookups were a third of a downlink packet's time at 100,000 users
// (docs/softupf.md). Writes come from the control plane under the pipeline's write
// lock; lookups run under its read lock.

type intKey interface{ ~uint32 | ~uint64 }

type intSlot[K intKey, V any] struct {
	key  K
	used bool
	val  V
}

type intTable[K intKey, V any] struct {
	slots []intSlot[K, V]
	shift uint8 // 64 - log2(len(slots))
	n     int
}

// home is the slot a key's probe starts at: Fibonacci hashing, which spreads consecutive keys
// (addresses, TEIDs) over the table.
func (t *intTable[K, V]) home(k K) uint64 {
	return (uint64(k) * 0x9E3779B97F4A7C15) >> t.shift
}

func (t *intTable[K, V]) get(k K) (V, bool) {
	if p := t.ref(k); p != nil {
		return *p, true
	}
	var zero V
	return zero, false
}

// ref is k's value in place (nil: none), for values too large to copy on every lookup (get
// copies it); valid until the next write.
func (t *intTable[K, V]) ref(k K) *V {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			return nil
		}
		if s.key == k {
			return &s.val
		}
	}
}

func (t *intTable[K, V]) set(k K, v V) {
	if (t.n+1)*4 > len(t.slots)*3 { // at most three quarters full
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			*s = intSlot[K, V]{key: k, used: true, val: v}
			t.n++
			return
		}
		if s.key == k {
			s.val = v
			return
		}
	}
}

// del removes k, moving later slots of its probe run back so that every key stays reachable
// from its home without tombstones.
func (t *intTable[K, V]) del(k K) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(k)
	for ; ; i = (i + 1) & mask {
		if !t.slots[i].used {
			return
		}
		if t.slots[i].key == k {
			break
		}
	}
	for j := (i + 1) & mask; t.slots[j].used; j = (j + 1) & mask {
		// The key at j may fill the hole at i unless its home lies cyclically in (i, j].
		if h := t.home(t.slots[j].key); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = intSlot[K, V]{}
	t.n--
}

func (t *intTable[K, V]) grow() {
	size := max(16, 2*len(t.slots))
	old := t.slots
	t.slots, t.n = make([]intSlot[K, V], size), 0
	t.shift = uint8(64 - log2(size))
	for i := range old {
		if old[i].used {
			t.set(old[i].key, old[i].val)
		}
	}
}

func log2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}
