package upfclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CounterData is one counter cell.
type CounterData struct {
	Packets, Bytes int64
}

// Read reads entities (wildcards allowed) and returns everything the device streamed back,
// across all ReadResponse messages. Backups may read.
func (d *Device) Read(ctx context.Context, entities []*p4v1.Entity) ([]*p4v1.Entity, error) {
	var out []*p4v1.Entity
	err := d.ReadFunc(ctx, entities, func(e *p4v1.Entity) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// ReadFunc is Read with a callback per entity, for reads too large to hold at once; an error
// from fn stops the read and is returned.
func (d *Device) ReadFunc(ctx context.Context, entities []*p4v1.Entity, fn func(*p4v1.Entity) error) error {
	s, err := d.connected()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	err = func() error {
		stream, err := s.client.Read(ctx, &p4v1.ReadRequest{DeviceId: d.cfg.DeviceID, Role: d.cfg.Role, Entities: entities})
		if err != nil {
			return readError(sessionErr(ctx, err))
		}
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return readError(sessionErr(ctx, err))
			}
			for _, e := range resp.GetEntities() {
				n++
				if err := fn(e); err != nil {
					return err
				}
			}
		}
	}()
	d.m.read(d.cfg.Name, Code(err), n)
	return err
}

// readError keeps the gRPC code and adds the per-entity messages a batch error carries.
func readError(err error) error {
	details := batchDetails(err)
	if len(details) == 0 {
		return fmt.Errorf("read: %w", err)
	}
	var msgs []string
	for i, pe := range details {
		if codes.Code(pe.GetCanonicalCode()) != codes.OK {
			msgs = append(msgs, fmt.Sprintf("entity %d: %s: %s", i, codes.Code(pe.GetCanonicalCode()), pe.GetMessage()))
		}
	}
	st, _ := status.FromError(err)
	return fmt.Errorf("read: %w", status.Error(st.Code(), strings.Join(msgs, "; ")))
}

// ReadTable returns every entry of a table (not its default entry).
func (d *Device) ReadTable(ctx context.Context, table string) ([]*p4v1.TableEntry, error) {
	sch := d.Schema()
	if sch == nil {
		return nil, ErrNoPipeline
	}
	id, err := sch.TableID(table)
	if err != nil {
		return nil, err
	}
	var out []*p4v1.TableEntry
	err = d.ReadFunc(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}}},
		func(e *p4v1.Entity) error {
			te := e.GetTableEntry()
			if te == nil {
				return fmt.Errorf("reading table %q: the device returned a %T", table, e.GetEntity())
			}
			out = append(out, te)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading table %q: %w", table, err)
	}
	return out, nil
}

// RegisterUpdate builds the MODIFY that sets one register cell, for batching with Write.
func (s *Schema) RegisterUpdate(name string, index int64, value uint64) (*p4v1.Update, error) {
	r, err := s.ps.Register(name)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= r.Size {
		return nil, fmt.Errorf("register %q: index %d outside 0..%d", name, index, r.Size-1)
	}
	v, err := fit(Uint(value), int32(r.Width))
	if err != nil {
		return nil, fmt.Errorf("register %q: %w", name, err)
	}
	return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: r.ID,
		Index:      &p4v1.Index{Index: index},
		Data:       &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: v}},
	}}}}, nil
}

// CounterUpdate sets one cell of an indirect counter.
func (s *Schema) CounterUpdate(name string, index int64, c CounterData) (*p4v1.Update, error) {
	id, err := s.CounterID(name)
	if err != nil {
		return nil, err
	}
	return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: id,
		Index:     &p4v1.Index{Index: index},
		Data:      &p4v1.CounterData{PacketCount: c.Packets, ByteCount: c.Bytes},
	}}}}, nil
}

// MeterUpdate is the MODIFY that configures one cell of an indirect meter, or resets it (nil:
// every packet green, P4Runtime spec §9.5).
func (s *Schema) MeterUpdate(name string, index int64, c *p4v1.MeterConfig) (*p4v1.Update, error) {
	m, err := s.ps.Meter(name)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= m.Size {
		return nil, fmt.Errorf("meter %q: index %d beyond its %d cells", name, index, m.Size)
	}
	return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{
		MeterId: m.ID,
		Index:   &p4v1.Index{Index: index},
		Config:  c,
	}}}}, nil
}

// WriteRegister sets one register cell.
func (d *Device) WriteRegister(ctx context.Context, name string, index int64, value uint64) error {
	sch := d.Schema()
	if sch == nil {
		return ErrNoPipeline
	}
	u, err := sch.RegisterUpdate(name, index, value)
	if err != nil {
		return err
	}
	if errs := d.Write(ctx, []*p4v1.Update{u}); errs != nil {
		return fmt.Errorf("writing register %q[%d]: %w", name, index, errs[0])
	}
	return nil
}

