// Package smf is Junction's SMF emulator: the N4 side of a 5G core's SMF, enough to associate
// with a UPF and establish, modify and release MA PDU sessions whose MARs use every steering
// mode of TS 29.244 Rel-17. Its messages are built with go-pfcp, a codec independent of the
// UPF's own decoding. The tests and cmd/smf-emulator use it; it is not a 5G core (no N11, no
// NAS: what the UE needs of the session reaches the UE agent through the ATSSSSession, docs/n4.md).
package smf

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// Client is one SMF's N4 association with one UPF.
type Client struct {
	NodeID   string
	Recovery time.Time
	// T1 and N1 are the retransmission timer and count (TS 29.244 §6.4).
	T1 time.Duration
	N1 int

	conn *net.UDPConn
	upf  netip.AddrPort
	ip   net.IP // the SMF's IPv4, for its F-SEIDs

	mu      sync.Mutex
	seq     uint32
	seid    uint64
	pending map[uint32]chan []byte
	// Heartbeats counts the UPF's Heartbeat Requests answered; Quiet stops answering them.
	heartbeats   int
	quiet        bool
	received     [][]byte
	reports      []*Response       // Session Report Requests, answered
	reportAnswer []*ie.IE          // what the answers carry (AnswerReports); nil: Cause Request accepted
	nodeReports  []*Response       // Node Report Requests, answered
	upSEIDs      map[uint64]uint64 // CP SEID → the UPF's SEID, for the responses to its requests
	// The UPF's own association requests (upf_requests.go): setups answered with setupCause,
	// updates answered, and releaseAsks: release when an update asks for it (SARR).
	setups, updates []*Response
	setupCause      uint8
	releaseAsks     bool
}

// Received returns every datagram the UPF sent the SMF, as it came.
func (c *Client) Received() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.received...)
}

// Dial opens the SMF's socket on local (port 0: any) toward the UPF's N4 address.
func Dial(local, upf netip.AddrPort, nodeID string) (*Client, error) {
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, err
	}
	c := &Client{
		NodeID: nodeID, Recovery: time.Now().Truncate(time.Second), T1: 500 * time.Millisecond, N1: 3, setupCause: ie.CauseRequestAccepted,
		conn: conn, upf: upf, ip: local.Addr().AsSlice(), pending: map[uint32]chan []byte{}, upSEIDs: map[uint64]uint64{},
	}
	go c.read()
	return c, nil
}

// Close closes the socket.
func (c *Client) Close() error { return c.conn.Close() }

// Addr is the SMF's local address.
func (c *Client) Addr() netip.AddrPort { return c.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// SetQuiet makes the SMF stop (or resume) answering the UPF's heartbeats, as a dead SMF would.
func (c *Client) SetQuiet(q bool) {
	c.mu.Lock()
	c.quiet = q
	c.mu.Unlock()
}

// HeartbeatsAnswered is how many Heartbeat Requests of the UPF the SMF answered.
func (c *Client) HeartbeatsAnswered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heartbeats
}

