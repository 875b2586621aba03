// Package n4 is the UPF's N4 endpoint: PFCP (3GPP TS 29.244) toward a 5G core's SMFs. It
// keeps the associations (heartbeats both ways, the Recovery Time Stamp), decodes the SMF's
// rules (rules.go), maps them onto Junction's model (plan.go: an ATSSSSession and the traffic
// classes of its SDF filters) and hands the result to a Store, which in the operator writes the
// objects the controllers program (controllers/n4_store.go). docs/n4.md is the contract: which IE
// becomes what, and what is refused with which cause.
package n4

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// Store keeps N4 sessions where the rest of Junction sees them. The operator's store programs
// them with the controllers' allocators and programmer (one allocator, one programmer) and
// writes them as ATSSSSessions and SteeringPolicies, so kubectl shows them and they survive an
// operator restart or a leader change (docs/n4.md, "Where N4 sessions live").
type Store interface {
	// Apply puts what plan says on the UPF and returns once the UPF holds the entries (the
	// objects may follow), or why it cannot (a *Refusal carries the cause for the SMF). With
	// plan.DropBuffered it first drops what the session's downlink holds, refused or not.
	Apply(ctx context.Context, s *State, p *Plan) error
	// Remove takes the session off the UPF and returns once its entries are gone (its objects
	// may follow), with the session's usage from its first entry to its last (nil when the UPF
	// could not say).
	Remove(ctx context.Context, s *State) (*Usage, error)
	// Usage reads the session's usage from its first entry to now.
	Usage(ctx context.Context, s *State) (Usage, error)
	// DropBuffered drops what the session's downlink holds (the SMF's answer to a downlink data
	// report said DROBU).
	DropBuffered(s *State)
	// Load returns the sessions and the node state an earlier endpoint of this UPF left.
	Load(ctx context.Context) ([]*State, NodeState, error)
	// SaveNode records the node state (in the UPF's status).
	SaveNode(ctx context.Context, n NodeState) error
}

// State is one PFCP session as the endpoint keeps and persists it.
type State struct {
	UPSEID uint64     `json:"upSEID"`
	CPSEID uint64     `json:"cpSEID"`
	CPAddr netip.Addr `json:"cpAddr"`
	// SMF is the Node ID of the SMF's association; SMFCSID the SMF's FQ-CSID for the session,
	// if it gave one (csid.go).
	SMF     string            `json:"smf"`
	SMFCSID *FQCSID           `json:"smfCSID,omitempty"`
	SUPI    string            `json:"supi"`
	Rules   packedRules       `json:"rules"`           // the SMF's rules, packed between requests (rules.go)
	TEIDs   map[uint16]uint32 `json:"teids,omitempty"` // PDR ID -> the TEID the UPF chose (CH)
	// Idle is a single-access session's address, which it keeps when its SMF removes every PDR
	// (OAI's does while the UE is idle): makePlan has it from here then.
	Idle netip.Addr `json:"idle,omitzero"`
	// Carried is what the session's usage cells counted before they last started again from
	// zero: before its rules last left it without a PDR or an active access (Parked: it is so
	// now; no entry names the cells then, so the first entry of its next rules zeroes them,
	// docs/pipeline.md "Usage counters"), or before the UPF restarted. Its URRs measure Carried
	// and what the cells count from there (State.counted).
	Carried Usage `json:"carried,omitzero"`
	Parked  bool  `json:"parked,omitempty"`
	lastRaw Usage // the cells at the last reading

	mu        sync.Mutex // serializes the SMF's requests on this session
	reporting bool       // a Session Report Request awaits its answer
}

// NodeState is what outlives one endpoint process.
type NodeState struct {
	RecoveryTime time.Time
	Associations []Association
	Sessions     int
	// Unsaved: the endpoint before this one stopped with sessions the SMFs know of unwritten.
	Unsaved bool
	// PFDs are the flow descriptions the SMFs provisioned, by Application ID (pfd.go).
	PFDs map[string][]string
}

// Association is one SMF's PFCP association.
type Association struct {
	NodeID       string
	Addr         netip.AddrPort
	Since        time.Time
	RecoveryTime time.Time // the SMF's
	lastAnswer   time.Time // the last heartbeat exchange (either direction)
	lostSince    time.Time // zero while the SMF answers
}

