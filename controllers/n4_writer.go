package controllers

// n4Writer writes the ATSSSSessions of the N4 sessions the endpoint programmed directly
// (n4_direct.go), after the SMF got its answer: the newest wanted state of each session (the
// object, or its deletion), a few at a time, in the order they came, again after a failure.
//
// While anything is unwritten the UPF's status.n4.unsavedSince is set, and it is set (in the
// API server) before the SMF hears of what is unwritten: an endpoint that starts and finds it
// set knows it cannot restore every session the SMFs have, and takes a new Recovery Time Stamp
// (the SMFs establish their sessions again, as after a UPF restart). A written session needs its
// indexes in its status (the session controller records them) before it counts as saved: an
// operator that restarts restores them from there, and a session's usage cell with them.
//
// The writer gives way to the SMF: while the endpoint answers session requests, and for
// n4WriterYield after, its workers wait; one of them only until the oldest unwritten change has
// waited n4WriterMaxDefer. Where the API server shares the operator's cores (a one-node edge
// cluster, this project's test machines) its work for an object (an apply and a status update,
// about 10 ms of CPU each here) would otherwise come out of the SMF's answers (about 0.5 ms
// each); and a burst faster than the API server takes objects leaves them behind whatever the
// writer does (docs/n4.md).

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

const (
	n4WriteWorkers = 8
	// n4SavedQuiet is how long the writer must have had nothing to write before it clears
	// unsavedSince: a burst of establishments costs one status write at its start and one after.
	n4SavedQuiet = 2 * time.Second
	n4WriteRetry = 500 * time.Millisecond
	// n4WriterYield is how long after the endpoint's last session request the workers still
	// wait: requests that come a few milliseconds apart leave gaps, and a write that starts in
	// one costs the API server more than the gap.
	n4WriterYield = 100 * time.Millisecond
	// n4WriterMaxDefer: past it, one worker writes even while session requests go on, so that a
	// load that never stops does not leave the objects (and a leader change) behind for good.
	n4WriterMaxDefer = 10 * time.Second
)

type n4Writer struct {
	st *n4Store

	mu       sync.Mutex
	wake     *sync.Cond
	want     map[types.NamespacedName]*junctionv1.ATSSSSession // nil: delete
	queue    []queuedKey                                       // keys of want, oldest first
	inFlight map[types.NamespacedName]bool
	idleAt   time.Time // when want last became empty (zero: not empty)
	stopped  bool
	// requests counts the endpoint's session requests in progress, lastEnd is when the last
	// one ended (Unix nanoseconds); wakeTimer wakes the workers at wakeAt, when one may write.
	requests  atomic.Int32
	lastEnd   atomic.Int64
	wakeTimer *time.Timer
	wakeAt    time.Time

	// mark serializes the writes of unsavedSince; marked says what the API server holds.
	mark   sync.Mutex
	marked bool
}

// queuedKey is a key of want and since when it has been unwritten.
type queuedKey struct {
	key   types.NamespacedName
	since time.Time
}

func newN4Writer(st *n4Store) *n4Writer {
	w := &n4Writer{st: st, want: map[types.NamespacedName]*junctionv1.ATSSSSession{}, inFlight: map[types.NamespacedName]bool{}, idleAt: time.Now()}
	w.wake = sync.NewCond(&w.mu)
	return w
}

// run writes until ctx ends.
func (w *n4Writer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range n4WriteWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); w.work(ctx, i == 0) }()
	}
	go func() {
		<-ctx.Done()
		w.mu.Lock()
		w.stopped = true
		w.wake.Broadcast()
		w.mu.Unlock()
	}()
	t := time.NewTicker(n4SavedQuiet / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			w.mu.Lock()
			quiet := !w.idleAt.IsZero() && time.Since(w.idleAt) >= n4SavedQuiet
			w.mu.Unlock()
			if quiet {
				w.setUnsaved(ctx, false)
			}
		}
	}
}

