package controllers

// The runtime of one UserPlaneFunction. Its way:
//
//	UPF controller ─> configure(connection, pipeline) ─> upfclient.Device.Run (reconnects with backoff)
//	Device.States ─> watch: not primary ─> programmer.Down
//	                        new primary generation ─> setup: EnsurePipeline (push when the cookie
//	                        differs) ─> programmer.RequestReplay: digest config and clone session
//	                        (written only when they differ, retried while refused), then the
//	                        entries ─> UPF status refreshed
//	digest lists (probe_reports) ─> pathmon.Monitor ─> register writes (suspensions, pinned RTTs)
//	                        through programmer.WriteRegister, in its rounds; changed users'
//	                        sessions re-reconciled at a bounded rate
//
// The programmer is the device's one writer once the pipeline is in place: entries, registers,
// the digest configuration and the clone session. setup writes only the pipeline, while the
// programmer is down for that generation.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/alloc"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/dlbuffer"
	"github.com/junction-atsss/junction/internal/pathmon"
	"github.com/junction-atsss/junction/internal/programmer"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// Digest configuration of probe_reports (the probes' RTT reports, docs/pipeline.md): lists of up
// to 256 reports, at most 20 ms late; the device may resend a list not acked within a second.
const (
	digestProbeReports = "probe_reports"
	digestMaxTimeout   = 20 * time.Millisecond
	digestMaxListSize  = 256
	digestAckTimeout   = time.Second
)

// runtimeState is the device as the UPF status shows it.
type runtimeState struct {
	connected, primary bool
	// deposed: the device's primary is a newer leader of this operator (deposedBy).
	deposed    bool
	generation uint64
	electionID string
	connErr    error
	// connecting: a stream is being opened and has not reported yet (connected or failed), as
	// after a start or a takeover; the status says Connecting, not Disconnected.
	connecting     bool
	pipelineOK     bool
	pipelineReason string
	pipelineErr    error
	cookie         uint64
	// setupErr says what of the digest configuration and the clone session the device refused
	// (the programmer retries every programmer.SetupRetry); the pipeline and the entries work without.
	setupErr error
}

// deviceSwitch forwards to the current device; none: not connected.
type deviceSwitch struct {
	cur atomic.Pointer[upfclient.Device]
}

func (s *deviceSwitch) Schema() *upfclient.Schema {
	if d := s.cur.Load(); d != nil {
		return d.Schema()
	}
	return nil
}

func (s *deviceSwitch) Write(ctx context.Context, updates []*p4v1.Update) []error {
	if d := s.cur.Load(); d != nil {
		return d.Write(ctx, updates)
	}
	errs := make([]error, len(updates))
	for i := range errs {
		errs[i] = upfclient.ErrNotConnected
	}
	return errs
}

func (s *deviceSwitch) ReadTable(ctx context.Context, table string) ([]*p4v1.TableEntry, error) {
	if d := s.cur.Load(); d != nil {
		return d.ReadTable(ctx, table)
	}
	return nil, upfclient.ErrNotConnected
}

// sessionAlloc is what one session holds on its UPF.
type sessionAlloc struct {
	supi string
	user uint32
	gnb  string // "" without a 3GPP leg
	peer uint16
	seq  *uint32
	// usage is the session's cell in the usage counters (0: none yet; the pool starts at 1).
	usage uint32
	// flows is the session's block of QoS flow cells while it has spec.qosFlows, nflows how many.
	flows  *uint32
	nflows int
}

