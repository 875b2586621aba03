package p4rt

// The StreamChannel: a message's way through this file.
//
//	controller -> Recv loop -> arbitration (arbiter.arbitrate; an error ends the stream)
//	                        -> PacketOut (primary only; packet_out metadata parsed by name:
//	                           egress_port, to_ingress) -> Target.PacketOut
//	                        -> DigestListAck (default role's primary) -> digestEngine.ack
//	data plane -> Events.PacketIn / Events.Digest -> controller.dataQ (bounded, drop and count)
//	server     -> arbitration notices, StreamErrors -> controller.ctrlQ (bounded, drop and count)
//	ctrlQ, dataQ -> sendLoop (the only goroutine calling stream.Send; ctrlQ first) -> controller

import (
	"context"
	"errors"
	"io"

	"github.com/junction-atsss/junction/internal/p4bytes"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// StreamChannel serves one controller's stream.
func (s *Server) StreamChannel(stream p4v1.P4Runtime_StreamChannelServer) error {
	c := s.arb.newController()
	ctx, cancel := context.WithCancel(stream.Context())
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		s.sendLoop(ctx, c, stream)
	}()
	defer func() {
		cancel()
		<-sent
	}()
	defer s.arb.remove(c) // runs first: the others learn of a lost primary right away

	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch u := req.Update.(type) {
		case *p4v1.StreamMessageRequest_Arbitration:
			if err := s.arb.arbitrate(c, u.Arbitration); err != nil {
				return rpcErr(err)
			}
		case *p4v1.StreamMessageRequest_Packet:
			s.packetOut(c, u.Packet)
		case *p4v1.StreamMessageRequest_DigestAck:
			s.digestAck(c, u.DigestAck)
		case *p4v1.StreamMessageRequest_Other:
			s.streamError(c, &p4v1.StreamError{
				CanonicalCode: int32(codes.Unimplemented),
				Message:       "stream message 'other' (" + u.Other.GetTypeUrl() + ") is not supported",
				Details:       &p4v1.StreamError_Other{Other: &p4v1.StreamOtherError{Other: u.Other}},
			})
		default:
			s.streamError(c, &p4v1.StreamError{
				CanonicalCode: int32(codes.InvalidArgument),
				Message:       "stream message has no update set",
				Details:       &p4v1.StreamError_Other{Other: &p4v1.StreamOtherError{}},
			})
		}
	}
}

// sendLoop is the only sender on the stream; control messages go first.
func (s *Server) sendLoop(ctx context.Context, c *controller, stream p4v1.P4Runtime_StreamChannelServer) {
	for {
		var m *p4v1.StreamMessageResponse
		select {
		case m = <-c.ctrlQ:
		default:
			select {
			case <-ctx.Done():
				return
			case m = <-c.ctrlQ:
			case m = <-c.dataQ:
			}
		}
		if err := stream.Send(m); err != nil {
			return // the Recv loop sees the broken stream and ends the RPC
		}
	}
}

// sendControl queues an arbitration notice or stream error without blocking.
func (s *Server) sendControl(c *controller, m *p4v1.StreamMessageResponse) {
	select {
	case c.ctrlQ <- m:
	default:
		s.stats.noticeDrops.Add(1)
	}
}

// sendData queues a packet-in or digest list without blocking; false when it was dropped.
func (s *Server) sendData(c *controller, m *p4v1.StreamMessageResponse) bool {
	select {
	case c.dataQ <- m:
		return true
	default:
		return false
	}
}

func (s *Server) streamError(c *controller, e *p4v1.StreamError) {
	s.stats.streamErrors.Add(1)
	s.sendControl(c, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: e}})
}

