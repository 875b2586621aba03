package controllers

// Index allocations of one UPF: user indexes per SUPI (shared by its sessions: one set of path
// state per UE), tunnel peer indexes per gNB (shared, reference counted), sequence indexes per
// exception session, usage indexes per session, blocks of QoS flow cells per session with
// spec.qosFlows. New indexes are recorded in the session's status before any entry uses
// them; indexes a session stops using are freed only after its new entries are written.

import (
	"context"
	"errors"
	"fmt"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/programmer"
)

// restoreSession records the indexes a session's status holds. An index another owner claimed
// first is not restored: the session's reconcile allocates a new one and records it.
func (rt *upfRuntime) restoreSession(s *junctionv1.ATSSSSession) sessionAlloc {
	key := sessionKey(s.Namespace, s.Name)
	var a sessionAlloc
	if idx := s.Status.UserIndex; idx != nil {
		if err := rt.users.Restore(s.Spec.UE.SUPI, key, uint32(*idx)); err == nil {
			a.supi, a.user = s.Spec.UE.SUPI, uint32(*idx)
		} else {
			rt.log.Error(err, "Recorded user index not restored", "session", key)
		}
	}
	if leg := s.Spec.AccessLegs.ThreeGPP; leg != nil && s.Status.TunnelPeerIndex != nil {
		if n, err := sessionNeeds(s, nil); err == nil {
			if err := rt.peers.Restore(n.gnb, key, uint32(*s.Status.TunnelPeerIndex)); err == nil {
				a.gnb, a.peer = n.gnb, uint16(*s.Status.TunnelPeerIndex)
			} else {
				rt.log.Error(err, "Recorded tunnel peer index not restored", "session", key)
			}
		}
	}
	if idx := s.Status.SequenceIndex; idx != nil {
		if err := rt.seqs.Restore(key, key, uint32(*idx)); err == nil {
			v := uint32(*idx)
			a.seq = &v
		} else {
			rt.log.Error(err, "Recorded sequence index not restored", "session", key)
		}
	}
	if idx := s.Status.QoSFlowIndex; idx != nil {
		if err := rt.flows.Restore(key, key, uint32(*idx)); err == nil {
			v := uint32(*idx)
			a.flows, a.nflows = &v, len(s.Spec.QoSFlows)
		} else {
			rt.log.Error(err, "Recorded QoS flow index not restored", "session", key)
		}
	}
	if idx := s.Status.UsageIndex; idx != nil {
		if err := rt.usages.Restore(key, key, uint32(*idx)); err == nil {
			a.usage = uint32(*idx)
		} else {
			rt.log.Error(err, "Recorded usage index not restored", "session", key)
		}
	}
	rt.amu.Lock()
	rt.setAllocLocked(key, a)
	rt.amu.Unlock()
	return a
}

// peerIndexes returns every allocated tunnel peer: gNB address → index.
func (rt *upfRuntime) peerIndexes() map[string]uint16 {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	out := map[string]uint16{}
	for _, a := range rt.sessions {
		if a.gnb != "" && a.peer != 0 {
			out[a.gnb] = a.peer
		}
	}
	return out
}

// acquire returns the allocation the session needs now: what it holds (Acquire is idempotent
// for an owner and referrer), plus new indexes for a new SUPI, gNB or exception lookup.
// Nothing it held is freed here (see commit).
func (rt *upfRuntime) acquire(key string, n need) (sessionAlloc, error) {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	defer rt.refreshIfCounts(rt.allocCounts())
	var next sessionAlloc
	idx, err := rt.users.Acquire(n.supi, key)
	if err != nil {
		return next, fmt.Errorf("user index for %s: %w", n.supi, err)
	}
	next.supi, next.user = n.supi, idx
	if n.gnb != "" {
		idx, e := rt.peers.Acquire(n.gnb, key)
		if e != nil {
			err = errors.Join(err, fmt.Errorf("tunnel peer index for gNB %s: %w", n.gnb, e))
		} else {
			next.gnb, next.peer = n.gnb, uint16(idx)
		}
	}
	if n.exception {
		idx, e := rt.seqs.Acquire(key, key)
		if e != nil {
			err = errors.Join(err, fmt.Errorf("sequence index: %w", e))
		} else {
			next.seq = &idx
		}
	}
	if n.flows > 0 {
		idx, e := rt.flows.Acquire(key, key)
		if e != nil {
			err = errors.Join(err, fmt.Errorf("QoS flow index: %w", e))
		} else {
			next.flows, next.nflows = &idx, n.flows
		}
	}
	if idx, e := rt.usages.Acquire(key, key); e != nil {
		err = errors.Join(err, fmt.Errorf("usage index: %w", e))
	} else {
		next.usage = idx
	}
	rt.pendingLocked(key, next)
	return next, err
}

// pendingLocked remembers indexes acquired but not committed, so that a delete frees them too.
// A pending allocation that a spec change replaced before its write succeeded (another SUPI or
// gNB) is kept as superseded: its indexes are freed with the old ones at commit, once the
// session's new entries are written, or at the session's delete.
func (rt *upfRuntime) pendingLocked(key string, a sessionAlloc) {
	if rt.pending == nil {
		rt.pending = map[string]sessionAlloc{}
	}
	if prev, ok := rt.pending[key]; ok && (prev.supi != a.supi || prev.gnb != a.gnb || (prev.seq != nil) != (a.seq != nil) || (prev.flows != nil) != (a.flows != nil)) {
		if rt.superseded == nil {
			rt.superseded = map[string][]sessionAlloc{}
		}
		rt.superseded[key] = append(rt.superseded[key], prev)
	}
	rt.pending[key] = a
}

