package ueagent

// Tunnel is one session's data path on the node (paper V-B, the JUNCTION-UE):
//
//	uplink    app ─> TUN ─Read─> TSO segments ─> classify (policies) ─> choose leg(s) (steering
//	          mode, path state) ─> reorder marks on a switch ─> Junction header in the headroom
//	          ─> same-sized frames of one leg batched ─> one UDP GSO sendmsg ─> UPF; a split
//	          mode's faster leg first waits out the legs' one-way delay difference
//	          (uplink_delay_linux.go)
//	downlink  UPF ─> leg socket (recvmmsg) ─> checked (parseDownlink) ─> seq 0: queued; else the
//	          reorder buffer ─> queued in order ─> end of batch: runs of one TCP flow coalesced
//	          ─> TUN (GSO writes)
//	control   timer goroutine: a probe per leg when due, missed replies, reorder timeouts;
//	          PROBE_REPLY on a leg ─> RTT ─> the autonomous share (steer.Balancer) ─> PROBE_ACK
//	          with both on the same leg (docs/junction-header.md)
//	          a leg lost (netlink or probes) ─> LINK_DOWN on the other leg; back ─> LINK_UP
//
// One goroutine reads the TUN, one reads each leg socket, one runs the timers. The steering
// (classifier, override) is swapped atomically when policies change; path state the uplink
// reads per packet is an atomic RTT per leg (0: unavailable, as in the UPF's registers).

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/internal/tun"
	"github.com/junction-atsss/junction/internal/ueagent/steer"
	"github.com/junction-atsss/junction/internal/wire"
)

// Tuning constants.
const (
	// headroom is kept in front of every packet read from the TUN (the Junction header goes
	// there) and from a leg (the TUN's virtio header goes where the Junction header was).
	headroom = 32
	// bufSize holds the largest packet either way plus headroom: a jumbo frame's worth. The TUN's
	// MTU is below it; a larger datagram from a leg fills the buffer and is dropped (TooLarge).
	bufSize = headroom + 9216
	// batch is how many packets one TUN read may return: the segments of a TSO super-packet.
	batch = tun.MaxSegments
	// rxBatch is how many reads one leg's recvmmsg may return, each a datagram or a UDP GRO
	// run of them of up to groRead bytes.
	rxBatch = 32
	groRead = 65535
	// rateInterval is the shortest span the downlink's arrival rate is measured over (the
	// reorder window follows it).
	rateInterval = 50 * time.Millisecond
	// maxTimerSleep bounds how long the timer goroutine sleeps without being woken.
	maxTimerSleep = 100 * time.Millisecond
)

// packet is a buffer held by the downlink reorder buffer.
type packet struct {
	buf []byte
	off int // the user packet starts here
	n   int
}

// steering is what the uplink classifies with; replaced whole when policies change.
type steering struct {
	classifier *steer.Classifier
}

// Tunnel is one session's TUN, legs and goroutines.
type Tunnel struct {
	node    *node
	cfg     Config // replaced by Update; the data path reads only what cannot change (upf, session)
	upf     netip.AddrPort
	log     logr.Logger
	dev     *tun.Device
	legs    [3]*leg // by contract.Access; nil when the session has no such leg
	steer   atomic.Pointer[steering]
	session [4]byte
	clock   *steer.Clock
	notify  func()
	wake    chan struct{}
	upWake  chan struct{} // a leg's delay line got its first frame (uplink_delay_linux.go)
	done    chan struct{}
	wg      sync.WaitGroup
	closed  atomic.Bool
	m       *tunnelMetrics

	// share is autonomous load balance's split (contract.AutonomousShare): the balancer's, which
	// splits the uplink here and the downlink at the UPF (every PROBE_ACK carries it).
	share     atomic.Uint32
	balMu     sync.Mutex // guards balancer and balancing, which both legs' readers update
	balancer  *steer.Balancer
	balancing bool // the last balance steered (autonomous load balance)

	// Uplink state, owned by the TUN reader.
	upSeq    uint32
	switcher steer.Switcher
	exp      Experiment
	expCount int
	gso      gsoBatch

	// Downlink state, shared by the leg readers.
	rx      sync.Mutex
	reorder *steer.Reorder[*packet]
	pending [][]byte  // in-order packets waiting for flushTUN, under rx
	held    []*packet // their buffers
	pool    sync.Pool
	// The downlink's arrival rate in packets a second (falls by an eighth per measurement,
	// rises at once), measured from rateDelivered at rateAt; under rx, by the timer goroutine.
	pps           float64
	rateAt        time.Time
	rateDelivered uint64
}