// packetOut sends a controller's frame on the port named by the packet_out header's
// egress_port field or, when its to_ingress field (optional in the P4Info; absent or 0: not)
// is 1, into the pipeline.
func (s *Server) packetOut(c *controller, po *p4v1.PacketOut) {
	fail := func(code codes.Code, format string, args ...any) {
		s.stats.packetOutErrors.Add(1)
		_, msg := codeOf(errf(code, format, args...))
		s.streamError(c, &p4v1.StreamError{
			CanonicalCode: int32(code),
			Message:       msg,
			// Echo the metadata, not the payload: enough to identify the packet.
			Details: &p4v1.StreamError_PacketOut{PacketOut: &p4v1.PacketOutError{
				PacketOut: &p4v1.PacketOut{Metadata: po.Metadata},
			}},
		})
	}
	if !s.arb.isPrimary(c) {
		fail(codes.PermissionDenied, "packet-out refused: this stream is not the primary")
		return
	}
	p := s.running.Load()
	if p == nil {
		fail(codes.FailedPrecondition, "packet-out refused: no forwarding pipeline is committed")
		return
	}
	hdr := p.schema.PacketOut
	if hdr == nil {
		fail(codes.FailedPrecondition, "packet-out refused: the P4Info has no packet_out controller header")
		return
	}
	portIdx, ok := hdr.ByName["egress_port"]
	if !ok {
		fail(codes.FailedPrecondition, "packet-out refused: the packet_out header has no egress_port field")
		return
	}
	toIngressIdx, hasToIngress := hdr.ByName["to_ingress"]
	var port []byte
	toIngress := false
	seen := make([]bool, len(hdr.Fields))
	for _, md := range po.Metadata {
		i, ok := hdr.Index[md.MetadataId]
		if !ok {
			fail(codes.InvalidArgument, "packet_out metadata id %d is not in the P4Info", md.MetadataId)
			return
		}
		f := hdr.Fields[i]
		if seen[i] {
			fail(codes.InvalidArgument, "packet_out metadata %q given twice", f.Name)
			return
		}
		seen[i] = true
		v, err := canonical(md.Value, f.Width, "packet_out metadata "+quote(f.Name))
		if err != nil {
			_, msg := codeOf(err)
			fail(codes.InvalidArgument, "%s", msg)
			return
		}
		if i == portIdx {
			port = v
		}
		if hasToIngress && i == toIngressIdx {
			toIngress = decodeUint(v) != 0
		}
	}
	if port == nil {
		fail(codes.InvalidArgument, "packet_out metadata egress_port is missing")
		return
	}
	if p4bytes.SignificantBits(port) > 32 {
		fail(codes.InvalidArgument, "packet_out egress_port 0x%x does not fit 32 bits", port)
		return
	}
	if err := s.target.PacketOut(uint32(decodeUint(port)), toIngress, po.Payload); err != nil {
		code, msg := codeOf(targetErr(err, codes.Internal, "packet-out"))
		fail(code, "%s", msg)
		return
	}
	s.stats.packetOuts.Add(1)
}

func (s *Server) digestAck(c *controller, ack *p4v1.DigestListAck) {
	fail := func(err error) {
		code, msg := codeOf(err)
		s.streamError(c, &p4v1.StreamError{
			CanonicalCode: int32(code),
			Message:       msg,
			Details:       &p4v1.StreamError_DigestListAck{DigestListAck: &p4v1.DigestListAckError{DigestListAck: ack}},
		})
	}
	if s.arb.defaultPrimary.Load() != c {
		fail(errf(codes.PermissionDenied, "digest ack refused: digest lists go to the default role's primary, which this stream is not"))
		return
	}
	if err := s.digests.ack(ack.DigestId, ack.ListId); err != nil {
		fail(err)
	}
}

// serverEvents is the Events the Server gives its Target. Neither method blocks: frames and
// digests are copied, queued to the primary or dropped and counted.
type serverEvents struct{ s *Server }

func (e serverEvents) Digest(digestID uint32, members [][]byte) {
	e.s.digests.add(digestID, members)
}

func (e serverEvents) PacketIn(ingressPort uint32, frame []byte) {
	s := e.s
	c := s.arb.defaultPrimary.Load()
	if c == nil {
		s.stats.packetInDrops.Add(1)
		return
	}
	pin := &p4v1.PacketIn{Payload: append([]byte(nil), frame...)}
	if p := s.running.Load(); p != nil && p.schema.PacketIn != nil {
		// One metadata per packet_in field (spec 16.1): the port by name, zero for padding.
		for _, f := range p.schema.PacketIn.Fields {
			v := []byte{0}
			if f.Name == "ingress_port" {
				v = p4bytes.Uint(uint64(ingressPort))
			}
			pin.Metadata = append(pin.Metadata, &p4v1.PacketMetadata{MetadataId: f.ID, Value: v})
		}
	}
	if s.sendData(c, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Packet{Packet: pin}}) {
		s.stats.packetIns.Add(1)
	} else {
		s.stats.packetInDrops.Add(1)
	}
}
