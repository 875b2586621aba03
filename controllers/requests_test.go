package controllers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Notices never block their sender, with or without a reader, and a burst about one object
// reaches the controller as one request, in the order first noticed.
func TestRequestsCoalesceAndNeverBlock(t *testing.T) {
	q := newRequests(func() client.Object { return &junctionv1.UserPlaneFunction{} })
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	done := make(chan struct{})
	go func() { // nobody reads yet: this must return at once
		for range 10_000 {
			q.add(a)
		}
		q.add(b, a)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("add blocked without a reader")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.run(ctx)
	var got []string
	for len(got) < 2 {
		select {
		case e := <-q.ch:
			got = append(got, e.Object.GetName())
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v, want a then b", got)
		}
	}
	select {
	case e := <-q.ch:
		t.Errorf("a third request for %s: a waiting key was queued twice", e.Object.GetName())
	case <-time.After(100 * time.Millisecond):
	}
	if got[0] != "a" || got[1] != "b" {
		t.Errorf("order %v, want [a b]", got)
	}
}
