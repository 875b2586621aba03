// Package vectors runs packet vectors (test/vectors/cases) against any P4Runtime target whose
// ports are network interfaces: the software UPF here, BMv2 or a Tofino model elsewhere.
//
// A case's way through the runner:
//
//	setup ──Write──> clone sessions, registers, counter cells, table entries, default actions
//	each step: write registers and counter cells ─> read `drops`
//	           ─> send the frame (AF_PACKET, test side of the link)
//	           ─> collect frames on every port, digests and packet-ins for the window
//	           ─> compare frames (masked), packet-ins, digests
//	           ─> read `drops`, registers, counter cells, compare
//	cleanup ──Read + Delete──> every table entry, default actions reset, clone sessions removed
package vectors

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/p4schema"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// Default timing. The window bounds how long a step waits for output; once everything expected
// has arrived the runner waits only the quiet time more, to catch extra frames.
const (
	DefaultWindow = 300 * time.Millisecond
	DefaultQuiet  = 50 * time.Millisecond
)

// DropReasons are the indices of the `drops` counter by the names cases use (internal/contract,
// docs/pipeline.md "Drop reasons").
var DropReasons = func() map[string]uint32 {
	m := map[string]uint32{}
	for _, r := range contract.DropReasons() {
		if r != contract.DropNone {
			m[r.String()] = uint32(r)
		}
	}
	return m
}()

// dropsCounter is the counter the drop reasons index.
const dropsCounter = "drops"

// Port maps a logical port of the vectors to the target's port number and the test-side
// interface linked to it.
type Port struct {
	Name   string
	Number uint32
	Iface  string
}

// Config says how to reach the target and its ports.
type Config struct {
	Target       string // host:port of the P4Runtime server
	DeviceID     uint64
	ElectionID   [2]uint64 // high, low
	P4Info       *p4configv1.P4Info
	DeviceConfig []byte // p4_device_config (BMv2 JSON, Tofino binary; empty for the software UPF)
	// SkipPipeline leaves the target's pipeline as it is (it must already run P4Info).
	SkipPipeline bool
	Ports        []Port
	CPUPort      uint32 // 0: none given
	Window       time.Duration
	Quiet        time.Duration

	// Dial, when set, opens the gRPC connection (e.g. inside a network namespace).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// InNamespace, when set, runs the function that opens the packet sockets (e.g. on a thread
	// inside the namespace that holds the test-side interfaces).
	InNamespace func(func() error) error
	// Wire, when set, carries the frames instead of AF_PACKET sockets on the ports' Iface (which
	// it ignores).
	Wire Wire
	// Registers, when set, reads and writes register cells instead of P4Runtime: BMv2's
	// P4Runtime server implements neither, so on BMv2 they go through its Thrift runtime
	// (bmv2.Thrift). Nil: P4Runtime RegisterEntry (the software UPF, a Tofino).
	Registers RegisterAccess
}

// RegisterAccess reads and writes one register cell by its P4Info name.
type RegisterAccess interface {
	RegisterRead(name string, index uint32) (uint64, error)
	RegisterWrite(name string, index uint32, value uint64) error
}

// Result is the outcome of one case.
type Result struct {
	Case     string
	File     string
	Steps    int
	Failures []string
	Elapsed  time.Duration
}

// Passed reports whether the case met every expectation.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Runner holds a primary P4Runtime connection and the open test-side ports.
type Runner struct {
	cfg       Config
	schema    *p4schema.Schema
	client    *client
	collector *collector
	ports     map[string]PortIO
	portNums  map[string]uint32
	portNames map[uint32]string
}