// Config is one endpoint's configuration.
type Config struct {
	Target
	// Listen is the local address and UDP port to bind.
	Listen netip.AddrPort
	// NodeID is the UPF's Node ID (an IPv4 address or an FQDN).
	NodeID string
	// Address is the IPv4 address the UP F-SEIDs carry: where SMFs send session messages.
	Address netip.Addr
	// Heartbeat is the interval of the UPF's heartbeats to each SMF (0: none); after
	// HeartbeatMisses unanswered ones the SMF is lost, and after Grace its sessions are released.
	Heartbeat       time.Duration
	HeartbeatMisses int
	Grace           time.Duration
	// TrafficStop is how long a URR's directions carry no packet before the stop of traffic is
	// reported (STOPT); 0: DefaultTrafficStop.
	TrafficStop time.Duration
	// AllowedSMFs are the prefixes SMFs may associate from; empty: any.
	AllowedSMFs []netip.Prefix
	// AssociateWith are SMFs the UPF sets up an association with itself (upf_initiated.go), each
	// host:port, the host an IPv4 address or a DNS name.
	AssociateWith []string
	// RestartOnAssociationOnly: a heartbeat's Recovery Time Stamp tells nothing of an SMF restart,
	// only an Association Setup Request's does (spec.n4.smfRestartDetection Association).
	RestartOnAssociationOnly bool
	// Event reports what an operator should see (an SMF lost, sessions released).
	Event func(warning bool, reason, msg string)
	Log   logr.Logger
}

// UP Function Features (TS 29.244 §8.2.25), octets 5 to 10: FTUP (octet 5 bit 5: the UPF
// allocates F-TEIDs), PFDM (octet 5 bit 6: PFD Management, pfd.go), EMPU (octet 6 bit 1: it
// sends End Markers on SNDEM, which Open5GS's SMF asks only of a UPF that says so), MNOP (octet 7 bit 5: usage reports count packets, which the
// pipeline's usage counters always do; Open5GS asks for it only of a UPF that says so),
// ATSSS-LL (octet 9 bit 1), RTTWP (octet 10 bit 1: RTT measurement without PMF, what Junction's
// probes do). Nothing else is advertised: nothing else is done.
var upFeatures = []uint8{0x30, 0x01, 0x10, 0x00, 0x01, 0x01}

// Endpoint is the N4 endpoint of one UPF.
type Endpoint struct {
	cfg      Config
	store    Store
	conn     *net.UDPConn
	recovery time.Time
	fseidIP  net.IP // Config.Address, for the UP F-SEIDs

	mu       sync.Mutex
	assocs   map[string]*Association // by Node ID
	sessions map[uint64]*State       // by UP SEID
	byCP     map[cpKey]uint64
	teids    map[uint32]bool // TEIDs the UPF chose
	nextTEID uint32
	seq      uint32
	pending  map[uint32]chan *message.Header // our requests awaiting an answer
	dirty    bool                            // the node state changed since the last save
	pfds     map[string][]string             // by Application ID (pfd.go)
	// pfdMu: session requests hold it to read, a PFD change to write (PDRs resolve against one
	// table); taken before any session's mu.
	pfdMu sync.RWMutex
	plane userPlane // the switch, as the operator last said (node_report.go)
	// Of each SMF of AssociateWith: when the UPF next tries to associate with it, why its last
	// try failed (said in an event once per reason), and where it was last found.
	setupAfter   map[string]time.Time
	setupRefusal map[string]string
	smfAddrs     map[string]netip.AddrPort

	cache responseCache
	// sessionWork takes session requests, nodeWork everything else (heartbeats, associations,
	// answers to the UPF's requests), so that an endpoint whose session handlers all wait for
	// the switch still answers heartbeats and refuses session requests at once.
	sessionWork, nodeWork handlers
	// reportsRunning: a round of usage reports is under way (reportUsage).
	reportsRunning atomic.Bool
	// leaving: the UPF is leaving N4 (Release); associating: a round of associate is under way.
	leaving, associating atomic.Bool
}

type cpKey struct {
	smf  string
	seid uint64
}

// DefaultTrafficStop is spec.n4.trafficStopAfter's default. TS 29.244 leaves it to the UPF when
// traffic has stopped; ten seconds outlasts a TCP sender's first retransmission timeouts, so a
// flow that stalls a moment is not reported stopped and started again.
const DefaultTrafficStop = 10 * time.Second

// firstTEID is where the UPF starts choosing TEIDs: the upper half of the TEID space, so that
// TEIDs written in manifests (gNB-chosen, usually small) rarely meet them; a meeting shows as
// an AddressConflict on the later session, and the SMF is refused (docs/n4.md).
const firstTEID = 0x80000000

// New makes an endpoint; Bind and Serve run it.
func New(cfg Config, store Store) *Endpoint {
	if cfg.HeartbeatMisses == 0 {
		cfg.HeartbeatMisses = 3
	}
	if cfg.TrafficStop == 0 {
		cfg.TrafficStop = DefaultTrafficStop
	}
	if cfg.Event == nil {
		cfg.Event = func(bool, string, string) {}
	}
	e := &Endpoint{
		cfg: cfg, store: store,
		assocs: map[string]*Association{}, sessions: map[uint64]*State{}, byCP: map[cpKey]uint64{},
		teids: map[uint32]bool{}, nextTEID: firstTEID, pending: map[uint32]chan *message.Header{},
		setupAfter: map[string]time.Time{}, setupRefusal: map[string]string{}, smfAddrs: map[string]netip.AddrPort{},
		sessionWork: handlers{work: make(chan datagram), max: 256},
		nodeWork:    handlers{work: make(chan datagram), max: 16},
	}
	e.cache.entries = map[string]*cached{}
	e.fseidIP = cfg.Address.AsSlice()
	return e
}

