package ueagent

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/ueagent/steer"
	"github.com/junction-atsss/junction/internal/wire"
)

// leg is one access of a tunnel: its UDP socket toward the UPF, its probe state and the RTT and
// loss the uplink steers by.
type leg struct {
	t      *Tunnel
	access contract.Access
	local  netip.Addr
	m      *legMetrics

	conn    atomic.Pointer[net.UDPConn]
	path    atomic.Uint64 // the uplink's path state: steer.Path packed by packPath
	busy    atomic.Bool   // traffic since the last tick: probe at the busy interval
	gsoOK   atomic.Bool   // the socket takes UDP_SEGMENT (gso_linux.go)
	carried atomic.Uint64 // bytes received and sent, both ways (the autonomous balance's rates)
	queue   atomic.Uint32 // the last RTT sample's queueing delay while the leg is up, else 0 (steer.Leg.QueueDelay)
	up      upDelay       // the split uplink's delay line (uplink_delay_linux.go)

	mu      sync.Mutex // guards what follows
	state   *steer.Leg
	iface   string
	ifindex int
	noAddr  bool
}

// packPath and unpackPath keep a steer.Path in one atomic word: the uplink reads it per packet.
func packPath(p steer.Path) uint64 { return uint64(p.RTT) | uint64(p.Loss)<<32 }

func unpackPath(v uint64) steer.Path { return steer.Path{RTT: uint32(v), Loss: uint8(v >> 32)} }

func newLeg(t *Tunnel, a contract.Access, local netip.Addr) *leg {
	l := &leg{t: t, access: a, local: local, m: t.m.leg(a), state: steer.NewLeg(t.clock, steer.DefaultLegConfig())}
	l.gsoOK.Store(true)
	l.up.line = steer.NewDelayLine(upLineFrames)
	return l
}

// refresh finds the interface that holds the leg's address and opens, keeps or closes the
// socket to match; it returns the interface's MTU (0 when there is none).
func (l *leg) refresh() int {
	name, idx, mtu, up, err := legInterface(l.t.node.nl, l.local)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	switch {
	case err != nil:
		l.t.log.Error(err, "Leg interface lookup failed", "access", l.access)
		return mtu
	case name == "":
		l.noAddr = true
		l.state.LinkDown(now, "AddressNotOnNode")
	case !up:
		l.noAddr = false
		l.state.LinkDown(now, "LinkDown")
	default:
		l.noAddr = false
		if c := l.conn.Load(); c == nil || idx != l.ifindex || name != l.iface {
			l.openLocked(name, idx)
		}
		if l.conn.Load() != nil {
			l.state.LinkUp(now)
		}
	}
	if name != "" {
		l.iface = name
	}
	if !up || name == "" {
		l.closeConnLocked()
	}
	l.transitionLocked()
	return mtu
}

// openLocked (re)binds the leg's socket to the interface that now holds its address.
func (l *leg) openLocked(iface string, idx int) {
	l.closeConnLocked()
	conn, err := dialLeg(l.t.node.ns, l.local, iface, l.t.upfAddr())
	if err != nil {
		l.t.log.Error(err, "Leg socket not opened", "access", l.access)
		l.state.LinkDown(time.Now(), "SocketError")
		return
	}
	l.ifindex = idx
	l.conn.Store(conn)
	if l.started() {
		l.startReader(conn)
	}
}

func (l *leg) closeConnLocked() {
	if c := l.conn.Swap(nil); c != nil {
		c.Close()
	}
}

// started reports whether the tunnel's goroutines run (readers start with them).
func (l *leg) started() bool { return l.t.dev != nil }

func (l *leg) start() {
	if c := l.conn.Load(); c != nil {
		l.startReader(c)
	}
}

// startReader runs a reader for one socket; it ends when that socket is closed.
func (l *leg) startReader(conn *net.UDPConn) {
	l.t.wg.Add(1)
	go func() {
		defer l.t.wg.Done()
		l.read(conn)
	}()
}

func (l *leg) read(conn *net.UDPConn) {
	t := l.t
	r, err := newBatchReader(conn)
	if err != nil {
		t.log.Error(err, "Leg socket unusable", "access", l.access)
		return
	}
	// A read holds one datagram or, with UDP_GRO, a run of them (batchReader): read into
	// buffers of the largest, each datagram copied into a packet of the pool from there.
	bufs := make([][]byte, rxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, groRead)
	}
	p := t.pool.Get().(*packet)
	defer func() { t.release(p) }()
	for {
		n, err := r.read(bufs)
		if icmpError(err) {
			l.m.txErrors.Inc() // an ICMP error for an earlier send, reported on the connected socket
			continue
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				t.log.Error(err, "Leg read failed", "access", l.access)
			}
			return
		}
		for i := 0; i < n; i++ {
			// The socket is connected to the UPF (dialLeg): the kernel took no one else's.
			size, truncated := r.datagram(i)
			if truncated {
				t.m.drop("TooLarge") // larger than a read holds
				continue
			}
			// Each datagram of the read; an empty one too (it is counted as malformed).
			seg := max(r.segment(i), 1)
			for off := 0; off == 0 || off < size; off += seg {
				d := bufs[i][off:min(off+seg, size)]
				if len(d) > len(p.buf)-headroom {
					t.m.drop("TooLarge") // larger than any MTU the tunnel uses
					continue
				}
				p.off, p.n = headroom, copy(p.buf[headroom:], d)
				if t.received(l, p, stamp{r, i}) {
					p = t.pool.Get().(*packet)
				}
			}
		}
		t.flushTUN()
	}
}

