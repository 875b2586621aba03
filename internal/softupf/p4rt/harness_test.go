package p4rt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// ---------------------------------------------------------------------------------------------
// recordingTarget: a RECORDING TEST TARGET, not a data plane. It stands in for the software
// UPF's data plane (internal/softupf/dataplane, another package) so that these tests exercise
// the server's P4Runtime semantics only. It records every call, keeps registers, counters and
// meter configs in maps, and can be told to refuse pipelines or table writes.
// ---------------------------------------------------------------------------------------------

type call struct {
	op    string // "check", "commit", "table", "default", "register", "counter", "meter", "clone", "packet-out"
	typ   p4v1.Update_Type
	entry *p4v1.TableEntry
	id    uint32
	index uint32
	value uint64
	data  []byte
	reps  []*p4v1.Replica
	meter *p4v1.MeterConfig
	flag  bool // packet-out: to_ingress
}

type recordingTarget struct {
	mu        sync.Mutex
	calls     []call
	record    bool // record table writes (off for the 500k-entry tests)
	tableOps  int
	regs      map[[2]uint32]uint64
	ctrs      map[[2]uint32][2]uint64
	mtrs      map[[2]uint32]*p4v1.MeterConfig // nil or absent: the default config
	events    Events
	refuse    error // CheckPipeline answer
	failTable error // WriteTableEntry answer
}

func newRecordingTarget() *recordingTarget {
	return &recordingTarget{record: true, regs: map[[2]uint32]uint64{}, ctrs: map[[2]uint32][2]uint64{},
		mtrs: map[[2]uint32]*p4v1.MeterConfig{}}
}

func (t *recordingTarget) add(c call) {
	t.mu.Lock()
	t.calls = append(t.calls, c)
	t.mu.Unlock()
}

func (t *recordingTarget) CheckPipeline(info *p4configv1.P4Info, dev []byte) error {
	t.add(call{op: "check", data: dev})
	return t.refuse
}

func (t *recordingTarget) CommitPipeline(info *p4configv1.P4Info, dev []byte) error {
	t.mu.Lock()
	t.regs, t.ctrs, t.mtrs = map[[2]uint32]uint64{}, map[[2]uint32][2]uint64{}, map[[2]uint32]*p4v1.MeterConfig{}
	t.mu.Unlock()
	t.add(call{op: "commit", data: dev})
	return nil
}

func (t *recordingTarget) WriteTableEntry(op p4v1.Update_Type, e *p4v1.TableEntry) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failTable != nil {
		return t.failTable
	}
	t.tableOps++
	if t.record {
		t.calls = append(t.calls, call{op: "table", typ: op, entry: e})
	}
	return nil
}

func (t *recordingTarget) SetDefaultAction(id uint32, a *p4v1.Action) error {
	var data []byte
	if a != nil {
		data = []byte(fmt.Sprint(a.ActionId))
	}
	t.add(call{op: "default", id: id, data: data})
	return nil
}

func (t *recordingTarget) ReadRegister(id, index uint32) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.regs[[2]uint32{id, index}], nil
}

func (t *recordingTarget) WriteRegister(id, index uint32, v uint64) error {
	t.mu.Lock()
	t.regs[[2]uint32{id, index}] = v
	t.mu.Unlock()
	t.add(call{op: "register", id: id, index: index, value: v})
	return nil
}

func (t *recordingTarget) ReadCounter(id, index uint32) (uint64, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.ctrs[[2]uint32{id, index}]
	return c[0], c[1], nil
}

func (t *recordingTarget) WriteCounter(id, index uint32, p, b uint64) error {
	t.mu.Lock()
	t.ctrs[[2]uint32{id, index}] = [2]uint64{p, b}
	t.mu.Unlock()
	t.add(call{op: "counter", id: id, index: index})
	return nil
}

func (t *recordingTarget) ReadMeter(id, index uint32) (*p4v1.MeterConfig, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mtrs[[2]uint32{id, index}], nil
}

