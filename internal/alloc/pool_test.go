package alloc

import (
	"errors"
	"strings"
	"testing"
)

func TestPool(t *testing.T) {
	t.Run("sessions of one SUPI share its index, freed with the last", func(t *testing.T) {
		p := NewPool("user index", 0, 8)
		a, _ := p.Acquire("imsi-1", "ns/s1")
		b, _ := p.Acquire("imsi-1", "ns/s2")
		if a != b {
			t.Fatalf("%d != %d", a, b)
		}
		if p.Release("imsi-1", "ns/s1") {
			t.Error("freed while a session still uses it")
		}
		if !p.Release("imsi-1", "ns/s2") {
			t.Error("not freed with its last session")
		}
		if p.Used() != 0 {
			t.Errorf("used %d", p.Used())
		}
	})
	t.Run("an index is freed with its last referrer, whichever order they go in", func(t *testing.T) {
		p := NewPool("user index", 0, 8)
		for _, s := range []string{"ns/s1", "ns/s2", "ns/s2", "ns/s3"} { // s2 twice: one reference
			p.Acquire("imsi-1", s)
		}
		if n := p.Refs("imsi-1"); n != 3 {
			t.Fatalf("%d referrers, want 3", n)
		}
		for i, s := range []string{"ns/s1", "ns/s1", "ns/s3", "ns/s2"} { // the first one first
			freed := p.Release("imsi-1", s)
			if want := i == 3; freed != want || p.Refs("imsi-1") != []int{2, 2, 1, 0}[i] {
				t.Fatalf("release %d (%s): freed %v, %d referrers left", i, s, freed, p.Refs("imsi-1"))
			}
		}
	})
	t.Run("a restored pool goes on after the highest restored index, as before a restart", func(t *testing.T) {
		p := NewPool("application ID", 1, 8)
		for i, owner := range map[uint32]string{3: "policy/a", 5: "policy/b"} {
			if err := p.Restore(owner, owner, i); err != nil {
				t.Fatal(err)
			}
		}
		// 1, 2 and 4 are free, but the last allocation before the restart reached 5: a policy
		// deleted then (its sessions' overrides may still name its ID) is not succeeded at once.
		if got, _ := p.Acquire("policy/c", "policy/c"); got != 6 {
			t.Errorf("first allocation after the restore: %d, want 6", got)
		}
	})
	t.Run("a restored pool never hands out an index it restored", func(t *testing.T) {
		p := NewPool("user index", 0, 3)
		if err := p.Restore("imsi-1", "ns/s1", 0); err != nil {
			t.Fatal(err)
		}
		if err := p.Restore("imsi-2", "ns/s2", 2); err != nil {
			t.Fatal(err)
		}
		idx, err := p.Acquire("imsi-3", "ns/s3")
		if err != nil || idx != 1 {
			t.Fatalf("got %d, %v; want 1", idx, err)
		}
		if _, err := p.Acquire("imsi-4", "ns/s4"); !errors.Is(err, ErrExhausted) {
			t.Errorf("want ErrExhausted, got %v", err)
		}
	})
	t.Run("two owners restoring one index is an error naming both", func(t *testing.T) {
		p := NewPool("user index", 0, 3)
		_ = p.Restore("imsi-1", "ns/s1", 1)
		err := p.Restore("imsi-2", "ns/s2", 1)
		if err == nil || !strings.Contains(err.Error(), "imsi-1") || !strings.Contains(err.Error(), "imsi-2") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("a reserved first index is never allocated", func(t *testing.T) {
		p := NewPool("tunnel peer", 1, 3)
		a, _ := p.Acquire("gnb-a", "s1")
		b, _ := p.Acquire("gnb-b", "s2")
		if a == 0 || b == 0 || a == b {
			t.Errorf("got %d and %d", a, b)
		}
	})
	t.Run("freed indexes are reused only after the others", func(t *testing.T) {
		p := NewPool("seq", 0, 4)
		a, _ := p.Acquire("s1", "s1")
		p.Release("s1", "s1")
		b, _ := p.Acquire("s2", "s2")
		if a == b {
			t.Errorf("index %d reused at once; stale device state could alias it", a)
		}
	})
}