// Bind opens the socket and restores what an earlier endpoint left: with sessions and a
// recovery time stamp to keep, the SMFs see no restart; without, a new time stamp tells them
// (TS 29.244 §6.2.2) to re-establish.
func (e *Endpoint) Bind(ctx context.Context) error {
	states, node, err := e.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("restoring N4 sessions: %w", err)
	}
	e.recovery = node.RecoveryTime
	if node.Unsaved && len(states)+len(node.Associations) > 0 {
		e.cfg.Event(true, "N4SessionsLost", fmt.Sprintf("the previous N4 endpoint stopped before it wrote every session; "+
			"a new Recovery Time Stamp tells the SMFs to establish their sessions again (%d were restored and are released)", len(states)))
	}
	if e.recovery.IsZero() || node.Unsaved {
		// Sessions without the time stamp the SMFs know them under, or some missing, cannot be
		// kept: the new time stamp tells the SMFs to re-establish them.
		for _, s := range states {
			if _, err := e.store.Remove(ctx, s); err != nil {
				return fmt.Errorf("removing an N4 session of an unknown recovery time: %w", err)
			}
		}
		// PFDs go too: an SMF provisions them again once it has associated anew.
		states, node.Associations, node.PFDs = nil, nil, nil
		e.recovery = time.Now().Truncate(time.Second)
		e.dirty = true
	}
	e.pfds = node.PFDs
	now := time.Now()
	for _, a := range node.Associations {
		a := a
		a.lastAnswer = now
		e.assocs[a.NodeID] = &a
	}
	for _, s := range states {
		e.sessions[s.UPSEID] = s
		e.byCP[cpKey{s.SMF, s.CPSEID}] = s.UPSEID
		for _, t := range s.TEIDs {
			e.teids[t] = true
		}
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(e.cfg.Listen))
	if err != nil {
		return fmt.Errorf("spec.n4.listen: %w", err)
	}
	e.conn = conn
	e.cfg.Log.Info("N4 endpoint listening", "address", conn.LocalAddr(), "nodeID", e.cfg.NodeID, "sessions", len(states), "associations", len(node.Associations), "recoveryTimeStamp", e.recovery,
		"receiveBuffer", receiveBuffer(conn))
	return nil
}

// n4ReceiveBuffer is the socket receive buffer the endpoint asks for: an SMF's burst (after its
// own restart it establishes every session again) arrives while handlers start, and what the
// buffer does not hold is dropped and waits for the SMF's retransmission (T1, seconds). The
// kernel grants at most twice net.core.rmem_max (212,992 by default: about 90 requests);
// the log line says what it granted.
const n4ReceiveBuffer = 4 << 20

// receiveBuffer asks for n4ReceiveBuffer and returns what the kernel granted (0: unknown).
func receiveBuffer(conn *net.UDPConn) int {
	_ = conn.SetReadBuffer(n4ReceiveBuffer) // the kernel caps it without an error
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	return n
}

// Serve answers PFCP until ctx ends. It does not release associations when it stops: a new
// leader picks them up (Release does that when the UPF leaves N4 for good).
func (e *Endpoint) Serve(ctx context.Context) error {
	defer e.conn.Close()
	go func() {
		<-ctx.Done()
		e.conn.Close()
	}()
	go e.housekeeping(ctx)
	stop := make(chan struct{})
	defer close(stop)
	buf := make([]byte, 65535)
	for {
		n, from, err := e.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		d := datagram{append([]byte(nil), buf[:n]...), from}
		h := &e.nodeWork
		if n > 1 && isSessionRequest(d.b[1]) {
			h = &e.sessionWork
		}
		switch {
		case h.give(d):
		case h.started < h.max:
			h.started++
			go e.handler(ctx, stop, h, d)
		// Every session handler is busy: a session request is answered at once with PFCP entity
		// in congestion (TS 29.244 §5.22.1) rather than left to overflow the socket; a node
		// message waits for a node handler.
		case h == &e.nodeWork || !e.congested(d.b, from):
			h.work <- d
		}
	}
}

// isSessionRequest reports whether a PFCP message type (the header's second octet) is a
// session request the SMF sends.
func isSessionRequest(t uint8) bool {
	switch t {
	case message.MsgTypeSessionEstablishmentRequest, message.MsgTypeSessionModificationRequest, message.MsgTypeSessionDeletionRequest:
		return true
	}
	return false
}

type datagram struct {
	b    []byte
	from netip.AddrPort
}

// handlers is a set of at most max goroutines that live as long as Serve (a goroutine per
// request grew its stack anew each time: a tenth of an establishment's CPU at 1,000/s). Only
// Serve touches started.
type handlers struct {
	work         chan datagram
	started, max int
}

