package p4rt

// Digests (P4Runtime spec 9.9): a digest message's way through this file.
//
//	Target -> Events.Digest -> add: dropped unless the digest is enabled by a DigestEntry;
//	    suppressed if the same message is in the buffer or was sent and not yet acked
//	    -> buffer (bounded) -> flush when max_list_size messages wait or max_timeout_ns has
//	    passed since the first one, and no earlier list of this digest awaits its ack
//	    -> DigestList (list_id from one server-wide counter) -> default role's primary queue
//	DigestListAck or ack_timeout_ns expiry -> the list's messages leave the cache and the
//	    next list of that digest may go.
//
// Holding back the next list until the previous one is acked (or its ack times out) is this
// server's flow control toward a slow controller; with ack_timeout_ns 0 nothing is held back
// and nothing is cached, as the spec requires.

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/junction-atsss/junction/internal/p4schema"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

type digestEngine struct {
	s      *Server
	mu     sync.Mutex
	states map[uint32]*digestState
	lastID uint64 // last list_id handed out
}

type digestState struct {
	info    *p4schema.Digest
	enabled bool
	maxWait time.Duration // max_timeout_ns
	maxList int           // max_list_size, 0 = no limit (cut at maxDigestList)
	ackWait time.Duration // ack_timeout_ns

	buf     []pendingDigest
	inBuf   map[string]struct{}
	firstAt time.Time
	bufGen  uint64 // bumped when the buffer starts filling; stale timers check it

	cache    map[string]uint64 // message key -> list_id, sent and not acked
	lists    map[uint64]*sentList
	awaiting uint64 // list whose ack holds back the next one, 0 = none
}

type pendingDigest struct {
	key     string
	members [][]byte
}

type sentList struct {
	keys []string
	stop func() bool
}

func newDigestEngine(s *Server) *digestEngine {
	return &digestEngine{s: s, states: map[uint32]*digestState{}}
}

// reset installs the digests of a newly committed pipeline with their configs.
func (e *digestEngine) reset(sch *schema, cfgs map[uint32]*p4v1.DigestEntry_Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, st := range e.states {
		st.clearSent()
	}
	e.states = make(map[uint32]*digestState, len(sch.Digests))
	for _, info := range sch.Digests {
		st := &digestState{info: info}
		st.clear()
		e.states[info.ID] = st
		if cfg := cfgs[info.ID]; cfg != nil {
			st.configure(cfg)
		}
	}
}

// configure enables (cfg non-nil) or disables a digest of the running pipeline.
func (e *digestEngine) configure(id uint32, cfg *p4v1.DigestEntry_Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.states[id]
	if st == nil {
		return
	}
	if cfg == nil {
		st.enabled = false
		st.clearSent()
		st.clear()
		return
	}
	st.configure(cfg)
	e.flush(id, st)
}

func (st *digestState) configure(cfg *p4v1.DigestEntry_Config) {
	st.enabled = true
	st.maxWait = time.Duration(cfg.MaxTimeoutNs)
	st.maxList = int(cfg.MaxListSize)
	st.ackWait = time.Duration(cfg.AckTimeoutNs)
}

func (st *digestState) clear() {
	st.buf, st.inBuf = nil, map[string]struct{}{}
	st.cache, st.lists, st.awaiting = map[string]uint64{}, map[uint64]*sentList{}, 0
	st.bufGen++
}

// clearSent forgets every sent list (stopping their ack timers).
func (st *digestState) clearSent() {
	for _, l := range st.lists {
		if l.stop != nil {
			l.stop()
		}
	}
	st.cache, st.lists, st.awaiting = map[string]uint64{}, map[uint64]*sentList{}, 0
}

// primaryChanged empties the caches (spec: allowed on a client status change): the new
// primary acks only lists it received.
func (e *digestEngine) primaryChanged() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, st := range e.states {
		st.clearSent()
		e.flush(id, st)
	}
}