// newTunnel builds a session's TUN, routing and legs and starts its goroutines. notify is
// called (from any goroutine, never blocking) when something the status shows has changed.
func newTunnel(n *node, cfg Config, exp Experiment, log logr.Logger, m *Metrics, notify func()) (*Tunnel, error) {
	t := &Tunnel{
		exp:  exp,
		node: n, cfg: cfg, log: log, session: cfg.Session.As4(), notify: notify,
		upf:  netip.AddrPortFrom(cfg.UPF, wire.JunctionPort),
		wake: make(chan struct{}, 1), upWake: make(chan struct{}, 1), done: make(chan struct{}),
		clock: steer.NewClock(time.Now()),
		m:     m.forSession(cfg.Session.String()),
	}
	t.pool.New = func() any { return &packet{buf: make([]byte, bufSize)} }
	if err := t.setSteering(cfg); err != nil {
		return nil, err
	}
	t.reorder = steer.NewReorder[*packet](steer.MaxReorderWindow, t.deliver, t.release)
	t.balancer = steer.NewBalancer()
	t.reorder.SetWindow(steer.MinReorderWindow)

	mtu3, mtuN := -1, -1
	for a := contract.Access3GPP; a <= contract.AccessNon3GPP; a++ {
		if !cfg.Legs[a].IsValid() {
			continue
		}
		l := newLeg(t, a, cfg.Legs[a])
		t.legs[a] = l
		mtu := l.refresh()
		if a == contract.Access3GPP {
			mtu3 = mtu
		} else {
			mtuN = mtu
		}
	}
	name := TUNName(cfg.Session)
	var dev *tun.Device
	err := netnsexec.Do(n.ns, func() (err error) {
		dev, err = tun.Create(tun.Config{Name: name, MTU: tunMTU(mtu3, mtuN), Offload: true})
		return err
	})
	if err != nil {
		t.closeLegs()
		t.m.forget()
		return nil, fmt.Errorf("TUN %s: %w", name, err)
	}
	t.dev = dev
	link, err := n.nl.LinkByName(name)
	if err == nil {
		err = configureTUN(n.nl, link, routing{session: cfg.Session, upf: cfg.UPF})
	}
	if err != nil {
		// Undo what configureTUN got to: the session's rules (its routes went with the TUN).
		dev.Close()
		t.closeLegs()
		if rerr := removeRules(n.nl, cfg.Session); rerr != nil {
			err = errors.Join(err, rerr)
		}
		t.m.forget()
		return nil, err
	}
	t.wg.Add(3)
	go t.uplink()
	go t.timers()
	go t.releaseUplink()
	for _, l := range t.legs {
		if l != nil {
			l.start()
		}
	}
	return t, nil
}

// Config is what the tunnel was built from.
func (t *Tunnel) Config() Config { return t.cfg }

// Update applies a new configuration. Steering changes apply in place; a change of address,
// UPF or legs needs a new tunnel (ok false).
func (t *Tunnel) Update(cfg Config) (ok bool, err error) {
	if !t.cfg.sameTunnel(cfg) {
		return false, nil
	}
	if err := t.setSteering(cfg); err != nil {
		return true, err
	}
	if link, err := t.node.nl.LinkByName(t.dev.Name()); err != nil {
		return true, err
	} else if err := configureTUN(t.node.nl, link, routing{session: cfg.Session, upf: cfg.UPF}); err != nil {
		return true, err
	}
	t.cfg = cfg
	return true, nil
}

func (t *Tunnel) setSteering(cfg Config) error {
	c, err := steer.NewClassifier(cfg.Policies, cfg.Own)
	if err != nil {
		return err
	}
	t.steer.Store(&steering{classifier: c})
	return nil
}

// Close stops the goroutines and removes the TUN (its routes go with it) and the rules.
func (t *Tunnel) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.done)
	errs := []error{t.dev.Close()}
	t.closeLegs()
	t.wg.Wait()
	errs = append(errs, removeRules(t.node.nl, t.cfg.Session))
	t.rx.Lock()
	t.reorder.Flush()
	t.rx.Unlock()
	t.m.forget()
	return errors.Join(errs...)
}

