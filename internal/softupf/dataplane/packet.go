package dataplane

// Packet buffers, wireguard-go style: a bounded pool of fixed-size buffers, allocated once;
// frames are read at Headroom so that the pipeline prepends outer headers in place.
//
// A buffer's way: Pool.Get (port reader) → read at Headroom → Pipeline.Process → the port
// writer sends it and Puts it back; or the reorder queue holds it and the release sends it;
// or a drop Puts it back at once.
//
// A port may instead lend the pipeline a frame where the kernel wrote it (an AF_XDP port's UMEM
// chunk, ports/xdp_linux.go): Pool.Put then gives the packet back to its Lender. A lent packet is
// given back within the Process call that received it, or by the sender of its output in the
// same goroutine: what the pipeline keeps longer (the reorder queue) it copies first (Pool.Own).

import (
	"encoding/binary"

	"github.com/junction-atsss/junction/internal/wire"
)

// Tuning constants.
const (
	// Headroom is where a received frame starts in its buffer: at least wire.MaxHeadroom (the
	// most the pipeline prepends) plus an 802.1Q tag put back (InsertVLAN), and a multiple of
	// 64 so frames start cache-line aligned.
	Headroom = (wire.MaxHeadroom + vlanTagLen + 63) / 64 * 64
	// MaxFrame is the largest frame a port receives or sends: a 9000-byte jumbo MTU plus
	// Ethernet and one VLAN tag, with room to spare, as most switches accept.
	MaxFrame = 9216
	// BufferSize is one pool buffer.
	BufferSize = Headroom + MaxFrame
)

// Packet is one frame in a pool buffer.
type Packet struct {
	buf []byte // the whole buffer, len BufferSize
	off int    // the frame is buf[off:end]
	end int
	// tail is where the received frame's bytes end. What lies past the user packet (Ethernet
	// padding, bytes beyond its IPv4 total length) stays at the end of the frame sent, after
	// the packet, as a P4 target's deparser leaves the unparsed payload (docs/pipeline.md).
	tail int
	// InPort is the port the frame arrived on; OutPort the port it leaves by.
	InPort, OutPort uint32
	// lender owns buf when the packet is lent (Lend); nil for the pool's packets.
	lender Lender
}

// Lender owns the memory of the packets it lends (Packet.Lend); Pool.Put gives them back.
type Lender interface {
	Return(*Packet)
}

// Lend makes p the frame buf[off:off+n], which l owns. off must leave Headroom in front of the
// frame for the pipeline's outer headers, and n fit in buf.
func (p *Packet) Lend(buf []byte, off, n int, l Lender) {
	p.buf, p.off, p.end, p.tail, p.lender = buf, off, off+n, off+n, l
}

// Lent reports whether p is a lent frame rather than the pool's.
func (p *Packet) Lent() bool { return p.lender != nil }

// Frame returns the frame's bytes.
func (p *Packet) Frame() []byte { return p.buf[p.off:p.end] }

// ReadBuffer is where a port reads a new frame: the buffer after the headroom.
func (p *Packet) ReadBuffer() []byte { return p.buf[Headroom:] }

// SetRead records that n bytes were read into ReadBuffer.
func (p *Packet) SetRead(n int) {
	p.off, p.end = Headroom, Headroom+min(n, MaxFrame)
	p.tail = p.end
}

// InsertVLAN puts an 802.1Q tag (tpid, tci) back after the MAC addresses of a frame just read,
// where it was on the wire (a packet socket reads it separately: ports_linux.go), growing the
// frame into the headroom; it reports false if the frame is too short or would not fit.
func (p *Packet) InsertVLAN(tpid, tci uint16) bool {
	const macs = 12
	if p.end-p.off < macs || p.off < vlanTagLen || p.end-p.off+vlanTagLen > MaxFrame {
		return false
	}
	p.off -= vlanTagLen
	copy(p.buf[p.off:], p.buf[p.off+vlanTagLen:p.off+vlanTagLen+macs])
	binary.BigEndian.PutUint16(p.buf[p.off+macs:], tpid)
	binary.BigEndian.PutUint16(p.buf[p.off+macs+2:], tci)
	return true
}

// vlanTagLen is an 802.1Q tag's length: TPID and TCI.
const vlanTagLen = 4

// SetFrame copies frame into the packet at Headroom; it reports false if it does not fit.
func (p *Packet) SetFrame(frame []byte) bool {
	if len(frame) > MaxFrame {
		return false
	}
	p.SetRead(copy(p.buf[Headroom:], frame))
	return true
}

// Pool is a bounded set of packet buffers. Get blocks while all are in use, which holds
// readers back instead of growing memory when the writers fall behind.
type Pool struct {
	free chan *Packet
	size int
}

// NewPool allocates n packets and their buffers in one block.
func NewPool(n int) *Pool {
	p := &Pool{free: make(chan *Packet, n), size: n}
	mem := make([]byte, n*BufferSize)
	pkts := make([]Packet, n)
	for i := range pkts {
		pkts[i].buf = mem[i*BufferSize : (i+1)*BufferSize : (i+1)*BufferSize]
		p.free <- &pkts[i]
	}
	return p
}

// Get returns a free packet, waiting for one; it returns nil once done is closed.
func (p *Pool) Get(done <-chan struct{}) *Packet {
	select {
	case pkt := <-p.free:
		return pkt
	default:
	}
	select {
	case pkt := <-p.free:
		return pkt
	case <-done:
		return nil
	}
}

// TryGet returns a free packet, or nil if none is free now.
func (p *Pool) TryGet() *Packet {
	select {
	case pkt := <-p.free:
		return pkt
	default:
		return nil
	}
}

// Put returns a packet to the pool, or a lent one to its lender.
func (p *Pool) Put(pkt *Packet) {
	pkt.InPort, pkt.OutPort, pkt.off, pkt.end, pkt.tail = 0, 0, 0, 0, 0
	if pkt.lender != nil {
		pkt.lender.Return(pkt)
		return
	}
	p.free <- pkt
}

// Own returns pkt if it is the pool's. A lent packet it copies into a pool packet (the frame at
// Headroom, with the bytes past it and the ports) and gives back to its lender; with no pool
// packet free now it returns nil and pkt stays the caller's.
func (p *Pool) Own(pkt *Packet) *Packet {
	if pkt.lender == nil {
		return pkt
	}
	own := p.TryGet()
	if own == nil {
		return nil
	}
	last := max(pkt.end, pkt.tail)
	n := copy(own.buf[Headroom:], pkt.buf[pkt.off:last])
	own.off, own.end, own.tail = Headroom, Headroom+(pkt.end-pkt.off), Headroom+n
	own.InPort, own.OutPort = pkt.InPort, pkt.OutPort
	p.Put(pkt)
	return own
}

// Free is the number of packets in the pool now.
func (p *Pool) Free() int { return len(p.free) }

// Size is the number of packets the pool owns.
func (p *Pool) Size() int { return p.size }
