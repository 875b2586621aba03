package p4rt

import (
	"fmt"
	"maps"

	"github.com/junction-atsss/junction/internal/p4bytes"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Writes of registers, counters, meters, digest configs and the packet replication engine.

// cellRange resolves an optional index into [lo, hi) for an array of size cells (spec 9.6,
// 9.8: negative is INVALID_ARGUMENT, beyond the array OUT_OF_RANGE, unset means every cell).
func cellRange(idx *p4v1.Index, size int64, what string) (lo, hi int64, err error) {
	if idx == nil {
		return 0, size, nil
	}
	switch {
	case idx.Index < 0:
		return 0, 0, errf(codes.InvalidArgument, "%s: negative index %d", what, idx.Index)
	case idx.Index >= size:
		return 0, 0, errf(codes.OutOfRange, "%s: index %d is beyond the size %d", what, idx.Index, size)
	}
	return idx.Index, idx.Index + 1, nil
}

func (w *writer) registerEntry(op p4v1.Update_Type, re *p4v1.RegisterEntry) error {
	ri, ok := w.p.schema.RegisterByID(re.GetRegisterId())
	if !ok {
		return errf(codes.InvalidArgument, "register id %d is not in the P4Info", re.GetRegisterId())
	}
	what := "register " + quote(ri.Name)
	if op != p4v1.Update_MODIFY {
		return errf(codes.InvalidArgument, "%s: register entries can only be modified", what)
	}
	if ri.Width > 64 {
		return errf(codes.Unimplemented, "%s: elements wider than 64 bits are not supported", what)
	}
	bs, ok := re.GetData().GetData().(*p4v1.P4Data_Bitstring)
	if !ok {
		return errf(codes.InvalidArgument, "%s: data must be a bitstring (bit<%d>)", what, ri.Width)
	}
	v, err := canonical(bs.Bitstring, ri.Width, what)
	if err != nil {
		return err
	}
	lo, hi, err := cellRange(re.Index, ri.Size, what)
	if err != nil {
		return err
	}
	val := decodeUint(v)
	if !w.p.committed {
		writeShadow(w, w.p.regShadow, ri.ID, lo, hi, val)
		return nil
	}
	t := w.s.target
	var old []uint64
	if w.rollback {
		for i := lo; i < hi; i++ {
			x, err := t.ReadRegister(ri.ID, uint32(i))
			if err != nil {
				return targetErr(err, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
			}
			old = append(old, x)
		}
	}
	for i := lo; i < hi; i++ {
		if err := t.WriteRegister(ri.ID, uint32(i), val); err != nil {
			return targetErr(err, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
		}
	}
	w.onUndo(func() {
		for i := lo; i < hi; i++ {
			w.undoErr(t.WriteRegister(ri.ID, uint32(i), old[i-lo]), ri.Name)
		}
	})
	return nil
}

func (w *writer) counterEntry(op p4v1.Update_Type, ce *p4v1.CounterEntry) error {
	ci, ok := w.p.schema.CounterByID(ce.GetCounterId())
	if !ok {
		return errf(codes.InvalidArgument, "counter id %d is not in the P4Info", ce.GetCounterId())
	}
	what := "counter " + quote(ci.Name)
	if op != p4v1.Update_MODIFY {
		return errf(codes.InvalidArgument, "%s: counter entries can only be modified", what)
	}
	lo, hi, err := cellRange(ce.Index, ci.Size, what)
	if err != nil {
		return err
	}
	if ce.Data == nil {
		return nil // spec 9.5.2: no data, no change
	}
	if ce.Data.PacketCount < 0 || ce.Data.ByteCount < 0 {
		return errf(codes.InvalidArgument, "%s: negative counts", what)
	}
	cell := counterCell{packets: uint64(ce.Data.PacketCount), bytes: uint64(ce.Data.ByteCount)}
	if !w.p.committed {
		writeShadow(w, w.p.ctrShadow, ci.ID, lo, hi, cell)
		return nil
	}
	t := w.s.target
	var old []counterCell
	if w.rollback {
		for i := lo; i < hi; i++ {
			pk, by, err := t.ReadCounter(ci.ID, uint32(i))
			if err != nil {
				return targetErr(err, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
			}
			old = append(old, counterCell{pk, by})
		}
	}
	for i := lo; i < hi; i++ {
		if err := t.WriteCounter(ci.ID, uint32(i), cell.packets, cell.bytes); err != nil {
			return targetErr(err, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
		}
	}
	w.onUndo(func() {
		for i := lo; i < hi; i++ {
			w.undoErr(t.WriteCounter(ci.ID, uint32(i), old[i-lo].packets, old[i-lo].bytes), ci.Name)
		}
	})
	return nil
}

// meterEntry sets (config given) or resets to the default (config unset: every packet green)
// the configuration of one cell, or of every cell when index is unset (spec 9.5).
func (w *writer) meterEntry(op p4v1.Update_Type, me *p4v1.MeterEntry) error {
	mi, ok := w.p.schema.MeterByID(me.GetMeterId())
	if !ok {
		return errf(codes.InvalidArgument, "meter id %d is not in the P4Info", me.GetMeterId())
	}
	what := "meter " + quote(mi.Name)
	if op != p4v1.Update_MODIFY {
		return errf(codes.InvalidArgument, "%s: meter entries can only be modified", what)
	}
	if me.CounterData != nil {
		return errf(codes.Unimplemented, "%s: per-color counter_data is not supported (leave it unset)", what)
	}
	lo, hi, err := cellRange(me.Index, mi.Size, what)
	if err != nil {
		return err
	}
	cfg, err := checkMeterConfig(mi.Type, me.Config, what)
	if err != nil {
		return err
	}
	if !w.p.committed {
		writeShadow(w, w.p.mtrShadow, mi.ID, lo, hi, cfg)
		return nil
	}
	t := w.s.target
	var old []*p4v1.MeterConfig
	if w.rollback {
		for i := lo; i < hi; i++ {
			c, err := t.ReadMeter(mi.ID, uint32(i))
			if err != nil {
				return targetErr(err, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
			}
			old = append(old, c)
		}
	}
	for i := lo; i < hi; i++ {
		if err := t.WriteMeter(mi.ID, uint32(i), cfg); err != nil {
			return targetErr(err, codes.Internal, fmt.Sprintf("%s[%d]", what, i))
		}
	}
	w.onUndo(func() {
		for i := lo; i < hi; i++ {
			w.undoErr(t.WriteMeter(mi.ID, uint32(i), old[i-lo]), mi.Name)
		}
	})
	return nil
}

// checkMeterConfig validates a config against the meter's type (spec 9.5) and returns a copy
// the server owns (nil for the default). A config of zeros is valid: zero bursts mark every
// packet red.
func checkMeterConfig(typ p4configv1.MeterSpec_Type, c *p4v1.MeterConfig, what string) (*p4v1.MeterConfig, error) {
	if c == nil {
		return nil, nil
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"cir", c.Cir}, {"cburst", c.Cburst}, {"pir", c.Pir}, {"pburst", c.Pburst}, {"eburst", c.Eburst}} {
		if f.v < 0 {
			return nil, errf(codes.InvalidArgument, "%s: %s %d is negative", what, f.name, f.v)
		}
	}
	switch typ {
	case p4configv1.MeterSpec_TWO_RATE_THREE_COLOR:
		if c.Eburst != 0 {
			return nil, errf(codes.InvalidArgument, "%s: eburst must be unset for a two-rate three-color meter", what)
		}
		// RFC 2698: the peak rate is at least the committed rate.
		if c.Pir < c.Cir {
			return nil, errf(codes.InvalidArgument, "%s: pir %d is below cir %d", what, c.Pir, c.Cir)
		}
	case p4configv1.MeterSpec_SINGLE_RATE_THREE_COLOR, p4configv1.MeterSpec_SINGLE_RATE_TWO_COLOR:
		if c.Pir != c.Cir || c.Pburst != c.Cburst {
			return nil, errf(codes.InvalidArgument, "%s: a single-rate meter needs pir == cir and pburst == cburst (got pir %d, cir %d, pburst %d, cburst %d)",
				what, c.Pir, c.Cir, c.Pburst, c.Cburst)
		}
		if typ == p4configv1.MeterSpec_SINGLE_RATE_TWO_COLOR && c.Eburst != 0 {
			return nil, errf(codes.InvalidArgument, "%s: eburst must be unset for a single-rate two-color meter", what)
		}
	default:
		return nil, errf(codes.Unimplemented, "%s: meter type %v is not supported", what, typ)
	}
	return &p4v1.MeterConfig{Cir: c.Cir, Cburst: c.Cburst, Pir: c.Pir, Pburst: c.Pburst, Eburst: c.Eburst}, nil
}

// digestEntry enables (INSERT), reconfigures (MODIFY) or disables (DELETE) a digest (spec 9.9).
func (w *writer) digestEntry(op p4v1.Update_Type, de *p4v1.DigestEntry) error {
	di, ok := w.p.schema.DigestByID(de.GetDigestId())
	if !ok {
		return errf(codes.InvalidArgument, "digest id %d is not in the P4Info", de.GetDigestId())
	}
	what := "digest " + quote(di.Name)
	prev, exists := w.p.digestCfg[di.ID]
	var cfg *p4v1.DigestEntry_Config
	switch op {
	case p4v1.Update_INSERT:
		if exists {
			return errf(codes.AlreadyExists, "%s is already enabled: use MODIFY", what)
		}
	case p4v1.Update_MODIFY, p4v1.Update_DELETE:
		if !exists {
			return errf(codes.NotFound, "%s is not enabled: INSERT it first", what)
		}
	}
	if op != p4v1.Update_DELETE {
		c := de.Config
		if c == nil {
			return errf(codes.InvalidArgument, "%s: config is required", what)
		}
		if c.MaxTimeoutNs < 0 || c.MaxListSize < 0 || c.AckTimeoutNs < 0 {
			return errf(codes.InvalidArgument, "%s: max_timeout_ns, max_list_size and ack_timeout_ns must not be negative", what)
		}
		cfg = proto.Clone(c).(*p4v1.DigestEntry_Config)
		w.p.digestCfg[di.ID] = cfg
	} else {
		delete(w.p.digestCfg, di.ID)
	}
	if w.p.committed {
		w.s.digests.configure(di.ID, cfg)
	}
	w.onUndo(func() {
		if exists {
			w.p.digestCfg[di.ID] = prev
		} else {
			delete(w.p.digestCfg, di.ID)
		}
		if w.p.committed {
			w.s.digests.configure(di.ID, prev)
		}
	})
	return nil
}

func (w *writer) preEntry(op p4v1.Update_Type, pre *p4v1.PacketReplicationEngineEntry) error {
	switch e := pre.GetType().(type) {
	case *p4v1.PacketReplicationEngineEntry_CloneSessionEntry:
		return w.cloneSession(op, e.CloneSessionEntry)
	case *p4v1.PacketReplicationEngineEntry_MulticastGroupEntry:
		return w.multicastGroup(op, e.MulticastGroupEntry)
	}
	return errf(codes.InvalidArgument, "packet_replication_engine_entry has no type set")
}

func (w *writer) cloneSession(op p4v1.Update_Type, cs *p4v1.CloneSessionEntry) error {
	id := cs.GetSessionId()
	what := fmt.Sprintf("clone session %d", id)
	if id == 0 {
		return errf(codes.InvalidArgument, "clone session: session_id 0 is reserved for wildcard reads")
	}
	prev, exists := w.p.clones[id]
	if err := checkExists(op, exists, what); err != nil {
		return err
	}
	var stored *p4v1.CloneSessionEntry
	if op != p4v1.Update_DELETE {
		reps, err := checkReplicas(cs.Replicas, what)
		if err != nil {
			return err
		}
		if len(reps) == 0 {
			return errf(codes.InvalidArgument, "%s: at least one replica is required", what)
		}
		if cs.PacketLengthBytes < 0 {
			return errf(codes.InvalidArgument, "%s: negative packet_length_bytes", what)
		}
		stored = &p4v1.CloneSessionEntry{SessionId: id, Replicas: reps, ClassOfService: cs.ClassOfService, PacketLengthBytes: cs.PacketLengthBytes}
	}
	t := w.s.target
	if w.p.committed {
		if err := t.WriteCloneSession(id, stored.GetReplicas()); err != nil {
			return targetErr(err, codes.ResourceExhausted, what)
		}
	}
	if stored != nil {
		w.p.clones[id] = stored
	} else {
		delete(w.p.clones, id)
	}
	w.onUndo(func() {
		if exists {
			w.p.clones[id] = prev
		} else {
			delete(w.p.clones, id)
		}
		if w.p.committed {
			w.undoErr(t.WriteCloneSession(id, prev.GetReplicas()), what)
		}
	})
	return nil
}

// multicastGroup stores multicast groups for reads; the Target interface has no multicast
// replication, so they do not reach the data plane.
func (w *writer) multicastGroup(op p4v1.Update_Type, mg *p4v1.MulticastGroupEntry) error {
	id := mg.GetMulticastGroupId()
	what := fmt.Sprintf("multicast group %d", id)
	if id == 0 {
		return errf(codes.InvalidArgument, "multicast group: multicast_group_id 0 is reserved for wildcard reads")
	}
	prev, exists := w.p.mcast[id]
	if err := checkExists(op, exists, what); err != nil {
		return err
	}
	if op == p4v1.Update_DELETE {
		delete(w.p.mcast, id)
	} else {
		reps, err := checkReplicas(mg.Replicas, what)
		if err != nil {
			return err
		}
		w.p.mcast[id] = &p4v1.MulticastGroupEntry{MulticastGroupId: id, Replicas: reps, Metadata: mg.Metadata}
	}
	w.onUndo(func() {
		if exists {
			w.p.mcast[id] = prev
		} else {
			delete(w.p.mcast, id)
		}
	})
	return nil
}

// checkReplicas validates replicas and returns them with ports as canonical bytestrings.
func checkReplicas(reps []*p4v1.Replica, what string) ([]*p4v1.Replica, error) {
	type pi struct {
		port     string
		instance uint32
	}
	seen := map[pi]bool{}
	out := make([]*p4v1.Replica, 0, len(reps))
	for i, r := range reps {
		var port []byte
		switch k := r.GetPortKind().(type) {
		case *p4v1.Replica_Port:
			v, err := canonical(k.Port, 32, fmt.Sprintf("%s replica %d port", what, i))
			if err != nil {
				return nil, errf(codes.InvalidArgument, "%s", err.(*p4Error).msg)
			}
			port = v
		case *p4v1.Replica_EgressPort:
			port = p4bytes.Uint(uint64(k.EgressPort))
		default:
			return nil, errf(codes.InvalidArgument, "%s replica %d: port is missing", what, i)
		}
		key := pi{string(port), r.Instance}
		if seen[key] {
			return nil, errf(codes.InvalidArgument, "%s: replica (port 0x%x, instance %d) given twice", what, port, r.Instance)
		}
		seen[key] = true
		out = append(out, &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: port}, Instance: r.Instance})
	}
	return out, nil
}

// writeShadow sets cells lo..hi-1 of one register or counter of a pipeline that is saved but
// not committed yet; COMMIT replays the shadow into the target.
func writeShadow[T any](w *writer, shadow map[uint32]map[int64]T, id uint32, lo, hi int64, val T) {
	cells := shadow[id]
	if cells == nil {
		cells = map[int64]T{}
		shadow[id] = cells
	}
	if w.rollback {
		prev := maps.Clone(cells)
		w.onUndo(func() { shadow[id] = prev })
	}
	for i := lo; i < hi; i++ {
		cells[i] = val
	}
}

// checkExists applies P4Runtime's existence rules to a replication entry: INSERT needs it
// absent, MODIFY and DELETE present.
func checkExists(op p4v1.Update_Type, exists bool, what string) error {
	if op == p4v1.Update_INSERT && exists {
		return errf(codes.AlreadyExists, "%s already exists", what)
	}
	if op != p4v1.Update_INSERT && !exists {
		return errf(codes.NotFound, "%s does not exist", what)
	}
	return nil
}
