package controllers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The writer gives way to session requests (n4_writer.go): no worker writes while one is in
// progress or for n4WriterYield after the last; the overdue worker writes anyway once the
// oldest change has waited n4WriterMaxDefer.
func TestN4WriterGivesWayToSessionRequests(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name                string
		requests            int32
		lastEnd, oldest     time.Duration // how long ago
		worker, overdueOnes bool
	}{
		{name: "a request in progress", requests: 1, lastEnd: time.Hour, oldest: time.Second},
		{name: "a request in progress, oldest change 11 s old", requests: 1, lastEnd: time.Hour, oldest: 11 * time.Second, overdueOnes: true},
		{name: "the last request ended 50 ms ago", lastEnd: 50 * time.Millisecond, oldest: time.Second},
		{name: "the last request ended 150 ms ago", lastEnd: 150 * time.Millisecond, oldest: time.Second, worker: true, overdueOnes: true},
		{name: "no request ever", lastEnd: time.Duration(now.UnixNano()), oldest: 0, worker: true, overdueOnes: true},
	} {
		w := newN4Writer(nil)
		w.requests.Store(c.requests)
		w.lastEnd.Store(now.Add(-c.lastEnd).UnixNano())
		w.queue = []queuedKey{{types.NamespacedName{Namespace: "ns", Name: "n4-upf-1"}, now.Add(-c.oldest)}}
		w.mu.Lock()
		worker, overdue := w.mayWriteLocked(false), w.mayWriteLocked(true)
		w.mu.Unlock()
		if worker != c.worker || overdue != c.overdueOnes {
			t.Errorf("%s: a worker may write %v, the overdue one %v; want %v, %v", c.name, worker, overdue, c.worker, c.overdueOnes)
		}
		if w.wakeTimer != nil {
			w.wakeTimer.Stop()
		}
	}
}

// A worker that may not write yet is woken when it may: here n4WriterYield after the last
// request ended.
func TestN4WriterWakesAfterTheYield(t *testing.T) {
	w := newN4Writer(nil)
	w.queue = []queuedKey{{types.NamespacedName{Namespace: "ns", Name: "n4-upf-1"}, time.Now()}}
	w.begin()
	w.end()
	woken := make(chan time.Time)
	go func() {
		w.mu.Lock()
		for !w.mayWriteLocked(false) {
			w.wake.Wait()
		}
		w.mu.Unlock()
		woken <- time.Now()
	}()
	start := time.Now()
	select {
	case at := <-woken:
		if d := at.Sub(start); d < n4WriterYield/2 {
			t.Errorf("woken %v after the request ended, before the yield of %v", d, n4WriterYield)
		}
	case <-time.After(10 * n4WriterYield):
		t.Fatalf("not woken within %v of the request's end", 10*n4WriterYield)
	}
}

// A writer stopped with the manager writes nothing more, so drain must not wait for what is
// left (it waited its whole timeout): it returns and leaves unsavedSince set.
func TestN4WriterDrainReturnsOnceTheWriterStopped(t *testing.T) {
	w := newN4Writer(nil)
	w.marked = true // unsavedSince is set in the API server
	w.put(types.NamespacedName{Namespace: "ns", Name: "n4-upf-1"}, nil)
	w.mu.Lock()
	w.stopped = true // what run does when the manager's context ends
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.drain(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("drain still waits for a write no worker will make")
	}
	if !w.marked {
		t.Error("drain cleared unsavedSince with a deletion unwritten")
	}
}
