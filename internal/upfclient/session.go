package upfclient

// One session is one gRPC connection and its StreamChannel. Its way:
//
//	Run ─> runSession: dial ─> StreamChannel ─> MasterArbitrationUpdate(ElectionID())
//	  Recv loop (the only reader):
//	    arbitration notice ─> primary / backup / lost; Generation++ on becoming primary;
//	                          "no primary" ─> re-ask ElectionID(), re-arbitrate if it changed
//	    digest list        ─> digestQ (bounded) ─> dispatchDigests ─> handler ─> DigestListAck
//	    packet-in          ─> packetIns (bounded)
//	    stream error       ─> log, metric
//	  probe: Capabilities every ProbeInterval; no answer within DialTimeout ─> session ends
//	  any Recv error, or no arbitration answer within DialTimeout ─> session ends ─> Run backs
//	  off and starts a new session with a new connection.
//
// Sends (arbitration, acks) are serialized by sendMu; gRPC allows one sender and one
// receiver at a time on a stream.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

type session struct {
	d      *Device
	client p4v1.P4RuntimeClient
	stream p4v1.P4Runtime_StreamChannelClient
	sendMu sync.Mutex

	eid      atomic.Pointer[p4v1.Uint128] // the election ID last sent
	answered atomic.Bool                  // the device answered an arbitration
	primary  atomic.Bool
}

func (s *session) send(m *p4v1.StreamMessageRequest) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.stream.Send(m)
}

func (s *session) arbitrate(eid *p4v1.Uint128) error {
	s.eid.Store(eid)
	u := &p4v1.MasterArbitrationUpdate{DeviceId: s.d.cfg.DeviceID, ElectionId: eid}
	if s.d.cfg.Role != "" {
		u.Role = &p4v1.Role{Name: s.d.cfg.Role}
	}
	if err := s.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: u}}); err != nil {
		return fmt.Errorf("sending arbitration: %w", err)
	}
	return nil
}

func (s *session) electionID() *p4v1.Uint128 { return s.eid.Load() }

// runSession runs one connection until it fails or ctx ends; it reports how long the device
// had answered the arbitration (0 if it never did).
func (d *Device) runSession(ctx context.Context) (time.Duration, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()

	conn, err := grpc.NewClient(d.cfg.Address, d.dialOptions()...)
	if err != nil {
		return 0, fmt.Errorf("dial %s: %w", d.cfg.Address, err)
	}
	defer conn.Close()

	// Bound connecting plus the arbitration answer; a device that never answers is as down
	// as one that refuses the connection.
	answered := make(chan struct{})
	var timedOut atomic.Bool
	go func() {
		select {
		case <-answered:
		case <-sctx.Done():
		case <-d.clock.After(d.cfg.DialTimeout):
			timedOut.Store(true)
			cancel()
		}
	}()

	client := p4v1.NewP4RuntimeClient(conn)
	stream, err := client.StreamChannel(sctx)
	if err != nil {
		if timedOut.Load() {
			return 0, fmt.Errorf("no connection within %s: %w", d.cfg.DialTimeout, err)
		}
		return 0, fmt.Errorf("opening StreamChannel: %w", err)
	}
	s := &session{d: d, client: client, stream: stream}
	d.mu.Lock()
	d.sess = s
	d.mu.Unlock()
	defer func() {
		s.primary.Store(false)
		d.mu.Lock()
		if d.sess == s {
			d.sess = nil
		}
		d.mu.Unlock()
	}()
	if err := s.arbitrate(d.electionID()); err != nil {
		return 0, err
	}

	var probeErr atomic.Pointer[error]
	var connectedAt time.Time
	for {
		msg, err := stream.Recv()
		if err != nil {
			var up time.Duration
			if s.answered.Load() {
				up = d.clock.Since(connectedAt)
			}
			if timedOut.Load() {
				return up, fmt.Errorf("no arbitration answer within %s", d.cfg.DialTimeout)
			}
			if perr := probeErr.Load(); perr != nil {
				return up, fmt.Errorf("the device stopped answering (liveness probe): %w", *perr)
			}
			return up, fmt.Errorf("stream: %w", err)
		}
		switch u := msg.Update.(type) {
		case *p4v1.StreamMessageResponse_Arbitration:
			if !s.answered.Load() {
				connectedAt = d.clock.Now()
				s.answered.Store(true)
				close(answered)
				if d.cfg.ProbeInterval > 0 {
					go d.probe(sctx, cancel, client, &probeErr)
				}
			}
			d.onArbitration(s, u.Arbitration)
		case *p4v1.StreamMessageResponse_Digest:
			d.onDigest(s, u.Digest)
		case *p4v1.StreamMessageResponse_Packet:
			d.onPacketIn(u.Packet)
		case *p4v1.StreamMessageResponse_Error:
			d.m.streamError(d.cfg.Name)
			e := u.Error
			d.log.Info("P4Runtime stream error from device", "code", codes.Code(e.GetCanonicalCode()).String(), "message", e.GetMessage())
		default:
			d.log.V(1).Info("ignoring stream message", "type", fmt.Sprintf("%T", u))
		}
	}
}