// give hands d to an idle handler; false when none is idle.
func (h *handlers) give(d datagram) bool {
	select {
	case h.work <- d:
		return true
	default:
		return false
	}
}

// handler handles d, then whatever Serve hands it through h, until Serve returns (stop closed).
func (e *Endpoint) handler(ctx context.Context, stop <-chan struct{}, h *handlers, d datagram) {
	for {
		e.handleGuarded(ctx, d)
		select {
		case d = <-h.work:
		case <-stop:
			return
		}
	}
}

func (e *Endpoint) handleGuarded(ctx context.Context, d datagram) {
	defer func() {
		// Decoding is guarded where rules are read (undecodable); this is the last line.
		if p := recover(); p != nil {
			e.cfg.Log.Error(fmt.Errorf("%v", p), "N4: a request stopped its handler", "from", d.from)
		}
	}()
	e.handle(ctx, d.b, d.from)
}

func (e *Endpoint) send(to netip.AddrPort, b []byte) {
	if _, err := e.conn.WriteToUDPAddrPort(b, to); err != nil {
		e.cfg.Log.V(1).Info("N4 send failed", "to", to, "error", err)
	}
}

// congested answers a session request with cause 74 without decoding its IEs; it reports
// whether b was one. The answer is not cached: a retransmission may find a handler free. A
// retransmission of a request in work is dropped and one of a request answered gets its answer
// again (§6.4): a 74 there would tell the SMF that a session the UPF holds was refused.
func (e *Endpoint) congested(b []byte, from netip.AddrPort) bool {
	h, err := message.ParseHeader(b)
	if err != nil || h.Flags>>5 != 1 {
		return false
	}
	if resp, known := e.cache.peek(requestKey(from, h)); known {
		if resp != nil {
			e.send(from, resp)
		}
		return true
	}
	cause := ie.NewCause(CauseCongestion)
	var m marshaler
	switch h.Type {
	case message.MsgTypeSessionEstablishmentRequest:
		m = message.NewSessionEstablishmentResponse(0, 0, 0, h.SequenceNumber, 0, ie.NewNodeIDHeuristic(e.cfg.NodeID), cause)
	case message.MsgTypeSessionModificationRequest, message.MsgTypeSessionDeletionRequest:
		e.mu.Lock()
		var seid uint64
		if s := e.sessions[h.SEID]; s != nil {
			seid = s.CPSEID
		}
		e.mu.Unlock()
		if h.Type == message.MsgTypeSessionModificationRequest {
			m = message.NewSessionModificationResponse(0, 0, seid, h.SequenceNumber, 0, cause)
		} else {
			m = message.NewSessionDeletionResponse(0, 0, seid, h.SequenceNumber, 0, cause)
		}
	default:
		return false
	}
	if out, err := m.Marshal(); err == nil {
		e.send(from, out)
	}
	return true
}

type marshaler interface{ Marshal() ([]byte, error) }

// reply encodes a response, remembers it for retransmitted requests and sends it.
func (e *Endpoint) reply(key string, to netip.AddrPort, m marshaler) {
	b, err := m.Marshal()
	if err != nil {
		e.cfg.Log.Error(err, "encoding an N4 response")
		e.cache.forget(key)
		return
	}
	e.cache.done(key, b)
	e.send(to, b)
}

// handle decodes one datagram and answers it. Requests are answered once: a retransmission
// (same peer, type and sequence number, TS 29.244 §6.4) gets the cached response, and one that
// arrives while the first is in work is dropped (its answer is on the way).
func (e *Endpoint) handle(ctx context.Context, b []byte, from netip.AddrPort) {
	h, err := message.ParseHeader(b)
	if err != nil {
		e.cfg.Log.V(1).Info("N4: dropped a datagram without a PFCP header", "from", from, "error", err)
		return
	}
	if v := h.Flags >> 5; v != 1 {
		e.reply(fmt.Sprintf("%s/%d/v", from, h.SequenceNumber), from, message.NewVersionNotSupportedResponse(h.SequenceNumber))
		return
	}
	if isResponse(h.Type) {
		e.answered(h)
		return
	}
	key := requestKey(from, h)
	if resp, fresh := e.cache.begin(key); !fresh {
		if resp != nil {
			e.send(from, resp)
		}
		return
	}
	// The length field counts what follows the first 4 octets; PFCP over UDP carries one
	// message per datagram here (no piggybacking: MP is refused).
	var ies []*ie.IE
	var perr error
	switch {
	case int(h.Length)+4 != len(b):
		perr = fmt.Errorf("message length %d, datagram %d", int(h.Length)+4, len(b))
	case h.Flags&0x02 != 0:
		perr = fmt.Errorf("piggybacked messages are not supported")
	default:
		if perr = checkFraming(h.Payload, 0); perr == nil {
			ies, perr = ie.ParseMultiIEs(h.Payload)
		}
	}
	switch h.Type {
	case message.MsgTypeHeartbeatRequest:
		e.heartbeatRequest(key, from, h, ies, perr)
	case message.MsgTypeAssociationSetupRequest, message.MsgTypeAssociationUpdateRequest, message.MsgTypeAssociationReleaseRequest:
		e.associationRequest(ctx, key, from, h, ies, perr)
	case message.MsgTypeSessionEstablishmentRequest, message.MsgTypeSessionModificationRequest, message.MsgTypeSessionDeletionRequest:
		e.sessionRequest(ctx, key, from, h, ies, perr)
	case message.MsgTypeSessionSetDeletionRequest:
		e.sessionSetDeletion(ctx, key, from, h, ies, perr)
	case message.MsgTypePFDManagementRequest:
		e.pfdManagement(ctx, key, from, h, ies, perr)
	default:
		// Node reports from a CP: not offered. Requests of unknown types are ignored (TS 29.244
		// §7.6.2 "Unknown message").
		e.cache.forget(key)
		e.cfg.Log.V(1).Info("N4: ignored a message of an unsupported type", "from", from, "type", h.Type)
	}
}

