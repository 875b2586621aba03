package controllers

// Session usage: what the pipeline's usage counters say a session carried (docs/pipeline.md,
// "Usage counters"). The N4 endpoint reports it to the SMF (URRs, docs/n4.md); the last reading
// of a deleted session is taken after its entries left the device and before its cell is freed
// (Fleet.removeSession), so that it holds every packet the session ever carried.

import (
	"context"
	"errors"
	"fmt"

	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/n4"
	"github.com/junction-atsss/junction/internal/programmer"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// ethernetHeaderBytes: the counters add each frame's length as it arrived, and the frames
// they count are untagged Ethernet (a tagged one goes to the controller, uncounted).
const ethernetHeaderBytes = 14

// usageOf is a session's traffic since its first entry from its cells (programmer.UsageCounters:
// usage up and down, then, where the pipeline has a policer, what it dropped up and down): IP
// packets and their bytes as they arrived at the UPF (downlink: the user's packets; uplink: with
// the GTP-U or Junction headers of the leg they came on).
func usageOf(cells []upfclient.CounterData) n4.Usage {
	ip := func(c upfclient.CounterData) uint64 {
		return uint64(max(0, c.Bytes-ethernetHeaderBytes*c.Packets))
	}
	u := n4.Usage{ULPackets: uint64(cells[0].Packets), ULBytes: ip(cells[0]), DLPackets: uint64(cells[1].Packets), DLBytes: ip(cells[1])}
	if len(cells) == 4 {
		u.Policed = n4.Policed{ULPackets: uint64(cells[2].Packets), ULBytes: ip(cells[2]), DLPackets: uint64(cells[3].Packets), DLBytes: ip(cells[3])}
	}
	return u
}

// errNoUsage: the session has no usage cell on any UPF (not programmed yet, or gone).
var errNoUsage = errors.New("the session has no usage cell on a UPF")

// readUsage reads a session's usage cells on this UPF.
func (rt *upfRuntime) readUsage(ctx context.Context, key string) (n4.Usage, error) {
	rt.amu.Lock()
	a := rt.sessions[key]
	if p, ok := rt.pending[key]; ok && a.usage == 0 {
		a = p
	}
	idx := a.usage
	rt.amu.Unlock()
	if idx == 0 {
		return n4.Usage{}, errNoUsage
	}
	d := rt.dev.cur.Load()
	if d == nil {
		return n4.Usage{}, fmt.Errorf("UserPlaneFunction %s: %w", rt.key.Name, programmer.ErrNotSynced)
	}
	cells, err := d.ReadCounterCells(ctx, int64(idx), programmer.UsageCounters(d.Schema())...)
	if err != nil {
		return n4.Usage{}, fmt.Errorf("UserPlaneFunction %s: %w", rt.key.Name, err)
	}
	u := usageOf(cells)
	// Its QoS flows of their own, each at its cell of the session's block (desired.QoSFlowCell).
	if counters := programmer.FlowCounters(d.Schema()); a.flows != nil && len(counters) > 0 {
		for i := range min(a.nflows, len(u.Flows)) {
			cells, err := d.ReadCounterCells(ctx, int64(desired.QoSFlowCell(*a.flows, i)), counters...)
			if err != nil {
				return n4.Usage{}, fmt.Errorf("UserPlaneFunction %s: %w", rt.key.Name, err)
			}
			u.Flows[i] = n4.FlowOf(usageOf(cells))
		}
	}
	return u, nil
}

// SessionUsage reads the usage of the session ns/name on the UPF that holds it.
func (f *Fleet) SessionUsage(ctx context.Context, ns, name string) (n4.Usage, error) {
	k := sessionKey(ns, name)
	for _, rt := range f.runtimesHolding(k) {
		return rt.readUsage(ctx, k)
	}
	return n4.Usage{}, errNoUsage
}
