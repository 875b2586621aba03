package controllers

// Capacity: an object's entries go on the device all or none. The device's RESOURCE_EXHAUSTED
// makes rollbackFull take back what an owner it refused got in; the owner gets TableFullError
// and is told through onRoom once entries of that table are deleted (roomLocked).

import (
	"context"
	"errors"
	"sort"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// errRolledBack marks an insert that rollbackFull undid: not on the device, and not the owner's
// error (the entry that did not fit is).
var errRolledBack = errors.New("rolled back: another entry of the same object did not fit")

// rollbackFull deletes the entries a write inserted for owners that also hit a full table: an
// object's entries go in all or none, so that one waiting for room holds none another object
// could use (a session's tunnels, most of a large policy). They stay wanted, and go in whole
// once room appears. The deletes are no room: the owner would be woken by its own rollback.
func (p *programmer) rollbackFull(ctx context.Context, results []writeResult) {
	full := map[string]bool{}
	for _, r := range results {
		if r.pu.key != "" && !r.pu.stale && upfclient.Code(r.err) == codes.ResourceExhausted {
			full[r.pu.owner] = true
		}
	}
	if len(full) == 0 {
		return
	}
	var dels []*p4v1.Update
	var undone []int // results' indexes, in dels' order
	for i, r := range results {
		if full[r.pu.owner] && r.err == nil && r.pu.key != "" && r.pu.u.GetType() == p4v1.Update_INSERT {
			dels = append(dels, upfclient.Delete(r.pu.te))
			undone = append(undone, i)
		}
	}
	if len(dels) == 0 {
		return
	}
	errs := p.dev.Write(ctx, dels)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes += uint64(len(dels))
	for j, i := range undone {
		if errs != nil && errs[j] != nil && upfclient.Code(errs[j]) != codes.NotFound {
			continue // still on the device, and wanted: nothing is lost
		}
		// Settled as not inserted: the mirror will not hold it, and the next round inserts it.
		results[i].err = errRolledBack
	}
}

// roomLocked returns the owners that waited for room in a table entries were deleted from.
func (p *programmer) roomLocked(results []writeResult) []string {
	freed := map[string]bool{}
	for _, r := range results {
		if r.err == nil && r.pu.u.GetType() == p4v1.Update_DELETE {
			freed[r.pu.table] = true
		}
	}
	var out []string
	for o, t := range p.full {
		if freed[t] {
			out = append(out, o)
			delete(p.full, o)
		}
	}
	sort.Strings(out)
	return out
}