// checkFraming walks a message's IEs, grouped ones included, and refuses one whose length runs
// past what holds it (go-pfcp accepts an IE header without its value at the end of a buffer).
func checkFraming(b []byte, depth int) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return refuse(CauseInvalidLength, 0, "%d octets after the last IE", len(b))
		}
		t, n := binary.BigEndian.Uint16(b[0:2]), int(binary.BigEndian.Uint16(b[2:4]))
		if 4+n > len(b) {
			return refuse(CauseInvalidLength, t, "%s: length %d, %d octets left", ieName(t), n, len(b)-4)
		}
		if g := (&ie.IE{Type: t}); g.IsGrouped() && depth < 8 && t&0x8000 == 0 {
			if err := checkFraming(b[4:4+n], depth+1); err != nil {
				return err
			}
		}
		b = b[4+n:]
	}
	return nil
}

func isResponse(t uint8) bool {
	switch t {
	case message.MsgTypeHeartbeatResponse, message.MsgTypeAssociationSetupResponse, message.MsgTypeAssociationUpdateResponse,
		message.MsgTypeAssociationReleaseResponse, message.MsgTypeNodeReportResponse, message.MsgTypeSessionReportResponse,
		message.MsgTypeVersionNotSupportedResponse, message.MsgTypeSessionEstablishmentResponse,
		message.MsgTypeSessionModificationResponse, message.MsgTypeSessionDeletionResponse, message.MsgTypePFDManagementResponse,
		message.MsgTypeSessionSetDeletionResponse:
		return true
	}
	return false
}

// messageIEs indexes a message's IEs by type; a type that may appear once and appears twice is
// refused.
func messageIEs(ies []*ie.IE, repeatable ...uint16) (children, error) {
	return childrenOf(&ie.IE{Type: 0, ChildIEs: ies}, repeatable...)
}

func (e *Endpoint) heartbeatRequest(key string, from netip.AddrPort, h *message.Header, ies []*ie.IE, perr error) {
	// A Heartbeat Response has no Cause: a malformed request gets no answer (the peer retries).
	var ts time.Time
	if perr == nil {
		for _, x := range ies {
			if x.Type == ie.RecoveryTimeStamp {
				ts, perr = x.RecoveryTimeStamp()
			}
		}
		if ts.IsZero() && perr == nil {
			perr = errors.New("no Recovery Time Stamp")
		}
	}
	if perr != nil {
		e.cache.forget(key)
		e.cfg.Log.V(1).Info("N4: dropped a malformed Heartbeat Request", "from", from, "error", perr)
		return
	}
	e.reply(key, from, message.NewHeartbeatResponse(h.SequenceNumber, ie.NewRecoveryTimeStamp(e.recovery)))
	e.peerAlive(from, ts)
}

// peerAlive notes a heartbeat exchange with the SMF at addr; a new Recovery Time Stamp means
// the SMF restarted and lost its sessions, so the UPF releases them (TS 29.244 §19A), unless
// heartbeats' stamps are not to be trusted (RestartOnAssociationOnly).
func (e *Endpoint) peerAlive(addr netip.AddrPort, ts time.Time) {
	e.mu.Lock()
	var restarted *Association
	for _, a := range e.assocs {
		if a.Addr == addr {
			a.lastAnswer, a.lostSince = time.Now(), time.Time{}
			if !e.cfg.RestartOnAssociationOnly && !ts.IsZero() && !a.RecoveryTime.IsZero() && !ts.Equal(a.RecoveryTime) {
				restarted = a
				a.RecoveryTime = ts
				e.dirty = true
			}
		}
	}
	e.mu.Unlock()
	if restarted != nil {
		e.cfg.Event(true, "SMFRestarted", fmt.Sprintf("SMF %s restarted (new Recovery Time Stamp): its sessions are released", restarted.NodeID))
		e.releaseSessionsOf(context.Background(), restarted.NodeID)
		if e.configuredSMF(addr) {
			// An SMF of AssociateWith waits for the UPF to set the association up again.
			e.mu.Lock()
			delete(e.assocs, restarted.NodeID)
			e.dirty = true
			e.mu.Unlock()
		}
	}
}

