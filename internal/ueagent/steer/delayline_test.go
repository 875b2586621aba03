package steer

import (
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/wire"
)

// A probe's uplink one-way delay is upf_ts - ue_ts (docs/junction-header.md), whatever the two
// clocks' offset, across the wrap of their 32 bits; the faster leg holds for the difference, up
// to MaxUplinkHold, and the slower not at all.
func TestUplinkHoldFromTheProbesTimestamps(t *testing.T) {
	// The UPF's clock (µs) is ahead of the UE's by about 67 minutes; the stamps wrap at 2^32.
	var offset uint32 = 4_000_000_000
	upf := func(ue, oneWay uint32) uint32 { return ue + offset + oneWay }
	wifi := UplinkOneWay(4_294_960_000, upf(4_294_960_000, 5_000)) // sent just before the UE's clock wraps, 5 ms
	fiveG := UplinkOneWay(1_000, upf(1_000, 35_000))               // 35 ms
	// An offset just short of 2^31: the two samples fall on either side of int32's wrap.
	offset = 1<<31 - 10_000
	wifiWrapped, fiveGWrapped := UplinkOneWay(0, upf(0, 5_000)), UplinkOneWay(0, upf(0, 35_000))
	for _, c := range []struct {
		name        string
		this, other int32
		want        time.Duration
	}{
		{"WiFi, 30 ms faster", wifi, fiveG, 30 * time.Millisecond},
		{"5G, the slower", fiveG, wifi, 0},
		{"equal", wifi, wifi, 0},
		{"WiFi, 30 ms faster, across int32's wrap", wifiWrapped, fiveGWrapped, 30 * time.Millisecond},
		{"5G across int32's wrap", fiveGWrapped, wifiWrapped, 0},
		{"a second apart", 0, 1_000_000, MaxUplinkHold},
	} {
		if got := UplinkHold(c.this, c.other); got != c.want {
			t.Errorf("%s: hold %v, want %v", c.name, got, c.want)
		}
	}
}

// A delay line lets each frame go at its time, never before one queued ahead of it, and copies
// what it is given.
func TestDelayLineKeepsOrderAndTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := NewDelayLine(3)
	frame := []byte{1}
	if !d.Push(t0, 10*time.Millisecond, frame) {
		t.Fatal("an empty line refused a frame")
	}
	frame[0] = 9                                                    // the caller reuses its buffer
	d.Push(t0.Add(time.Millisecond), 2*time.Millisecond, []byte{2}) // due at 3 ms, but behind the first
	d.Push(t0.Add(2*time.Millisecond), 20*time.Millisecond, []byte{3})
	if d.Push(t0, 0, []byte{4}) {
		t.Error("a full line took a fourth frame")
	}
	if got := d.Next(); !got.Equal(t0.Add(10 * time.Millisecond)) {
		t.Errorf("next due %v after the start, want 10ms", got.Sub(t0))
	}
	if _, ok := d.Pop(t0.Add(9*time.Millisecond), false); ok {
		t.Error("a frame left before its time")
	}
	for i, c := range []struct {
		at   time.Duration
		want byte
	}{{10 * time.Millisecond, 1}, {10 * time.Millisecond, 2}} {
		f, ok := d.Pop(t0.Add(c.at), false)
		if !ok || len(f) != 1 || f[0] != c.want {
			t.Errorf("pop %d at %v: %v %v, want frame %d", i, c.at, f, ok, c.want)
		}
	}
	if _, ok := d.Pop(t0.Add(21*time.Millisecond), false); ok {
		t.Error("the third frame left before its 22 ms")
	}
	if f, ok := d.Pop(t0, true); !ok || f[0] != 3 {
		t.Errorf("a forced pop gave %v %v, want frame 3", f, ok)
	}
	if d.Len() != 0 || !d.Next().IsZero() {
		t.Errorf("an emptied line holds %d, next %v", d.Len(), d.Next())
	}
}

// Once each slot has held a frame, the line allocates nothing.
func TestDelayLineAllocatesNothingOnceWarm(t *testing.T) {
	d := NewDelayLine(64)
	frame := make([]byte, 1400)
	now := time.Now()
	for range 64 {
		d.Push(now, 0, frame)
	}
	for d.Len() > 0 {
		d.Pop(now, true)
	}
	if a := testing.AllocsPerRun(100, func() {
		d.Push(now, time.Millisecond, frame)
		d.Pop(now.Add(time.Millisecond), false)
	}); a != 0 {
		t.Errorf("%v allocations per frame", a)
	}
}

// Only a TCP segment with nothing but an acknowledgement skips the delay line (RFC 9293's
// header: data offset in the high nibble of byte 12, flags in byte 13).
func TestPureACK(t *testing.T) {
	seg := func(proto byte, doff int, flags byte, payload int, frag uint16) []byte {
		total := 20 + doff*4 + payload
		b := make([]byte, total)
		b[0], b[2], b[3], b[9] = 0x45, byte(total>>8), byte(total), proto
		b[6], b[7] = byte(frag>>8), byte(frag)
		b[20+12], b[20+13] = byte(doff<<4), flags
		return b
	}
	const ack, psh, syn, fin, rst = 0x10, 0x08, 0x02, 0x01, 0x04
	for _, c := range []struct {
		name string
		pkt  []byte
		want bool
	}{
		{"ACK", seg(wire.ProtoTCP, 5, ack, 0, 0), true},
		{"ACK with timestamps and SACK blocks", seg(wire.ProtoTCP, 11, ack, 0, 0), true},
		{"ACK with PSH, no data", seg(wire.ProtoTCP, 5, ack|psh, 0, 0), true},
		{"data", seg(wire.ProtoTCP, 8, ack|psh, 1, 0), false},
		{"SYN-ACK", seg(wire.ProtoTCP, 5, syn|ack, 0, 0), false},
		{"FIN-ACK", seg(wire.ProtoTCP, 5, fin|ack, 0, 0), false},
		{"RST", seg(wire.ProtoTCP, 5, rst, 0, 0), false},
		{"UDP", seg(wire.ProtoUDP, 5, 0, 0, 0), false},
		{"a later fragment", seg(wire.ProtoTCP, 5, ack, 0, 100), false},
		{"cut short", seg(wire.ProtoTCP, 5, ack, 0, 0)[:30], false},
	} {
		if got := PureACK(c.pkt); got != c.want {
			t.Errorf("%s: PureACK %v, want %v", c.name, got, c.want)
		}
	}
}
