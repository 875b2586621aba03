package programmer

// Capacity: an object's entries go on the device all or none. Each round (and replay) plans its
// owners' inserts against the room each table has (fitInserts: the P4Info's size less what the
// mirror counts on the device, plus the round's deletes), so an object that cannot fit writes
// nothing and waits for room: nothing of it is ever live on the device, and applying it again
// while it waits writes nothing either. The device's RESOURCE_EXHAUSTED stays the last word
// (a device may hold fewer entries than its P4Info says): rollbackFull takes back what an owner
// it refused got in. Either way the owner gets TableFullError and is told through OnRoom once
// entries of that table are deleted (roomLocked).

import (
	"context"
	"errors"
	"fmt"
	"sort"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// ownerInserts is how many entries one owner's updates of a round insert into each table.
type ownerInserts struct {
	owner  string
	tables map[string]int
}

// noRoom says an owner's inserts into table do not fit: need entries, free room.
type noRoom struct {
	table      string
	need, free int
}

// fitInserts decides which owners' inserts a round writes. room is what each table of known
// size can still take once the round's deletes are done; a table absent from room has no
// known size, and the device decides. Owners are taken in order: one fits when every table has
// room for all its inserts, and what it takes is gone for those after it; one that does not fit
// takes nothing (none of it is written) and is returned with the first table, by name, that
// lacks room.
func fitInserts(room map[string]int, owners []ownerInserts) map[string]noRoom {
	left := make(map[string]int, len(room))
	for t, n := range room {
		left[t] = n
	}
	out := map[string]noRoom{}
	for _, o := range owners {
		refused := false
		for _, t := range sortedKeys(o.tables) {
			free, sized := left[t]
			if need := o.tables[t]; sized && need > free {
				out[o.owner] = noRoom{table: t, need: need, free: max(free, 0)}
				refused = true
				break
			}
		}
		if refused {
			continue
		}
		for t, need := range o.tables {
			if _, sized := left[t]; sized {
				left[t] -= need
			}
		}
	}
	return out
}

// fitLocked returns ups without the updates of owners whose inserts do not fit (fitInserts),
// and those owners' errors. ups are in owner order; dels are the deletes written before them.
// A refused owner's modifies go too: none of its updates is written. Modifies need no room.
func (p *Programmer) fitLocked(ups, dels []pendingUpdate) ([]pendingUpdate, map[string]*TableFullError) {
	var owners []ownerInserts
	room := map[string]int{}
	size := map[string]int{}
	for _, pu := range ups {
		if pu.u.GetType() != p4v1.Update_INSERT {
			continue
		}
		if len(owners) == 0 || owners[len(owners)-1].owner != pu.owner {
			owners = append(owners, ownerInserts{owner: pu.owner, tables: map[string]int{}})
		}
		// The mirror counts usage by the P4Info's table name.
		t := p.sch.TableName(pu.ent.table)
		owners[len(owners)-1].tables[t]++
		if _, seen := size[t]; seen {
			continue
		}
		n, err := p.sch.TableSize(t)
		size[t] = int(n)
		if err == nil && n > 0 { // 0: no size in the P4Info, the device alone knows
			room[t] = int(n) - p.usage[t]
		}
	}
	if len(room) == 0 {
		return ups, nil
	}
	for _, pu := range dels { // written first: their room is this round's
		if _, sized := room[pu.table]; sized {
			room[pu.table]++
		}
	}
	short := fitInserts(room, owners)
	if len(short) == 0 {
		return ups, nil
	}
	refused := make(map[string]*TableFullError, len(short))
	for o, nr := range short {
		refused[o] = &TableFullError{Table: nr.table,
			Err: fmt.Errorf("%d entries to insert, room for %d of %d; nothing written", nr.need, nr.free, size[nr.table])}
	}
	kept := ups[:0:0]
	for _, pu := range ups {
		if _, ok := refused[pu.owner]; !ok {
			kept = append(kept, pu)
		}
	}
	return kept, refused
}

// refuseLocked records the errors of the owners fitLocked refused, for their waiters and for
// inSyncLocked (applied again while they wait, they are planned again: nothing is written).
func (p *Programmer) refuseLocked(refused map[string]*TableFullError, ownerErr map[string]error) {
	for o, err := range refused {
		if ownerErr[o] == nil {
			ownerErr[o] = err
		}
		p.failed[o] = err
	}
}

// roomAfterLocked is roomLocked for a round that refused owners for room: those were planned
// with this round's deletes already, so these do not wake them; a later delete will.
func (p *Programmer) roomAfterLocked(results []writeResult, refused map[string]*TableFullError) []string {
	for o := range refused {
		delete(p.full, o)
	}
	room := p.roomLocked(results)
	for o, err := range refused {
		p.full[o] = err.Table
	}
	return room
}

// errRolledBack marks an insert that rollbackFull undid: not on the device, and not the owner's
// error (the entry that did not fit is).
var errRolledBack = errors.New("rolled back: another entry of the same object did not fit")

// rollbackFull deletes the entries a write inserted for owners that also hit a full table: an
// object's entries go in all or none, so that one waiting for room holds none another object
// could use (a session's tunnels, most of a large policy). They stay wanted, and go in whole
// once room appears. The deletes are no room: the owner would be woken by its own rollback.
// After fitLocked this is for what the device refuses although its P4Info's size left room.
func (p *Programmer) rollbackFull(ctx context.Context, results []writeResult) {
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
			dels = append(dels, upfclient.Delete(r.pu.u.GetEntity().GetTableEntry()))
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
func (p *Programmer) roomLocked(results []writeResult) []string {
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