type upfRuntime struct {
	f   *Fleet
	key types.NamespacedName
	uid types.UID
	log logr.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	users, seqs, peers, usages *alloc.Pool
	flows                      *alloc.Pool // blocks of QoSFlowBlock QoS flow policer cells
	amu                        sync.Mutex
	sessions                   map[string]sessionAlloc        // session key (ns/name) → allocation
	pending                    map[string]sessionAlloc        // acquired, not yet committed
	superseded                 map[string][]sessionAlloc      // pending allocations a spec change replaced before commit
	byUser                     map[uint32]map[string]struct{} // user index → session keys
	// comparison: the sessions whose steering reads the RTT comparison
	// (desired.ReadsRTTComparison); their users are the ones the flip-flop guard watches.
	comparison map[string]bool

	prog *programmer.Programmer
	mon  *pathmon.Monitor
	dev  deviceSwitch
	held *dlbuffer.Buffer // downlink of sessions that buffer (downlink_buffer.go)
	// forwarding: the sessions' indirect forwarding tunnels (indirect_forwarding.go).
	forwarding forwardingTunnels
	// releaseMu orders the packet-outs of released frames (downlink_buffer.go, sendHeld).
	releaseMu sync.Mutex

	pipe         atomic.Pointer[pipelineSpec]
	electionHigh atomic.Uint64
	clonePort    atomic.Uint32
	repush       chan struct{}
	replayFailed chan uint64

	// configMu makes configure one step: two calls cannot both see a changed endpoint and both
	// connect. cmu guards the connection fields that connect, disconnect and configure share.
	configMu  sync.Mutex
	cmu       sync.Mutex
	conn      connParams
	hasConn   bool
	devCancel context.CancelFunc
	devDone   chan struct{}

	smu sync.Mutex
	st  runtimeState
	// pathWriteErr: users whose path-monitoring register writes the device refused (cleared by
	// the next write that succeeds), under smu.
	pathWriteErr map[uint32]error
}

// qosFlowBlocks is how many sessions' blocks of QoS flow policer cells the pipeline has (none
// without QoS flows of their own: canHaveQoSFlows says so).
func qosFlowBlocks(sch *upfclient.Schema) (int64, error) {
	n, err := sch.MeterSize(desired.MeterUplinkFlowMBR)
	return n / junctionv1.QoSFlowBlock, err
}

func newRuntime(f *Fleet, upf *junctionv1.UserPlaneFunction, pipe *pipelineSpec) *upfRuntime {
	key := types.NamespacedName{Namespace: upf.Namespace, Name: upf.Name}
	log := f.Log.WithValues("userplanefunction", key.String())
	size := func(get func() (int64, error), fallback int64) uint32 {
		if n, err := get(); err == nil && n > 0 {
			return uint32(min(n, 1<<32-1))
		}
		return uint32(fallback)
	}
	sch := pipe.schema
	regSize := func(name string) func() (int64, error) {
		return func() (int64, error) { return sch.RegisterSize(name) }
	}
	rt := &upfRuntime{
		f: f, key: key, uid: upf.UID, log: log,
		// User indexes index the path-state registers; sequence indexes session_seq; tunnel
		// peer 0 means "no 3GPP leg" in a sessions entry, so peers start at 1.
		users: alloc.NewPool("user index", 0, size(regSize(programmer.RegisterRTT3GPP), contract.MaxUsers)),
		seqs:  alloc.NewPool("sequence index", 0, size(regSize("session_seq"), contract.MaxSessionOverrides)),
		peers: alloc.NewPool("tunnel peer index", 1, min(size(func() (int64, error) { return sch.TableSize("tunnel_peers") }, contract.MaxTunnelPeers), 1<<16)),
		// Usage cells: one per session, from 1 (0 is where entries without one count).
		usages:       alloc.NewPool("usage index", 1, size(func() (int64, error) { return sch.CounterSize(programmer.CounterUplinkUsage) }, contract.MaxUsageRecords)),
		flows:        alloc.NewPool("QoS flow index", 0, size(func() (int64, error) { return qosFlowBlocks(sch) }, 0)),
		sessions:     map[string]sessionAlloc{},
		byUser:       map[uint32]map[string]struct{}{},
		comparison:   map[string]bool{},
		held:         dlbuffer.New(),
		repush:       make(chan struct{}, 1),
		replayFailed: make(chan uint64, 1),
	}
	rt.pipe.Store(pipe)
	rt.electionHigh.Store(f.ElectionIDHigh)
	rt.prog = programmer.New(&rt.dev, log.WithName("programmer"), f.Window)
	rt.prog.OnRoom = rt.onRoom
	rt.prog.OnSynced = func() { f.enqueueUPF(key) }
	rt.prog.OnStatus = func() { f.refreshUPFStatus(key) }
	rt.prog.Extras = rt.ensureExtras
	rt.prog.OnReplayFailed = func(gen uint64) {
		select {
		case rt.replayFailed <- gen:
		default:
		}
	}
	rt.mon = pathmon.NewMonitor(pathmon.Options{
		UPF: key.String(), Config: f.PathConfig, Act: rt, Interval: f.StatusInterval,
		Notify: rt.onPathsChanged, Log: log.WithName("pathmon"), Known: rt.users.Taken,
	})
	return rt
}