func (t *recordingTarget) WriteMeter(id, index uint32, c *p4v1.MeterConfig) error {
	t.mu.Lock()
	if c == nil {
		delete(t.mtrs, [2]uint32{id, index})
	} else {
		t.mtrs[[2]uint32{id, index}] = c
	}
	t.mu.Unlock()
	t.add(call{op: "meter", id: id, index: index, meter: c})
	return nil
}

func (t *recordingTarget) WriteCloneSession(id uint32, reps []*p4v1.Replica) error {
	t.add(call{op: "clone", id: id, reps: reps})
	return nil
}

func (t *recordingTarget) PacketOut(port uint32, toIngress bool, frame []byte) error {
	t.add(call{op: "packet-out", id: port, flag: toIngress, data: append([]byte(nil), frame...)})
	return nil
}

func (t *recordingTarget) SetEvents(e Events) { t.events = e }

// callsOf returns the recorded calls of one kind.
func (t *recordingTarget) callsOf(op string) []call {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []call
	for _, c := range t.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------
// manualClock: time moves only when a test calls Advance, which runs due timers in order.
// ---------------------------------------------------------------------------------------------

type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newManualClock() *manualClock { return &manualClock{now: time.Unix(1_700_000_000, 0)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *manualTimer
		for i, t := range c.timers {
			if !t.at.After(end) {
				due = t
				c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
				break
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		if due.at.After(c.now) {
			c.now = due.at
		}
		run := !due.stopped
		due.stopped = true
		c.mu.Unlock()
		if run {
			due.f()
		}
	}
}

// ---------------------------------------------------------------------------------------------
// The gRPC harness: a Server behind a bufconn listener, driven by the generated p4v1 client.
// ---------------------------------------------------------------------------------------------

const testDevice = 7

type harness struct {
	t      testing.TB
	srv    *Server
	target *recordingTarget
	clock  *manualClock
	client p4v1.P4RuntimeClient
	conn   *grpc.ClientConn
}

func newHarness(t testing.TB, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, target: newRecordingTarget(), clock: newManualClock()}
	opts.DeviceID = testDevice
	if opts.Clock == nil {
		opts.Clock = h.clock
	}
	h.srv = New(h.target, opts)
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	p4v1.RegisterP4RuntimeServer(gs, h.srv)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	h.conn = conn
	h.client = p4v1.NewP4RuntimeClient(conn)
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
	})
	return h
}

// stream is one controller's StreamChannel with its responses collected on a channel.
type stream struct {
	t      testing.TB
	s      p4v1.P4Runtime_StreamChannelClient
	cancel context.CancelFunc
	msgs   chan *p4v1.StreamMessageResponse
	done   chan error // the stream's final error (nil on EOF)
}

func (h *harness) open() *stream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := h.client.StreamChannel(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	st := &stream{t: h.t, s: s, cancel: cancel, msgs: make(chan *p4v1.StreamMessageResponse, 100_000), done: make(chan error, 1)}
	go func() {
		for {
			m, err := s.Recv()
			if err != nil {
				st.done <- err
				close(st.msgs)
				return
			}
			st.msgs <- m
		}
	}()
	h.t.Cleanup(cancel)
	return st
}

func eid(n uint64) *p4v1.Uint128 { return &p4v1.Uint128{Low: n} }

func (st *stream) arbitrate(device uint64, role *p4v1.Role, election *p4v1.Uint128) {
	st.t.Helper()
	err := st.s.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: device, Role: role, ElectionId: election},
	}})
	if err != nil {
		st.t.Fatal(err)
	}
}

func (st *stream) send(m *p4v1.StreamMessageRequest) {
	st.t.Helper()
	if err := st.s.Send(m); err != nil {
		st.t.Fatal(err)
	}
}

// next waits for the next message the stream receives.
func (st *stream) next() *p4v1.StreamMessageResponse {
	st.t.Helper()
	select {
	case m, ok := <-st.msgs:
		if !ok {
			st.t.Fatalf("stream ended: %v", <-st.done)
		}
		return m
	case <-time.After(10 * time.Second):
		st.t.Fatal("no stream message within 10s")
	}
	return nil
}

