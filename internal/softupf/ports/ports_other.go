//go:build !linux

package ports

import (
	"context"
	"errors"
	"log/slog"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
)

// Set is the open ports; they exist only on Linux.
type Set struct{}

var errNotLinux = errors.New("AF_XDP and AF_PACKET ports need Linux")

// Open fails: the ports need Linux.
func Open([]Mapping, Kind, uint32, *dataplane.Pool, *slog.Logger) (*Set, error) {
	return nil, errNotLinux
}

func (s *Set) SetRealtimePriority(int) error        { return errNotLinux }
func (s *Set) Close() error                         { return nil }
func (s *Set) HasPort(uint32) bool                  { return false }
func (s *Set) Stats() []PortStats                   { return nil }
func (s *Set) NoPortDrops() uint64                  { return 0 }
func (s *Set) Transmit(pkts []*dataplane.Packet)    {}
func (s *Set) Run(context.Context, Processor) error { return errNotLinux }