func (rt *upfRuntime) start(parent context.Context) {
	rt.ctx, rt.cancel = context.WithCancel(parent)
	rt.wg.Add(2)
	go func() { defer rt.wg.Done(); rt.prog.Run(rt.ctx) }()
	go func() { defer rt.wg.Done(); _ = rt.mon.Run(rt.ctx) }()
}

// stop disconnects and ends every goroutine of the runtime.
func (rt *upfRuntime) stop() {
	rt.disconnect()
	if rt.cancel != nil {
		rt.cancel()
	}
	rt.wg.Wait()
}

// configure (re)connects when the connection parameters changed and re-ensures the pipeline when
// its cookie changed.
func (rt *upfRuntime) configure(cp connParams, pipe *pipelineSpec, upf *junctionv1.UserPlaneFunction) {
	rt.configMu.Lock()
	defer rt.configMu.Unlock()
	port := uint32(0)
	if len(upf.Spec.Ports) > 0 {
		port = uint32(upf.Spec.Ports[0].Number)
	}
	rt.clonePort.Store(port)
	if old := rt.pipe.Swap(pipe); old.cookie != pipe.cookie || old.policy != pipe.policy {
		select {
		case rt.repush <- struct{}{}:
		default:
		}
	}
	rt.cmu.Lock()
	same := rt.hasConn && rt.conn.same(cp)
	rt.cmu.Unlock()
	if same {
		return
	}
	rt.disconnect()
	rt.connect(cp)
}

// electionIDs gives the election ID of each arbitration: high the operator's
// (Options.ElectionIDHigh), low the leadership epoch (Options.ElectionLow) in its upper 32 bits
// and a count of this runtime's arbitrations below. A new leader outranks every stream of the old one (a higher epoch), and a
// reconnect outranks its own earlier stream, which a switch may still hold after a network
// partition healed: with one ID for both, the switch refuses the new stream as a duplicate until
// the old one times out.
func electionIDs(high *atomic.Uint64, epoch uint64) func() (uint64, uint64) {
	var n atomic.Uint64
	return func() (uint64, uint64) { return high.Load(), epoch<<32 | n.Add(1)&0xffffffff }
}

// deposedBy reports whether the device's primary is a newer leader of this same operator: the
// same election ID high half (the operator's) with a higher leadership epoch than this process's. Such a
// process lost its leadership without knowing it yet (paused, or cut off from the API server
// until its lease renewal gives up): what it would write to the API server is stale.
func deposedBy(st upfclient.State, epoch uint64) bool {
	h, mine := st.Highest, st.ElectionID
	return st.Connected && !st.Primary && h != nil && mine != nil && h.GetHigh() == mine.GetHigh() && h.GetLow()>>32 > epoch
}

