package upfclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"k8s.io/utils/clock"
)

// Tuning defaults, each with its reason.
const (
	// Updates per WriteRequest: large enough that 100k entries take 20 round trips, small
	// enough that one request stays far below a server's 4 MiB default receive limit.
	defaultMaxUpdatesPerWrite = 5000
	// Encoded bytes per WriteRequest: below gRPC's 4 MiB default receive size, which
	// switch agents (Stratum, BMv2) keep unless configured otherwise.
	defaultMaxWriteBytes = 3 << 20
	// Requests of one Write call in flight: overlaps one request's transfer with the
	// previous one's processing without piling up work on the switch CPU.
	defaultWritesInFlight = 2
	// gRPC receive limit: a full-table ReadResponse chunk or a P4Info with its device config
	// (a Tofino binary is tens of MB).
	defaultMaxMessageSize = 256 << 20
	// Liveness probe period: a switch that rebooted or vanished sends no RST until we
	// write, so an idle stream would look up forever. A Capabilities RPC is ordinary traffic
	// that every server answers, whatever its HTTP/2 ping policy.
	defaultProbeInterval = 15 * time.Second
	// HTTP/2 keepalive ping interval, a transport-level backstop. Above 5 minutes because
	// gRPC servers (Go and C++) by default close connections that ping more often than that;
	// with the probe's traffic the pings rarely fire at all.
	defaultKeepalive        = 6 * time.Minute
	defaultKeepaliveTimeout = 20 * time.Second
	// Time to connect and hear the arbitration answer before the attempt counts as failed.
	defaultDialTimeout = 10 * time.Second
	// Digest lists waiting for the handler: a few seconds of probe reports at 1 list/10 ms.
	defaultDigestBuffer = 256
	// Packet-ins waiting for the reader: a burst of punted frames.
	defaultPacketInBuffer = 1024
	// A session that stayed connected this long was healthy: the next failure starts the
	// backoff from Initial again.
	stableSession = 5 * time.Second
)

// Config describes one device (one UserPlaneFunction) and how to reach it.
type Config struct {
	// Name labels logs and metrics (the UserPlaneFunction's namespace/name); default Address.
	Name string
	// Address is the P4Runtime server, host:port.
	Address string
	// DeviceID is the P4Runtime device_id.
	DeviceID uint64
	// Role is the P4Runtime role name; "" is the default role (full access, receives digests
	// and packet-ins).
	Role string
	// TLS configures TLS or mTLS (with Certificates set); nil means plaintext.
	TLS *tls.Config
	// ElectionID is asked on every connect, on every Reelect and when the device reports
	// that its role has no primary, so that a newly elected operator leader, which derives a
	// higher ID from its lease, always wins. The device remembers the highest ID it has seen:
	// after the primary leaves, a lower one stays a backup.
	//
	// Recommended: high = the leadership epoch (the lease's transition count), low = a
	// counter incremented on every call. A new leader then wins by its epoch, and a
	// reconnect of the same leader wins over its own half-dead earlier stream, which a switch
	// behind a healed network partition may still hold as primary (same ID: refused as a
	// duplicate; lower ID: a backup that gets no digests). Default: high 0, low the counter.
	ElectionID func() (high, low uint64)
	// Log receives connection events; default discards.
	Log logr.Logger
	// Clock times reconnect delays and latencies; default the system clock.
	Clock clock.Clock
	// Backoff shapes reconnect delays.
	Backoff Backoff
	// Metrics, shared by all devices of a process; nil records nothing.
	Metrics *Metrics

	// MaxUpdatesPerWrite and MaxWriteBytes cut a Write call into requests (defaults 5000
	// updates, 3 MiB); MaxWritesInFlight of them are sent at once (default 2).
	MaxUpdatesPerWrite int
	MaxWriteBytes      int
	MaxWritesInFlight  int
	// MaxMessageSize is the largest gRPC message received or sent (default 256 MiB).
	MaxMessageSize int
	// ProbeInterval is how often a Capabilities RPC checks that the device still answers;
	// no answer within DialTimeout ends the session (default 15s; < 0 off).
	ProbeInterval time.Duration
	// Keepalive is the HTTP/2 ping interval on an idle connection (default 6 minutes, < 0
	// off). Shorter intervals need a server enforcement policy that allows them.
	Keepalive time.Duration
	// DialTimeout bounds connecting plus the arbitration answer, and a probe's answer
	// (default 10s).
	DialTimeout time.Duration

	// DigestHandler receives every digest list, one at a time, in a goroutine of its own;
	// the list is acked (DigestListAck) when it returns. It must return soon after its
	// context ends (Run waits for it). Lists that arrive while DigestBuffer
	// (default 256) lists wait are dropped unacked and counted, so the device holds back
	// further lists until its ack timeout: backpressure, not a blocked stream. A nil handler
	// acks and discards.
	DigestHandler func(context.Context, DigestList)
	DigestBuffer  int
	// PacketInBuffer bounds PacketIns(); when full, packet-ins are dropped and counted
	// (default 1024).
	PacketInBuffer int

	// DialOptions are appended to this package's gRPC dial options.
	DialOptions []grpc.DialOption
}