// ReadRegister reads one register cell.
func (d *Device) ReadRegister(ctx context.Context, name string, index int64) (uint64, error) {
	cells, err := d.readRegister(ctx, name, &p4v1.Index{Index: index})
	if err != nil {
		return 0, err
	}
	v, ok := cells[index]
	if !ok {
		return 0, fmt.Errorf("reading register %q[%d]: the device returned no such cell", name, index)
	}
	return v, nil
}

// ReadRegisters reads every cell of a register, by index.
func (d *Device) ReadRegisters(ctx context.Context, name string) (map[int64]uint64, error) {
	return d.readRegister(ctx, name, nil)
}

func (d *Device) readRegister(ctx context.Context, name string, index *p4v1.Index) (map[int64]uint64, error) {
	sch := d.Schema()
	if sch == nil {
		return nil, ErrNoPipeline
	}
	id, err := sch.RegisterID(name)
	if err != nil {
		return nil, err
	}
	out := map[int64]uint64{}
	req := &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id, Index: index}}}
	err = d.ReadFunc(ctx, []*p4v1.Entity{req}, func(e *p4v1.Entity) error {
		re := e.GetRegisterEntry()
		if re == nil {
			return fmt.Errorf("the device returned a %T", e.GetEntity())
		}
		v, err := DecodeUint(re.GetData().GetBitstring())
		if err != nil {
			return fmt.Errorf("cell %d: %w", re.GetIndex().GetIndex(), err)
		}
		out[re.GetIndex().GetIndex()] = v
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading register %q: %w", name, err)
	}
	return out, nil
}

// ReadCounter reads one cell of an indirect counter.
func (d *Device) ReadCounter(ctx context.Context, name string, index int64) (CounterData, error) {
	cells, err := d.readCounter(ctx, name, &p4v1.Index{Index: index})
	if err != nil {
		return CounterData{}, err
	}
	c, ok := cells[index]
	if !ok {
		return CounterData{}, fmt.Errorf("reading counter %q[%d]: the device returned no such cell", name, index)
	}
	return c, nil
}

// ReadCounterCells reads cell index of each named counter in one Read request, in names' order.
func (d *Device) ReadCounterCells(ctx context.Context, index int64, names ...string) ([]CounterData, error) {
	sch := d.Schema()
	if sch == nil {
		return nil, ErrNoPipeline
	}
	pos := map[uint32]int{}
	req := make([]*p4v1.Entity, len(names))
	for i, name := range names {
		id, err := sch.CounterID(name)
		if err != nil {
			return nil, err
		}
		pos[id] = i
		req[i] = &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: &p4v1.Index{Index: index}}}}
	}
	out := make([]CounterData, len(names))
	seen := make([]bool, len(names))
	err := d.ReadFunc(ctx, req, func(e *p4v1.Entity) error {
		ce := e.GetCounterEntry()
		i, ok := pos[ce.GetCounterId()]
		if ce == nil || !ok || ce.GetIndex().GetIndex() != index {
			return fmt.Errorf("the device returned %v for counter cells %d of %v", e.GetEntity(), index, names)
		}
		out[i], seen[i] = CounterData{Packets: ce.GetData().GetPacketCount(), Bytes: ce.GetData().GetByteCount()}, true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading counter cells %d of %v: %w", index, names, err)
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("reading counter %q[%d]: the device returned no such cell", names[i], index)
		}
	}
	return out, nil
}

// ReadCounters reads every cell of an indirect counter, by index.
func (d *Device) ReadCounters(ctx context.Context, name string) (map[int64]CounterData, error) {
	return d.readCounter(ctx, name, nil)
}

func (d *Device) readCounter(ctx context.Context, name string, index *p4v1.Index) (map[int64]CounterData, error) {
	sch := d.Schema()
	if sch == nil {
		return nil, ErrNoPipeline
	}
	id, err := sch.CounterID(name)
	if err != nil {
		return nil, err
	}
	out := map[int64]CounterData{}
	req := &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: index}}}
	err = d.ReadFunc(ctx, []*p4v1.Entity{req}, func(e *p4v1.Entity) error {
		ce := e.GetCounterEntry()
		if ce == nil {
			return fmt.Errorf("the device returned a %T", e.GetEntity())
		}
		out[ce.GetIndex().GetIndex()] = CounterData{Packets: ce.GetData().GetPacketCount(), Bytes: ce.GetData().GetByteCount()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading counter %q: %w", name, err)
	}
	return out, nil
}