func (c *Client) read() {
	buf := make([]byte, 65535)
	for {
		n, from, err := c.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		b := append([]byte(nil), buf[:n]...)
		c.mu.Lock()
		c.received = append(c.received, b)
		c.mu.Unlock()
		h, err := message.ParseHeader(b)
		if err != nil {
			continue
		}
		if h.Type == message.MsgTypeHeartbeatRequest {
			c.mu.Lock()
			quiet, recovery := c.quiet, c.Recovery
			if !quiet {
				c.heartbeats++
			}
			c.mu.Unlock()
			if !quiet {
				if r, err := message.NewHeartbeatResponse(h.SequenceNumber, ie.NewRecoveryTimeStamp(recovery)).Marshal(); err == nil {
					_, _ = c.conn.WriteToUDPAddrPort(r, from)
				}
			}
			continue
		}
		if h.Type == message.MsgTypeSessionReportRequest {
			if r := c.sessionReport(h, b); r != nil {
				_, _ = c.conn.WriteToUDPAddrPort(r, from)
			}
			continue
		}
		if h.Type == message.MsgTypeNodeReportRequest {
			if r := c.nodeReport(h, b); r != nil {
				_, _ = c.conn.WriteToUDPAddrPort(r, from)
			}
			continue
		}
		if h.Type == message.MsgTypeAssociationSetupRequest || h.Type == message.MsgTypeAssociationUpdateRequest {
			if r := c.upfAssociationRequest(h, b); r != nil {
				_, _ = c.conn.WriteToUDPAddrPort(r, from)
			}
			continue
		}
		if h.Type == message.MsgTypeAssociationReleaseRequest {
			if r, err := message.NewAssociationReleaseResponse(h.SequenceNumber, ie.NewNodeIDHeuristic(c.NodeID), ie.NewCause(ie.CauseRequestAccepted)).Marshal(); err == nil {
				_, _ = c.conn.WriteToUDPAddrPort(r, from)
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[h.SequenceNumber]
		c.mu.Unlock()
		if ch != nil {
			select {
			case ch <- b:
			default:
			}
		}
	}
}

// Response is a decoded response.
type Response struct {
	Header *message.Header
	IEs    []*ie.IE
	Raw    []byte
}

// Cause is the response's Cause (0 when it has none).
func (r *Response) Cause() uint8 {
	for _, x := range r.IEs {
		if x.Type == ie.Cause {
			v, _ := x.Cause()
			return v
		}
	}
	return 0
}

// Find returns the response's first IE of type t.
func (r *Response) Find(t uint16) *ie.IE {
	for _, x := range r.IEs {
		if x.Type == t {
			return x
		}
	}
	return nil
}

// ErrTimeout: no response after N1 retransmissions.
var ErrTimeout = errors.New("no response from the UPF")

// Send sends a request built for a fresh sequence number and waits for its response (SendRaw).
func (c *Client) Send(ctx context.Context, build func(seq uint32) ([]byte, error)) (*Response, error) {
	seq := c.NextSeq()
	b, err := build(seq)
	if err != nil {
		return nil, err
	}
	return c.SendRaw(ctx, seq, b)
}

// SendRaw sends bytes as they are (malformed ones included) with sequence number seq, which
// the caller wrote into them, and waits for the response with that sequence number,
// retransmitting the same bytes every T1 up to N1 times.
func (c *Client) SendRaw(ctx context.Context, seq uint32, b []byte) (*Response, error) {
	ch := make(chan []byte, 1)
	c.mu.Lock()
	c.pending[seq] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, seq)
		c.mu.Unlock()
	}()
	for try := 0; try <= c.N1; try++ {
		if _, err := c.conn.WriteToUDPAddrPort(b, c.upf); err != nil {
			return nil, err
		}
		select {
		case r := <-ch:
			h, err := message.ParseHeader(r)
			if err != nil {
				return nil, err
			}
			ies, err := ie.ParseMultiIEs(h.Payload)
			if err != nil {
				return nil, fmt.Errorf("decoding the response: %w", err)
			}
			return &Response{Header: h, IEs: ies, Raw: r}, nil
		case <-time.After(c.T1):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, ErrTimeout
}

// NextSeq reserves a sequence number for SendRaw.
func (c *Client) NextSeq() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq = (c.seq + 1) & 0xffffff
	return c.seq
}

// Associate sends a PFCP Association Setup Request.
func (c *Client) Associate(ctx context.Context) (*Response, error) {
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewAssociationSetupRequest(seq, ie.NewNodeIDHeuristic(c.NodeID), ie.NewRecoveryTimeStamp(c.Recovery)).Marshal()
	})
}

// Update sends a PFCP Association Update Request.
func (c *Client) Update(ctx context.Context) (*Response, error) {
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewAssociationUpdateRequest(seq, ie.NewNodeIDHeuristic(c.NodeID)).Marshal()
	})
}

// Release sends a PFCP Association Release Request.
func (c *Client) Release(ctx context.Context) (*Response, error) {
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewAssociationReleaseRequest(seq, ie.NewNodeIDHeuristic(c.NodeID)).Marshal()
	})
}

