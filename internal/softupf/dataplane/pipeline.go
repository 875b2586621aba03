// Package dataplane is the software UPF's data plane: the JUNCTION-UPF pipeline of
// docs/pipeline.md run in Go over packet buffers, programmed through p4rt.Target.
//
// Concurrency: packets are processed by one goroutine per port while P4Runtime writes arrive.
// All match-action tables, default actions and clone sessions sit behind one sync.RWMutex that
// Process takes for reading once per batch of packets (so the per-packet cost is a map lookup,
// not a lock), and that table writes and pipeline changes take for writing per update.
// Registers and counters are atomics, read and written without that lock's write side, so
// probes update path state while downlink packets read it. The reorder queues have a mutex of
// their own, taken only by marked uplink packets, markers and the release timer.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/softupf/p4rt"
)

// Sink sends the packets the pipeline emits outside Process: reorder releases and packet-outs.
// Transmit owns the packets (it returns them to the pool) but not the slice.
type Sink interface {
	Transmit(pkts []*Packet)
	// HasPort reports whether port is a port the sink can send on.
	HasPort(port uint32) bool
}

// Config configures a Pipeline.
type Config struct {
	// Pool supplies buffers for redundant copies and packet-outs; dropped packets go back to it.
	Pool *Pool
	// Sink sends released and packet-out packets; nil discards them (tests of Process alone).
	Sink Sink
	// CPUPort is the port number of the controller (packet-in/out), 255 by default in cmd/softupf.
	CPUPort uint32
	// Now is now_us, the low 32 bits of a microsecond clock; nil uses a monotonic clock.
	Now func() uint32
	// MaxHeldPerUser and MaxHeld bound the reorder queues (defaults DefaultMaxHeldPerUser,
	// DefaultMaxHeld).
	MaxHeldPerUser, MaxHeld int
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Pipeline is the software UPF's data plane. It implements p4rt.Target.
type Pipeline struct {
	pool    *Pool
	sink    Sink
	cpuPort uint32
	now     func() uint32
	log     *slog.Logger

	mu     sync.RWMutex
	st     *state // nil until the first CommitPipeline
	events p4rt.Events

	reorder reorderer

	packetOutDrops atomic.Uint64 // packet-outs to the CPU port or to a port with no interface

	injectMu  sync.Mutex // serialises to_ingress packet-outs, which share these slices
	injectIn  [1]*Packet
	injectOut []*Packet
}

var _ p4rt.Target = (*Pipeline)(nil)

// state is one committed pipeline: its schema, tables, registers, counters and clone sessions.
type state struct {
	schema *schema
	t      *tables
	regs   [numRegisters]*register
	ctrs   [numCounters][]counterCell // cells sized by the P4Info
	meters [numMeters][]atomic.Pointer[meterCell]
	clones map[uint32][]*p4v1.Replica
}

// New returns a Pipeline with no P4 program: it drops every packet until CommitPipeline.
func New(cfg Config) (*Pipeline, error) {
	if cfg.Pool == nil {
		return nil, errors.New("dataplane: Config.Pool is required")
	}
	p := &Pipeline{pool: cfg.Pool, sink: cfg.Sink, cpuPort: cfg.CPUPort, now: cfg.Now, log: cfg.Logger}
	if p.now == nil {
		start := time.Now()
		p.now = func() uint32 { return uint32(time.Since(start) / time.Microsecond) }
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	perUser, total := cfg.MaxHeldPerUser, cfg.MaxHeld
	if perUser <= 0 {
		perUser = DefaultMaxHeldPerUser
	}
	if total <= 0 {
		total = DefaultMaxHeld
	}
	if total >= cfg.Pool.Size() {
		return nil, fmt.Errorf("dataplane: MaxHeld %d must be below the pool's %d buffers", total, cfg.Pool.Size())
	}
	p.reorder.init(perUser, total)
	return p, nil
}

func newState(s *schema) *state {
	st := &state{schema: s, t: newTables(), clones: map[uint32][]*p4v1.Replica{}}
	copy(st.regs[:], newRegisters(registerSpecs[:], s.regSizes[:]))
	for k := range numCounters {
		st.ctrs[k] = make([]counterCell, s.ctrSizes[k])
	}
	for k := range numMeters {
		st.meters[k] = make([]atomic.Pointer[meterCell], s.meterSizes[k])
	}
	return st
}

// count adds one packet of bytes to drops[r].
func (st *state) count(r DropReason, bytes int) { st.add(cDrops, uint32(r), bytes) }

// add adds one packet of bytes to cell i of counter k; an index beyond the counter counts
// nowhere.
func (st *state) add(k counterKind, i uint32, bytes int) {
	if cells := st.ctrs[k]; uint64(i) < uint64(len(cells)) {
		cells[i].packets.Add(1)
		cells[i].bytes.Add(uint64(bytes))
	}
}

// nextSeq advances session_seq[i] and returns the new value, skipping 0 (which means
// "unsequenced" to the UE), so the first packet of a sequenced session carries 1. An index
// out of range gives 0.
func (st *state) nextSeq(i uint32) uint32 {
	reg := st.regs[rSessionSeq]
	if i >= reg.size {
		return 0
	}
	c := reg.cell(i)
	for {
		old := c.Load()
		next := old + 1
		if next == 0 {
			next = 1
		}
		if c.CompareAndSwap(old, next) {
			return next
		}
	}
}

func (p *Pipeline) transmit(pkts []*Packet) {
	if p.sink == nil {
		for _, pkt := range pkts {
			p.pool.Put(pkt)
		}
		return
	}
	p.sink.Transmit(pkts)
}

// ---- p4rt.Target ----

// SetEvents sets where digests and packet-ins go.
func (p *Pipeline) SetEvents(ev p4rt.Events) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = ev
}

// CheckPipeline accepts any P4Info that has every table, action, register, counter, digest
// and controller header of docs/pipeline.md with the same shape; the device config is opaque
// (the software UPF runs the semantics, not a compiled program).
func (p *Pipeline) CheckPipeline(info *p4configv1.P4Info, _ []byte) error {
	_, err := resolveSchema(info)
	return err
}

// CommitPipeline switches to info with empty tables, zero registers and counters, no clone
// sessions; held packets are dropped.
func (p *Pipeline) CommitPipeline(info *p4configv1.P4Info, _ []byte) error {
	s, err := resolveSchema(info)
	if err != nil {
		return err
	}
	st := newState(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st = st
	p.reorder.drain(p.pool)
	p.log.Info("pipeline committed", "tables", len(s.tables), "users", s.regSizes[rRTT3GPP])
	return nil
}

func (p *Pipeline) writable() (*state, error) {
	if p.st == nil {
		return nil, errors.New("no pipeline: SetForwardingPipelineConfig first")
	}
	return p.st, nil
}

// WriteTableEntry applies one validated update.
func (p *Pipeline) WriteTableEntry(op p4v1.Update_Type, entry *p4v1.TableEntry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.writable()
	if err != nil {
		return err
	}
	return st.t.write(st.schema, op, entry)
}

// SetDefaultAction replaces a table's default action; nil restores the P4 default.
func (p *Pipeline) SetDefaultAction(tableID uint32, action *p4v1.Action) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.writable()
	if err != nil {
		return err
	}
	return st.t.setDefault(st.schema, tableID, action)
}

func (p *Pipeline) register(id, index uint32) (*register, error) {
	st, err := p.writable()
	if err != nil {
		return nil, err
	}
	k, ok := st.schema.registers[id]
	if !ok {
		return nil, fmt.Errorf("register %d is not implemented by the software UPF", id)
	}
	r := st.regs[k]
	if index >= r.size {
		return nil, fmt.Errorf("register %q index %d out of range (size %d)", r.name, index, r.size)
	}
	return r, nil
}

// ReadRegister reads one register cell.
func (p *Pipeline) ReadRegister(id, index uint32) (uint64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, err := p.register(id, index)
	if err != nil {
		return 0, err
	}
	return uint64(r.load(index)), nil
}

// WriteRegister writes one register cell (masked to its width).
func (p *Pipeline) WriteRegister(id, index uint32, value uint64) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, err := p.register(id, index)
	if err != nil {
		return err
	}
	r.store(index, uint32(value))
	return nil
}