// State is the device's connection as this controller sees it.
type State struct {
	// Connected: a stream is open and the device answered the arbitration.
	Connected bool
	// Primary: this controller is the primary for its role and may write.
	Primary bool
	// Generation counts the times this Device became primary (on a new stream, or again on
	// the same one). When it changes, the device may have lost every entry (restart) or
	// another controller may have written: replay the desired state.
	Generation uint64
	// ElectionID is the election ID this controller last sent.
	ElectionID *p4v1.Uint128
	// Highest is the highest election ID the device has seen for the role, from its last
	// arbitration notice: the primary's while this controller is a backup (spec 5.4).
	Highest *p4v1.Uint128
	// Err is why the last stream ended or the last connect failed; nil while connected.
	Err error
	// Since is when this state began.
	Since time.Time
}

// Device is the P4Runtime client for one device. Create it with New, start Run once; the other
// methods are safe for concurrent use and fail fast (ErrNotConnected, ErrNotPrimary) while the
// device is not reachable.
type Device struct {
	cfg     Config
	log     logr.Logger
	clock   clock.Clock
	backoff Backoff
	m       *Metrics

	mu      sync.Mutex
	state   State
	sess    *session      // the current session, nil when down
	changed chan struct{} // closed and replaced on every state change
	states  chan State    // latest-wins: holds at most the newest unread state

	schema    atomic.Pointer[Schema]
	running   atomic.Bool
	digestQ   chan digestItem
	packetIns chan PacketIn
}

// New checks cfg and returns a Device; nothing happens on the network until Run.
func New(cfg Config) (*Device, error) {
	if cfg.Address == "" {
		return nil, errors.New("upfclient: Config.Address is empty")
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Address
	}
	if cfg.ElectionID == nil {
		var calls atomic.Uint64
		cfg.ElectionID = func() (uint64, uint64) { return 0, calls.Add(1) }
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.MaxUpdatesPerWrite <= 0 {
		cfg.MaxUpdatesPerWrite = defaultMaxUpdatesPerWrite
	}
	if cfg.MaxWriteBytes <= 0 {
		cfg.MaxWriteBytes = defaultMaxWriteBytes
	}
	if cfg.MaxWritesInFlight <= 0 {
		cfg.MaxWritesInFlight = defaultWritesInFlight
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = defaultMaxMessageSize
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = defaultProbeInterval
	}
	if cfg.Keepalive == 0 {
		cfg.Keepalive = defaultKeepalive
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	if cfg.DigestBuffer <= 0 {
		cfg.DigestBuffer = defaultDigestBuffer
	}
	if cfg.PacketInBuffer <= 0 {
		cfg.PacketInBuffer = defaultPacketInBuffer
	}
	d := &Device{
		cfg:       cfg,
		log:       cfg.Log.WithValues("device", cfg.Name, "address", cfg.Address),
		clock:     cfg.Clock,
		backoff:   cfg.Backoff.withDefaults(),
		m:         cfg.Metrics,
		changed:   make(chan struct{}),
		states:    make(chan State, 1),
		digestQ:   make(chan digestItem, cfg.DigestBuffer),
		packetIns: make(chan PacketIn, cfg.PacketInBuffer),
	}
	d.state.Since = d.clock.Now()
	return d, nil
}

// Name is Config.Name.
func (d *Device) Name() string { return d.cfg.Name }

// Run connects, arbitrates and keeps the stream up until ctx ends, reconnecting with backoff
// after any error; it never gives up and returns nil when ctx is done (so it fits a
// controller-runtime Runnable). It may be called once.
func (d *Device) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("upfclient: Run called twice")
	}
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		d.dispatchDigests(ctx)
	}()
	defer func() { <-dispatched }()

	failures := 0
	for {
		connectedFor, err := d.runSession(ctx)
		if ctx.Err() != nil {
			d.setDown(ctx.Err())
			d.log.Info("P4Runtime client stopped")
			return nil
		}
		if connectedFor >= stableSession {
			failures = 0
		}
		failures++
		d.m.reconnect(d.cfg.Name)
		delay := d.backoff.delay(failures)
		d.setDown(err)
		d.log.Info("P4Runtime stream down, reconnecting", "err", err.Error(), "attempt", failures, "delay", delay.String())
		select {
		case <-ctx.Done():
			d.log.Info("P4Runtime client stopped")
			return nil
		case <-d.clock.After(delay):
		}
	}
}

