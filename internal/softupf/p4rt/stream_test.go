package p4rt

import (
	"bytes"
	"context"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

func report(addr uint32, kind byte) [][]byte {
	// Members as a data plane would give them: full-width, not canonical.
	return [][]byte{{byte(addr >> 24), byte(addr >> 16), byte(addr >> 8), byte(addr)}, {kind}}
}

// addrs returns the addr member of every message in a digest list.
func addrs(t *testing.T, dl *p4v1.DigestList) []uint64 {
	t.Helper()
	var out []uint64
	for _, d := range dl.Data {
		ms := d.GetStruct().GetMembers()
		if len(ms) != 2 {
			t.Fatalf("digest data %v is not a 2-member struct", d)
		}
		out = append(out, decodeUint(ms[0].GetBitstring()))
	}
	return out
}

func (st *stream) digest() *p4v1.DigestList {
	st.t.Helper()
	m := st.next()
	if m.GetDigest() == nil {
		st.t.Fatalf("expected a digest list, got %v", m)
	}
	return m.GetDigest()
}

func (st *stream) streamError() *p4v1.StreamError {
	st.t.Helper()
	m := st.next()
	if m.GetError() == nil {
		st.t.Fatalf("expected a stream error, got %v", m)
	}
	return m.GetError()
}

func ack(digestID uint32, listID uint64) *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: digestID, ListId: listID}}}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDigestsBatchAndWaitForAcks(t *testing.T) {
	h, p := ready(t, Options{})
	ev := h.target.events

	ev.Digest(dgReport, report(1, 1))
	if st := h.srv.Stats(); st.DigestDrops != 1 {
		t.Fatalf("a digest before its DigestEntry is dropped: %+v", st)
	}
	h.mustWrite(ins(digestEnt(dgReport, &p4v1.DigestEntry_Config{MaxTimeoutNs: int64(time.Second), MaxListSize: 3, AckTimeoutNs: int64(5 * time.Second)})))

	ev.Digest(dgReport, report(1, 1))
	ev.Digest(dgReport, report(2, 1))
	ev.Digest(dgReport, report(2, 1)) // same message twice in one list is sent once
	if st := h.srv.Stats(); st.DigestLists != 0 || st.DigestDuplicates != 1 {
		t.Fatalf("before max_timeout: %+v", st)
	}
	h.clock.Advance(time.Second)
	l1 := p.digest()
	if l1.DigestId != dgReport || !equalU64(addrs(t, l1), []uint64{1, 2}) || l1.Timestamp != h.clock.Now().UnixNano() {
		t.Fatalf("first list %v", l1)
	}
	if kind := l1.Data[0].GetStruct().Members[1].GetBitstring(); !bytes.Equal(kind, []byte{1}) {
		t.Fatalf("members are not canonical: %x", kind)
	}

	// While list 1 awaits its ack nothing more goes out, even a full list; a message already
	// sent and not acked is suppressed.
	ev.Digest(dgReport, report(2, 1))
	for a := uint32(3); a <= 5; a++ {
		ev.Digest(dgReport, report(a, 2))
	}
	if st := h.srv.Stats(); st.DigestLists != 1 || st.DigestDuplicates != 2 {
		t.Fatalf("while awaiting the ack: %+v", st)
	}
	p.send(ack(dgReport, l1.ListId))
	l2 := p.digest()
	if !equalU64(addrs(t, l2), []uint64{3, 4, 5}) || l2.ListId <= l1.ListId {
		t.Fatalf("second list %v", l2)
	}

	// List 2 is never acked: its ack timeout (5s) releases the next list.
	ev.Digest(dgReport, report(6, 1))
	h.clock.Advance(time.Second)
	if st := h.srv.Stats(); st.DigestLists != 2 {
		t.Fatalf("a list went out before list 2's ack timeout: %+v", st)
	}
	h.clock.Advance(4 * time.Second)
	if l3 := p.digest(); !equalU64(addrs(t, l3), []uint64{6}) {
		t.Fatalf("third list %v", l3)
	}

	// Bad acks are stream errors; a repeated ack of a released list is ignored.
	p.send(ack(dgReport, l1.ListId))
	p.send(ack(0x17000fff, 1))
	if e := p.streamError(); e.CanonicalCode != int32(codes.InvalidArgument) || e.GetDigestListAck().GetDigestListAck().GetDigestId() != 0x17000fff {
		t.Fatalf("ack of an unknown digest: %v", e)
	}
	p.send(ack(dgReport, 999))
	if e := p.streamError(); e.CanonicalCode != int32(codes.InvalidArgument) {
		t.Fatalf("ack of a list never sent: %v", e)
	}
	b := h.open()
	b.arbitrate(testDevice, nil, eid(0))
	b.arbitration()
	b.send(ack(dgReport, l1.ListId))
	if e := b.streamError(); e.CanonicalCode != int32(codes.PermissionDenied) {
		t.Fatalf("ack from a backup: %v", e)
	}

	// The config reads back; DELETE disables the digest.
	got := h.mustRead(digestEnt(0, nil))
	if len(got) != 1 || got[0].GetDigestEntry().GetConfig().GetMaxListSize() != 3 {
		t.Fatalf("digest config read %v", got)
	}
	h.mustWrite(del(digestEnt(dgReport, nil)))
	drops := h.srv.Stats().DigestDrops
	ev.Digest(dgReport, report(9, 9))
	if h.srv.Stats().DigestDrops != drops+1 {
		t.Fatal("a disabled digest still collects messages")
	}
}