func nodeResponse(t uint8, seq uint32, ies ...*ie.IE) marshaler {
	switch t {
	case message.MsgTypeAssociationSetupRequest:
		return message.NewAssociationSetupResponse(seq, ies...)
	case message.MsgTypeAssociationUpdateRequest:
		return message.NewAssociationUpdateResponse(seq, ies...)
	default:
		return message.NewAssociationReleaseResponse(seq, ies[0], ies[1], ies[2:]...)
	}
}

func (e *Endpoint) associationRequest(ctx context.Context, key string, from netip.AddrPort, h *message.Header, ies []*ie.IE, perr error) {
	nodeID := ie.NewNodeIDHeuristic(e.cfg.NodeID)
	fail := func(r *Refusal) {
		e.cfg.Log.V(1).Info("N4: refused an association request", "from", from, "type", h.Type, "cause", r.Cause, "why", r.Msg)
		out := append([]*ie.IE{nodeID, ie.NewCause(r.Cause)}, r.ies()...)
		if h.Type == message.MsgTypeAssociationSetupRequest {
			out = append(out, ie.NewRecoveryTimeStamp(e.recovery))
		}
		e.reply(key, from, nodeResponse(h.Type, h.SequenceNumber, out...))
	}
	if perr != nil {
		fail(refusalOf(perr))
		return
	}
	c, err := messageIEs(ies, ie.UserPlaneIPResourceInformation, ie.AlternativeSMFIPAddress, ie.SMFSetID)
	if err != nil {
		fail(err.(*Refusal))
		return
	}
	x, err := c.need(ie.NodeID)
	if err != nil {
		fail(err.(*Refusal))
		return
	}
	smf, err := x.NodeID()
	if err != nil || smf == "" {
		fail(refuse(CauseMandatoryIEIncorrect, ie.NodeID, "Node ID: %v", err))
		return
	}
	switch h.Type {
	case message.MsgTypeAssociationSetupRequest:
		if !e.allowed(from) {
			fail(refuse(CauseRejected, 0, "SMF %s at %s is not in spec.n4.allowedSMFs", smf, from))
			e.cfg.Event(true, "SMFRefused", fmt.Sprintf("Association Setup from SMF %s at %s refused: not in spec.n4.allowedSMFs", smf, from))
			return
		}
		x, err := c.need(ie.RecoveryTimeStamp)
		if err != nil {
			fail(err.(*Refusal))
			return
		}
		ts, err := x.RecoveryTimeStamp()
		if err != nil {
			fail(refuse(CauseMandatoryIEIncorrect, ie.RecoveryTimeStamp, "Recovery Time Stamp: %v", err))
			return
		}
		e.recordAssociation(ctx, smf, from, ts)
		e.reply(key, from, message.NewAssociationSetupResponse(h.SequenceNumber,
			nodeID, ie.NewCause(CauseAccepted), ie.NewRecoveryTimeStamp(e.recovery), ie.New(ie.UPFunctionFeatures, upFeatures)))
		e.cfg.Event(false, "SMFAssociated", fmt.Sprintf("SMF %s associated from %s", smf, from))
	case message.MsgTypeAssociationUpdateRequest:
		e.mu.Lock()
		a := e.assocs[smf]
		if a != nil {
			a.Addr = from
		}
		e.mu.Unlock()
		if a == nil {
			fail(refuse(CauseNoAssociation, 0, "no association with %s", smf))
			return
		}
		e.reply(key, from, message.NewAssociationUpdateResponse(h.SequenceNumber, nodeID, ie.NewCause(CauseAccepted)))
	case message.MsgTypeAssociationReleaseRequest:
		e.mu.Lock()
		a := e.assocs[smf]
		e.mu.Unlock()
		if a == nil {
			fail(refuse(CauseNoAssociation, 0, "no association with %s", smf))
			return
		}
		// TS 29.244 §6.2.8.2: the UPF deletes the association's sessions, then answers.
		e.releaseSessionsOf(ctx, smf)
		e.mu.Lock()
		delete(e.assocs, smf)
		e.dirty = true
		e.mu.Unlock()
		e.reply(key, from, message.NewAssociationReleaseResponse(h.SequenceNumber, nodeID, ie.NewCause(CauseAccepted)))
		e.cfg.Event(false, "SMFReleased", fmt.Sprintf("SMF %s released its association", smf))
	}
}

