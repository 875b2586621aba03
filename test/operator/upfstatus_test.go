package operator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

const (
	// statusLag is how long the UPF's counts may trail the device: about a second (docs/api.md),
	// with room for a loaded machine, and far under a 30 s refresh timer.
	statusLag = 5 * time.Second
	// burstTimeout: a burst of sessions created → all of them on the UPF.
	burstTimeout = 2 * time.Minute
)

// TestUPFStatusFollowsTheDevice: status.sessions, status.users and the sessions row of
// status.tables follow what the UPF holds within statusLag, both after a burst of 200 sessions
// and after 50 of them are deleted; and the burst costs the UPF at most about one status write a
// second, not one per session.
func TestUPFStatusFollowsTheDevice(t *testing.T) {
	const n, deleted = 200, 50
	r := newUPFRig(t, "upf")
	ns, upf := r.ns, r.upf
	size, err := r.sch.TableSize("sessions")
	if err != nil {
		t.Fatal(err)
	}
	startOperator(t, ns, operatorOptions{})
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	writes := statusWrites(t, upf)
	start := time.Now()
	sessions := make([]*junctionv1.ATSSSSession, n)
	for i := range sessions {
		sessions[i] = session(ns, fmt.Sprintf("s%d", i), fmt.Sprintf("imsi-00101%010d", i+1), fmt.Sprintf("10.60.0.%d", i+1), "upf", "n", "")
	}
	createAll(t, sessions)
	waitSessionsEntries(t, r, n)
	onDevice := time.Since(start)
	waitUPFCounts(t, upf, n, size)
	elapsed := time.Since(start)
	// One write a second at most, from the first change on, and a little room for writes that
	// are not the counts'.
	got, limit := writes(), int(elapsed/time.Second)+3
	t.Logf("%d sessions on the UPF after %v, in its status after %v, in %d status writes", n, onDevice.Round(time.Millisecond), elapsed.Round(time.Millisecond), got)
	if got > limit {
		t.Errorf("%d UPF status writes while %d sessions were programmed (%v on the UPF, %v until the status showed them); want at most %d",
			got, n, onDevice.Round(time.Millisecond), elapsed.Round(time.Millisecond), limit)
	}

	for _, s := range sessions[:deleted] {
		if err := k8s.Delete(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	waitSessionsEntries(t, r, n-deleted)
	waitUPFCounts(t, upf, n-deleted, size)
}

// createAll creates the objects from a few goroutines at once, as a burst.
func createAll(t *testing.T, sessions []*junctionv1.ATSSSSession) {
	t.Helper()
	const creators = 8
	var wg sync.WaitGroup
	errs := make(chan error, len(sessions))
	for c := range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < len(sessions); i += creators {
				if err := k8s.Create(context.Background(), sessions[i]); err != nil {
					errs <- fmt.Errorf("create %s: %w", sessions[i].Name, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitSessionsEntries waits until the UPF's sessions table holds n entries.
func waitSessionsEntries(t *testing.T, r upfRig, n int) {
	t.Helper()
	eventually(t, burstTimeout, fmt.Sprintf("%d sessions entries on the UPF", n), func() error {
		es, err := r.u.entries(r.sch)
		if err != nil {
			return err
		}
		if got := countTable(es, "sessions"); got != n {
			return fmt.Errorf("%d sessions entries", got)
		}
		return nil
	})
}

// waitUPFCounts waits statusLag for the UPF's status to show n sessions, each of its own UE,
// in a sessions table of the given size.
func waitUPFCounts(t *testing.T, upf *junctionv1.UserPlaneFunction, n int, size int64) {
	t.Helper()
	eventually(t, statusLag, fmt.Sprintf("the UPF's status shows %d sessions", n), func() error {
		st := upfStatus(t, upf)
		var table *junctionv1.TableUsage
		for i := range st.Tables {
			if st.Tables[i].Name == "sessions" {
				table = &st.Tables[i]
			}
		}
		if st.Sessions != int32(n) || st.Users != int32(n) || table == nil || table.Used != int64(n) || table.Size != size {
			return fmt.Errorf("status.sessions %d, status.users %d, sessions table %+v; want %d, %d, %d/%d", st.Sessions, st.Users, table, n, n, n, size)
		}
		return nil
	})
}

// statusWrites counts the writes to the UPF from now on (a watch's Modified events).
func statusWrites(t *testing.T, upf *junctionv1.UserPlaneFunction) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wc, err := client.NewWithWatch(ownConnection(restCfg), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var cur junctionv1.UserPlaneFunction
	if err := wc.Get(ctx, client.ObjectKeyFromObject(upf), &cur); err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &junctionv1.UserPlaneFunctionList{}, client.InNamespace(upf.Namespace),
		client.MatchingFields{"metadata.name": upf.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cur.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var n atomic.Int64
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				n.Add(1)
			}
		}
	}()
	return func() int { return int(n.Load()) }
}