func TestDigestWithoutTimeoutsSendsEachMessage(t *testing.T) {
	h, p := ready(t, Options{})
	ev := h.target.events
	h.mustWrite(ins(digestEnt(dgReport, &p4v1.DigestEntry_Config{MaxTimeoutNs: 0, MaxListSize: 1, AckTimeoutNs: 0})))
	ev.Digest(dgReport, report(7, 1))
	ev.Digest(dgReport, report(7, 1)) // no cache with ack_timeout_ns 0: sent again
	ev.Digest(dgReport, report(8, 1))
	for _, want := range []uint64{7, 7, 8} {
		if got := addrs(t, p.digest()); !equalU64(got, []uint64{want}) {
			t.Fatalf("list %v, want [%d]", got, want)
		}
	}
	// Without a primary, lists are dropped and counted, never queued forever.
	p.cancel()
	p.ended()
	for h.srv.arb.defaultPrimary.Load() != nil {
		time.Sleep(time.Millisecond)
	}
	drops := h.srv.Stats().DigestDrops
	ev.Digest(dgReport, report(10, 1))
	if h.srv.Stats().DigestDrops != drops+1 {
		t.Fatal("a digest with no primary was not dropped")
	}
}

func packetOut(payload string, md ...*p4v1.PacketMetadata) *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: []byte(payload), Metadata: md}}}
}

func meta(id uint32, v ...byte) *p4v1.PacketMetadata {
	return &p4v1.PacketMetadata{MetadataId: id, Value: v}
}

func TestPacketInGoesToThePrimaryWithItsPort(t *testing.T) {
	h, p := ready(t, Options{})
	b := h.open()
	b.arbitrate(testDevice, nil, eid(0))
	b.arbitration()

	frame := []byte("an ARP frame")
	h.target.events.PacketIn(0x1ff, frame)
	frame[0] = 'X' // the server copied it
	m := p.next().GetPacket()
	if string(m.GetPayload()) != "an ARP frame" || len(m.Metadata) != 2 ||
		m.Metadata[0].MetadataId != 1 || !bytes.Equal(m.Metadata[0].Value, []byte{1, 0xff}) ||
		m.Metadata[1].MetadataId != 2 || !bytes.Equal(m.Metadata[1].Value, []byte{0}) {
		t.Fatalf("packet-in %v", m)
	}
	if st := h.srv.Stats(); st.PacketIns != 1 {
		t.Fatalf("stats %+v", st)
	}
	b.quiet()
}

func TestPacketOutFromThePrimaryOnly(t *testing.T) {
	h, p := ready(t, Options{})
	p.send(packetOut("frame-1", meta(1, 0, 5), meta(2, 0)))
	p.send(packetOut("no-port", meta(2, 0)))
	if e := p.streamError(); e.CanonicalCode != int32(codes.InvalidArgument) || e.GetPacketOut() == nil {
		t.Fatalf("packet-out without egress_port: %v", e)
	}
	// The Recv loop is sequential: the first packet-out has reached the target by now.
	outs := h.target.callsOf("packet-out")
	if len(outs) != 1 || outs[0].id != 5 || string(outs[0].data) != "frame-1" {
		t.Fatalf("target packet-outs %+v", outs)
	}
	p.send(packetOut("x", meta(1, 5), meta(7, 0)))
	if e := p.streamError(); e.CanonicalCode != int32(codes.InvalidArgument) {
		t.Fatalf("unknown metadata id: %v", e)
	}
	p.send(packetOut("x", meta(1, 2, 0)))
	if e := p.streamError(); e.CanonicalCode != int32(codes.InvalidArgument) {
		t.Fatalf("egress_port wider than 9 bits: %v", e)
	}
	b := h.open()
	b.arbitrate(testDevice, nil, eid(0))
	b.arbitration()
	b.send(packetOut("x", meta(1, 5)))
	if e := b.streamError(); e.CanonicalCode != int32(codes.PermissionDenied) {
		t.Fatalf("packet-out from a backup: %v", e)
	}
	if n := len(h.target.callsOf("packet-out")); n != 1 {
		t.Fatalf("refused packet-outs reached the target (%d)", n)
	}
}

func TestPacketOutToIngressReachesTheTargetsPipeline(t *testing.T) {
	h, p := ready(t, Options{})
	p.send(packetOut("held", meta(1, 0, 5), meta(3, 1)))
	p.send(packetOut("plain", meta(1, 0, 6), meta(3, 0)))
	p.send(packetOut("unsaid", meta(1, 0, 7)))
	p.send(packetOut("x", meta(1, 0, 5), meta(3, 2)))
	if e := p.streamError(); e.CanonicalCode != int32(codes.InvalidArgument) || e.GetPacketOut() == nil {
		t.Fatalf("to_ingress wider than 1 bit: %v", e)
	}
	outs := h.target.callsOf("packet-out")
	if len(outs) != 3 || !outs[0].flag || string(outs[0].data) != "held" || outs[1].flag || outs[1].id != 6 || outs[2].flag {
		t.Fatalf("target packet-outs %+v", outs)
	}
}

func TestSlowControllerNeverBlocksTheDataPlane(t *testing.T) {
	h := newHarness(t, Options{StreamQueue: 8})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := h.client.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: testDevice, ElectionId: eid(1)}}})
	if _, err := s.Recv(); err != nil { // the arbitration notice; then this controller stops reading
		t.Fatal(err)
	}
	frame := make([]byte, 4096)
	const n = 20_000 // 80 MB: far beyond gRPC's flow-control windows
	done := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			h.target.events.PacketIn(1, frame)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("PacketIn blocked on a controller that does not read")
	}
	st := h.srv.Stats()
	if st.PacketInDrops == 0 || st.PacketIns+st.PacketInDrops != n {
		t.Fatalf("stats %+v: want drops counted and every packet accounted for", st)
	}
}
