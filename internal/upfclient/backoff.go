package upfclient

import (
	"math/rand/v2"
	"time"
)

// Backoff is the reconnect delay: Initial after the first failure, multiplied by Factor after
// each further one up to Max, each delay spread by ±Jitter (a fraction) so that many operator
// replicas or devices do not reconnect in lockstep after a shared outage. The zero value means
// the defaults below.
type Backoff struct {
	Initial time.Duration // default 250ms
	Max     time.Duration // default 30s
	Factor  float64       // default 2
	Jitter  float64       // default 0.2 (±20%); negative: none
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 250 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Factor < 1 {
		b.Factor = 2
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = 0.2
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	return b
}

// delay is the wait before reconnect attempt n (n = 1 after the first failure).
func (b Backoff) delay(n int) time.Duration {
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Factor
	}
	d = min(d, float64(b.Max))
	d *= 1 + b.Jitter*(2*rand.Float64()-1)
	return time.Duration(d)
}