func (rt *upfRuntime) connect(cp connParams) {
	dev, err := upfclient.New(upfclient.Config{
		Name: rt.key.String(), Address: cp.address, DeviceID: cp.deviceID, Role: cp.role, TLS: cp.tls,
		ElectionID: electionIDs(&rt.electionHigh, rt.f.low),
		Log:        rt.log.WithName("p4runtime"), Metrics: rt.f.Metrics, Backoff: rt.f.ReconnectBackoff,
		DigestHandler: rt.onDigests,
	})
	if err != nil { // only an empty address, which the API server's validation prevents
		rt.setState(func(st *runtimeState) { st.connErr = err })
		return
	}
	ctx, cancel := context.WithCancel(rt.ctx)
	done := make(chan struct{})
	rt.cmu.Lock()
	rt.conn, rt.hasConn, rt.devCancel, rt.devDone = cp, true, cancel, done
	rt.cmu.Unlock()
	rt.dev.cur.Store(dev)
	rt.setState(func(st *runtimeState) { st.connecting = true })
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = dev.Run(ctx) }()
	go func() { defer wg.Done(); rt.watch(ctx, dev) }()
	go func() { defer wg.Done(); rt.readPacketIns(ctx, dev) }()
	go func() { wg.Wait(); close(done) }()
	rt.log.Info("Connecting to the UPF", "address", cp.address, "deviceID", cp.deviceID, "tls", cp.tls != nil)
}

func (rt *upfRuntime) disconnect() {
	rt.cmu.Lock()
	cancel, done := rt.devCancel, rt.devDone
	rt.hasConn, rt.devCancel, rt.devDone = false, nil, nil
	rt.cmu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	rt.dev.cur.Store(nil)
	rt.prog.Down()
	rt.setState(func(st *runtimeState) { *st = runtimeState{} })
}

// watch follows the device's state and sets up every new primary generation.
func (rt *upfRuntime) watch(ctx context.Context, dev *upfclient.Device) {
	var done uint64 // the generation set up last
	var retry <-chan time.Time
	primaryGen := func() (uint64, bool) {
		st := dev.State()
		return st.Generation, st.Primary
	}
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-dev.States():
			wasDeposed := rt.state().deposed
			rt.setState(func(s *runtimeState) {
				s.connected, s.primary, s.generation, s.connErr = st.Connected, st.Primary, st.Generation, st.Err
				s.connecting = false
				s.electionID = fmt.Sprintf("%d:%d", st.ElectionID.GetHigh(), st.ElectionID.GetLow())
				s.deposed = deposedBy(st, rt.f.low)
			})
			if now := rt.state().deposed; now && !wasDeposed {
				rt.log.Info("Deposed: a newer leader of this operator is primary on the UPF; its status is left to that leader",
					"primaryElectionIDHigh", st.Highest.GetHigh(), "primaryElectionIDLow", st.Highest.GetLow())
				if rt.f.OnDeposed != nil {
					rt.f.OnDeposed(rt.key)
				}
			}
			rt.f.enqueueUPF(rt.key)
			if !st.Primary {
				rt.prog.Down()
				continue
			}
			if st.Generation == done {
				continue
			}
		case <-rt.repush:
		case gen := <-rt.replayFailed:
			if gen == done {
				done, retry = 0, time.After(programmer.SetupRetry)
			}
			continue
		case <-retry:
		}
		retry = nil
		gen, primary := primaryGen()
		if !primary {
			continue
		}
		if err := rt.setup(ctx, dev, gen); err != nil {
			retry = time.After(programmer.SetupRetry)
			continue
		}
		done = gen
	}
}

// setup puts the pipeline, the digest configuration and the clone session in place and asks
// for a replay. Nothing is written that the device already has.
func (rt *upfRuntime) setup(ctx context.Context, dev *upfclient.Device, gen uint64) error {
	pipe := rt.pipe.Load()
	pushed, err := dev.EnsurePipeline(ctx, pipe.info, pipe.deviceConfig, pipe.cookie, pipe.policy)
	if err != nil {
		reason := ReasonPushFailed
		if pipe.policy == upfclient.PushNever {
			reason = ReasonPipelineMismatch
		}
		rt.log.Error(err, "Pipeline not in place", "generation", gen)
		rt.setState(func(s *runtimeState) { s.pipelineOK, s.pipelineReason, s.pipelineErr = false, reason, err })
		rt.f.enqueueUPF(rt.key)
		rt.prog.Down()
		return err
	}
	if pushed {
		rt.log.Info("Pipeline pushed", "cookie", fmt.Sprintf("%x", pipe.cookie), "generation", gen)
	}
	rt.setState(func(s *runtimeState) {
		s.pipelineOK, s.pipelineReason, s.pipelineErr, s.cookie = true, "", nil, pipe.cookie
	})
	rt.prog.RequestReplay(gen, pushed) // the replay puts the digest configuration and the clone session first
	return nil
}

