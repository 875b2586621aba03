package dataplane

import (
	"slices"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
)

// testLender lends frames from buffers of its own, as an AF_XDP port lends its UMEM chunks (the
// frame 256 bytes into a 2 KiB chunk), and overwrites a buffer as soon as it is given back, as the
// kernel writes the next frame into a chunk back in the fill ring.
type testLender struct {
	t   *testing.T
	out int // lent and not given back
}

func (l *testLender) lend(inPort uint32, frame []byte) *Packet {
	const chunk, headroom = 2048, 256
	buf := make([]byte, chunk)
	copy(buf[headroom:], frame)
	pkt := &Packet{}
	pkt.Lend(buf, headroom, len(frame), l)
	pkt.InPort = inPort
	l.out++
	return pkt
}

func (l *testLender) Return(pkt *Packet) {
	if !pkt.Lent() {
		l.t.Error("a pool packet was given to the lender")
	}
	for i := range pkt.buf {
		pkt.buf[i] = 0xee
	}
	l.out--
}

// processLent is harness.process with the frame lent rather than in a pool buffer; it fails
// the test if the pipeline or the Puts of its output kept a lent packet.
func (h *harness) processLent(l *testLender, inPort uint32, frame []byte) []output {
	h.t.Helper()
	out := h.p.Process([]*Packet{l.lend(inPort, frame)}, nil)
	var res []output
	for _, o := range out {
		res = append(res, output{o.OutPort, slices.Clone(o.Frame())})
		h.pool.Put(o)
	}
	if l.out != 0 {
		h.t.Errorf("%d lent packets not given back after the batch", l.out)
	}
	return res
}

func TestLentFramesForwardAndComeBack(t *testing.T) {
	h := topology(t)
	l := &testLender{t: t}
	free := h.pool.Free()
	// Forwarded: the outer headers go into the lent chunk's headroom, the packet back to its lender.
	expectFrames(t, h.processLent(l, portWiFi, junctionWiFi(data(0), upPacket(7, 64))), forwarded(7))
	if h.pool.Free() != free {
		t.Errorf("pool: %d free, want %d (a lent packet went to the pool)", h.pool.Free(), free)
	}
}

func TestReorderHoldsACopyOfALentFrame(t *testing.T) {
	h := topology(t)
	l := &testLender{t: t}
	free := h.pool.Free()
	for i := uint16(1); i <= 3; i++ {
		if out := h.processLent(l, portWiFi, junctionWiFi(current(1, 10_000), upPacket(i, 64))); len(out) != 0 {
			t.Fatalf("packet %d was not held: %v", i, out)
		}
	}
	if got := free - h.pool.Free(); got != 3 {
		t.Errorf("%d pool buffers hold the held packets, want 3", got)
	}
	// The lender has overwritten every chunk it was given back: the held copies are intact.
	expectFrames(t, h.processLent(l, portGNB, junction3GPP(exPath(1))), forwarded(1), forwarded(2), forwarded(3))
	if h.pool.Free() != free {
		t.Errorf("pool: %d free after the release, want %d", h.pool.Free(), free)
	}
}

func TestReorderWithNoBufferForALentFrameSendsInOrder(t *testing.T) {
	h := topology(t)
	l := &testLender{t: t}
	h.processLent(l, portWiFi, junctionWiFi(current(0, 10_000), upPacket(1, 64)))
	var taken []*Packet
	for p := h.pool.TryGet(); p != nil; p = h.pool.TryGet() {
		taken = append(taken, p)
	}
	// No pool buffer to copy packet 2 into: what is held goes out, then packet 2, as on overflow.
	expectFrames(t, h.processLent(l, portWiFi, junctionWiFi(current(0, 10_000), upPacket(2, 64))), forwarded(1), forwarded(2))
	if n := h.drops(contract.DropReorderOverflow); n != 1 {
		t.Errorf("REORDER_OVERFLOW = %d, want 1", n)
	}
	for _, p := range taken {
		h.pool.Put(p)
	}
}
