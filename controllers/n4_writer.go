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

import (
	"context"
	"encoding/json"
	"sync"
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
)

type n4Writer struct {
	st *n4Store

	mu       sync.Mutex
	wake     *sync.Cond
	want     map[types.NamespacedName]*junctionv1.ATSSSSession // nil: delete
	queue    []types.NamespacedName                            // keys of want, oldest first
	inFlight map[types.NamespacedName]bool
	idleAt   time.Time // when want last became empty (zero: not empty)
	stopped  bool

	// mark serializes the writes of unsavedSince; marked says what the API server holds.
	mark   sync.Mutex
	marked bool
}

func newN4Writer(st *n4Store) *n4Writer {
	w := &n4Writer{st: st, want: map[types.NamespacedName]*junctionv1.ATSSSSession{}, inFlight: map[types.NamespacedName]bool{}, idleAt: time.Now()}
	w.wake = sync.NewCond(&w.mu)
	return w
}

// run writes until ctx ends.
func (w *n4Writer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range n4WriteWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); w.work(ctx) }()
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

// drain waits until everything wanted is written (or ctx ends), then clears unsavedSince.
func (w *n4Writer) drain(ctx context.Context) {
	for {
		w.mu.Lock()
		idle := len(w.want) == 0 && len(w.inFlight) == 0
		w.mu.Unlock()
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
		w.queue = append(w.queue, key)
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

func (w *n4Writer) work(ctx context.Context) {
	for {
		w.mu.Lock()
		key, obj, ok := w.nextLocked()
		for !ok && !w.stopped {
			w.wake.Wait()
			key, obj, ok = w.nextLocked()
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
				w.queue = append(w.queue, key)
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
		key := w.queue[0]
		w.queue = w.queue[1:]
		obj, wanted := w.want[key]
		switch {
		case !wanted:
			continue
		case w.inFlight[key]:
			w.queue = append(w.queue, key)
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
