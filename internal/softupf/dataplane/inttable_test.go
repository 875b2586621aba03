package dataplane

import (
	"math/rand/v2"
	"testing"
)

// intTable must behave as a map does: every key set and not deleted since is found with its
// last value, every other key is absent, whatever the order of sets and deletes (deletes move
// probe runs back) and the growths between them.
func TestIntTableAgreesWithAMap(t *testing.T) {
	for _, keys := range []uint64{8, 300, 5000} { // few keys: long runs of collisions and re-sets
		var tab intTable[uint64, uint32]
		want := map[uint64]uint32{}
		rng := rand.New(rand.NewPCG(keys, 7))
		for op := range 200_000 {
			k := rng.Uint64N(keys) * 0x1000 // strided, like addresses in a prefix
			switch rng.IntN(3) {
			case 0, 1:
				v := uint32(op)
				tab.set(k, v)
				want[k] = v
			case 2:
				tab.del(k)
				delete(want, k)
			}
			if op%1000 == 0 || keys == 8 {
				for k := range keys {
					k *= 0x1000
					got, ok := tab.get(k)
					w, wok := want[k]
					if ok != wok || got != w {
						t.Fatalf("keys %d, after op %d: get(%#x) = %d, %v; want %d, %v", keys, op, k, got, ok, w, wok)
					}
				}
			}
		}
		if tab.n != len(want) {
			t.Errorf("keys %d: %d entries, want %d", keys, tab.n, len(want))
		}
		if len(tab.slots)*3 < tab.n*4 {
			t.Errorf("keys %d: %d entries in %d slots: fuller than three quarters", keys, tab.n, len(tab.slots))
		}
	}
}