// ensureExtras puts the digest configuration and the clone session in place and records what
// failed in the runtime state, which the UPF's Ready condition shows (and an event). The
// programmer runs it (programmer.extras), between its writes.
func (rt *upfRuntime) ensureExtras(ctx context.Context) error {
	dev := rt.dev.cur.Load()
	if dev == nil {
		return upfclient.ErrNotConnected
	}
	var errs []error
	if err := rt.ensureDigest(ctx, dev); err != nil {
		rt.log.Error(err, "Probe reports not configured: path monitoring is blind")
		errs = append(errs, fmt.Errorf("the %s digest is not configured (path monitoring is blind): %w", digestProbeReports, err))
	}
	if err := rt.ensureCloneSession(ctx, dev); err != nil {
		rt.log.Error(err, "Clone session for redundant steering not written")
		errs = append(errs, fmt.Errorf("clone session %d is not written (redundant steering cannot duplicate): %w", contract.RedundantCloneSession, err))
	}
	err := errors.Join(errs...)
	if prev := rt.state().setupErr; (prev == nil) != (err == nil) || (err != nil && prev.Error() != err.Error()) {
		rt.setState(func(s *runtimeState) { s.setupErr = err })
		rt.f.enqueueUPF(rt.key)
	}
	return err
}

// ensureDigest configures probe_reports unless the device has that configuration already.
func (rt *upfRuntime) ensureDigest(ctx context.Context, dev *upfclient.Device) error {
	sch := dev.Schema()
	id, err := sch.DigestID(digestProbeReports)
	if err != nil {
		return err
	}
	want := &p4v1.DigestEntry_Config{MaxTimeoutNs: digestMaxTimeout.Nanoseconds(), MaxListSize: digestMaxListSize, AckTimeoutNs: digestAckTimeout.Nanoseconds()}
	got, err := dev.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id}}}})
	if err == nil {
		for _, e := range got {
			if de := e.GetDigestEntry(); de != nil && de.GetDigestId() == id && proto.Equal(de.GetConfig(), want) {
				return nil
			}
		}
	}
	return dev.ConfigureDigest(ctx, digestProbeReports, digestMaxTimeout, digestMaxListSize, digestAckTimeout)
}

// ensureCloneSession writes REDUNDANT_CLONE_SESSION (redundant mode duplicates through it)
// unless the device has it with the same replica.
func (rt *upfRuntime) ensureCloneSession(ctx context.Context, dev *upfclient.Device) error {
	want := &p4v1.CloneSessionEntry{SessionId: contract.RedundantCloneSession, Replicas: []*p4v1.Replica{
		{PortKind: &p4v1.Replica_Port{Port: upfclient.Uint(uint64(rt.clonePort.Load()))}, Instance: 0},
	}}
	pre := func(cs *p4v1.CloneSessionEntry) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
			Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs}}}}
	}
	got, err := dev.Read(ctx, []*p4v1.Entity{pre(&p4v1.CloneSessionEntry{SessionId: contract.RedundantCloneSession})})
	op := p4v1.Update_INSERT
	if err == nil {
		for _, e := range got {
			cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
			if cs.GetSessionId() != contract.RedundantCloneSession {
				continue
			}
			if proto.Equal(cs, want) {
				return nil
			}
			op = p4v1.Update_MODIFY
		}
	}
	if errs := dev.Write(ctx, []*p4v1.Update{{Type: op, Entity: pre(want)}}); errs != nil {
		return errs[0]
	}
	return nil
}

func (rt *upfRuntime) setState(f func(*runtimeState)) {
	rt.smu.Lock()
	defer rt.smu.Unlock()
	f(&rt.st)
}