// releaseUnusedLocked frees the indexes of held that next does not use; it returns the gNBs and
// users whose last reference went.
func (rt *upfRuntime) releaseUnusedLocked(key string, next sessionAlloc, held ...sessionAlloc) (freedPeers []string, freedUsers []uint32) {
	for _, a := range held {
		if a.supi != "" && a.supi != next.supi && rt.users.Release(a.supi, key) {
			freedUsers = append(freedUsers, a.user)
		}
		if a.gnb != "" && a.gnb != next.gnb && rt.peers.Release(a.gnb, key) {
			freedPeers = append(freedPeers, a.gnb)
		}
		if a.seq != nil && next.seq == nil {
			rt.seqs.Release(key, key)
		}
		if a.flows != nil && next.flows == nil {
			rt.flows.Release(key, key)
		}
		if a.usage != 0 && next.usage == 0 {
			rt.usages.Release(key, key)
		}
	}
	return freedPeers, freedUsers
}

// commit makes next the session's allocation once its entries are written, and frees what it
// held before and no longer uses. It returns the freed gNBs (their tunnel_peers entries go)
// and users (their path monitoring state goes).
func (rt *upfRuntime) commit(key string, next sessionAlloc) (freedPeers []string, freedUsers []uint32) {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	defer rt.refreshIfCounts(rt.allocCounts())
	freedPeers, freedUsers = rt.releaseUnusedLocked(key, next, append([]sessionAlloc{rt.sessions[key]}, rt.superseded[key]...)...)
	delete(rt.pending, key)
	delete(rt.superseded, key)
	rt.setAllocLocked(key, next)
	return freedPeers, freedUsers
}

// holds reports whether the session has indexes here, committed or pending.
func (rt *upfRuntime) holds(key string) bool {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	_, committed := rt.sessions[key]
	_, pending := rt.pending[key]
	return committed || pending
}

// release frees everything a deleted session holds or acquired.
func (rt *upfRuntime) release(key string) (freedPeers []string, freedUsers []uint32) {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	defer rt.refreshIfCounts(rt.allocCounts())
	freedPeers, freedUsers = rt.releaseUnusedLocked(key, sessionAlloc{}, append([]sessionAlloc{rt.sessions[key], rt.pending[key]}, rt.superseded[key]...)...)
	delete(rt.pending, key)
	delete(rt.superseded, key)
	rt.setAllocLocked(key, sessionAlloc{})
	delete(rt.sessions, key)
	delete(rt.comparison, key)
	return freedPeers, freedUsers
}

// setReadsComparison records whether a programmed session's steering reads the RTT comparison
// and tells path monitoring whether its user is now guarded against flip-flops.
func (rt *upfRuntime) setReadsComparison(ctx context.Context, key string, user uint32, reads bool) {
	rt.amu.Lock()
	if reads {
		rt.comparison[key] = true
	} else {
		delete(rt.comparison, key)
	}
	guarded := rt.userReadsCompLocked(user)
	rt.amu.Unlock()
	rt.mon.SetGuarded(ctx, user, guarded)
}

// regard tells path monitoring again whether a user whose sessions changed is guarded.
func (rt *upfRuntime) regard(ctx context.Context, user uint32) {
	rt.amu.Lock()
	guarded := rt.userReadsCompLocked(user)
	rt.amu.Unlock()
	rt.mon.SetGuarded(ctx, user, guarded)
}

// sessionUser is the user index a session holds here, if any.
func (rt *upfRuntime) sessionUser(key string) (uint32, bool) {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	a, ok := rt.sessions[key]
	return a.user, ok && a.supi != ""
}

func (rt *upfRuntime) userReadsCompLocked(user uint32) bool {
	for k := range rt.byUser[user] {
		if rt.comparison[k] {
			return true
		}
	}
	return false
}

// allocCounts is what status.users and status.tunnelPeers show.
func (rt *upfRuntime) allocCounts() [2]int { return [2]int{rt.users.Used(), rt.peers.Used()} }

// refreshIfCounts asks for a UPF status refresh when the counts changed since before.
func (rt *upfRuntime) refreshIfCounts(before [2]int) {
	if rt.allocCounts() != before {
		rt.f.refreshUPFStatus(rt.key)
	}
}

// setAllocLocked records a session's allocation and keeps the user → sessions index.
func (rt *upfRuntime) setAllocLocked(key string, a sessionAlloc) {
	if old, ok := rt.sessions[key]; ok && old.supi != "" {
		if set := rt.byUser[old.user]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(rt.byUser, old.user)
			}
		}
	}
	rt.sessions[key] = a
	if a.supi != "" {
		if rt.byUser[a.user] == nil {
			rt.byUser[a.user] = map[string]struct{}{}
		}
		rt.byUser[a.user][key] = struct{}{}
	}
}

// dropPeers removes the tunnel_peers entries of gNBs whose last session went, unless a session
// took the gNB again meanwhile; the check and the change happen under the allocation lock so a
// concurrent acquire cannot lose its entry.
func (rt *upfRuntime) dropPeers(gnbs []string) {
	rt.amu.Lock()
	defer rt.amu.Unlock()
	for _, g := range gnbs {
		if _, held := rt.peers.Lookup(g); !held {
			rt.prog.Set(programmer.Change{Owner: peerOwner(g)})
		}
	}
}