func (t *Tunnel) closeLegs() {
	for _, l := range t.legs {
		if l != nil {
			l.close()
		}
	}
}

// balance updates autonomous load balance's share from both legs' latest queueing delays and
// the bytes they carried.
func (t *Tunnel) balance(now time.Time) contract.AutonomousShare {
	var q [3]uint32
	var carried [3]uint64
	for a, l := range t.legs {
		if l != nil {
			q[a] = l.queue.Load()
			carried[a] = l.carried.Load()
		}
	}
	autonomous := t.steer.Load().classifier.Autonomous()
	t.balMu.Lock()
	starts := autonomous && !t.balancing
	t.balancing = autonomous
	s := t.balancer.Update(now, q[contract.Access3GPP], q[contract.AccessNon3GPP], carried[contract.Access3GPP], carried[contract.AccessNon3GPP], autonomous)
	if starts { // once per start: where the split starts is what a slow first second comes from
		t.log.Info("autonomous load balance starts", "share", s,
			"capacity3gppMbps", mbps(t.balancer.Capacity(contract.Access3GPP)), "capacityNon3gppMbps", mbps(t.balancer.Capacity(contract.AccessNon3GPP)))
	}
	t.balMu.Unlock()
	t.share.Store(uint32(s))
	return s
}

// mbps is a rate in bytes a second as Mbit/s to a tenth, for logs.
func mbps(bytesPerSec float64) float64 { return math.Round(bytesPerSec*8/1e5) / 10 }

// paths are the uplink's path state: the legs' RTTs in µs (0 for an absent or down leg) and
// losses.
func (t *Tunnel) paths() (p3, pn steer.Path) {
	if l := t.legs[contract.Access3GPP]; l != nil {
		p3 = unpackPath(l.path.Load())
	}
	if l := t.legs[contract.AccessNon3GPP]; l != nil {
		pn = unpackPath(l.path.Load())
	}
	return p3, pn
}

// uplink reads user packets from the TUN and sends them on the chosen legs.
func (t *Tunnel) uplink() {
	defer t.wg.Done()
	bufs := make([][]byte, batch)
	sizes := make([]int, batch)
	for i := range bufs {
		bufs[i] = make([]byte, bufSize)
	}
	for {
		n, err := t.dev.Read(bufs, sizes, headroom)
		if errors.Is(err, tun.ErrBadPacket) {
			t.m.drop("TUNBadPacket")
			continue
		}
		if err != nil {
			if t.closed.Load() {
				return
			}
			t.log.Error(err, "TUN read failed; the tunnel stops sending")
			return
		}
		now := time.Now()
		st := t.steer.Load()
		for i := 0; i < n; i++ {
			t.sendUp(now, st, bufs[i], sizes[i])
		}
		t.gso.flush()
	}
}

// sendUp steers one user packet at buf[headroom:headroom+n].
func (t *Tunnel) sendUp(now time.Time, st *steering, buf []byte, n int) {
	pkt := buf[headroom : headroom+n]
	if len(pkt) < wire.IPv4HeaderLen || pkt[0]>>4 != 4 || [4]byte(pkt[12:16]) != t.session {
		t.m.drop("NotFromSession") // IPv6, or a source the UPF would not accept
		return
	}
	_, s := st.classifier.Classify(pkt)
	if s.NeedsSequence() {
		t.upSeq++
		if t.upSeq == 0 {
			t.upSeq = 1
		}
	}
	p3, pn := t.paths()
	first, second := steer.Choose(s, p3, pn, contract.AutonomousShare(t.share.Load()), t.upSeq)
	if e := t.exp; e.SwitchEvery > 0 && second == contract.AccessNone && p3.RTT != 0 && pn.RTT != 0 {
		first = contract.AccessNon3GPP
		if t.expCount/e.SwitchEvery%2 == 1 {
			first = contract.Access3GPP
		}
		t.expCount++
	}
	if first == contract.AccessNone {
		t.m.drop("NoPath")
		return
	}
	h := wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Length: uint16(n)}
	if !s.Spreads() && !t.exp.NoMarks {
		var timeout time.Duration
		if l := t.switcher.Leg(); l != contract.AccessNone && l != first {
			timeout = t.reorderTimeout(first) // fixed at the switch; ignored otherwise
		}
		d := t.switcher.Next(now, first, timeout)
		if d.ExPath != contract.AccessNone {
			t.sendMarker(d.ExPath, d.MarkerMarks)
		}
		h.Marks, h.Seq = d.Marks, d.Seq
	}
	h.Put(buf[headroom-wire.HeaderLen : headroom])
	frame := buf[headroom-wire.HeaderLen : headroom+n]
	t.sendOn(now, t.legs[first], frame, splits(s) && !steer.PureACK(pkt), true)
	t.legs[first].traffic()
	if second != contract.AccessNone {
		t.gso.flush() // redundant copies: the second leg's copy goes right after the first
		t.sendOn(now, t.legs[second], frame, false, false)
		t.legs[second].traffic()
	}
}