func (rt *upfRuntime) state() runtimeState {
	rt.smu.Lock()
	defer rt.smu.Unlock()
	return rt.st
}

// onDigests hands probe reports to the path monitor (the client acks the list afterwards).
func (rt *upfRuntime) onDigests(_ context.Context, l upfclient.DigestList) {
	if l.Digest != digestProbeReports {
		return
	}
	for _, m := range l.Messages {
		r, err := pathmon.DecodeReport(m)
		if err != nil {
			rt.mon.Dropped()
			rt.log.V(1).Info("Undecodable probe report", "err", err.Error())
			continue
		}
		rt.mon.Report(r)
	}
}

// SetSuspended, WriteRTT and WriteLoss let the path monitor write the device (pathmon.Actuator).
func (rt *upfRuntime) SetSuspended(ctx context.Context, user uint32, suspended bool) error {
	v := uint64(0)
	if suspended {
		v = 1
	}
	return rt.writeRegister(ctx, programmer.RegisterSuspended, user, v)
}

func (rt *upfRuntime) WriteRTT(ctx context.Context, user uint32, access contract.Access, value uint32) error {
	reg := programmer.RegisterRTT3GPP
	if access == contract.AccessNon3GPP {
		reg = programmer.RegisterRTTNon3GPP
	}
	return rt.writeRegister(ctx, reg, user, uint64(value))
}

func (rt *upfRuntime) WriteLoss(ctx context.Context, user uint32, access contract.Access, percent uint8) error {
	reg := programmer.RegisterLoss3GPP
	if access == contract.AccessNon3GPP {
		reg = programmer.RegisterLossNon3GPP
	}
	return rt.writeRegister(ctx, reg, user, uint64(percent))
}

func (rt *upfRuntime) writeRegister(ctx context.Context, name string, user uint32, v uint64) error {
	err := rt.prog.WriteRegister(ctx, name, user, v)
	if errors.Is(err, programmer.ErrNotSynced) {
		return err // away, not refused: the UPF's Connected condition says so
	}
	rt.smu.Lock()
	_, had := rt.pathWriteErr[user]
	switch {
	case err != nil:
		if rt.pathWriteErr == nil {
			rt.pathWriteErr = map[uint32]error{}
		}
		rt.pathWriteErr[user] = err
	case had:
		delete(rt.pathWriteErr, user)
	}
	rt.smu.Unlock()
	if err != nil || had { // the UPF's and the user's sessions' conditions change
		rt.f.enqueueUPF(rt.key)
		rt.onPathsChanged([]uint32{user})
	}
	return err
}

// pathWriteError is the refused path-monitoring write of user, if any; with user == nil, how
// many users have one and one of them.
func (rt *upfRuntime) pathWriteError(user *uint32) (int, error) {
	rt.smu.Lock()
	defer rt.smu.Unlock()
	if user != nil {
		if err := rt.pathWriteErr[*user]; err != nil {
			return 1, err
		}
		return 0, nil
	}
	for _, err := range rt.pathWriteErr {
		return len(rt.pathWriteErr), err
	}
	return 0, nil
}

// onPathsChanged re-reconciles the sessions of users whose path summary changed.
func (rt *upfRuntime) onPathsChanged(users []uint32) {
	var keys []types.NamespacedName
	rt.amu.Lock()
	for _, u := range users {
		for k := range rt.byUser[u] {
			keys = append(keys, splitKey(k))
		}
	}
	rt.amu.Unlock()
	rt.f.enqueueSessions(keys)
}

// onRoom re-reconciles the objects that waited for room in a table.
func (rt *upfRuntime) onRoom(owners []string) {
	var sessions, policies []types.NamespacedName
	for _, o := range owners {
		kind, key, ok := parseOwner(o)
		switch {
		case !ok:
		case kind == "session":
			sessions = append(sessions, key)
		case kind == "policy":
			policies = append(policies, key)
		case kind == ownerUPF:
			rt.f.enqueueUPF(rt.key)
		}
	}
	rt.f.enqueueSessions(sessions)
	rt.f.enqueuePolicies(policies)
}
