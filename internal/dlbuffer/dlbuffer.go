// Package dlbuffer holds the downlink of sessions whose FAR buffers (TS 29.244 §5.2.3: Apply
// Action BUFF, the UE idle): the pipeline sends such a packet to the controller as a packet-in
// (buffer_downlink, docs/pipeline.md), the operator keeps it here in arrival order, and once the
// session's downlink forwards again it is sent back into the pipeline (a to_ingress packet-out),
// or dropped when the session goes or its buffer is full.
//
// Held frames live in the operator's memory only: an operator restart or a leader change loses
// them, as a UPF restart loses a UPF's buffer (docs/n4.md, "Buffering").
package dlbuffer

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"
)

// Limits: a session holds at most MaxFrames frames (TS 29.244 leaves the count to the UPF; a
// BAR's Suggested Buffering Packets Count is a suggestion), the UPF at most MaxBytes in all, so
// a flood toward idle UEs costs the operator a bounded amount of memory (docs/threat-model.md).
const (
	MaxFrames = 256
	MaxBytes  = 64 << 20
)

// Outcome is what Hold did with a frame.
type Outcome int

const (
	// NotBuffering: the frame is not an IPv4 packet to a session that buffers; it was not kept.
	NotBuffering Outcome = iota
	// Held: kept.
	Held
	// Full: the session or the UPF holds all it may; the frame was dropped.
	Full
	// Late: the session released what it held less than Linger ago; the frame, punted before its
	// entry forwarded, is to be sent on after what was released. Not kept.
	Late
)

func (o Outcome) String() string {
	return [...]string{"not_buffering", "held", "full", "late"}[o]
}

// Linger is how long after a release a frame the pipeline punted before its new entry took
// effect (in the packet-in queue at the time) is still recognised.
const Linger = time.Second

type session struct {
	addr     netip.Addr
	frames   [][]byte
	bytes    int
	notified bool // its first frame was reported (Hold's first)
}

// release is a session that released what it held: frames to its address are Late until until.
type release struct {
	key   string
	until time.Time
}

// Buffer is one UPF's held downlink, by session (the owner's key) and by UE address. It is safe
// for concurrent use.
type Buffer struct {
	mu     sync.Mutex
	byKey  map[string]*session
	byAddr map[netip.Addr]string
	bytes  int
	// released: addresses whose session released what it held, until when frames are Late.
	released map[netip.Addr]release
	now      func() time.Time
}

// New returns an empty Buffer.
func New() *Buffer {
	return &Buffer{byKey: map[string]*session{}, byAddr: map[netip.Addr]string{}, released: map[netip.Addr]release{}, now: time.Now}
}

// Start makes session key hold the downlink to addr from now on. A session that already buffers
// keeps what it holds (a modification that still buffers); one that moves to another address
// holds for the new one.
func (b *Buffer) Start(key string, addr netip.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.byKey[key]
	if s == nil {
		s = &session{}
		b.byKey[key] = s
	} else if s.addr != addr {
		delete(b.byAddr, s.addr)
	}
	s.addr = addr
	b.byAddr[addr] = key
	delete(b.released, addr)
}

// Holds reports whether session key buffers.
func (b *Buffer) Holds(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[key] != nil
}

// Stop ends the buffering of session key and returns what it held, in arrival order (nil when it
// did not buffer). forwards says the session's downlink now forwards: frames to it that the
// pipeline punted before are Late for Linger.
func (b *Buffer) Stop(key string, forwards bool) [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.byKey[key]
	if s == nil {
		return nil
	}
	delete(b.byKey, key)
	if b.byAddr[s.addr] == key {
		delete(b.byAddr, s.addr)
	}
	b.bytes -= s.bytes
	now := b.now()
	for a, r := range b.released { // few: sessions released within Linger
		if now.After(r.until) {
			delete(b.released, a)
		}
	}
	if forwards {
		b.released[s.addr] = release{key, now.Add(Linger)}
	}
	return s.frames
}

// Hold keeps frame (an Ethernet frame as the pipeline punted it) for the session that buffers its
// IPv4 destination. key names that session; first is true for the first frame the session holds
// since it started buffering, the one to report to the SMF (a Downlink Data Report). The frame is
// copied only when kept.
func (b *Buffer) Hold(frame []byte) (o Outcome, key string, first bool) {
	dst, ok := ipv4Destination(frame)
	if !ok {
		return NotBuffering, "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key, ok = b.byAddr[dst]
	if !ok {
		if r, late := b.released[dst]; late && !b.now().After(r.until) {
			return Late, r.key, false
		}
		return NotBuffering, "", false
	}
	s := b.byKey[key]
	first = !s.notified
	s.notified = true
	if len(s.frames) >= MaxFrames || b.bytes+len(frame) > MaxBytes {
		return Full, key, first
	}
	s.frames = append(s.frames, append([]byte(nil), frame...))
	s.bytes += len(frame)
	b.bytes += len(frame)
	return Held, key, first
}

// ipv4Destination is the destination of an untagged Ethernet frame carrying IPv4.
func ipv4Destination(frame []byte) (netip.Addr, bool) {
	const eth, ipv4Min = 14, 20
	if len(frame) < eth+ipv4Min || binary.BigEndian.Uint16(frame[12:14]) != 0x0800 || frame[eth]>>4 != 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte(frame[eth+16 : eth+20])), true
}