func (p *Pipeline) counter(id, index uint32) (*counterCell, error) {
	st, err := p.writable()
	if err != nil {
		return nil, err
	}
	k, ok := st.schema.counters[id]
	if !ok {
		return nil, fmt.Errorf("counter %d is not implemented by the software UPF", id)
	}
	cells := st.ctrs[k]
	if uint64(index) >= uint64(len(cells)) {
		return nil, fmt.Errorf("counter %q index %d out of range (size %d)", counterSpecs[k], index, len(cells))
	}
	return &cells[index], nil
}

// ReadCounter reads one cell of a counter (drops, uplink_usage, downlink_usage).
func (p *Pipeline) ReadCounter(id, index uint32) (packets, bytes uint64, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, err := p.counter(id, index)
	if err != nil {
		return 0, 0, err
	}
	return c.packets.Load(), c.bytes.Load(), nil
}

// WriteCounter sets one cell of a counter: the controller zeroes a usage cell before it gives
// its index to a new PDU session.
func (p *Pipeline) WriteCounter(id, index uint32, packets, bytes uint64) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, err := p.counter(id, index)
	if err != nil {
		return err
	}
	c.packets.Store(packets)
	c.bytes.Store(bytes)
	return nil
}

// WriteCloneSession installs or removes a clone session. Only its existence matters to the
// software UPF: the redundant copy is routed on its own access, whatever the replicas' ports.
func (p *Pipeline) WriteCloneSession(id uint32, replicas []*p4v1.Replica) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.writable()
	if err != nil {
		return err
	}
	if len(replicas) == 0 {
		delete(st.clones, id)
	} else {
		st.clones[id] = replicas
	}
	return nil
}

