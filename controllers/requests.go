package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// requests carries reconcile requests from the UPF runtimes (replays, room in a table, changed
// paths) to a controller's channel source. Callers add keys without blocking and without
// starting a goroutine; one goroutine (run, under the Fleet's context) forwards them, and a key
// still waiting is not queued twice, so a burst of notices about one object is one reconcile.
type requests struct {
	ch     chan event.GenericEvent
	newObj func() client.Object
	wake   chan struct{}

	mu      sync.Mutex
	waiting map[types.NamespacedName]struct{}
	order   []types.NamespacedName
}

func newRequests(newObj func() client.Object) *requests {
	return &requests{ch: make(chan event.GenericEvent), newObj: newObj, wake: make(chan struct{}, 1),
		waiting: map[types.NamespacedName]struct{}{}}
}

func (q *requests) add(keys ...types.NamespacedName) {
	q.mu.Lock()
	for _, k := range keys {
		if _, dup := q.waiting[k]; !dup {
			q.waiting[k] = struct{}{}
			q.order = append(q.order, k)
		}
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest waiting key.
func (q *requests) next() (types.NamespacedName, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		q.order = nil // let a long burst's array go
		return types.NamespacedName{}, false
	}
	k := q.order[0]
	q.order = q.order[1:]
	delete(q.waiting, k)
	return k, true
}

// run forwards the waiting keys to the channel until ctx ends.
func (q *requests) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for k, ok := q.next(); ok; k, ok = q.next() {
			o := q.newObj()
			o.SetNamespace(k.Namespace)
			o.SetName(k.Name)
			select {
			case q.ch <- event.GenericEvent{Object: o}:
			case <-ctx.Done():
				return
			}
		}
	}
}