// probe calls Capabilities every ProbeInterval and ends the session (cancel) when the device
// does not answer in time. Any answer, even an error status, shows the device is alive.
func (d *Device) probe(ctx context.Context, cancel context.CancelFunc, client p4v1.P4RuntimeClient, failed *atomic.Pointer[error]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.clock.After(d.cfg.ProbeInterval):
		}
		pctx, pcancel := context.WithTimeout(ctx, d.cfg.DialTimeout)
		_, err := client.Capabilities(pctx, &p4v1.CapabilitiesRequest{})
		pcancel()
		if ctx.Err() != nil {
			return
		}
		if c := status.Code(err); c == codes.DeadlineExceeded || c == codes.Unavailable {
			failed.Store(&err)
			cancel()
			return
		}
	}
}

// onArbitration applies an arbitration notice (spec 5.4): OK means this stream is primary.
func (d *Device) onArbitration(s *session, a *p4v1.MasterArbitrationUpdate) {
	code := codes.Code(a.GetStatus().GetCode())
	primary := code == codes.OK
	was := s.primary.Swap(primary)
	var gen uint64
	d.update(func(st *State) {
		st.Connected, st.Primary, st.Err, st.ElectionID, st.Highest = true, primary, nil, s.electionID(), a.GetElectionId()
		if primary && !was {
			st.Generation++
		}
		gen = st.Generation
	})
	mine := s.electionID()
	switch {
	case primary && !was:
		d.log.Info("became primary", "generation", gen, "electionIDHigh", mine.GetHigh(), "electionIDLow", mine.GetLow())
	case !primary && was:
		d.log.Info("lost primary", "status", code.String(), "message", a.GetStatus().GetMessage())
	case !primary:
		d.log.Info("connected as backup", "status", code.String(),
			"electionIDHigh", mine.GetHigh(), "electionIDLow", mine.GetLow(),
			"highestHigh", a.GetElectionId().GetHigh(), "highestLow", a.GetElectionId().GetLow())
	}
	if code == codes.NotFound {
		// The role has no primary: if our leadership moved on, a fresh ID at least as high
		// as the highest the device has seen takes it. A lower one would only earn another
		// notice, so it is not sent (no ping-pong with a caller whose IDs keep changing).
		eid, highest := d.electionID(), a.GetElectionId()
		if !sameUint128(eid, mine) && (highest == nil || !lessUint128(eid, highest)) {
			if err := s.arbitrate(eid); err != nil {
				d.log.Info("re-arbitration failed", "err", err.Error())
			}
		}
	}
}

func (d *Device) dialOptions() []grpc.DialOption {
	creds := insecure.NewCredentials()
	if d.cfg.TLS != nil {
		creds = credentials.NewTLS(d.cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(d.cfg.MaxMessageSize),
			grpc.MaxCallSendMsgSize(d.cfg.MaxMessageSize),
		),
		// This package reconnects with its own backoff and a new connection per session;
		// gRPC's own retries only need to cover the one connection attempt.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: d.cfg.DialTimeout,
		}),
	}
	if d.cfg.Keepalive > 0 {
		opts = append(opts, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: d.cfg.Keepalive, Timeout: defaultKeepaliveTimeout, PermitWithoutStream: true,
		}))
	}
	return append(opts, d.cfg.DialOptions...)
}