// PacketOut sends frame unchanged on egressPort or, with toIngress, through the pipeline as a
// frame that arrived on the CPU port (egressPort ignored): a held downlink packet, released.
// A packet-out to the CPU port or to a port with no interface is dropped and counted
// (Stats.PacketOutDrops), not refused: the P4 program drops it so on every target
// (docs/pipeline.md, "Registers, counters, digest, packet I/O"). What the pipeline does to a
// to_ingress frame (a drop, too short a frame included) it counts as it counts any other.
func (p *Pipeline) PacketOut(egressPort uint32, toIngress bool, frame []byte) error {
	if len(frame) > MaxFrame {
		return fmt.Errorf("packet-out: frame of %d bytes exceeds %d", len(frame), MaxFrame)
	}
	if toIngress {
		return p.inject(frame)
	}
	if p.sink == nil || egressPort == p.cpuPort || !p.sink.HasPort(egressPort) {
		p.packetOutDrops.Add(1)
		return nil
	}
	pkt := p.pool.TryGet()
	if pkt == nil {
		return errors.New("packet-out: no free packet buffer")
	}
	pkt.SetFrame(frame)
	pkt.OutPort = egressPort
	p.sink.Transmit([]*Packet{pkt})
	return nil
}

// packetOutLen is the packet_out header's length. BMv2 counts it in a to_ingress frame's
// packet_length, and so in its counters' and meters' bytes: the software UPF adds it too, so
// that the targets agree (docs/pipeline.md, "Registers, counters, digest, packet I/O").
const packetOutLen = 2

// inject runs a to_ingress packet-out's frame through the pipeline from the CPU port and sends
// what comes out.
func (p *Pipeline) inject(frame []byte) error {
	p.mu.RLock()
	refused := p.st != nil && !p.st.schema.toIngress
	p.mu.RUnlock()
	if refused {
		return errors.New("packet-out: the pipeline's packet_out header has no to_ingress")
	}
	pkt := p.pool.TryGet()
	if pkt == nil {
		return errors.New("packet-out: no free packet buffer")
	}
	pkt.SetFrame(frame)
	pkt.InPort = p.cpuPort
	p.injectMu.Lock()
	defer p.injectMu.Unlock()
	p.injectIn[0] = pkt
	p.injectOut = p.process(p.injectIn[:], p.injectOut[:0], packetOutLen)
	p.injectIn[0] = nil
	if len(p.injectOut) > 0 {
		p.transmit(p.injectOut)
	}
	clear(p.injectOut) // the sink owns the packets now
	return nil
}

// Stats is a snapshot of the data plane for logs and metrics.
type Stats struct {
	Drops     [numDropReasons]uint64 // packets per DropReason
	Held      int                    // packets in reorder queues
	FreeBufs  int
	Pipelined bool
	// PacketOutDrops are packet-outs to the CPU port or to a port with no interface.
	PacketOutDrops uint64
}

// Stats returns a snapshot.
func (p *Pipeline) Stats() Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var s Stats
	if p.st != nil {
		s.Pipelined = true
		drops := p.st.ctrs[cDrops]
		for i := range min(len(drops), len(s.Drops)) {
			s.Drops[i] = drops[i].packets.Load()
		}
	}
	p.reorder.mu.Lock()
	s.Held = p.reorder.total
	p.reorder.mu.Unlock()
	s.FreeBufs = p.pool.Free()
	s.PacketOutDrops = p.packetOutDrops.Load()
	return s
}

// ensure Run's signature stays what cmd/softupf expects.
var _ func(context.Context) error = (*Pipeline)(nil).Run