// Heartbeat sends a Heartbeat Request.
func (c *Client) Heartbeat(ctx context.Context) (*Response, error) {
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewHeartbeatRequest(seq, ie.NewRecoveryTimeStamp(c.Recovery), nil).Marshal()
	})
}

// NewCPSEID returns a fresh CP SEID of this SMF.
func (c *Client) NewCPSEID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seid++
	return c.seid
}

// Session sends a session request (Establishment, Modification, Deletion) to the UPF's SEID.
func (c *Client) Session(ctx context.Context, msgType uint8, upSEID uint64, ies ...*ie.IE) (*Response, error) {
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		switch msgType {
		case message.MsgTypeSessionEstablishmentRequest:
			return message.NewSessionEstablishmentRequest(0, 0, 0, seq, 0, ies...).Marshal()
		case message.MsgTypeSessionModificationRequest:
			return message.NewSessionModificationRequest(0, 0, upSEID, seq, 0, ies...).Marshal()
		case message.MsgTypeSessionDeletionRequest:
			return message.NewSessionDeletionRequest(0, 0, upSEID, seq, 0, ies...).Marshal()
		}
		return nil, fmt.Errorf("message type %d is not a session request", msgType)
	})
}

// FSEID is the SMF's F-SEID IE for a CP SEID.
func (c *Client) FSEID(cpSEID uint64) *ie.IE { return ie.NewFSEID(cpSEID, c.ip, nil) }

// FQCSID is the SMF's FQ-CSID IE with these Connection Set IDs, its own address the node.
func (c *Client) FQCSID(csids ...uint16) *ie.IE { return ie.NewFQCSID(c.ip.String(), csids...) }

// ProvidePFDs sends a PFD Management Request (TS 29.244 §7.4.3.1): each application with its
// flow descriptions, one PFD context each (none: the application's PFDs are removed); apps nil
// names no application, which removes every PFD.
func (c *Client) ProvidePFDs(ctx context.Context, apps map[string][]string) (*Response, error) {
	ies := []*ie.IE{ie.NewNodeIDHeuristic(c.NodeID)}
	for _, app := range slices.Sorted(maps.Keys(apps)) {
		pfds := []*ie.IE{ie.NewApplicationID(app)}
		for _, fd := range apps[app] {
			pfds = append(pfds, ie.NewPFDContext(ie.NewPFDContents(fd, "", "", "", "", nil, nil, nil)))
		}
		ies = append(ies, ie.NewApplicationIDsPFDs(pfds...))
	}
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewPFDManagementRequest(seq, ies...).Marshal()
	})
}

// DeleteSets sends a Session Set Deletion Request naming the FQ-CSIDs given, as an SMF does
// when the part of it that held those sets failed (TS 29.244 §7.4.6).
func (c *Client) DeleteSets(ctx context.Context, fqcsids ...*ie.IE) (*Response, error) {
	return c.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewSessionSetDeletionRequest(seq, ie.NewNodeIDHeuristic(c.NodeID), nil, fqcsids...).Marshal()
	})
}

// NodeReports returns the Node Report Requests the UPF sent (answered with Request accepted),
// in order; a retransmission (a sequence number already kept) is answered and not kept again.
func (c *Client) NodeReports() []*Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Response(nil), c.nodeReports...)
}

// nodeReport answers a Node Report Request and keeps it.
func (c *Client) nodeReport(h *message.Header, b []byte) []byte {
	cause := uint8(ie.CauseRequestAccepted)
	if ies, err := ie.ParseMultiIEs(h.Payload); err != nil {
		cause = ie.CauseMandatoryIEIncorrect
	} else {
		c.mu.Lock()
		if !slices.ContainsFunc(c.nodeReports, func(r *Response) bool { return r.Header.SequenceNumber == h.SequenceNumber }) {
			c.nodeReports = append(c.nodeReports, &Response{Header: h, IEs: ies, Raw: b})
		}
		c.mu.Unlock()
	}
	r, _ := message.NewNodeReportResponse(h.SequenceNumber, ie.NewNodeIDHeuristic(c.NodeID), ie.NewCause(cause), nil).Marshal()
	return r
}
