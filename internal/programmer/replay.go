package programmer

import (
	"context"
	"time"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// replay puts the device's other state in place (extras), reads its entries back and writes the
// difference to the whole desired state. It reports whether the extras are in place.
func (p *Programmer) replay(ctx context.Context, gen uint64) (extrasOK bool) {
	sch := p.dev.Schema()
	if sch == nil {
		p.failReplay(gen, upfclient.ErrNoPipeline)
		return true
	}
	extrasOK = p.Extras == nil || p.Extras(ctx) == nil
	p.mu.Lock()
	if p.sch != sch {
		p.sch = sch
		p.want = map[string]*builtEntry{}
		for _, o := range p.owners {
			for _, be := range o {
				p.build(be)
			}
		}
	}
	p.mu.Unlock()

	read := map[string]entry{}
	for _, t := range sch.P4Info().GetTables() {
		entries, err := p.dev.ReadTable(ctx, t.GetPreamble().GetName())
		if err != nil {
			p.failReplay(gen, err)
			return extrasOK
		}
		for _, te := range entries {
			read[upfclient.EntryKey(te)] = packEntry(sch, te)
		}
	}

	p.mu.Lock()
	if p.gen != gen || p.mode != modeReplaying {
		p.mu.Unlock()
		return extrasOK // superseded by a newer generation or the device went down
	}
	// Sized for the desired state: settling 100,000 sessions' entries does not grow it step by step.
	p.mirror = make(map[string]entry, max(len(read), len(p.want)))
	p.legs, p.usage, p.usageRefs = map[uint32]legCount{}, map[string]int{}, map[cell]int{}
	for k, e := range read {
		p.setMirrorLocked(k, e)
	}
	ownerErr := map[string]error{}
	var ups, dels []pendingUpdate
	for _, o := range sortedKeys(p.owners) {
		for _, k := range sortedKeys(p.owners[o]) {
			be := p.owners[o][k]
			if be.err != nil {
				ownerErr[o] = be.err
				p.failed[o] = be.err
				continue
			}
			if have, ok := p.mirror[be.key]; ok && sameEntry(have, be.built) {
				p.setMirrorLocked(be.key, be.built) // share the built entry: one copy in memory
				be.fresh = nil
				continue
			}
			if pu, ok := p.planEntryLocked(be, o); ok {
				ups = append(ups, pu)
			}
		}
	}
	for _, k := range sortedKeys(p.mirror) {
		if p.want[k] == nil {
			e := p.mirror[k]
			dels = append(dels, pendingUpdate{u: upfclient.Delete(e.tableEntry()), key: k, ent: e, table: sch.TableName(e.table), stale: true})
		}
	}
	clear(p.stale)
	clear(p.staleRefused)
	clear(p.failed)
	ups, refused := p.fitLocked(ups, dels) // as in a round: an owner that cannot fit writes nothing
	p.refuseLocked(refused, ownerErr)
	clear(p.meterOn) // unknown: every wanted cell is written again
	zeroed := p.usageZeroLocked(ups, dels)
	regs := append(append(p.pathInitLocked(ups, dels), zeroed...), p.meterPlanLocked(sortedKeys(p.ownerMeters), zeroed, ownerErr)...)
	p.mu.Unlock()

	results := p.write(ctx, dels, regs, ups, nil)
	p.rollbackFull(ctx, results)

	p.mu.Lock()
	p.settleLocked(results, ownerErr)
	if p.gen == gen && p.mode == modeReplaying {
		p.mode = modeSynced
		p.lastSync = time.Now()
		p.replayErr = nil
	}
	room := p.roomAfterLocked(results, refused)
	p.mu.Unlock()
	p.log.Info("Replayed the desired state", "generation", gen, "insertedOrModified", len(ups), "deleted", len(dels), "entriesRead", len(read))
	if len(room) > 0 {
		p.OnRoom(room)
	}
	p.OnSynced()
	return extrasOK
}

// failReplay records a failed replay; the callbacks run after the lock is released (they only
// queue: no goroutine outlives the programmer).
func (p *Programmer) failReplay(gen uint64, err error) {
	p.log.Error(err, "Replay failed", "generation", gen)
	p.mu.Lock()
	current := p.gen == gen
	if current {
		p.replayErr = err
		p.mode = modeDown
		p.releaseWaitersLocked(ErrNotSynced)
	}
	p.mu.Unlock()
	if current {
		p.OnReplayFailed(gen)
	}
	p.OnSynced()
}