// reorderTimeout is how long the UPF should hold packets after a switch to leg to: the old
// leg's RTT minus the new one's, plus a margin for their variation.
func (t *Tunnel) reorderTimeout(to contract.Access) time.Duration {
	from := t.legs[to.Other()]
	l := t.legs[to]
	if from == nil || l == nil {
		return steer.ReorderTimeout(0, 0, 0)
	}
	fromRTT, fromVar := from.rtt()
	toRTT, toVar := l.rtt()
	return steer.ReorderTimeout(fromRTT, toRTT, max(fromVar, toVar))
}

// sendMarker sends the EX-PATH marker on the leg the uplink left: DATA, EX_PATH with the new
// epoch, no payload, the session address in seq.
func (t *Tunnel) sendMarker(on contract.Access, marks wire.Marks) {
	l := t.legs[on]
	if l == nil {
		return
	}
	t.gso.flush() // the marker follows every data packet sent on the old leg
	var b [wire.HeaderLen]byte
	wire.Header{Type: wire.TypeData, Marks: marks, Seq: addrSeq(t.session)}.Put(b[:])
	t.sendOn(time.Now(), l, b[:], false, false) // after what the leg's delay line holds
	t.m.markers.Inc()
}

func addrSeq(a [4]byte) uint32 {
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
}

// sendControl sends a control message on leg on.
func (t *Tunnel) sendControl(on contract.Access, typ wire.Type, c wire.Control) {
	l := t.legs[on]
	if l == nil {
		return
	}
	var b [wire.HeaderLen + wire.ControlLen]byte
	wire.Header{Type: typ, Length: wire.ControlLen}.Put(b[:wire.HeaderLen])
	c.Session = t.session
	c.Put(b[wire.HeaderLen:])
	l.send(b[:])
}

// received handles one datagram a leg read from the UPF, with its receive time; it returns
// whether p was kept (queued for the TUN or handed to the reorder buffer, which free it), in
// which case the reader takes a fresh buffer.
func (t *Tunnel) received(l *leg, p *packet, arrived stamp) (kept bool) {
	r := parseDownlink(p.buf[p.off:p.off+p.n], t.session, l.access)
	switch r.kind {
	case rxProbeReply:
		l.reply(r.control, arrived.time())
		return false
	case rxDrop:
		t.m.drop(r.reason)
		return false
	}
	l.m.rxPackets.Inc()
	l.m.rxBytes.Add(float64(len(r.payload)))
	l.carried.Add(uint64(len(r.payload)))
	l.traffic()
	p.off += wire.HeaderLen
	p.n = len(r.payload)
	t.rx.Lock()
	if r.header.Seq == 0 { // unsequenced: straight to the TUN queue
		t.queueTUNLocked(p)
		t.rx.Unlock()
		return true
	}
	// From here the packet is the reorder buffer's: held, delivered or dropped by it.
	wasEmpty := t.reorder.Len() == 0
	t.reorder.PushFrom(time.Now(), int(l.access), r.header.Seq, p)
	holding := t.reorder.Len() > 0
	t.rx.Unlock()
	if wasEmpty && holding {
		t.kick()
	}
	return true
}

// deliver queues a packet the reorder buffer releases in order (called under rx).
func (t *Tunnel) deliver(p *packet) { t.queueTUNLocked(p) }

func (t *Tunnel) release(p *packet) { t.pool.Put(p) }

