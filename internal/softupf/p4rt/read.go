package p4rt

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/junction-atsss/junction/internal/p4bytes"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Read serves any controller, primary or not (spec section 13). Results stream in chunks of
// at most MaxReadChunk entities and MaxReadChunkBytes bytes, so a wildcard read of a table
// with half a million entries fits gRPC's message limits. Each table is snapshotted under the
// read lock and encoded after releasing it, so a slow reader never holds up Writes; register,
// counter and meter cells are read in chunk-sized batches. Roles do not filter reads: every role
// has the whole pipeline.
func (s *Server) Read(req *p4v1.ReadRequest, stream p4v1.P4Runtime_ReadServer) error {
	s.stats.readRequests.Add(1)
	if err := s.checkDevice(req.DeviceId); err != nil {
		return rpcErr(err)
	}
	s.state.RLock()
	p := s.active
	s.state.RUnlock()
	if p == nil {
		return rpcStatus(codes.FailedPrecondition, "no forwarding pipeline config is set")
	}
	r := &reader{s: s, p: p, stream: stream}
	errs := make([]error, len(req.Entities))
	failed := false
	for i, e := range req.Entities {
		err := r.entity(e)
		var se sendError
		if errors.As(err, &se) {
			return se.err
		}
		if err != nil {
			errs[i], failed = err, true
		}
	}
	if err := r.flush(); err != nil {
		return err
	}
	if failed {
		return batchStatus(errs, "read")
	}
	return nil
}

// sendError is a failure of the stream itself: it ends the RPC.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }

type reader struct {
	s      *Server
	p      *pipeline
	stream p4v1.P4Runtime_ReadServer
	chunk  []*p4v1.Entity
	size   int
}

func (r *reader) add(e *p4v1.Entity) error {
	n := proto.Size(e)
	if len(r.chunk) > 0 && (len(r.chunk) >= r.s.opts.MaxReadChunk || r.size+n > r.s.opts.MaxReadChunkBytes) {
		if err := r.flush(); err != nil {
			return sendError{err}
		}
	}
	r.chunk = append(r.chunk, e)
	r.size += n
	return nil
}

func (r *reader) flush() error {
	if len(r.chunk) == 0 {
		return nil
	}
	err := r.stream.Send(&p4v1.ReadResponse{Entities: r.chunk})
	r.s.stats.entitiesRead.Add(uint64(len(r.chunk)))
	r.chunk, r.size = make([]*p4v1.Entity, 0, len(r.chunk)), 0
	return err
}

// locked runs f under the read lock if the pipeline is still the one this read started on.
func (r *reader) locked(f func()) error {
	r.s.state.RLock()
	defer r.s.state.RUnlock()
	if r.s.active != r.p {
		return errf(codes.Aborted, "the forwarding pipeline changed during the read")
	}
	f()
	return nil
}

func (r *reader) entity(e *p4v1.Entity) error {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return r.tableEntries(x.TableEntry)
	case *p4v1.Entity_RegisterEntry:
		return r.registerEntries(x.RegisterEntry)
	case *p4v1.Entity_CounterEntry:
		return r.counterEntries(x.CounterEntry)
	case *p4v1.Entity_MeterEntry:
		return r.meterEntries(x.MeterEntry)
	case *p4v1.Entity_DigestEntry:
		return r.digestEntries(x.DigestEntry)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return r.preEntries(x.PacketReplicationEngineEntry)
	case nil:
		return errf(codes.InvalidArgument, "entity has no type set: wildcard reads name the entity type")
	default:
		return errf(codes.Unimplemented, "entity %s is not supported by this server", entityName(e))
	}
}

type storedEntry struct {
	key string
	v   entryValue
}

func (r *reader) tableEntries(q *p4v1.TableEntry) error {
	if q.TableId == 0 {
		if len(q.Match) > 0 || q.Action != nil || q.Priority != 0 || q.ControllerMetadata != 0 ||
			len(q.Metadata) > 0 || q.IsDefaultAction {
			return errf(codes.InvalidArgument, "table_id 0 reads every table: no other filter may be set")
		}
		for _, t := range r.p.schema.Tables {
			if err := r.table(r.p.tables[t.ID], &p4v1.TableEntry{TableId: t.ID}); err != nil {
				return err
			}
		}
		return nil
	}
	ts := r.p.tables[q.TableId]
	if ts == nil {
		return errf(codes.InvalidArgument, "table id %d is not in the P4Info", q.TableId)
	}
	return r.table(ts, q)
}