// arbitration waits for the next arbitration notice and returns its status code.
func (st *stream) arbitration() (*p4v1.MasterArbitrationUpdate, codes.Code) {
	st.t.Helper()
	m := st.next().GetArbitration()
	if m == nil {
		st.t.Fatal("expected an arbitration notice")
	}
	return m, codes.Code(m.Status.GetCode())
}

// ended waits for the stream to be terminated by the server and returns the status code.
func (st *stream) ended() codes.Code {
	st.t.Helper()
	for {
		select {
		case _, ok := <-st.msgs:
			if !ok {
				return status.Code(<-st.done)
			}
		case <-time.After(10 * time.Second):
			st.t.Fatal("stream not ended within 10s")
		}
	}
}

// quiet asserts that no message is pending on the stream after the server had time to act:
// the caller first makes a round trip (an RPC) that the server serializes after the event.
func (st *stream) quiet() {
	st.t.Helper()
	select {
	case m := <-st.msgs:
		st.t.Fatalf("unexpected stream message: %v", m)
	default:
	}
}

// primary opens a default-role stream with election ID n and waits until it is primary.
func (h *harness) primary(n uint64) *stream {
	h.t.Helper()
	st := h.open()
	st.arbitrate(testDevice, nil, eid(n))
	if _, c := st.arbitration(); c != codes.OK {
		h.t.Fatalf("election %d: status %v, want OK", n, c)
	}
	return st
}

func (h *harness) setPipeline(info *p4configv1.P4Info, election uint64, cookie uint64) error {
	_, err := h.client.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId:   testDevice,
		ElectionId: eid(election),
		Action:     p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config:     &p4v1.ForwardingPipelineConfig{P4Info: info, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}},
	})
	return err
}

// ready returns a harness whose primary (election 1) has committed the test P4Info.
func ready(t testing.TB, opts Options) (*harness, *stream) {
	t.Helper()
	h := newHarness(t, opts)
	st := h.primary(1)
	if err := h.setPipeline(testP4Info(), 1, 42); err != nil {
		t.Fatal(err)
	}
	return h, st
}

func (h *harness) write(election uint64, ups ...*p4v1.Update) error {
	_, err := h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(election), Updates: ups})
	return err
}

// mustWrite writes as the primary (election 1) and fails the test on any error.
func (h *harness) mustWrite(ups ...*p4v1.Update) {
	h.t.Helper()
	if err := h.write(1, ups...); err != nil {
		h.t.Fatalf("write: %v %v", err, BatchErrors(err))
	}
}

// read returns every entity of a Read and the number of ReadResponse messages.
func (h *harness) read(ents ...*p4v1.Entity) ([]*p4v1.Entity, int, error) {
	rs, err := h.client.Read(context.Background(), &p4v1.ReadRequest{DeviceId: testDevice, Entities: ents})
	if err != nil {
		return nil, 0, err
	}
	var out []*p4v1.Entity
	msgs := 0
	for {
		r, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, msgs, nil
		}
		if err != nil {
			return out, msgs, err
		}
		msgs++
		out = append(out, r.Entities...)
	}
}

func (h *harness) mustRead(ents ...*p4v1.Entity) []*p4v1.Entity {
	h.t.Helper()
	out, _, err := h.read(ents...)
	if err != nil {
		h.t.Fatalf("read: %v %v", err, BatchErrors(err))
	}
	return out
}

// errCodes returns the per-update canonical codes of a batch error.
func errCodes(t testing.TB, err error) []codes.Code {
	t.Helper()
	if status.Code(err) != codes.Unknown {
		t.Fatalf("batch error code %v, want UNKNOWN (%v)", status.Code(err), err)
	}
	var out []codes.Code
	for _, e := range BatchErrors(err) {
		out = append(out, codes.Code(e.CanonicalCode))
	}
	return out
}
