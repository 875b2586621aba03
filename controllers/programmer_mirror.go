package controllers

// The programmer's mirror of the device: every change goes through setMirrorLocked and
// delMirrorLocked, which keep table usage and the users' legs (for the initial path state)
// in step.

import (
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

func (p *programmer) setMirrorLocked(key string, te *p4v1.TableEntry) {
	old, had := p.mirror[key]
	if had {
		p.countLocked(old, -1)
	}
	p.mirror[key] = te
	p.countLocked(te, +1)
}

func (p *programmer) delMirrorLocked(key string) {
	if old, had := p.mirror[key]; had {
		p.countLocked(old, -1)
		delete(p.mirror, key)
	}
}

// countLocked keeps table usage and users' legs in step with the mirror.
func (p *programmer) countLocked(te *p4v1.TableEntry, d int) {
	if p.sch == nil {
		return
	}
	table := p.sch.TableName(te.GetTableId())
	p.usage[table] += d
	if table != tableSessions {
		return
	}
	if user, l, ok := sessionLegs(p.sch, te); ok {
		if d > 0 {
			p.used[user] = struct{}{}
		}
		c := p.legs[user].add(l, d)
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
func (p *programmer) pathInitLocked(ups, dels []pendingUpdate) []pendingUpdate {
	after := map[uint32]legCount{}
	owner := map[uint32]string{}
	touch := func(te *p4v1.TableEntry, d int) (uint32, bool) {
		user, l, ok := sessionLegs(p.sch, te)
		if !ok {
			return 0, false
		}
		c, seen := after[user]
		if !seen {
			c = p.legs[user]
		}
		after[user] = c.add(l, d)
		return user, true
	}
	for _, pu := range append(append([]pendingUpdate(nil), dels...), ups...) {
		if pu.table != tableSessions {
			continue
		}
		if old, ok := p.mirror[pu.key]; ok && (pu.u.GetType() != p4v1.Update_INSERT) {
			touch(old, -1)
		}
		if pu.u.GetType() != p4v1.Update_DELETE {
			if user, ok := touch(pu.te, +1); ok && pu.owner != "" {
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