// NewRunner connects to the target as primary, pushes the pipeline (unless told not to),
// enables digests and opens the test-side ports.
func NewRunner(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.P4Info == nil {
		return nil, fmt.Errorf("no P4Info")
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = DefaultQuiet
	}
	if cfg.DeviceID == 0 {
		cfg.DeviceID = 1
	}
	if cfg.ElectionID == [2]uint64{} {
		cfg.ElectionID = [2]uint64{0, 1}
	}
	sch, err := p4schema.Compile(cfg.P4Info)
	if err != nil {
		return nil, fmt.Errorf("P4Info: %w", err)
	}
	r := &Runner{cfg: cfg, schema: sch, collector: newCollector(),
		ports: map[string]PortIO{}, portNums: map[string]uint32{}, portNames: map[uint32]string{}}
	for _, p := range cfg.Ports {
		if _, dup := r.portNums[p.Name]; dup {
			return nil, fmt.Errorf("port %s given twice", p.Name)
		}
		r.portNums[p.Name] = p.Number
		r.portNames[p.Number] = p.Name
	}

	var dial dialFunc
	if cfg.Dial != nil {
		dial = cfg.Dial
	}
	c, err := connect(ctx, cfg.Target, dial, cfg.DeviceID, cfg.ElectionID)
	if err != nil {
		return nil, err
	}
	r.client = c
	if !cfg.SkipPipeline {
		sum := sha256.Sum256(append(mustMarshal(cfg.P4Info), cfg.DeviceConfig...))
		if err := c.setPipeline(ctx, cfg.P4Info, cfg.DeviceConfig, binary.BigEndian.Uint64(sum[:8])); err != nil {
			r.Close()
			return nil, err
		}
	}
	if err := r.enableDigests(ctx); err != nil {
		r.Close()
		return nil, err
	}
	open := func() error {
		for _, p := range cfg.Ports {
			var pio PortIO
			if cfg.Wire != nil {
				name := p.Name
				pio, err = cfg.Wire.Attach(p, func(frame []byte) {
					r.collector.add(received{port: name, at: time.Now(), frame: append([]byte(nil), frame...)})
				})
			} else {
				pio, err = openPacketPort(p.Name, p.Iface, r.collector)
			}
			if err != nil {
				return err
			}
			r.ports[p.Name] = pio
		}
		return nil
	}
	if cfg.InNamespace != nil {
		err = cfg.InNamespace(open)
	} else {
		err = open()
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// enableDigests configures every digest of the P4Info to be sent at once, one per list.
func (r *Runner) enableDigests(ctx context.Context) error {
	for _, d := range r.cfg.P4Info.Digests {
		e := &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{
			DigestId: d.Preamble.Id,
			Config:   &p4v1.DigestEntry_Config{MaxTimeoutNs: 0, MaxListSize: 1, AckTimeoutNs: int64(time.Second)},
		}}}
		err := r.client.write(ctx, update(p4v1.Update_INSERT, e))
		if isAlreadyExists(err) {
			err = r.client.write(ctx, update(p4v1.Update_MODIFY, e))
		}
		if err != nil {
			return fmt.Errorf("enable digest %s: %w", d.Preamble.Name, err)
		}
	}
	return nil
}

// Close releases the ports and the connection.
func (r *Runner) Close() {
	for _, p := range r.ports {
		p.Close()
	}
	if r.client != nil {
		r.client.close()
	}
}

// caseRun is the state of one case while it runs.
type caseRun struct {
	r        *Runner
	c        *Case
	vars     vars
	failures []string
	defaults []*p4schema.Table
	clones   []uint32
	meters   map[string]bool // "name[index]" of the cells the case configured
}

func (cr *caseRun) failf(format string, args ...any) {
	cr.failures = append(cr.failures, fmt.Sprintf(format, args...))
}

// newCaseRun starts a case: the ports' numbers and the CPU port as variables, and whatever
// arrived before it (not this case's business) discarded.
func newCaseRun(r *Runner, c *Case) *caseRun {
	cr := &caseRun{r: r, c: c, vars: vars{}}
	for name, n := range r.portNums {
		cr.vars[name] = uint64(n)
	}
	if r.cfg.CPUPort != 0 {
		cr.vars["cpu"] = uint64(r.cfg.CPUPort)
	}
	r.collector.take()
	r.client.takeEvents()
	return cr
}

// RunCase installs a case, runs its steps and removes what it installed.
func (r *Runner) RunCase(ctx context.Context, c *Case) Result {
	start := time.Now()
	cr := newCaseRun(r, c)

	if err := cr.setup(ctx); err != nil {
		cr.failf("setup: %v", err)
	} else {
		for i := range c.Steps {
			if !cr.step(ctx, i) {
				break
			}
		}
	}
	if err := cr.cleanup(ctx); err != nil {
		cr.failf("cleanup: %v", err)
	}
	if frames, _ := r.collector.take(); len(frames) > 0 {
		for _, f := range frames {
			cr.failf("after the last step: unexpected frame on %s: %s", f.port, summarize(f.frame))
		}
	}
	return Result{Case: c.Name, File: c.file, Steps: len(c.Steps), Failures: cr.failures, Elapsed: time.Since(start)}
}

