//go:build !linux

package vectors

import (
	"errors"
	"time"
)

// received is one frame seen on a test-side interface.
type received struct {
	port  string
	at    time.Time
	frame []byte
}

type collector struct{ notify chan struct{} }

func newCollector() *collector                   { return &collector{notify: make(chan struct{}, 1)} }
func (c *collector) count() int                  { return 0 }
func (c *collector) take() ([]received, []error) { return nil, nil }

type packetPort struct{}

func openPacketPort(name, iface string, c *collector) (*packetPort, error) {
	return nil, errors.New("the vector runner sends and captures frames with AF_PACKET, which only Linux has")
}

func (p *packetPort) send(frame []byte) error { return nil }
func (p *packetPort) close()                  {}