// add takes one message from the data plane. It never blocks on the controller.
func (e *digestEngine) add(id uint32, members [][]byte) {
	stats := &e.s.stats
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.states[id]
	if st == nil || !st.enabled || len(members) != len(st.info.Members) {
		stats.digestDrops.Add(1)
		return
	}
	// Copy: the target may reuse its buffers once we return.
	key := make([]byte, 0, 64)
	vals := make([][]byte, len(members))
	for i, m := range members {
		v, err := canonical(m, st.info.Members[i].Width, "digest member")
		if err != nil {
			stats.digestDrops.Add(1)
			return
		}
		key = binary.AppendUvarint(key, uint64(len(v)))
		key = append(key, v...)
		vals[i] = append([]byte(nil), v...)
	}
	k := string(key)
	if _, dup := st.inBuf[k]; dup {
		stats.digestDuplicates.Add(1)
		return
	}
	if _, dup := st.cache[k]; dup {
		stats.digestDuplicates.Add(1)
		return
	}
	if len(st.buf) >= e.s.opts.DigestBuffer {
		stats.digestDrops.Add(1)
		return
	}
	if len(st.buf) == 0 {
		st.firstAt = e.s.clock.Now()
		st.bufGen++
		if st.maxWait > 0 {
			gen := st.bufGen
			e.s.clock.AfterFunc(st.maxWait, func() { e.timeout(id, st, gen) })
		}
	}
	st.buf = append(st.buf, pendingDigest{key: k, members: vals})
	st.inBuf[k] = struct{}{}
	e.flush(id, st)
}

func (e *digestEngine) timeout(id uint32, st *digestState, gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.states[id] == st && st.bufGen == gen {
		e.flush(id, st)
	}
}

// flush sends as many due lists as flow control allows. Called with mu held.
func (e *digestEngine) flush(id uint32, st *digestState) {
	stats := &e.s.stats
	for len(st.buf) > 0 && st.awaiting == 0 && st.enabled {
		due := st.maxWait <= 0 || (st.maxList > 0 && len(st.buf) >= st.maxList) ||
			e.s.clock.Now().Sub(st.firstAt) >= st.maxWait
		if !due {
			return
		}
		limit := st.maxList
		if limit <= 0 || limit > maxDigestList {
			limit = maxDigestList
		}
		n := min(len(st.buf), limit)
		batch := st.buf[:n]
		st.buf = append([]pendingDigest(nil), st.buf[n:]...)
		for _, d := range batch {
			delete(st.inBuf, d.key)
		}

		e.lastID++
		listID := e.lastID
		dl := &p4v1.DigestList{DigestId: id, ListId: listID, Timestamp: e.s.clock.Now().UnixNano()}
		dl.Data = make([]*p4v1.P4Data, n)
		for i, d := range batch {
			dl.Data[i] = p4data(st.info, d.members)
		}
		c := e.s.arb.defaultPrimary.Load()
		if c == nil || !e.s.sendData(c, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Digest{Digest: dl}}) {
			stats.digestDrops.Add(uint64(n))
			continue
		}
		stats.digestLists.Add(1)
		stats.digestMessages.Add(uint64(n))
		if st.ackWait <= 0 {
			continue
		}
		l := &sentList{keys: make([]string, n)}
		for i, d := range batch {
			l.keys[i] = d.key
			st.cache[d.key] = listID
		}
		l.stop = e.s.clock.AfterFunc(st.ackWait, func() { e.expire(id, st, listID) })
		st.lists[listID] = l
		st.awaiting = listID
	}
}

// expire ends the wait for a list's ack.
func (e *digestEngine) expire(id uint32, st *digestState, listID uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.states[id] == st {
		st.release(listID)
		e.flush(id, st)
	}
}

func (st *digestState) release(listID uint64) {
	l := st.lists[listID]
	if l == nil {
		return
	}
	for _, k := range l.keys {
		if st.cache[k] == listID {
			delete(st.cache, k)
		}
	}
	delete(st.lists, listID)
	if st.awaiting == listID {
		st.awaiting = 0
	}
}

// ack handles a DigestListAck from the primary; the error becomes a StreamError.
func (e *digestEngine) ack(id uint32, listID uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.states[id]
	if st == nil {
		return errf(codes.InvalidArgument, "digest ack: digest id %d is not in the committed P4Info", id)
	}
	if listID == 0 || listID > e.lastID {
		return errf(codes.InvalidArgument, "digest ack: list_id %d of digest %q was never sent", listID, st.info.Name)
	}
	// An ack for a list already acked or expired is harmless and ignored.
	if l := st.lists[listID]; l != nil {
		l.stop()
		st.release(listID)
		e.flush(id, st)
	}
	return nil
}

// p4data wraps a message's members as the digest's P4Data (a struct, or one bitstring).
func p4data(d *p4schema.Digest, members [][]byte) *p4v1.P4Data {
	if !d.IsStruct {
		return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: members[0]}}
	}
	ms := make([]*p4v1.P4Data, len(members))
	for i, m := range members {
		ms[i] = &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: m}}
	}
	return &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: &p4v1.P4StructLike{Members: ms}}}
}
