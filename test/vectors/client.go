package vectors

// A small P4Runtime controller for the runner: it becomes primary, pushes the pipeline, writes
// and reads entities, and collects what the stream delivers (digests, packet-ins). It is not the
// operator's client: it does exactly what running a vector needs and reports errors verbatim, so
// that a target's refusal reads as the target said it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// rpcTimeout bounds every unary call; a target that does not answer a write in this long is
// broken for the purpose of a test.
const rpcTimeout = 20 * time.Second

// streamEvent is one message the target pushed on the stream channel, stamped on arrival.
type streamEvent struct {
	at       time.Time
	digest   *p4v1.DigestList
	packetIn *p4v1.PacketIn
}

type client struct {
	conn       *grpc.ClientConn
	p4         p4v1.P4RuntimeClient
	stream     p4v1.P4Runtime_StreamChannelClient
	cancel     context.CancelFunc
	deviceID   uint64
	electionID *p4v1.Uint128

	sendMu sync.Mutex // gRPC streams take one sender at a time (digest acks, packet-outs)

	mu     sync.Mutex
	events []streamEvent
	notify chan struct{} // signalled (non-blocking) on every event
	err    error         // why the stream ended, once it has
}

// dialFunc opens the connection to the target; the Go test uses it to dial into a namespace.
type dialFunc func(ctx context.Context, addr string) (net.Conn, error)

// connect dials the target, opens the stream channel and waits until this client is primary.
func connect(ctx context.Context, addr string, dial dialFunc, deviceID uint64, election [2]uint64) (*client, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if dial != nil {
		opts = append(opts, grpc.WithContextDialer(dial))
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &client{
		conn:       conn,
		p4:         p4v1.NewP4RuntimeClient(conn),
		deviceID:   deviceID,
		electionID: &p4v1.Uint128{High: election[0], Low: election[1]},
		notify:     make(chan struct{}, 1),
	}
	sctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.stream, err = c.p4.StreamChannel(sctx)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("open stream channel to %s: %w", addr, err)
	}
	err = c.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
		Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: deviceID, ElectionId: c.electionID},
	}})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("send arbitration to %s: %w", addr, err)
	}
	arb := make(chan error, 1)
	go c.receive(arb)
	select {
	case err := <-arb:
		if err != nil {
			c.close()
			return nil, err
		}
	case <-ctx.Done():
		c.close()
		return nil, fmt.Errorf("arbitration with %s: %w", addr, ctx.Err())
	case <-time.After(rpcTimeout):
		c.close()
		return nil, fmt.Errorf("arbitration with %s: no answer in %v", addr, rpcTimeout)
	}
	return c, nil
}

// receive reads the stream until it ends. The first arbitration answer goes to arb.
func (c *client) receive(arb chan<- error) {
	first := true
	for {
		msg, err := c.stream.Recv()
		if err != nil {
			if first {
				first = false
				arb <- fmt.Errorf("stream channel: %w", err)
			}
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			c.signal()
			return
		}
		switch u := msg.Update.(type) {
		case *p4v1.StreamMessageResponse_Arbitration:
			if first {
				first = false
				if code := codes.Code(u.Arbitration.GetStatus().GetCode()); code != codes.OK {
					arb <- fmt.Errorf("not primary for device %d (status %v: %s); is another controller connected with a higher election ID?",
						c.deviceID, code, u.Arbitration.GetStatus().GetMessage())
				} else {
					arb <- nil
				}
			}
		case *p4v1.StreamMessageResponse_Digest:
			// Acknowledge at once: BMv2 sends nothing more for the digest until acked.
			c.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{
				DigestAck: &p4v1.DigestListAck{DigestId: u.Digest.DigestId, ListId: u.Digest.ListId},
			}})
			c.record(streamEvent{at: time.Now(), digest: u.Digest})
		case *p4v1.StreamMessageResponse_Packet:
			c.record(streamEvent{at: time.Now(), packetIn: u.Packet})
		case *p4v1.StreamMessageResponse_Error:
			c.mu.Lock()
			c.err = fmt.Errorf("stream error from target: %v", u.Error)
			c.mu.Unlock()
		}
	}
}

func (c *client) send(m *p4v1.StreamMessageRequest) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.stream.Send(m)
}

func (c *client) record(e streamEvent) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	c.signal()
}

