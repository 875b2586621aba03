package vectors

// The runner's side of the target's ports: a PortIO per logical port sends frames in, and every
// frame the target sends out lands in one collector with its port and arrival time.

import (
	"sync"
	"time"
)

// PortIO is the runner's end of one of the target's ports.
type PortIO interface {
	// Send puts one frame into the target's port, unchanged.
	Send(frame []byte) error
	// Close stops sending and receiving; it returns once no frame is delivered any more.
	Close()
}

// Wire connects the runner to the target's ports some other way than interfaces (Config.Wire):
// the in-process software UPF hands frames to its data plane directly.
type Wire interface {
	// Attach opens port: the returned PortIO sends into it, and every frame the target sends out
	// of it is passed to deliver (which keeps no reference to the slice).
	Attach(port Port, deliver func(frame []byte)) (PortIO, error)
}

// received is one frame seen on a test-side interface.
type received struct {
	port  string
	at    time.Time
	frame []byte
}

// collector gathers received frames from every port.
type collector struct {
	mu     sync.Mutex
	frames []received
	errs   []error
	notify chan struct{}
}

func newCollector() *collector { return &collector{notify: make(chan struct{}, 1)} }

func (c *collector) add(r received) {
	c.mu.Lock()
	c.frames = append(c.frames, r)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *collector) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

func (c *collector) take() ([]received, []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, e := c.frames, c.errs
	c.frames, c.errs = nil, nil
	return f, e
}
