package p4rt

import (
	"context"
	"fmt"

	"github.com/junction-atsss/junction/internal/p4schema"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// Write applies a batch of updates (P4Runtime spec section 12).
//
// Atomicity: CONTINUE_ON_ERROR attempts every update and reports one p4.v1.Error per update.
// ROLLBACK_ON_ERROR applies updates in order and, at the first failure, undoes the applied ones
// (store and Target) in reverse; the failed update carries its error and every other one
// ABORTED. DATAPLANE_ATOMIC is UNIMPLEMENTED: the Target cannot switch a batch in one step.
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	s.stats.writeRequests.Add(1)
	s.state.Lock()
	defer s.state.Unlock()
	if err := s.arb.checkPrimary(req.DeviceId, req.Role, req.ElectionId); err != nil {
		return nil, rpcErr(err)
	}
	if s.active == nil {
		return nil, rpcStatus(codes.FailedPrecondition, "no forwarding pipeline config is set")
	}
	w := &writer{s: s, p: s.active, buf: make([]byte, 0, 64)}
	switch req.Atomicity {
	case p4v1.WriteRequest_CONTINUE_ON_ERROR:
	case p4v1.WriteRequest_ROLLBACK_ON_ERROR:
		w.rollback = true
	case p4v1.WriteRequest_DATAPLANE_ATOMIC:
		return nil, rpcStatus(codes.Unimplemented, "atomicity DATAPLANE_ATOMIC is not supported (use CONTINUE_ON_ERROR or ROLLBACK_ON_ERROR)")
	default:
		return nil, rpcStatus(codes.InvalidArgument, fmt.Sprintf("unknown atomicity %d", req.Atomicity))
	}

	errs := make([]error, len(req.Updates))
	failed := -1
	for i, u := range req.Updates {
		if err := w.apply(u); err != nil {
			errs[i] = err
			s.stats.updateErrors.Add(1)
			if failed < 0 {
				failed = i
			}
			if w.rollback {
				break
			}
		}
	}
	if failed >= 0 && w.rollback {
		for i := len(w.undo) - 1; i >= 0; i-- {
			w.undo[i]()
		}
		for i := range errs {
			if errs[i] == nil {
				errs[i] = errf(codes.Aborted, "not applied: update %d failed and the batch was rolled back", failed)
			}
		}
		return nil, batchStatus(errs, "write")
	}
	for i, u := range req.Updates {
		if errs[i] != nil {
			continue
		}
		switch u.Type {
		case p4v1.Update_INSERT:
			s.stats.inserts.Add(1)
		case p4v1.Update_MODIFY:
			s.stats.modifies.Add(1)
		case p4v1.Update_DELETE:
			s.stats.deletes.Add(1)
		}
	}
	if failed >= 0 {
		return nil, batchStatus(errs, "write")
	}
	return &p4v1.WriteResponse{}, nil
}

// writer applies the updates of one Write batch to pipeline p.
type writer struct {
	s        *Server
	p        *pipeline
	buf      []byte // reused key buffer
	pbuf     []byte // reused param buffer
	rollback bool
	undo     []func()
}

// onUndo records how to revert an applied update when the batch rolls back.
func (w *writer) onUndo(f func()) {
	if w.rollback {
		w.undo = append(w.undo, f)
	}
}

// undoErr logs a failure to revert: the batch is reported as rolled back either way.
func (w *writer) undoErr(err error, what string) {
	if err != nil {
		w.s.log.Error("rollback failed", "entity", what, "err", err)
	}
}

func (w *writer) apply(u *p4v1.Update) error {
	if u == nil || u.Entity == nil {
		return errf(codes.InvalidArgument, "update has no entity")
	}
	switch u.Type {
	case p4v1.Update_INSERT, p4v1.Update_MODIFY, p4v1.Update_DELETE:
	default:
		return errf(codes.InvalidArgument, "update type %v: use INSERT, MODIFY or DELETE", u.Type)
	}
	switch e := u.Entity.Entity.(type) {
	case *p4v1.Entity_TableEntry:
		return w.tableEntry(u.Type, e.TableEntry)
	case *p4v1.Entity_RegisterEntry:
		return w.registerEntry(u.Type, e.RegisterEntry)
	case *p4v1.Entity_CounterEntry:
		return w.counterEntry(u.Type, e.CounterEntry)
	case *p4v1.Entity_MeterEntry:
		return w.meterEntry(u.Type, e.MeterEntry)
	case *p4v1.Entity_DigestEntry:
		return w.digestEntry(u.Type, e.DigestEntry)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return w.preEntry(u.Type, e.PacketReplicationEngineEntry)
	case nil:
		return errf(codes.InvalidArgument, "entity has no type set")
	default:
		return errf(codes.Unimplemented, "entity %s is not supported by this server", entityName(u.Entity))
	}
}

