// Package alloc hands out the small integer indexes the pipeline needs (user indexes per SUPI,
// sequence counters per exception session, application IDs per policy, tunnel peer indexes per
// gNB). A Pool lives in memory for speed, but it is always rebuilt from what the API server
// records (object status) before use, so an operator restart neither leaks nor duplicates.
package alloc

import (
	"errors"
	"fmt"
	"sync"
)

// ErrExhausted is returned when every index of a pool is taken.
var ErrExhausted = errors.New("no free index")

// Pool maps owners (a SUPI, a session, a policy, a gNB address) to indexes in [first, size),
// each owner held by one or more references (e.g. the sessions of one SUPI).
type Pool struct {
	mu    sync.Mutex
	name  string
	first uint32
	size  uint32
	next  uint32
	byKey map[string]uint32
	refs  map[string]referrers // owner -> referrers
	byIdx map[uint32]string
}

// NewPool makes a pool of indexes first..size-1 (first > 0 reserves low indexes, e.g. 0 as "none").
func NewPool(name string, first, size uint32) *Pool {
	return &Pool{name: name, first: first, size: size, next: first,
		byKey: map[string]uint32{}, refs: map[string]referrers{}, byIdx: map[uint32]string{}}
}

// Restore records an allocation read back from the API server. Two owners claiming one index is
// an error naming both: the caller must treat the later one as unallocated.
func (p *Pool) Restore(owner, referrer string, index uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if index < p.first || index >= p.size {
		return fmt.Errorf("%s index %d of %s is outside %d..%d", p.name, index, owner, p.first, p.size-1)
	}
	if other, ok := p.byIdx[index]; ok && other != owner {
		return fmt.Errorf("%s index %d is claimed by both %s and %s", p.name, index, other, owner)
	}
	if have, ok := p.byKey[owner]; ok && have != index {
		return fmt.Errorf("%s %s holds index %d and %d", p.name, owner, have, index)
	}
	p.byKey[owner], p.byIdx[index] = index, owner
	p.ref(owner, referrer)
	// Allocation goes on after the highest restored index, as it would have without a restart:
	// a freed index is handed out again only after the pool went round once.
	if index >= p.next {
		p.next = index + 1
		if p.next >= p.size {
			p.next = p.first
		}
	}
	return nil
}

// Acquire returns the owner's index, allocating the lowest free one after the last allocation
// when the owner has none, and records referrer as a user of it.
func (p *Pool) Acquire(owner, referrer string) (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if idx, ok := p.byKey[owner]; ok {
		p.ref(owner, referrer)
		return idx, nil
	}
	span := p.size - p.first
	for i := uint32(0); i < span; i++ {
		idx := p.first + (p.next-p.first+i)%span
		if _, taken := p.byIdx[idx]; !taken {
			p.byKey[owner], p.byIdx[idx] = idx, owner
			p.next = idx + 1
			if p.next >= p.size {
				p.next = p.first
			}
			p.ref(owner, referrer)
			return idx, nil
		}
	}
	return 0, fmt.Errorf("%s: %w (%d in use)", p.name, ErrExhausted, span)
}

// Release drops referrer's reference; the index is freed with the owner's last reference.
// It reports whether the index was freed.
func (p *Pool) Release(owner, referrer string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	refs := p.refs[owner]
	refs.remove(referrer)
	if refs.len() > 0 {
		p.refs[owner] = refs
		return false
	}
	idx, ok := p.byKey[owner]
	if !ok {
		return false
	}
	delete(p.byKey, owner)
	delete(p.byIdx, idx)
	delete(p.refs, owner)
	return true
}

// Lookup returns the owner's index if it has one.
func (p *Pool) Lookup(owner string) (uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idx, ok := p.byKey[owner]
	return idx, ok
}

// Refs is the number of referrers of the owner.
func (p *Pool) Refs(owner string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refs[owner].len()
}

// Taken reports whether the index is allocated.
func (p *Pool) Taken(index uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.byIdx[index]
	return ok
}

// Used is the number of allocated indexes.
func (p *Pool) Used() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byIdx)
}

func (p *Pool) ref(owner, referrer string) {
	refs := p.refs[owner]
	refs.add(referrer)
	p.refs[owner] = refs
}

// referrers are an owner's referrers. Most owners have one, which is kept without a map of its
// own: a map is two more objects for the collector to walk, for each index of each of 100,000
// sessions (docs/operator.md, "N4 (PFCP) sessions").
type referrers struct {
	one    string
	hasOne bool
	more   map[string]struct{} // the others
}

func (r *referrers) add(s string) {
	switch {
	case !r.hasOne:
		r.one, r.hasOne = s, true
	case r.one != s:
		if r.more == nil {
			r.more = map[string]struct{}{}
		}
		r.more[s] = struct{}{}
	}
}

func (r *referrers) remove(s string) {
	if !r.hasOne || r.one != s {
		delete(r.more, s)
		return
	}
	r.one, r.hasOne = "", false
	for m := range r.more { // another takes its place
		r.one, r.hasOne = m, true
		delete(r.more, m)
		break
	}
}

func (r referrers) len() int {
	if !r.hasOne {
		return 0
	}
	return 1 + len(r.more)
}