func (cr *caseRun) setup(ctx context.Context) error {
	s := cr.c.Setup
	r := cr.r
	for _, cs := range s.CloneSessions {
		var replicas []*p4v1.Replica
		ports := cs.Ports
		for i, p := range ports {
			n, err := cr.vars.number(p, 32)
			if err != nil {
				return fmt.Errorf("clone session %d port %q: %w", cs.ID, p, err)
			}
			replicas = append(replicas, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: uint32(n)}, Instance: uint32(i + 1)})
		}
		if len(replicas) == 0 {
			port := r.cfg.CPUPort
			if port == 0 && len(r.cfg.Ports) > 0 {
				port = r.cfg.Ports[0].Number
			}
			replicas = append(replicas, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: port}, Instance: 1})
		}
		e := cloneEntity(cs.ID, replicas)
		err := r.client.write(ctx, update(p4v1.Update_INSERT, e))
		if isAlreadyExists(err) {
			err = r.client.write(ctx, update(p4v1.Update_MODIFY, e))
		}
		if err != nil {
			return fmt.Errorf("clone session %d: %w", cs.ID, err)
		}
		cr.clones = append(cr.clones, cs.ID)
	}

	if err := cr.writeRegisters(ctx, s.Registers); err != nil {
		return fmt.Errorf("registers: %w", err)
	}
	if err := cr.writeCounters(ctx, s.Counters); err != nil {
		return fmt.Errorf("counters: %w", err)
	}
	if err := cr.writeMeters(ctx, s.Meters); err != nil {
		return fmt.Errorf("meters: %w", err)
	}

	var entries []*p4v1.Update
	for i, e := range s.Entries {
		te, err := cr.tableEntry(e)
		if err != nil {
			return fmt.Errorf("entry %d (%s): %w", i+1, e.Table, err)
		}
		entries = append(entries, update(p4v1.Update_INSERT, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}))
	}
	if err := r.client.write(ctx, entries...); err != nil {
		return fmt.Errorf("table entries: %w", err)
	}

	for _, d := range s.Defaults {
		t, err := r.schema.Table(d.Table)
		if err != nil {
			return fmt.Errorf("default action: %w", err)
		}
		act, err := cr.action(t, d.Action, d.Params)
		if err != nil {
			return fmt.Errorf("default action of %s: %w", d.Table, err)
		}
		te := &p4v1.TableEntry{TableId: t.ID, IsDefaultAction: true, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: act}}}
		if err := r.client.write(ctx, update(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}})); err != nil {
			return fmt.Errorf("default action of %s: %w", d.Table, err)
		}
		cr.defaults = append(cr.defaults, t)
	}
	return nil
}

// modifyEntries writes entries the case installed again, with their new actions.
func (cr *caseRun) modifyEntries(ctx context.Context, entries []Entry) error {
	var updates []*p4v1.Update
	for i, e := range entries {
		te, err := cr.tableEntry(e)
		if err != nil {
			return fmt.Errorf("entry %d (%s): %w", i+1, e.Table, err)
		}
		updates = append(updates, update(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}))
	}
	if len(updates) == 0 {
		return nil
	}
	return cr.r.client.write(ctx, updates...)
}

func cloneEntity(id uint32, replicas []*p4v1.Replica) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id, Replicas: replicas}},
	}}}
}

// tableEntry resolves an entry's names and human values.
func (cr *caseRun) tableEntry(e Entry) (*p4v1.TableEntry, error) {
	t, err := cr.r.schema.Table(e.Table)
	if err != nil {
		return nil, err
	}
	te := &p4v1.TableEntry{TableId: t.ID, Priority: e.Priority}
	for name := range e.Match {
		if _, err := t.Field(name); err != nil {
			return nil, err
		}
	}
	for _, f := range t.Fields {
		x, ok := e.Match[f.Name]
		if !ok {
			if f.Kind == p4configv1.MatchField_EXACT {
				return nil, fmt.Errorf("exact match field %s is missing", f.Name)
			}
			continue
		}
		fm, err := cr.vars.matchField(f, x)
		if err != nil {
			return nil, fmt.Errorf("match field %s: %w", f.Name, err)
		}
		if fm != nil {
			te.Match = append(te.Match, fm)
		}
	}
	if t.NeedsPriority && e.Priority <= 0 {
		return nil, fmt.Errorf("table %s has ternary/range keys: the entry needs a priority > 0", e.Table)
	}
	act, err := cr.action(t, e.Action, e.Params)
	if err != nil {
		return nil, err
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: act}}
	return te, nil
}