func (w *writer) tableEntry(op p4v1.Update_Type, te *p4v1.TableEntry) error {
	if te == nil {
		return errf(codes.InvalidArgument, "table_entry is empty")
	}
	ti, ok := w.p.schema.TableByID(te.TableId)
	if !ok {
		return errf(codes.InvalidArgument, "table id %d is not in the P4Info", te.TableId)
	}
	if te.IsConst {
		return errf(codes.InvalidArgument, "table %q: is_const must be false in writes", ti.Name)
	}
	ts := w.p.tables[ti.ID]
	if te.IsDefaultAction {
		return w.defaultEntry(op, ts, te)
	}
	if ti.IsConst {
		return errf(codes.PermissionDenied, "table %q is a constant table", ti.Name)
	}
	if ti.Indirect {
		return errf(codes.Unimplemented, "table %q uses an action profile, which this server does not support", ti.Name)
	}
	if len(ti.Fields) == 0 && op == p4v1.Update_INSERT {
		return errf(codes.InvalidArgument, "table %q has no match key: only its default entry can be written", ti.Name)
	}
	if op != p4v1.Update_DELETE {
		if te.CounterData != nil || te.MeterConfig != nil || te.MeterCounterData != nil {
			if !ti.HasDirect {
				return errf(codes.InvalidArgument, "table %q has no direct counter or meter", ti.Name)
			}
			return errf(codes.Unimplemented, "table %q: direct counters and meters are not supported", ti.Name)
		}
		if te.IdleTimeoutNs != 0 {
			if !ti.IdleTimeout {
				return errf(codes.InvalidArgument, "table %q does not support idle timeouts", ti.Name)
			}
			return errf(codes.Unimplemented, "table %q: idle timeouts are not supported", ti.Name)
		}
	}
	key, err := entryKey(w.buf[:0], ti, te)
	if err != nil {
		return err
	}
	w.buf = key
	old, exists := ts.entries[string(key)]
	t := w.s.target

	switch op {
	case p4v1.Update_INSERT:
		if exists {
			return errf(codes.AlreadyExists, "table %q: the entry already exists", ti.Name)
		}
		a, err := w.entryAction(ti, te)
		if err != nil {
			return err
		}
		if a == nil {
			return errf(codes.InvalidArgument, "table %q: INSERT needs an action", ti.Name)
		}
		if ti.Size > 0 && int64(len(ts.entries)) >= ti.Size {
			return errf(codes.ResourceExhausted, "table %q is full (size %d)", ti.Name, ti.Size)
		}
		if w.p.committed {
			if err := t.WriteTableEntry(op, te); err != nil {
				return targetErr(err, codes.Internal, "table "+quote(ti.Name))
			}
		}
		k := string(key)
		ts.entries[k] = w.entryValue(te, a)
		w.onUndo(func() {
			delete(ts.entries, k)
			if w.p.committed {
				w.undoErr(t.WriteTableEntry(p4v1.Update_DELETE, te), ti.Name)
			}
		})

	case p4v1.Update_MODIFY:
		if !exists {
			return errf(codes.NotFound, "table %q: no such entry to modify", ti.Name)
		}
		k := string(key)
		a, err := w.entryAction(ti, te)
		if err != nil {
			return err
		}
		if a == nil { // no action given: keep the entry's action (spec 9.1.2)
			prev := w.p.entryProto(ts, k, old)
			te.Action = prev.Action
			a = prev.Action.GetAction()
		}
		if w.p.committed {
			if err := t.WriteTableEntry(op, te); err != nil {
				return targetErr(err, codes.Internal, "table "+quote(ti.Name))
			}
		}
		ts.entries[k] = w.entryValue(te, a)
		w.onUndo(func() {
			ts.entries[k] = old
			if w.p.committed {
				w.undoErr(t.WriteTableEntry(p4v1.Update_MODIFY, w.p.entryProto(ts, k, old)), ti.Name)
			}
		})

	case p4v1.Update_DELETE:
		if !exists {
			return errf(codes.NotFound, "table %q: no such entry to delete", ti.Name)
		}
		te.Action = nil // non-key fields are ignored on DELETE
		if w.p.committed {
			if err := t.WriteTableEntry(op, te); err != nil {
				return targetErr(err, codes.Internal, "table "+quote(ti.Name))
			}
		}
		k := string(key)
		delete(ts.entries, k)
		w.onUndo(func() {
			ts.entries[k] = old
			if w.p.committed {
				w.undoErr(t.WriteTableEntry(p4v1.Update_INSERT, w.p.entryProto(ts, k, old)), ti.Name)
			}
		})
	}
	return nil
}