// drain waits until everything wanted is written (or ctx ends), then clears unsavedSince. A
// writer stopped with the manager writes nothing more: drain returns at once and unsavedSince
// stays set (the session controller that records the indexes is stopping too, so what is left
// could not count as saved; the next endpoint takes a new Recovery Time Stamp).
func (w *n4Writer) drain(ctx context.Context) {
	for {
		w.mu.Lock()
		idle := len(w.want) == 0 && len(w.inFlight) == 0
		stopped := w.stopped
		w.mu.Unlock()
		if stopped && !idle {
			return
		}
		if idle {
			w.mu.Lock()
			w.idleAt = time.Now().Add(-n4SavedQuiet)
			w.mu.Unlock()
			if err := w.setUnsaved(ctx, false); err != nil {
				w.st.log.Error(err, "Clearing unsavedSince after the last N4 session was written")
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// put wants obj written; nil obj: key deleted. The caller made sure unsavedSince is set.
func (w *n4Writer) put(key types.NamespacedName, obj *junctionv1.ATSSSSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, queued := w.want[key]; !queued {
		w.queue = append(w.queue, queuedKey{key, time.Now()})
	}
	w.want[key] = obj
	w.idleAt = time.Time{}
	w.wake.Signal()
}

// cancel drops what is wanted for key and waits until no write of it is in flight (the caller
// writes it itself).
func (w *n4Writer) cancel(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.want, key)
	for w.inFlight[key] && !w.stopped {
		w.wake.Wait()
	}
}

// begin says a session request is in progress; end, that it is over.
func (w *n4Writer) begin() { w.requests.Add(1) }

func (w *n4Writer) end() {
	w.lastEnd.Store(time.Now().UnixNano())
	if w.requests.Add(-1) == 0 {
		w.mu.Lock()
		w.wake.Broadcast()
		w.mu.Unlock()
	}
}

// mayWriteLocked says whether a worker may write now and, if not, has it woken when it may;
// overdue is the worker that writes once the oldest change has waited n4WriterMaxDefer.
func (w *n4Writer) mayWriteLocked(overdue bool) bool {
	if len(w.queue) == 0 {
		return true // nothing to write: put wakes the worker
	}
	now := time.Now()
	wait := time.Duration(math.MaxInt64) // requests in progress: end wakes it
	if w.requests.Load() == 0 {
		wait = time.Unix(0, w.lastEnd.Load()).Add(n4WriterYield).Sub(now)
	}
	if overdue {
		wait = min(wait, w.queue[0].since.Add(n4WriterMaxDefer).Sub(now))
	}
	if wait <= 0 {
		return true
	}
	if wait < math.MaxInt64 && (w.wakeAt.IsZero() || now.Add(wait).Before(w.wakeAt)) {
		w.wakeAt = now.Add(wait)
		if w.wakeTimer == nil {
			w.wakeTimer = time.AfterFunc(wait, func() {
				w.mu.Lock()
				w.wakeAt = time.Time{}
				w.wake.Broadcast()
				w.mu.Unlock()
			})
		} else {
			w.wakeTimer.Reset(wait)
		}
	}
	return false
}

// work writes what is wanted, giving way to session requests (overdue: only until the oldest
// change has waited n4WriterMaxDefer).
func (w *n4Writer) work(ctx context.Context, overdue bool) {
	for {
		w.mu.Lock()
		var key types.NamespacedName
		var obj *junctionv1.ATSSSSession
		ok := false
		for !w.stopped {
			if w.mayWriteLocked(overdue) {
				if key, obj, ok = w.nextLocked(); ok {
					break
				}
			}
			w.wake.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		w.inFlight[key] = true
		w.mu.Unlock()

		err := w.write(ctx, key, obj)

		w.mu.Lock()
		delete(w.inFlight, key)
		if err != nil {
			if _, newer := w.want[key]; !newer {
				w.want[key] = obj
				w.queue = append(w.queue, queuedKey{key, time.Now()})
			}
		}
		if len(w.want) == 0 && len(w.inFlight) == 0 {
			w.idleAt = time.Now()
		}
		w.wake.Broadcast()
		w.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				w.st.log.Error(err, "Writing an N4 session's object failed; retrying", "session", key)
			}
			select {
			case <-ctx.Done():
			case <-time.After(n4WriteRetry):
			}
		}
	}
}

// nextLocked takes the oldest wanted key not in flight; one in flight goes to the back (what
// is wanted for a key is its newest state, so its place in line does not matter).
func (w *n4Writer) nextLocked() (types.NamespacedName, *junctionv1.ATSSSSession, bool) {
	for range len(w.queue) {
		q := w.queue[0]
		w.queue = w.queue[1:]
		key := q.key
		obj, wanted := w.want[key]
		switch {
		case !wanted:
			continue
		case w.inFlight[key]:
			w.queue = append(w.queue, q)
			continue
		}
		delete(w.want, key)
		return key, obj, true
	}
	return types.NamespacedName{}, nil, false
}

// write applies obj (and waits until its status holds its indexes) or deletes key.
func (w *n4Writer) write(ctx context.Context, key types.NamespacedName, obj *junctionv1.ATSSSSession) error {
	if obj == nil {
		del := &junctionv1.ATSSSSession{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if err := w.st.c.Delete(ctx, del); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	changed, stop := w.st.watch.subscribe(key)
	defer stop()
	obj = obj.DeepCopy() // Patch writes the answer into it
	if err := w.st.c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManagerN4), client.ForceOwnership); err != nil {
		return err
	}
	return w.st.awaitRecorded(ctx, key, obj.Generation, changed)
}

// setUnsaved writes status.n4.unsavedSince (set: now; clear: null) unless the API server
// holds that already.
func (w *n4Writer) setUnsaved(ctx context.Context, set bool) error {
	w.mark.Lock()
	defer w.mark.Unlock()
	if w.marked == set {
		return nil
	}
	if !set {
		w.mu.Lock()
		busy := w.idleAt.IsZero() || time.Since(w.idleAt) < n4SavedQuiet
		w.mu.Unlock()
		if busy {
			return nil
		}
	}
	var v any
	if set {
		v = metav1.NewTime(time.Now())
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"n4": map[string]any{"unsavedSince": v}}})
	if err != nil {
		return err
	}
	upf := &junctionv1.UserPlaneFunction{ObjectMeta: metav1.ObjectMeta{Name: w.st.upf.Name, Namespace: w.st.upf.Namespace}}
	if err := w.st.c.Status().Patch(ctx, upf, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	w.marked = set
	return nil
}