// recordAssociation records an association set up with SMF smf at addr, whose Recovery Time
// Stamp is ts. A new one of a restarted SMF (known under its Node ID with another time stamp):
// its old sessions are gone on its side, and go.
func (e *Endpoint) recordAssociation(ctx context.Context, smf string, addr netip.AddrPort, ts time.Time) {
	e.mu.Lock()
	old := e.assocs[smf]
	restarted := old != nil && !old.RecoveryTime.Equal(ts)
	now := time.Now()
	a := &Association{NodeID: smf, Addr: addr, Since: now, RecoveryTime: ts, lastAnswer: now}
	if old != nil && !restarted {
		a.Since = old.Since
	}
	e.assocs[smf], e.dirty = a, true
	e.mu.Unlock()
	if restarted {
		e.releaseSessionsOf(ctx, smf)
	}
}

// releaseSessionsOf deletes every session of one SMF.
func (e *Endpoint) releaseSessionsOf(ctx context.Context, smf string) {
	e.mu.Lock()
	var mine []*State
	for _, s := range e.sessions {
		if s.SMF == smf {
			mine = append(mine, s)
		}
	}
	e.mu.Unlock()
	for _, s := range mine {
		s.mu.Lock()
		if _, err := e.store.Remove(ctx, s); err != nil {
			e.cfg.Log.Error(err, "releasing an N4 session", "upSEID", s.UPSEID, "smf", smf)
		}
		e.forget(s)
		s.mu.Unlock()
	}
	if len(mine) > 0 {
		e.cfg.Event(false, "N4SessionsReleased", fmt.Sprintf("released %d sessions of SMF %s", len(mine), smf))
	}
}

// forget drops a session from the endpoint's maps.
func (e *Endpoint) forget(s *State) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sessions[s.UPSEID] == s {
		delete(e.sessions, s.UPSEID)
		delete(e.byCP, cpKey{s.SMF, s.CPSEID})
		for _, t := range s.TEIDs {
			delete(e.teids, t)
		}
		e.dirty = true
	}
}

// housekeeping sends heartbeats, releases lost SMFs' sessions after the grace period, expires
// the response cache and saves the node state when it changed.
func (e *Endpoint) housekeeping(ctx context.Context) {
	tick := time.Second
	if e.cfg.Heartbeat > 0 && e.cfg.Heartbeat < tick {
		tick = e.cfg.Heartbeat
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	lastBeat := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		e.cache.expire(now)
		go e.reportUsage(ctx) // it may wait on sessions in work: not in the heartbeats' way
		if e.cfg.Heartbeat > 0 && now.Sub(lastBeat) >= e.cfg.Heartbeat {
			lastBeat = now
			e.beat(ctx, now)
		}
		if len(e.cfg.AssociateWith) > 0 {
			go e.associate(ctx, now)
		}
		e.saveNode(ctx)
	}
}

func (e *Endpoint) beat(ctx context.Context, now time.Time) {
	e.mu.Lock()
	var release []string
	var targets []netip.AddrPort
	for _, a := range e.assocs {
		silent := now.Sub(a.lastAnswer)
		switch {
		case !a.lostSince.IsZero() && now.Sub(a.lostSince) >= e.cfg.Grace:
			release = append(release, a.NodeID)
		case a.lostSince.IsZero() && silent > time.Duration(e.cfg.HeartbeatMisses)*e.cfg.Heartbeat:
			a.lostSince = now
			e.cfg.Event(true, "SMFLost", fmt.Sprintf("SMF %s answered none of the last %d heartbeats: its sessions are released in %s unless it comes back", a.NodeID, e.cfg.HeartbeatMisses, e.cfg.Grace))
		}
		targets = append(targets, a.Addr)
	}
	e.mu.Unlock()
	for _, addr := range targets {
		e.request(addr, func(seq uint32) marshaler {
			return message.NewHeartbeatRequest(seq, ie.NewRecoveryTimeStamp(e.recovery), nil)
		}, func(h *message.Header) {
			var ts time.Time
			if ies, err := ie.ParseMultiIEs(h.Payload); err == nil {
				for _, x := range ies {
					if x.Type == ie.RecoveryTimeStamp {
						ts, _ = x.RecoveryTimeStamp()
					}
				}
			}
			e.peerAlive(addr, ts)
		})
	}
	for _, smf := range release {
		e.releaseSessionsOf(ctx, smf)
		e.mu.Lock()
		delete(e.assocs, smf)
		e.dirty = true
		e.mu.Unlock()
		e.cfg.Event(true, "SMFAssociationReleased", fmt.Sprintf("SMF %s stayed silent for the grace period (%s): association released", smf, e.cfg.Grace))
	}
}

// request sends a request of the UPF's and calls onAnswer with the response's header if one
// comes within the heartbeat interval, else the first of onSilence.
func (e *Endpoint) request(to netip.AddrPort, build func(seq uint32) marshaler, onAnswer func(*message.Header), onSilence ...func()) {
	e.requestTries(to, 1, build, onAnswer, onSilence...)
}