// State returns the current state.
func (d *Device) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// States delivers state changes. It keeps only the newest unread one: a slow reader skips
// intermediate states but never misses that Generation moved.
func (d *Device) States() <-chan State { return d.states }

// WaitPrimary blocks until this controller is primary (returning that state) or ctx ends.
func (d *Device) WaitPrimary(ctx context.Context) (State, error) {
	for {
		d.mu.Lock()
		st, ch := d.state, d.changed
		d.mu.Unlock()
		if st.Primary {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("waiting to become primary of %s: %w (last error: %v)", d.cfg.Name, ctx.Err(), st.Err)
		case <-ch:
		}
	}
}

// Reelect asks ElectionID again and sends it on the open stream: call it when the caller's
// leadership changed and the ID with it. The answer arrives as a state change.
func (d *Device) Reelect() error {
	s := d.session()
	if s == nil {
		return ErrNotConnected
	}
	return s.arbitrate(d.electionID())
}

// Schema is the name resolver of the pipeline last pushed, ensured or loaded; nil before.
func (d *Device) Schema() *Schema { return d.schema.Load() }

// PacketIns delivers packet-ins (bounded; dropped and counted when the reader lags).
func (d *Device) PacketIns() <-chan PacketIn { return d.packetIns }

func (d *Device) electionID() *p4v1.Uint128 {
	hi, lo := d.cfg.ElectionID()
	return &p4v1.Uint128{High: hi, Low: lo}
}

// session returns the current session or nil.
func (d *Device) session() *session {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sess
}

// connected returns the current session, or ErrNotConnected.
func (d *Device) connected() (*session, error) {
	s := d.session()
	if s == nil || !s.answered.Load() {
		return nil, ErrNotConnected
	}
	return s, nil
}

// primary returns the current session if it is primary.
func (d *Device) primary() (*session, error) {
	s, err := d.connected()
	if err != nil {
		return nil, err
	}
	if !s.primary.Load() {
		return nil, ErrNotPrimary
	}
	return s, nil
}

// update changes the state under mu and publishes it when it differs.
func (d *Device) update(f func(st *State)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.state
	f(&d.state)
	st := d.state
	if st.Connected == old.Connected && st.Primary == old.Primary && st.Generation == old.Generation &&
		sameUint128(st.ElectionID, old.ElectionID) && errors.Is(st.Err, old.Err) {
		return
	}
	d.state.Since = d.clock.Now()
	st = d.state
	d.m.setState(d.cfg.Name, st)
	close(d.changed)
	d.changed = make(chan struct{})
	// Latest wins: drop an unread older state, then queue this one. Only this function
	// writes to states, under mu, so the send cannot block.
	select {
	case <-d.states:
	default:
	}
	d.states <- st
}

func (d *Device) setDown(err error) {
	d.update(func(st *State) {
		st.Connected, st.Primary, st.Err = false, false, err
	})
}

func lessUint128(a, b *p4v1.Uint128) bool {
	return a.GetHigh() < b.GetHigh() || (a.GetHigh() == b.GetHigh() && a.GetLow() < b.GetLow())
}

func sameUint128(a, b *p4v1.Uint128) bool {
	return a.GetHigh() == b.GetHigh() && a.GetLow() == b.GetLow() && (a == nil) == (b == nil)
}