func (c *client) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// counts returns the numbers of digest entries and packet-ins received so far.
func (c *client) counts() (digests, packetIns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.events {
		if e.digest != nil {
			digests += len(e.digest.Data)
		}
		if e.packetIn != nil {
			packetIns++
		}
	}
	return digests, packetIns
}

// takeEvents returns and forgets the events received so far.
func (c *client) takeEvents() ([]streamEvent, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := c.events
	c.events = nil
	return ev, c.err
}

func (c *client) close() {
	if c.cancel != nil {
		c.cancel()
	}
	c.conn.Close()
}

// setPipeline pushes the P4Info and device config (VERIFY_AND_COMMIT).
func (c *client) setPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := c.p4.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId:   c.deviceID,
		ElectionId: c.electionID,
		Action:     p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{
			P4Info:         info,
			P4DeviceConfig: deviceConfig,
			Cookie:         &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie},
		},
	})
	if err != nil {
		return fmt.Errorf("SetForwardingPipelineConfig: %w", err)
	}
	return nil
}

// write sends updates in one batch and returns the target's error with every per-update status
// that is not OK.
func (c *client) write(ctx context.Context, updates ...*p4v1.Update) error {
	if len(updates) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := c.p4.Write(ctx, &p4v1.WriteRequest{
		DeviceId:   c.deviceID,
		ElectionId: c.electionID,
		Updates:    updates,
		Atomicity:  p4v1.WriteRequest_CONTINUE_ON_ERROR,
	})
	return writeError(err)
}

// writeError expands the P4Runtime batch error details into one readable error.
func writeError(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := fmt.Sprintf("Write: %v: %s", st.Code(), st.Message())
	for i, d := range st.Details() {
		if e, ok := d.(*p4v1.Error); ok && codes.Code(e.CanonicalCode) != codes.OK {
			msg += fmt.Sprintf("\n  update %d: %v: %s", i, codes.Code(e.CanonicalCode), e.Message)
		}
	}
	return &writeErr{code: st.Code(), msg: msg}
}

type writeErr struct {
	code codes.Code
	msg  string
}

func (e *writeErr) Error() string { return e.msg }

// isAlreadyExists reports whether a write failed because the entity exists.
func isAlreadyExists(err error) bool {
	var we *writeErr
	return errors.As(err, &we) && (we.code == codes.AlreadyExists || strings.Contains(we.msg, codes.AlreadyExists.String()))
}

// read returns every entity matching the filters.
func (c *client) read(ctx context.Context, filters ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	rc, err := c.p4.Read(ctx, &p4v1.ReadRequest{DeviceId: c.deviceID, Entities: filters})
	if err != nil {
		return nil, fmt.Errorf("Read: %w", err)
	}
	var out []*p4v1.Entity
	for {
		resp, err := rc.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("Read: %w", err)
		}
		out = append(out, resp.Entities...)
	}
}

func update(t p4v1.Update_Type, e *p4v1.Entity) *p4v1.Update {
	return &p4v1.Update{Type: t, Entity: e}
}

// packetOut sends a frame to leave on egressPort, or with toIngress into the pipeline, with the
// packet_out controller header's egress_port and to_ingress as the P4Info names them. A
// P4Info without to_ingress cannot send a frame into the pipeline.
func (c *client) packetOut(info *p4configv1.P4Info, egressPort uint32, toIngress bool, frame []byte) error {
	for _, m := range info.ControllerPacketMetadata {
		if m.Preamble.Name != "packet_out" && m.Preamble.Alias != "packet_out" {
			continue
		}
		var md []*p4v1.PacketMetadata
		sawToIngress := false
		for _, f := range m.Metadata {
			var v uint64
			switch f.Name {
			case "egress_port":
				v = uint64(egressPort)
			case "to_ingress":
				sawToIngress = true
				if toIngress {
					v = 1
				}
			}
			md = append(md, &p4v1.PacketMetadata{MetadataId: f.Id, Value: bytestring(v, int(f.Bitwidth))})
		}
		if toIngress && !sawToIngress {
			return fmt.Errorf("the P4Info's packet_out has no to_ingress")
		}
		return c.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{
			Packet: &p4v1.PacketOut{Payload: frame, Metadata: md},
		}})
	}
	return fmt.Errorf("the P4Info has no packet_out controller header")
}