func (cr *caseRun) action(t *p4schema.Table, name string, params map[string]any) (*p4v1.Action, error) {
	a, err := cr.r.schema.Action(name)
	if err != nil {
		return nil, err
	}
	if _, ok := t.Actions[a.ID]; !ok {
		return nil, fmt.Errorf("action %q is not an action of table %s", name, t.Name)
	}
	act := &p4v1.Action{ActionId: a.ID}
	for pname := range params {
		if _, err := a.Param(pname); err != nil {
			return nil, err
		}
	}
	for _, p := range a.Params {
		x, ok := params[p.Name]
		if !ok {
			return nil, fmt.Errorf("action %s: parameter %s is missing", name, p.Name)
		}
		n, err := cr.vars.number(x, p.Width)
		if err != nil {
			return nil, fmt.Errorf("action %s parameter %s: %w", name, p.Name, err)
		}
		act.Params = append(act.Params, &p4v1.Action_Param{ParamId: p.ID, Value: bytestring(n, p.Width)})
	}
	return act, nil
}

// cellRef parses "name[index]" of a register or counter (what).
func (cr *caseRun) cellRef(what, key string) (string, int64, error) {
	open := strings.IndexByte(key, '[')
	if open < 0 || !strings.HasSuffix(key, "]") {
		return "", 0, fmt.Errorf("%s %q: want name[index]", what, key)
	}
	idx, err := cr.vars.number(strings.TrimSpace(key[open+1:len(key)-1]), 32)
	if err != nil {
		return "", 0, fmt.Errorf("%s %q index: %w", what, key, err)
	}
	return strings.TrimSpace(key[:open]), int64(idx), nil
}

// registerRef parses "name[index]" of a register.
func (cr *caseRun) registerRef(key string) (*p4schema.Register, int64, error) {
	name, idx, err := cr.cellRef("register", key)
	if err != nil {
		return nil, 0, err
	}
	reg, err := cr.r.schema.Register(name)
	if err != nil {
		return nil, 0, err
	}
	if idx >= reg.Size {
		return nil, 0, fmt.Errorf("register %q: index %d beyond size %d", key, idx, reg.Size)
	}
	return reg, idx, nil
}

// counterRef parses "name[index]" of a counter.
func (cr *caseRun) counterRef(key string) (*p4schema.Counter, int64, error) {
	name, idx, err := cr.cellRef("counter", key)
	if err != nil {
		return nil, 0, err
	}
	c, err := cr.r.schema.Counter(name)
	if err != nil {
		return nil, 0, err
	}
	if idx >= c.Size {
		return nil, 0, fmt.Errorf("counter %q: index %d beyond size %d", key, idx, c.Size)
	}
	return c, idx, nil
}

// writeCounters sets the counter cells named "name[index]" in one P4Runtime write (CounterEntry
// MODIFY, on every target).
func (cr *caseRun) writeCounters(ctx context.Context, cells map[string]CounterCell) error {
	var ups []*p4v1.Update
	for _, key := range sortedKeys(cells) {
		c, idx, err := cr.counterRef(key)
		if err != nil {
			return err
		}
		packets, err := cr.vars.number(cells[key].Packets, 63)
		if err != nil {
			return fmt.Errorf("counter %s packets: %w", key, err)
		}
		bytes, err := cr.vars.number(cells[key].Bytes, 63)
		if err != nil {
			return fmt.Errorf("counter %s bytes: %w", key, err)
		}
		ups = append(ups, update(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
			CounterId: c.ID,
			Index:     &p4v1.Index{Index: idx},
			Data:      &p4v1.CounterData{PacketCount: int64(packets), ByteCount: int64(bytes)},
		}}}))
	}
	return cr.r.client.write(ctx, ups...)
}

// writeMeters configures (or, for null, resets) the meter cells named "name[index]" in one
// P4Runtime write (MeterEntry MODIFY).
func (cr *caseRun) writeMeters(ctx context.Context, cells map[string]*MeterConfig) error {
	var ups []*p4v1.Update
	for _, key := range sortedKeys(cells) {
		name, idx, err := cr.cellRef("meter", key)
		if err != nil {
			return err
		}
		m, err := cr.r.schema.Meter(name)
		if err != nil {
			return err
		}
		if idx >= m.Size {
			return fmt.Errorf("meter %q: index %d beyond size %d", key, idx, m.Size)
		}
		me := &p4v1.MeterEntry{MeterId: m.ID, Index: &p4v1.Index{Index: idx}}
		if c := cells[key]; c != nil {
			var v [4]uint64
			for i, x := range []any{c.CIR, c.CBurst, c.PIR, c.PBurst} {
				if v[i], err = cr.vars.number(x, 63); err != nil {
					return fmt.Errorf("meter %s: cir, cburst, pir and pburst are all needed: %w", key, err)
				}
			}
			me.Config = &p4v1.MeterConfig{Cir: int64(v[0]), Cburst: int64(v[1]), Pir: int64(v[2]), Pburst: int64(v[3])}
			if cr.meters == nil {
				cr.meters = map[string]bool{}
			}
			cr.meters[key] = true
		}
		ups = append(ups, update(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: me}}))
	}
	return cr.r.client.write(ctx, ups...)
}