// requestTries is request with retransmissions: the same message (same sequence number, §6.4)
// is sent up to tries times in all, each waiting the heartbeat interval for the answer.
func (e *Endpoint) requestTries(to netip.AddrPort, tries int, build func(seq uint32) marshaler, onAnswer func(*message.Header), onSilence ...func()) {
	e.mu.Lock()
	e.seq = (e.seq + 1) & 0xffffff
	seq := e.seq
	ch := make(chan *message.Header, 1)
	e.pending[seq] = ch
	e.mu.Unlock()
	silent := func() {
		if len(onSilence) > 0 {
			onSilence[0]()
		}
	}
	b, err := build(seq).Marshal()
	if err != nil {
		e.mu.Lock()
		delete(e.pending, seq)
		e.mu.Unlock()
		silent()
		return
	}
	wait := e.cfg.Heartbeat
	if wait <= 0 {
		wait = 3 * time.Second
	}
	e.send(to, b)
	go func() {
		defer func() {
			e.mu.Lock()
			delete(e.pending, seq)
			e.mu.Unlock()
		}()
		for try := 1; ; try++ {
			select {
			case h := <-ch:
				onAnswer(h)
				return
			case <-time.After(wait):
			}
			if try == tries {
				silent()
				return
			}
			e.send(to, b)
		}
	}()
}

// answered hands a response to the request of the UPF's that waits for it.
func (e *Endpoint) answered(h *message.Header) {
	e.mu.Lock()
	ch := e.pending[h.SequenceNumber]
	e.mu.Unlock()
	if ch != nil {
		select {
		case ch <- h:
		default:
		}
	}
}

func (e *Endpoint) saveNode(ctx context.Context) {
	e.mu.Lock()
	if !e.dirty {
		e.mu.Unlock()
		return
	}
	e.dirty = false
	e.mu.Unlock()
	if err := e.store.SaveNode(ctx, e.nodeState()); err != nil {
		e.mu.Lock()
		e.dirty = true
		e.mu.Unlock()
		e.cfg.Log.V(1).Info("N4: saving the node state failed; retrying", "error", err)
	}
}

// nodeState is what the endpoint saves of itself.
func (e *Endpoint) nodeState() NodeState {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := NodeState{RecoveryTime: e.recovery, Sessions: len(e.sessions), PFDs: e.pfds}
	for _, a := range e.assocs {
		n.Associations = append(n.Associations, *a)
	}
	return n
}

// newSEID returns a random UP SEID no session has (0 is never one).
func (e *Endpoint) newSEIDLocked() uint64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		if v := binary.BigEndian.Uint64(b[:]); v != 0 && e.sessions[v] == nil {
			return v
		}
	}
}

// chooseTEIDLocked returns a TEID the UPF has not chosen for another session.
func (e *Endpoint) chooseTEIDLocked() (uint32, error) {
	for i := 0; i < 1<<31; i++ {
		t := e.nextTEID
		e.nextTEID++
		if e.nextTEID == 0 {
			e.nextTEID = firstTEID
		}
		if !e.teids[t] {
			e.teids[t] = true
			return t, nil
		}
	}
	return 0, refuse(CauseNoResources, 0, "no TEID left to choose")
}

// responseCache answers retransmitted requests (TS 29.244 §6.4) for a while after the first.
type responseCache struct {
	mu      sync.Mutex
	entries map[string]*cached
}

type cached struct {
	resp []byte // nil while the request is in work
	at   time.Time
}

// cacheFor is how long an answer is kept: longer than an SMF retransmits (N1 x T1, 3 x 3 s by
// default in most SMFs).
const cacheFor = 30 * time.Second

func (c *responseCache) begin(key string) (resp []byte, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x, ok := c.entries[key]; ok {
		return x.resp, false
	}
	c.entries[key] = &cached{at: time.Now()}
	return nil, true
}

// peek says whether key's request is known: in work (resp nil) or answered.
func (c *responseCache) peek(key string) (resp []byte, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	return x.resp, true
}

// requestKey names a request in the response cache: its sender, type and sequence number.
func requestKey(from netip.AddrPort, h *message.Header) string {
	return fmt.Sprintf("%s/%d/%d", from, h.Type, h.SequenceNumber)
}

func (c *responseCache) done(key string, resp []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = &cached{resp: resp, at: time.Now()}
}

func (c *responseCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

func (c *responseCache) expire(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, x := range c.entries {
		if x.resp != nil && now.Sub(x.at) > cacheFor {
			delete(c.entries, k)
		}
	}
}

// allowed says whether an SMF may associate from addr (Config.AllowedSMFs).
func (e *Endpoint) allowed(addr netip.AddrPort) bool {
	if len(e.cfg.AllowedSMFs) == 0 {
		return true
	}
	for _, p := range e.cfg.AllowedSMFs {
		if p.Contains(addr.Addr().Unmap()) {
			return true
		}
	}
	return false
}