// queueTUNLocked queues one in-order user packet for the TUN; the queue is written by
// flushTUN at the end of each leg read batch and timer round, so that runs of TCP segments
// reach the kernel coalesced.
func (t *Tunnel) queueTUNLocked(p *packet) {
	t.pending = append(t.pending, p.buf[:p.off+p.n])
	t.held = append(t.held, p)
	if len(t.pending) == cap(t.pending) && len(t.pending) >= 2*rxBatch {
		t.flushTUNLocked() // a burst released from the reorder buffer
	}
}

// flushTUN writes the queued packets.
func (t *Tunnel) flushTUN() {
	t.rx.Lock()
	t.flushTUNLocked()
	t.rx.Unlock()
}

func (t *Tunnel) flushTUNLocked() {
	if len(t.pending) == 0 {
		return
	}
	if lost, _ := t.dev.WriteCoalesced(t.pending, headroom+wire.HeaderLen); lost > 0 && !t.closed.Load() {
		t.m.dropN("TUNWrite", lost)
	}
	for i, p := range t.held {
		t.release(p)
		t.held[i], t.pending[i] = nil, nil
	}
	t.pending, t.held = t.pending[:0], t.held[:0]
}

func (t *Tunnel) kick() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// timers runs probes, probe timeouts and reorder timeouts.
func (t *Tunnel) timers() {
	defer t.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-timer.C:
		case <-t.wake:
		}
		now := time.Now()
		next := now.Add(maxTimerSleep)
		for _, l := range t.legs {
			if l != nil {
				if d := l.tick(now); !d.IsZero() && d.Before(next) {
					next = d
				}
			}
		}
		t.rx.Lock()
		t.adaptReorderLocked(now)
		t.reorder.Expire(now)
		if d := t.reorder.Deadline(); !d.IsZero() && d.Before(next) {
			next = d
		}
		stats := t.reorder.Stats()
		t.flushTUNLocked()
		t.rx.Unlock()
		t.m.reorderStats(stats)
		rearm(timer, next)
	}
}

// rearm sets timer to fire at next, dropping a firing not yet received.
func rearm(timer *time.Timer, next time.Time) {
	if !timer.Stop() {
		select {
		case <-timer.C:
		default:
		}
	}
	timer.Reset(max(time.Until(next), 0))
}

// adaptReorderLocked sizes the downlink reorder buffer to the legs (issue 31): its timeout
// from their RTTs and the skew it measured, its window from that timeout and the arrival rate.
func (t *Tunnel) adaptReorderLocked(now time.Time) {
	timeout := steer.AdaptiveTimeout(t.bufferTimeout(), t.reorder.Skew(now))
	t.reorder.SetTimeout(timeout)
	if dt := now.Sub(t.rateAt); dt >= rateInterval {
		delivered := t.reorder.Stats().Delivered
		if !t.rateAt.IsZero() {
			t.pps = max(float64(delivered-t.rateDelivered)/dt.Seconds(), t.pps*7/8)
		}
		t.rateAt, t.rateDelivered = now, delivered
	}
	t.reorder.SetWindow(steer.ReorderWindow(t.pps, timeout))
}

// bufferTimeout is the downlink reorder timeout from both legs' RTTs and their variation.
func (t *Tunnel) bufferTimeout() time.Duration {
	var r [3]time.Duration
	var v [3]time.Duration
	for a, l := range t.legs {
		if l != nil {
			r[a], v[a] = l.rtt()
		}
	}
	return steer.BufferTimeout(r[contract.Access3GPP], r[contract.AccessNon3GPP], v[contract.Access3GPP], v[contract.AccessNon3GPP])
}

// Legs returns the legs' states for the status.
func (t *Tunnel) Legs() []LegView {
	var out []LegView
	for _, l := range t.legs {
		if l != nil {
			out = append(out, l.view())
		}
	}
	return out
}

// Name is the TUN's name.
func (t *Tunnel) Name() string { return t.dev.Name() }

// LinkChanged re-reads the legs' interfaces after a netlink event.
func (t *Tunnel) LinkChanged() {
	for _, l := range t.legs {
		if l != nil {
			l.refresh()
		}
	}
	t.kick()
}

// upfAddr is the UPF's Junction endpoint; it never changes for a tunnel (sameTunnel), so the
// data path reads it without the config, which Update replaces under the agent's lock.
func (t *Tunnel) upfAddr() netip.AddrPort { return t.upf }