// table reads the entries of one table that pass q's filters (spec 9.1.7).
func (r *reader) table(ts *tableState, q *p4v1.TableEntry) error {
	ti := ts.info
	if q.IsDefaultAction {
		if len(q.Match) > 0 || q.Priority != 0 {
			return errf(codes.InvalidArgument, "table %q: a default-entry read has no match and priority 0", ti.Name)
		}
		var te *p4v1.TableEntry
		if err := r.locked(func() { te = defaultEntryProto(ts) }); err != nil {
			return err
		}
		return r.add(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}})
	}

	var actionID uint32
	if q.Action != nil {
		a := q.Action.GetAction()
		if a == nil {
			return errf(codes.InvalidArgument, "table %q: only an action_id can filter a read", ti.Name)
		}
		actionID = a.ActionId
	}
	keep := func(k string, v entryValue) bool {
		return (actionID == 0 || v.action == actionID) &&
			(q.ControllerMetadata == 0 || v.ctrlMeta == q.ControllerMetadata) &&
			(len(q.Metadata) == 0 || v.metadata == string(q.Metadata)) &&
			(q.Priority == 0 || (ti.NeedsPriority && priorityOf(k) == q.Priority))
	}

	var exact, prefix string
	if len(q.Match) > 0 {
		m := append([]*p4v1.FieldMatch(nil), q.Match...)
		if ti.NeedsPriority && q.Priority == 0 {
			k, err := matchKey(nil, ti, m) // any priority: the key without its last 4 bytes
			if err != nil {
				return err
			}
			prefix = string(k)
		} else {
			k, err := entryKey(nil, ti, &p4v1.TableEntry{Match: m, Priority: q.Priority})
			if err != nil {
				return err
			}
			exact = string(k)
		}
	}

	var snap []storedEntry
	err := r.locked(func() {
		if exact != "" {
			if v, ok := ts.entries[exact]; ok && keep(exact, v) {
				snap = append(snap, storedEntry{exact, v})
			}
			return
		}
		snap = make([]storedEntry, 0, len(ts.entries))
		for k, v := range ts.entries {
			if (prefix == "" || (strings.HasPrefix(k, prefix) && len(k) == len(prefix)+4)) && keep(k, v) {
				snap = append(snap, storedEntry{k, v})
			}
		}
	})
	if err != nil {
		return err
	}
	for _, e := range snap {
		te := r.p.entryProto(ts, e.key, e.v)
		if err := r.add(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}); err != nil {
			return err
		}
	}
	return nil
}