// icmpError is the error a connected UDP socket reports, on its next read, for an ICMP error
// that came back for one of its datagrams (port or host unreachable): the leg keeps reading,
// and its probes decide whether the UPF is still there.
func icmpError(err error) bool {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN, unix.EPROTO:
		return true
	}
	return false
}

// send writes one frame (Junction header and what follows) to the UPF.
func (l *leg) send(frame []byte) {
	c := l.conn.Load()
	if c == nil {
		l.m.txErrors.Inc()
		return
	}
	if _, err := c.Write(frame); err != nil {
		l.m.txErrors.Inc()
		return
	}
	l.m.txPackets.Inc()
	l.m.txBytes.Add(float64(len(frame)))
	l.carried.Add(uint64(len(frame)))
}

// traffic notes user data sent or received on the leg (the probe interval shortens while
// traffic flows; probes themselves do not count).
func (l *leg) traffic() { l.busy.Store(true) }

// reply handles a PROBE_REPLY that the kernel received at arrived (zero: unknown): the RTT,
// up to its arrival rather than to now (batchReader), then the PROBE_ACK that lets the UPF
// measure its own.
func (l *leg) reply(c wire.Control, arrived time.Time) {
	now := time.Now()
	if arrived.IsZero() || arrived.After(now) { // no stamp, or the wall clock stepped back
		arrived = now
	}
	arrived = now.Add(-now.Sub(arrived)) // on now's monotonic clock, as the probe's send time is
	l.mu.Lock()
	rtt, ok := l.state.Reply(arrived, c.UETime)
	if ok {
		l.queue.Store(l.state.QueueDelay(rtt))
		l.t.oneWay(l, c.UETime, c.UPFTime, now)
		share := l.t.balance(now)
		l.t.sendControl(l.access, wire.TypeProbeAck, wire.Control{Access: l.access, LossPercent: l.state.PathLoss(), Share: share, UETime: c.UETime, UPFTime: c.UPFTime})
		l.m.rtt.Set(rtt.Seconds())
		l.m.replies.Inc()
	}
	l.transitionLocked()
	l.mu.Unlock()
	if !ok {
		l.t.m.drop("StaleProbeReply")
	}
}

// tick sends a due probe and counts missed replies; it returns when it wants to run next
// (zero: only when woken).
func (l *leg) tick(now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy.Swap(false) {
		l.state.Traffic(now)
	}
	l.state.Tick(now)
	if due := l.state.NextProbe(now); l.conn.Load() != nil && !due.IsZero() && !due.After(now) {
		ts := l.state.Sent(now)
		l.t.sendControl(l.access, wire.TypeProbe, wire.Control{Access: l.access, UETime: ts})
		l.m.probes.Inc()
	}
	l.m.lost.Set(float64(l.state.ProbesLost()))
	if p, n := l.state.Loss(); n >= steer.LossMinProbes {
		l.m.loss.Set(float64(p))
	}
	l.transitionLocked()
	return l.state.NextDeadline(now)
}

// transitionLocked publishes the leg's path state to the uplink and acts on the leg's state
// changes: LINK_DOWN goes on the other leg (this one may be gone), LINK_UP with the last RTT and
// loss on this one (docs/junction-header.md), and the status is told.
func (l *leg) transitionLocked() {
	l.path.Store(packPath(steer.Path{RTT: l.state.PathRTT(), Loss: l.state.PathLoss()}))
	changed := false
	for {
		e, ok := l.state.Event()
		if !ok {
			break
		}
		changed = true
		switch {
		case e.SendLinkDown():
			l.t.sendControl(l.access.Other(), wire.TypeLinkDown, wire.Control{Access: l.access})
			l.m.downs.Inc()
		case e.SendLinkUp():
			l.t.sendControl(l.access, wire.TypeLinkUp, wire.Control{Access: l.access, LossPercent: l.state.PathLoss(),
				UETime: max(uint32(e.RTT.Microseconds()), 1)})
		}
	}
	if l.state.Up() {
		l.m.up.Set(1)
	} else {
		l.m.up.Set(0)
		l.queue.Store(0)
	}
	if changed {
		l.t.notify()
	}
}

func (l *leg) rtt() (time.Duration, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.state.Up() {
		return 0, 0
	}
	return l.state.RTT(), l.state.RTTVar()
}

func (l *leg) view() LegView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := LegView{Access: l.access, Interface: l.iface, LastProbe: l.state.LastReply()}
	v.LossPercent, v.LossProbes = l.state.Loss()
	switch {
	case l.noAddr:
		v.State, v.Reason, v.Interface = junctionv1.LegNoAddress, "AddressNotOnNode", ""
	case l.state.Up():
		v.State, v.RTT = junctionv1.LegUp, l.state.RTT()
	default:
		v.State, v.Reason = junctionv1.LegDown, l.state.Reason()
	}
	return v
}

func (l *leg) close() {
	l.mu.Lock()
	l.closeConnLocked()
	l.mu.Unlock()
}
