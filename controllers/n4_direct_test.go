package controllers

import (
	"testing"
	"time"
)

// One session's lock keeps a second holder out until it is unlocked; another session's lock is
// free meanwhile; unlocking twice is harmless; no lock outlives its holders.
func TestSessionLockSerializesOneSession(t *testing.T) {
	var d directSessions
	unlockA := d.lock("ns/a")
	got := make(chan struct{})
	go func() {
		defer d.lock("ns/a")()
		close(got)
	}()
	d.lock("ns/b")() // not held up by ns/a
	select {
	case <-got:
		t.Fatal("a second holder of ns/a got the lock while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	unlockA()
	<-got
	for deadline := time.Now().Add(5 * time.Second); ; {
		d.mu.Lock()
		n := len(d.locks)
		d.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d locks left after every holder unlocked", n)
		}
		time.Sleep(time.Millisecond)
	}
}