// priorityOf reads the priority at the end of a key of a table that needs one.
func priorityOf(k string) int32 {
	b := k[len(k)-4:]
	return int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

func (r *reader) registerEntries(q *p4v1.RegisterEntry) error {
	ids := []uint32{q.RegisterId}
	if q.RegisterId == 0 {
		if q.Index != nil {
			return errf(codes.InvalidArgument, "register_id 0 reads every register: index may not be set")
		}
		ids = ids[:0]
		for _, x := range r.p.schema.Registers {
			ids = append(ids, x.ID)
		}
	}
	for _, id := range ids {
		ri, ok := r.p.schema.RegisterByID(id)
		if !ok {
			return errf(codes.InvalidArgument, "register id %d is not in the P4Info", id)
		}
		what := "register " + quote(ri.Name)
		lo, hi, err := cellRange(q.Index, ri.Size, what)
		if err != nil {
			return err
		}
		batch := int64(r.s.opts.MaxReadChunk)
		vals := make([]uint64, 0, batch)
		for start := lo; start < hi; start += batch {
			end := min(start+batch, hi)
			vals = vals[:0]
			var rerr error
			lerr := r.locked(func() {
				for i := start; i < end; i++ {
					v := r.p.regShadow[id][i]
					if r.p.committed {
						if v, rerr = r.s.target.ReadRegister(id, uint32(i)); rerr != nil {
							rerr = targetErr(rerr, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
							return
						}
					}
					vals = append(vals, v)
				}
			})
			if lerr != nil {
				return lerr
			}
			if rerr != nil {
				return rerr
			}
			for j, v := range vals {
				e := &p4v1.RegisterEntry{
					RegisterId: id,
					Index:      &p4v1.Index{Index: start + int64(j)},
					Data:       &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: p4bytes.Uint(v)}},
				}
				if err := r.add(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: e}}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *reader) counterEntries(q *p4v1.CounterEntry) error {
	ids := []uint32{q.CounterId}
	if q.CounterId == 0 {
		if q.Index != nil {
			return errf(codes.InvalidArgument, "counter_id 0 reads every counter: index may not be set")
		}
		ids = ids[:0]
		for _, x := range r.p.schema.Counters {
			ids = append(ids, x.ID)
		}
	}
	for _, id := range ids {
		ci, ok := r.p.schema.CounterByID(id)
		if !ok {
			return errf(codes.InvalidArgument, "counter id %d is not in the P4Info", id)
		}
		what := "counter " + quote(ci.Name)
		lo, hi, err := cellRange(q.Index, ci.Size, what)
		if err != nil {
			return err
		}
		batch := int64(r.s.opts.MaxReadChunk)
		cells := make([]counterCell, 0, batch)
		for start := lo; start < hi; start += batch {
			end := min(start+batch, hi)
			cells = cells[:0]
			var rerr error
			lerr := r.locked(func() {
				for i := start; i < end; i++ {
					c := r.p.ctrShadow[id][i]
					if r.p.committed {
						if c.packets, c.bytes, rerr = r.s.target.ReadCounter(id, uint32(i)); rerr != nil {
							rerr = targetErr(rerr, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
							return
						}
					}
					cells = append(cells, c)
				}
			})
			if lerr != nil {
				return lerr
			}
			if rerr != nil {
				return rerr
			}
			for j, c := range cells {
				e := &p4v1.CounterEntry{
					CounterId: id,
					Index:     &p4v1.Index{Index: start + int64(j)},
					Data:      &p4v1.CounterData{PacketCount: int64(c.packets), ByteCount: int64(c.bytes)},
				}
				if err := r.add(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: e}}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// meterEntries returns one entry per cell, like counterEntries: a wildcard read lists every
// cell (spec 9.5), and a cell with the default config (every packet green) has config unset.
func (r *reader) meterEntries(q *p4v1.MeterEntry) error {
	if q.CounterData != nil {
		return errf(codes.Unimplemented, "meter_entry: per-color counter_data is not supported (leave it unset)")
	}
	ids := []uint32{q.MeterId}
	if q.MeterId == 0 {
		if q.Index != nil {
			return errf(codes.InvalidArgument, "meter_id 0 reads every meter: index may not be set")
		}
		ids = ids[:0]
		for _, x := range r.p.schema.Meters {
			ids = append(ids, x.ID)
		}
	}
	for _, id := range ids {
		mi, ok := r.p.schema.MeterByID(id)
		if !ok {
			return errf(codes.InvalidArgument, "meter id %d is not in the P4Info", id)
		}
		what := "meter " + quote(mi.Name)
		lo, hi, err := cellRange(q.Index, mi.Size, what)
		if err != nil {
			return err
		}
		batch := int64(r.s.opts.MaxReadChunk)
		cfgs := make([]*p4v1.MeterConfig, 0, batch)
		for start := lo; start < hi; start += batch {
			end := min(start+batch, hi)
			cfgs = cfgs[:0]
			var rerr error
			lerr := r.locked(func() {
				for i := start; i < end; i++ {
					c := r.p.mtrShadow[id][i]
					if r.p.committed {
						if c, rerr = r.s.target.ReadMeter(id, uint32(i)); rerr != nil {
							rerr = targetErr(rerr, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
							return
						}
						if c != nil { // the Target's own value: encoded after the lock is released
							c = &p4v1.MeterConfig{Cir: c.Cir, Cburst: c.Cburst, Pir: c.Pir, Pburst: c.Pburst, Eburst: c.Eburst}
						}
					}
					cfgs = append(cfgs, c)
				}
			})
			if lerr != nil {
				return lerr
			}
			if rerr != nil {
				return rerr
			}
			for j, c := range cfgs {
				e := &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: start + int64(j)}, Config: c}
				if err := r.add(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: e}}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// digestEntries returns the configs of enabled digests (a disabled digest reads as nothing).
func (r *reader) digestEntries(q *p4v1.DigestEntry) error {
	if _, ok := r.p.schema.DigestByID(q.DigestId); q.DigestId != 0 && !ok {
		return errf(codes.InvalidArgument, "digest id %d is not in the P4Info", q.DigestId)
	}
	var out []*p4v1.DigestEntry
	err := r.locked(func() {
		for _, d := range r.p.schema.Digests {
			if cfg := r.p.digestCfg[d.ID]; cfg != nil && (q.DigestId == 0 || q.DigestId == d.ID) {
				out = append(out, &p4v1.DigestEntry{DigestId: d.ID, Config: cfg})
			}
		}
	})
	if err != nil {
		return err
	}
	for _, d := range out {
		if err := r.add(&p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: d}}); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) preEntries(q *p4v1.PacketReplicationEngineEntry) error {
	var out []*p4v1.PacketReplicationEngineEntry
	var lerr error
	switch x := q.GetType().(type) {
	case *p4v1.PacketReplicationEngineEntry_CloneSessionEntry:
		want := x.CloneSessionEntry.GetSessionId()
		lerr = r.locked(func() {
			for _, id := range sortedKeys(r.p.clones) {
				if want == 0 || want == id {
					out = append(out, &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: r.p.clones[id]}})
				}
			}
		})
	case *p4v1.PacketReplicationEngineEntry_MulticastGroupEntry:
		want := x.MulticastGroupEntry.GetMulticastGroupId()
		lerr = r.locked(func() {
			for _, id := range sortedKeys(r.p.mcast) {
				if want == 0 || want == id {
					out = append(out, &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: r.p.mcast[id]}})
				}
			}
		})
	default:
		return errf(codes.InvalidArgument, "packet_replication_engine_entry: set clone_session_entry or multicast_group_entry")
	}
	if lerr != nil {
		return lerr
	}
	for _, e := range out {
		if err := r.add(&p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: e}}); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
