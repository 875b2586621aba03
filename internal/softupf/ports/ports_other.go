//go:build !linux

package ports

import (
	"context"
	"errors"
	"log/slog"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
)

// Set is the open ports; raw ports exist only on Linux.
type Set struct{}

var errNotLinux = errors.New("raw AF_PACKET ports need Linux")

// Open fails: raw ports need Linux.
func Open([]Mapping, uint32, *dataplane.Pool, *slog.Logger) (*Set, error) { return nil, errNotLinux }

func (s *Set) Close() error                         { return nil }
func (s *Set) HasPort(uint32) bool                  { return false }
func (s *Set) Stats() []PortStats                   { return nil }
func (s *Set) NoPortDrops() uint64                  { return 0 }
func (s *Set) Transmit(pkts []*dataplane.Packet)    {}
func (s *Set) Run(context.Context, Processor) error { return errNotLinux }
