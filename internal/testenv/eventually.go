package testenv

import (
	"testing"
	"time"
)

// PollInterval is how often Eventually tries again.
const PollInterval = 100 * time.Millisecond

// Eventually calls cond every PollInterval until it returns nil, or fails the test with what
// and cond's last error after timeout. Waits in tests are bounds on behaviour, not timings.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(PollInterval)
	}
}