// entryAction checks an entry's action; nil when none is given.
func (w *writer) entryAction(ti *p4schema.Table, te *p4v1.TableEntry) (*p4v1.Action, error) {
	if te.Action == nil {
		return nil, nil
	}
	a := te.Action.GetAction()
	if a == nil {
		return nil, errf(codes.InvalidArgument, "table %q is a direct table: give an action, not an action profile member, group or set", ti.Name)
	}
	return a, w.p.schema.checkAction(ti, a, false)
}

func (w *writer) entryValue(te *p4v1.TableEntry, a *p4v1.Action) entryValue {
	return entryValue{
		action:      a.ActionId,
		params:      w.packParams(a),
		metadata:    string(te.Metadata),
		ctrlMeta:    te.ControllerMetadata,
		idleTimeout: te.IdleTimeoutNs,
	}
}

// packParams encodes a checked action's param values (in param-ID order) into one string:
// uvarint-length-prefixed values.
func (w *writer) packParams(a *p4v1.Action) string {
	b := w.pbuf[:0]
	for _, p := range a.Params {
		b = appendBytes(b, p.Value)
	}
	w.pbuf = b
	return string(b)
}

// defaultEntry handles MODIFY of a table's default entry (spec 9.1.3).
func (w *writer) defaultEntry(op p4v1.Update_Type, ts *tableState, te *p4v1.TableEntry) error {
	ti := ts.info
	if op != p4v1.Update_MODIFY {
		return errf(codes.InvalidArgument, "table %q: the default entry can only be modified, not inserted or deleted", ti.Name)
	}
	if len(te.Match) > 0 || te.Priority != 0 {
		return errf(codes.InvalidArgument, "table %q: the default entry has no match and priority 0", ti.Name)
	}
	if ti.ConstDefault != 0 {
		return errf(codes.PermissionDenied, "table %q has a constant default action", ti.Name)
	}
	if ti.Indirect {
		return errf(codes.PermissionDenied, "table %q uses an action profile: its default entry is constant", ti.Name)
	}
	var stored *p4v1.TableEntry
	var a *p4v1.Action
	if te.Action != nil {
		if a = te.Action.GetAction(); a == nil {
			return errf(codes.InvalidArgument, "table %q: the default entry needs a direct action", ti.Name)
		}
		if err := w.p.schema.checkAction(ti, a, true); err != nil {
			return err
		}
		stored = &p4v1.TableEntry{
			TableId: ti.ID, IsDefaultAction: true, Action: te.Action,
			Metadata: te.Metadata, ControllerMetadata: te.ControllerMetadata,
		}
	}
	t := w.s.target
	if w.p.committed {
		if err := t.SetDefaultAction(ti.ID, a); err != nil {
			return targetErr(err, codes.Internal, "default action of table "+quote(ti.Name))
		}
	}
	prev := ts.defaultEntry
	ts.defaultEntry = stored
	w.onUndo(func() {
		ts.defaultEntry = prev
		if w.p.committed {
			w.undoErr(t.SetDefaultAction(ti.ID, prev.GetAction().GetAction()), ti.Name)
		}
	})
	return nil
}

func entityName(e *p4v1.Entity) string {
	switch e.Entity.(type) {
	case *p4v1.Entity_ExternEntry:
		return "extern_entry"
	case *p4v1.Entity_ActionProfileMember:
		return "action_profile_member"
	case *p4v1.Entity_ActionProfileGroup:
		return "action_profile_group"
	case *p4v1.Entity_DirectMeterEntry:
		return "direct_meter_entry"
	case *p4v1.Entity_DirectCounterEntry:
		return "direct_counter_entry"
	case *p4v1.Entity_ValueSetEntry:
		return "value_set_entry"
	}
	return fmt.Sprintf("%T", e.Entity)
}