// writeRegisters sets the cells named "name[index]", through Config.Registers when set, else in
// one P4Runtime write.
func (cr *caseRun) writeRegisters(ctx context.Context, cells map[string]any) error {
	var regs []*p4v1.Update
	for _, key := range sortedKeys(cells) {
		reg, idx, n, err := cr.registerCell(key, cells[key])
		if err != nil {
			return err
		}
		if ra := cr.r.cfg.Registers; ra != nil {
			if err := ra.RegisterWrite(reg.Name, uint32(idx), n); err != nil {
				return err
			}
			continue
		}
		regs = append(regs, update(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
			RegisterId: reg.ID,
			Index:      &p4v1.Index{Index: idx},
			Data:       &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: bytestring(n, reg.Width)}},
		}}}))
	}
	return cr.r.client.write(ctx, regs...)
}

// registerCell resolves "name[index]" and the value for it.
func (cr *caseRun) registerCell(key string, value any) (*p4schema.Register, int64, uint64, error) {
	reg, idx, err := cr.registerRef(key)
	if err != nil {
		return nil, 0, 0, err
	}
	n, err := cr.vars.number(value, reg.Width)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("register %s: %w", key, err)
	}
	return reg, idx, n, nil
}

// cleanup deletes every table entry on the target, resets the default actions the case set and
// the meter cells it configured, and removes its clone sessions.
func (cr *caseRun) cleanup(ctx context.Context) error {
	c := cr.r.client
	var errs []string
	read, err := c.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if err != nil {
		errs = append(errs, err.Error())
	}
	var dels []*p4v1.Update
	for _, e := range read {
		te := e.GetTableEntry()
		if te == nil || te.IsDefaultAction {
			continue
		}
		dels = append(dels, update(p4v1.Update_DELETE, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: te.TableId, Match: te.Match, Priority: te.Priority,
		}}}))
	}
	if err := c.write(ctx, dels...); err != nil {
		errs = append(errs, err.Error())
	}
	for _, t := range cr.defaults {
		te := &p4v1.TableEntry{TableId: t.ID, IsDefaultAction: true}
		if err := c.write(ctx, update(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}})); err != nil {
			errs = append(errs, fmt.Sprintf("reset default action of %s: %v", t.Name, err))
		}
	}
	for _, id := range cr.clones {
		if err := c.write(ctx, update(p4v1.Update_DELETE, cloneEntity(id, nil))); err != nil {
			errs = append(errs, fmt.Sprintf("delete clone session %d: %v", id, err))
		}
	}
	reset := map[string]*MeterConfig{}
	for key := range cr.meters {
		reset[key] = nil
	}
	if err := cr.writeMeters(ctx, reset); err != nil {
		errs = append(errs, fmt.Sprintf("reset meters: %v", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Run runs every case, prints a table of results to out and returns the numbers passed and
// failed. The last line printed is "vectors: N passed, M failed".
func Run(ctx context.Context, cfg Config, cases []*Case, out io.Writer) (passed, failed int, err error) {
	r, err := NewRunner(ctx, cfg)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	width := len("case")
	for _, c := range cases {
		width = max(width, len(c.Name))
	}
	fmt.Fprintf(out, "%-*s  %5s  %-6s  %s\n", width, "case", "steps", "result", "time")
	var results []Result
	for _, c := range cases {
		if ctx.Err() != nil {
			return passed, failed, ctx.Err()
		}
		res := r.RunCase(ctx, c)
		results = append(results, res)
		verdict := "ok"
		if res.Passed() {
			passed++
		} else {
			failed++
			verdict = "FAIL"
		}
		fmt.Fprintf(out, "%-*s  %5d  %-6s  %v\n", width, res.Case, res.Steps, verdict, res.Elapsed.Round(time.Millisecond))
	}
	for _, res := range results {
		if res.Passed() {
			continue
		}
		fmt.Fprintf(out, "\n--- FAIL: %s (%s)\n", res.Case, res.File)
		for _, f := range res.Failures {
			fmt.Fprintf(out, "%s\n", f)
		}
	}
	fmt.Fprintf(out, "\nvectors: %d passed, %d failed\n", passed, failed)
	return passed, failed, nil
}
