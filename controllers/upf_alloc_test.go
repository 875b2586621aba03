package controllers

import (
	"slices"
	"testing"

	"github.com/junction-atsss/junction/internal/alloc"
)

func newAllocRuntime() *upfRuntime {
	f := &Fleet{}
	f.init()
	return &upfRuntime{
		f:        f,
		users:    alloc.NewPool("user index", 0, 8),
		seqs:     alloc.NewPool("sequence index", 0, 8),
		peers:    alloc.NewPool("tunnel peer index", 1, 8),
		usages:   alloc.NewPool("usage index", 1, 8),
		flows:    alloc.NewPool("QoS flow index", 0, 8),
		sessions: map[string]sessionAlloc{},
		byUser:   map[uint32]map[string]struct{}{},
	}
}

// The indexes a session acquired for a write that failed are freed once a changed spec's
// indexes are committed: a SUPI and gNB edited while the session waited (TableFull, UPF not
// connected) must not keep their indexes for good.
func TestIndexesOfAFailedWriteAreFreedWhenTheEditedSpecCommits(t *testing.T) {
	rt := newAllocRuntime()
	const key = "ns/s1"
	if _, err := rt.acquire(key, need{supi: "imsi-1", gnb: "10.0.0.1", exception: true, flows: 2}); err != nil {
		t.Fatal(err)
	}
	// The write failed; the user edits the SUPI and the gNB, drops the exception and the QoS
	// flows, and the next write succeeds.
	next, err := rt.acquire(key, need{supi: "imsi-2", gnb: "10.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	peers, users := rt.commit(key, next)
	if !slices.Equal(peers, []string{"10.0.0.1"}) || len(users) != 1 {
		t.Errorf("commit freed gNBs %v and users %v; want gNB 10.0.0.1 and the first SUPI's user", peers, users)
	}
	if _, held := rt.users.Lookup("imsi-1"); held {
		t.Error("imsi-1 keeps its user index after the session moved to imsi-2")
	}
	if _, held := rt.peers.Lookup("10.0.0.1"); held {
		t.Error("gNB 10.0.0.1 keeps its tunnel peer index after the session moved to 10.0.0.2")
	}
	if n := rt.seqs.Used(); n != 0 {
		t.Errorf("%d sequence indexes in use after the session stopped being an exception", n)
	}
	if n := rt.flows.Used(); n != 0 {
		t.Errorf("%d QoS flow indexes in use after the session dropped its QoS flows", n)
	}
	if rt.users.Used() != 1 || rt.peers.Used() != 1 {
		t.Errorf("%d user and %d peer indexes in use; want the new SUPI's and gNB's only", rt.users.Used(), rt.peers.Used())
	}
}

// A superseded allocation is not freed before the commit (entries that use it may still be on
// the device until the new ones are written), and a spec edited back keeps its index.
func TestSupersededIndexesWaitForTheCommitAndAnEditBackKeepsThem(t *testing.T) {
	rt := newAllocRuntime()
	const key = "ns/s1"
	first, _ := rt.acquire(key, need{supi: "imsi-1"})
	rt.commit(key, first)
	rt.acquire(key, need{supi: "imsi-2"}) // write fails
	if _, held := rt.users.Lookup("imsi-1"); !held {
		t.Fatal("imsi-1's index freed before the new entries were written")
	}
	back, _ := rt.acquire(key, need{supi: "imsi-1"}) // edited back; this write succeeds
	if back.user != first.user {
		t.Errorf("edited back to imsi-1: user index %d, want its own %d", back.user, first.user)
	}
	if _, users := rt.commit(key, back); len(users) != 1 {
		t.Errorf("commit freed users %v; want imsi-2's only", users)
	}
	if _, held := rt.users.Lookup("imsi-2"); held || rt.users.Used() != 1 {
		t.Errorf("imsi-2 held: %v, %d user indexes in use; want imsi-1's only", held, rt.users.Used())
	}
}

// A deleted session frees what it committed, what is pending and what a spec change superseded.
func TestADeletedSessionFreesSupersededIndexes(t *testing.T) {
	rt := newAllocRuntime()
	const key = "ns/s1"
	rt.acquire(key, need{supi: "imsi-1", gnb: "10.0.0.1"})
	rt.acquire(key, need{supi: "imsi-2", gnb: "10.0.0.2"})
	peers, users := rt.release(key)
	slices.Sort(peers)
	if !slices.Equal(peers, []string{"10.0.0.1", "10.0.0.2"}) || len(users) != 2 {
		t.Errorf("release freed gNBs %v and users %v; want both gNBs and both users", peers, users)
	}
	if rt.users.Used() != 0 || rt.peers.Used() != 0 || rt.usages.Used() != 0 {
		t.Errorf("%d user, %d peer and %d usage indexes left in use", rt.users.Used(), rt.peers.Used(), rt.usages.Used())
	}
}

// A session keeps one usage cell through spec changes (its usage goes on counting), gets one
// of its own (from 1: cell 0 is where entries without one count), and frees it when deleted.
func TestASessionKeepsItsUsageIndexUntilDeleted(t *testing.T) {
	rt := newAllocRuntime()
	a, _ := rt.acquire("ns/a", need{supi: "imsi-1"})
	rt.commit("ns/a", a)
	b, _ := rt.acquire("ns/b", need{supi: "imsi-1"})
	if a.usage == 0 || b.usage == 0 || a.usage == b.usage {
		t.Fatalf("usage indexes %d and %d; want two distinct ones from 1", a.usage, b.usage)
	}
	moved, _ := rt.acquire("ns/a", need{supi: "imsi-2", gnb: "10.0.0.1", exception: true})
	rt.commit("ns/a", moved)
	if moved.usage != a.usage {
		t.Errorf("after a spec change the session counts into cell %d, want its own %d", moved.usage, a.usage)
	}
	rt.release("ns/a")
	if _, held := rt.usages.Lookup("ns/a"); held || rt.usages.Used() != 1 {
		t.Errorf("deleted session's usage index held: %v; %d in use, want b's only", held, rt.usages.Used())
	}
}
