package dataplane

import (
	"context"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// upPacket is uplink user packet number i (its IPv4 identification), as sent and as forwarded.
func upPacket(i uint16, ttl uint8) []byte {
	return wiretest.Build(wire.IPv4{ID: i, Src: addr(sessAddr), Dst: addr(server), TTL: ttl},
		wire.UDP{SrcPort: 40000, DstPort: 443}, []byte("up"))
}

func forwarded(i uint16) output {
	return output{portDN, wiretest.Build(wire.Ethernet{Dst: dnMAC, Src: srcMAC}, upPacket(i, 63))}
}

func current(epoch uint8, timeout uint32) wire.Header {
	m := wire.MarkCurrentPath
	if epoch == 1 {
		m |= wire.MarkEpoch
	}
	return wire.Header{Type: wire.TypeData, Marks: m, Proto: wire.ProtoIPv4, Seq: timeout}
}

func exPath(epoch uint8) wire.Header {
	m := wire.MarkExPath
	if epoch == 1 {
		m |= wire.MarkEpoch
	}
	return wire.Header{Type: wire.TypeData, Marks: m, Seq: uint32(ip4(sessAddr))}
}

func TestReorderMarkerReleasesInOrder(t *testing.T) {
	h := topology(t)
	h.now = 500
	// The UE moved its uplink from 3GPP to WiFi (epoch 1): new-path packets are held.
	for i := uint16(1); i <= 3; i++ {
		if out := h.process(portWiFi, junctionWiFi(current(1, 10_000), upPacket(i, 64))); len(out) != 0 {
			t.Fatalf("packet %d was not held: %v", i, out)
		}
	}
	if s := h.reg("reorder_state", user); s != rsHolding|rsHeldEpoch {
		t.Errorf("reorder_state = %#x, want holding epoch 1", s)
	}
	if d := h.reg("reorder_deadline", user); d != 10_500 {
		t.Errorf("reorder_deadline = %d, want now + timeout = 10500", d)
	}
	// Unmarked packets are never held.
	expectFrames(t, h.process(portWiFi, junctionWiFi(data(0), upPacket(9, 64))), forwarded(9))
	// The last old-path packet, then the marker on the old path releases the held ones after it.
	expectFrames(t, h.process(portGNB, junction3GPP(data(0), upPacket(0, 64))), forwarded(0))
	out := h.process(portGNB, junction3GPP(exPath(1)))
	expectFrames(t, out, forwarded(1), forwarded(2), forwarded(3))
	if n := h.drops(contract.DropConsumed); n != 1 {
		t.Errorf("CONSUMED = %d, want 1 (the marker)", n)
	}
	if s := h.reg("reorder_state", user); s != rsReleasedValid|rsReleasedEpoch {
		t.Errorf("reorder_state = %#x, want released epoch 1", s)
	}
	// Further packets of the released epoch go straight through.
	expectFrames(t, h.process(portWiFi, junctionWiFi(current(1, 10_000), upPacket(4, 64))), forwarded(4))
}

func TestReorderMarkerFirst(t *testing.T) {
	h := topology(t)
	h.process(portGNB, junction3GPP(exPath(0)))
	expectFrames(t, h.process(portWiFi, junctionWiFi(current(0, 10_000), upPacket(1, 64))), forwarded(1))
}

func TestReorderDeadline(t *testing.T) {
	h := topology(t)
	h.now = 0xffff_ff00 // the deadline wraps around 2^32
	h.process(portWiFi, junctionWiFi(current(0, 1000), upPacket(1, 64)))
	h.process(portWiFi, junctionWiFi(current(0, 1000), upPacket(2, 64)))
	out, wait := h.p.releaseDue(nil)
	if len(out) != 0 || wait != 1000*time.Microsecond {
		t.Fatalf("before the deadline: released %d, wait %v; want 0 and 1ms", len(out), wait)
	}
	h.now += 1000
	out, wait = h.p.releaseDue(nil)
	var got []output
	for _, p := range out {
		got = append(got, output{p.OutPort, append([]byte(nil), p.Frame()...)})
		h.pool.Put(p)
	}
	expectFrames(t, got, forwarded(1), forwarded(2))
	if wait != idleWait {
		t.Errorf("wait after release = %v, want idle", wait)
	}
	if s := h.reg("reorder_state", user); s != rsReleasedValid {
		t.Errorf("reorder_state = %#x, want released epoch 0", s)
	}
}

func TestReorderDeadlineOnNextPacket(t *testing.T) {
	h := topology(t)
	h.process(portWiFi, junctionWiFi(current(1, 100), upPacket(1, 64)))
	h.now = 200
	// The epoch was released by its deadline when this packet arrives: all go out in order.
	out := h.process(portWiFi, junctionWiFi(current(1, 100), upPacket(2, 64)))
	expectFrames(t, out, forwarded(1), forwarded(2))
}

func TestReorderOverflow(t *testing.T) {
	h := topology(t) // 8 packets per user
	for i := uint16(1); i <= 8; i++ {
		h.process(portWiFi, junctionWiFi(current(0, 10_000), upPacket(i, 64)))
	}
	out := h.process(portWiFi, junctionWiFi(current(0, 10_000), upPacket(9, 64)))
	want := make([]output, 0, 9)
	for i := uint16(1); i <= 9; i++ {
		want = append(want, forwarded(i))
	}
	expectFrames(t, out, want...)
	if n := h.drops(contract.DropReorderOverflow); n != 1 {
		t.Errorf("REORDER_OVERFLOW = %d, want 1", n)
	}
}

func TestReorderSecondSwitchWhileHolding(t *testing.T) {
	h := topology(t)
	h.process(portWiFi, junctionWiFi(current(0, 10_000), upPacket(1, 64)))
	// The UE switched back before the first switch settled: its packets join the queue.
	if out := h.process(portGNB, junction3GPP(current(1, 10_000), upPacket(2, 64))); len(out) != 0 {
		t.Fatalf("not held: %v", out)
	}
	// A marker of the other epoch changes nothing; the held epoch's marker releases all.
	if out := h.process(portWiFi, junctionWiFi(exPath(1))); len(out) != 0 {
		t.Fatalf("the marker of another epoch released %v", out)
	}
	expectFrames(t, h.process(portGNB, junction3GPP(exPath(0))), forwarded(1), forwarded(2))
}

func TestReorderTimerGoroutine(t *testing.T) {
	h := topology(t, func(c *Config) { c.Now = nil }) // the real clock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	if out := h.process(portWiFi, junctionWiFi(current(0, 2000), upPacket(1, 64))); len(out) != 0 {
		t.Fatalf("not held: %v", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.sink.mu.Lock()
		n := len(h.sink.sent)
		h.sink.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held packet was not released by the timer")
		}
		time.Sleep(time.Millisecond)
	}
	expectFrames(t, h.sink.sent, forwarded(1))
}
