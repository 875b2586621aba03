package programmer

// The programmer's mirror of the device: every change goes through setMirrorLocked and
// delMirrorLocked, which keep table usage, the users' legs (for the initial path state) and the
// entries naming each usage cell (for zeroing a cell a session starts to use) in step.

import (
	"cmp"
	"maps"
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/upfclient"
)

func (p *Programmer) setMirrorLocked(key string, e entry) {
	old, had := p.mirror[key]
	if had {
		p.countLocked(old, -1)
	}
	p.mirror[key] = e
	p.countLocked(e, +1)
}

func (p *Programmer) delMirrorLocked(key string) {
	if old, had := p.mirror[key]; had {
		p.countLocked(old, -1)
		delete(p.mirror, key)
	}
}

// countLocked keeps table usage, users' legs and usage cell references in step with the mirror.
func (p *Programmer) countLocked(e entry, d int) {
	if p.sch == nil {
		return
	}
	p.usage[p.sch.TableName(e.table)] += d
	if e.hasUsage {
		if d > 0 {
			p.counted[e.usage] = struct{}{}
		}
		if n := p.usageRefs[e.usage] + d; n > 0 {
			p.usageRefs[e.usage] = n
		} else {
			delete(p.usageRefs, e.usage)
		}
	}
	if user := e.user; e.hasLegs {
		if d > 0 {
			p.used[user] = struct{}{}
		}
		c := p.legs[user].add(e.legs, d)
		if c.zero() {
			delete(p.legs, user)
		} else {
			p.legs[user] = c
		}
	}
}

// pathInitLocked plans the path-state resets of users whose legs appear on the device with this
// round (initialPathWrites), each tagged with the owner of the user's sessions entry, who is
// told when the device refuses the write.
func (p *Programmer) pathInitLocked(ups, dels []pendingUpdate) []pendingUpdate {
	after := map[uint32]legCount{}
	owner := map[uint32]string{}
	touch := func(e entry, d int) (uint32, bool) {
		if !e.hasLegs {
			return 0, false
		}
		user := e.user
		c, seen := after[user]
		if !seen {
			c = p.legs[user]
		}
		after[user] = c.add(e.legs, d)
		return user, true
	}
	for _, pu := range append(append([]pendingUpdate(nil), dels...), ups...) {
		if pu.table != TableSessions {
			continue
		}
		if old, ok := p.mirror[pu.key]; ok && (pu.u.GetType() != p4v1.Update_INSERT) {
			touch(old, -1)
		}
		if pu.u.GetType() != p4v1.Update_DELETE {
			if user, ok := touch(pu.ent, +1); ok && pu.owner != "" {
				owner[user] = pu.owner
			}
		}
	}
	for u, o := range p.resetPending {
		if _, ok := owner[u]; !ok {
			owner[u] = o
		}
		if _, ok := after[u]; !ok {
			after[u] = p.legs[u]
		}
	}
	fresh := func(u uint32) bool {
		_, used := p.used[u]
		return p.usedKnown && !used
	}
	var out []pendingUpdate
	for _, w := range initialPathWrites(p.legs, after, fresh, p.resetPending) {
		u, err := p.sch.RegisterUpdate(w.register, int64(w.user), w.value)
		if err != nil {
			p.log.Error(err, "Path state reset not planned", "register", w.register)
			continue
		}
		out = append(out, pendingUpdate{u: u, table: w.register, owner: owner[w.user], user: w.user})
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// usageZeroLocked plans the zeroing of the counted cells that entries of this round start to name
// while no entry on the device names them (a session's new index, which an earlier session may
// have counted into; since a push, only cells some entry named before), or, for a QoS flow's
// cell, no entry that stays after the round (a flow moving into a cell another flow of the
// session left: Usage.Flows in internal/n4 follows it), and of cells whose zeroing failed
// before. It goes with the round's inserts, so a session's usage counts from its first entry; a
// cell some entry still names keeps counting (an operator restart or a replay does not reset a
// session's usage, nor a round that rewrites every entry of a session's usage cell).
func (p *Programmer) usageZeroLocked(ups, dels []pendingUpdate) []pendingUpdate {
	leaving := map[cell]int{} // the entries of each flow cell that this round deletes or points elsewhere
	for _, d := range dels {
		if d.ent.hasUsage && d.ent.usage.flow {
			leaving[d.ent.usage]++
		}
	}
	for _, pu := range ups {
		if old, ok := p.mirror[pu.key]; ok && old.hasUsage && old.usage.flow && (!pu.ent.hasUsage || pu.ent.usage != old.usage) {
			leaving[old.usage]++
		}
	}
	for _, pu := range ups {
		if pu.u.GetType() == p4v1.Update_DELETE {
			continue
		}
		c, ok := pu.ent.usage, pu.ent.hasUsage
		// Usage cell 0 collects entries written without one (the operator allocates from 1).
		if _, counted := p.counted[c]; !ok || c == (cell{}) || p.usageRefs[c] > leaving[c] || (p.usedKnown && !counted) {
			continue
		}
		p.zeroPending[c] = pu.owner
	}
	var out []pendingUpdate
	for _, c := range slices.SortedFunc(maps.Keys(p.zeroPending), func(a, b cell) int {
		return cmp.Or(cmp.Compare(btoi(a.flow), btoi(b.flow)), cmp.Compare(a.idx, b.idx))
	}) {
		counters := UsageCounters(p.sch)
		if c.flow {
			counters = FlowCounters(p.sch)
		}
		for _, name := range counters {
			u, err := p.sch.CounterUpdate(name, int64(c.idx), upfclient.CounterData{})
			if err != nil {
				p.log.Error(err, "Usage cell not zeroed", "counter", name, "index", c.idx)
				continue
			}
			out = append(out, pendingUpdate{u: u, table: name, owner: p.zeroPending[c], user: c.idx, zero: c, counter: true})
		}
	}
	return out
}

// UsageCounters are the counters whose cells at a session's usage index are the session's: its
// usage, up and down, and what its MBR policer dropped, up and down, where the pipeline has one.
func UsageCounters(sch *upfclient.Schema) []string {
	if _, err := sch.CounterID(CounterUplinkPoliced); err != nil {
		return []string{CounterUplinkUsage, CounterDownlinkUsage}
	}
	return []string{CounterUplinkUsage, CounterDownlinkUsage, CounterUplinkPoliced, CounterDownlinkPoliced}
}

// cell is a counted cell: a session's usage cell (usage_idx: UsageCounters) or a QoS flow's
// (flow_idx: FlowCounters), which an entry that names it counts into.
type cell struct {
	flow bool
	idx  uint32
}

// countedCell is the cell an entry's action names (usage_idx, or qos_flows' flow_idx), if any.
func countedCell(sch *upfclient.Schema, te *p4v1.TableEntry) (cell, bool) {
	a := te.GetAction().GetAction()
	if sch == nil || a == nil {
		return cell{}, false
	}
	if v, ok := sch.ActionParam(a, paramUsageIndex); ok {
		return cell{idx: uint32(v)}, true
	}
	v, ok := sch.ActionParam(a, paramFlowIndex)
	return cell{flow: true, idx: uint32(v)}, ok
}

// FlowCounters are the counters whose cells at a QoS flow's index are the flow's (its usage and
// what the policers dropped of it, up and down), where the pipeline has them.
func FlowCounters(sch *upfclient.Schema) []string {
	if _, err := sch.CounterID(CounterUplinkFlowUsage); err != nil {
		return nil
	}
	return []string{CounterUplinkFlowUsage, CounterDownlinkFlowUsage, CounterUplinkFlowPoliced, CounterDownlinkFlowPoliced}
}
