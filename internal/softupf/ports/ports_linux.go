package ports

// The ports on Linux: the Set, and its raw AF_PACKET ports (AF_XDP: xdp_linux.go).
//
// A frame's way through an AF_PACKET port: reader.run fills BatchSize pool buffers ─> recvmmsg
// (through the Go poller, so Close wakes it) ─> own transmissions (PACKET_OUTGOING) and truncated
// frames are skipped, their buffers reused ─> an 802.1Q tag the kernel took off is put back
// (PACKET_AUXDATA), so the pipeline sees the frame as it was on the wire ─>
// Processor.Process ─> Set.send groups the output by egress port ─> sendmmsg ─> buffers back
// to the pool.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
)

// mmsghdr is struct mmsghdr (not in x/sys): a msghdr and the byte count the kernel fills in.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

const ethPAll = 0x0003 // ETH_P_ALL

// socketBuffer is each port's receive and send buffer: ~4 ms of 10 Gb/s.
const socketBuffer = 4 << 20

func htons(v uint16) uint16 { return v<<8 | v>>8 }

type port struct {
	num   uint32
	iface string
	kind  Kind
	xdp   *xdpPort        // the AF_XDP program and sockets; nil on AF_PACKET
	file  *os.File        // the AF_PACKET socket; nil on AF_XDP
	rc    syscall.RawConn // file's
	gso   *gsoTX          // coalesced runs (gso_linux.go); nil where the interface cuts them
	stats portCounters
}

// Set is the open ports. It implements dataplane.Sink.
type Set struct {
	pool  *dataplane.Pool
	log   *slog.Logger
	ports []*port // in mapping order
	byNum [MaxPort + 1]*port

	txMu sync.Mutex // guards tx, used by Transmit (reorder releases, packet-outs)
	tx   *txScratch

	noPort atomic.Uint64 // frames the pipeline sent to a port with no interface, dropped

	rtPriority int // the readers' SCHED_FIFO priority; 0: the ordinary scheduler

	stop      chan struct{}  // closed by Close: readers waiting for a buffer give up
	readers   sync.WaitGroup // Run's readers, which Close waits for before unmapping AF_XDP memory
	closeOnce sync.Once
	closeErr  error
}

var _ dataplane.Sink = (*Set)(nil)

// Open opens one socket of the given kind per mapping, in the calling thread's network
// namespace, and logs which kind each port runs on. cpuPort may not be mapped.
func Open(ms []Mapping, kind Kind, cpuPort uint32, pool *dataplane.Pool, log *slog.Logger) (*Set, error) {
	if err := checkMappings(ms, cpuPort); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{pool: pool, log: log, tx: newTxScratch(), stop: make(chan struct{})}
	for _, m := range ms {
		p, err := openPort(m, kind, log)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.ports = append(s.ports, p)
		s.byNum[m.Port] = p
	}
	return s, nil
}

func openPort(m Mapping, kind Kind, log *slog.Logger) (*port, error) {
	ifi, err := net.InterfaceByName(m.Iface)
	if err != nil {
		return nil, fmt.Errorf("port %d: interface %q: %w", m.Port, m.Iface, err)
	}
	gso, err := openGSO(m.Iface, ifi.Index)
	if err != nil {
		return nil, fmt.Errorf("port %d (%s): %w", m.Port, m.Iface, err)
	}
	if kind != KindPacket {
		x, err := openXDP(ifi)
		if err == nil {
			log.Info("port open", "port", m.Port, "iface", m.Iface, "kind", KindXDP, "xdp", x.mode, "queues", len(x.queues), "udpGSO", gso != nil && gso.udp, "tcpGSO", gso != nil && gso.tcp)
			return &port{num: m.Port, iface: m.Iface, kind: KindXDP, xdp: x, gso: gso}, nil
		}
		if kind == KindXDP {
			gso.close()
			return nil, fmt.Errorf("port %d (%s): AF_XDP: %w", m.Port, m.Iface, err)
		}
		log.Info("AF_XDP not available on this interface: the port uses AF_PACKET", "port", m.Port, "iface", m.Iface, "reason", err)
	}
	p, err := openPacket(m, ifi)
	if err != nil {
		gso.close()
		return nil, err
	}
	p.gso = gso
	log.Info("port open", "port", m.Port, "iface", m.Iface, "kind", KindPacket, "udpGSO", gso != nil && gso.udp, "tcpGSO", gso != nil && gso.tcp)
	return p, nil
}

func openPacket(m Mapping, ifi *net.Interface) (*port, error) {
	// Protocol 0 until bind, so the socket sees no other interface's frames in between.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("port %d: raw socket: %w (the software UPF needs CAP_NET_RAW)", m.Port, err)
	}
	fail := func(what string, err error) (*port, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("port %d (%s): %s: %w", m.Port, m.Iface, what, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fail("promiscuous mode", err)
	}
	// The kernel takes a VLAN tag off before a packet socket reads the frame and gives it
	// beside it (tpacket_auxdata): the reader puts it back.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fail("PACKET_AUXDATA", err)
	}
	// Best effort (Linux >= 4.20): the reader also skips PACKET_OUTGOING by its address.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	// Best effort: large socket buffers absorb bursts while a reader is descheduled (the
	// FORCE variants need CAP_NET_ADMIN; without it the kernel caps at net.core.[rw]mem_max).
	for _, o := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], socketBuffer) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], socketBuffer)
		}
	}
	f := os.NewFile(uintptr(fd), "packet:"+m.Iface)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("port %d (%s): %w", m.Port, m.Iface, err)
	}
	return &port{num: m.Port, iface: m.Iface, kind: KindPacket, file: f, rc: rc}, nil
}

// close closes the port's socket (and detaches its XDP program); readers blocked on it return.
func (p *port) close() error {
	p.gso.close()
	if p.xdp != nil {
		return p.xdp.close()
	}
	return p.file.Close()
}

// Close closes every socket, waits for Run's readers and frees the AF_XDP memory. Packets
// transmitted after it are dropped.
func (s *Set) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		var errs []error
		for _, p := range s.ports {
			errs = append(errs, p.close())
		}
		s.readers.Wait()
		for _, p := range s.ports {
			if p.xdp != nil {
				p.xdp.release()
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// HasPort reports whether port is mapped.
func (s *Set) HasPort(port uint32) bool { return port <= MaxPort && s.byNum[port] != nil }

// Stats returns each port's counters, in mapping order.
func (s *Set) Stats() []PortStats {
	out := make([]PortStats, 0, len(s.ports))
	for _, p := range s.ports {
		st := p.stats.snapshot(p.num, p.iface, p.kind, "")
		if p.xdp != nil {
			st.Mode, st.KernelDrops = p.xdp.mode.String(), p.xdp.kernelDrops()
		}
		out = append(out, st)
	}
	return out
}

// NoPortDrops is how many frames the pipeline sent to a port number no interface is mapped to
// (a route naming a port this UPF was not started with); they are dropped.
func (s *Set) NoPortDrops() uint64 { return s.noPort.Load() }

// Transmit sends packets on their OutPort and returns them to the pool (dataplane.Sink).
func (s *Set) Transmit(pkts []*dataplane.Packet) {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	s.send(s.tx, pkts)
}

// SetRealtimePriority makes Run's readers run on threads of their own at SCHED_FIFO priority
// prio (1..99; 0, the default: the ordinary scheduler). Call it before Run.
//
// Why: at a light load each frame finds its reader asleep in poll(2), and under the ordinary
// scheduler the woken thread may wait for whatever runs on the core; a real-time thread takes
// the core at once; AF_PACKET readers then wait in poll(2) too (readPolled). What it gains at
// 10 kpps is in test/vectors/README.md. The price: a reader busy at line rate keeps its core
// from every ordinary thread (Linux's real-time throttling leaves them 5% by default), so give
// the UPF cores of its own. The threads need CAP_SYS_NICE.
func (s *Set) SetRealtimePriority(prio int) error {
	if err := CheckRealtimePriority(prio); err != nil {
		return err
	}
	s.rtPriority = prio
	return nil
}

// Run reads every port with one goroutine each and runs the frames through proc until ctx is
// done; then it closes the ports (Close waits for the readers). With a real-time priority set,
// a reader that cannot take it stops the others and Run returns why.
func (s *Set) Run(ctx context.Context, proc Processor) error {
	var readers []*reader
	for _, p := range s.ports {
		if p.xdp == nil {
			readers = append(readers, newReader(s, p, p.rc, nil, proc))
			continue
		}
		for _, q := range p.xdp.queues {
			readers = append(readers, newReader(s, p, nil, q, proc))
		}
	}
	errs := make([]error, len(readers))
	started := make(chan error, len(readers))
	for i, r := range readers {
		s.readers.Add(1)
		go func() {
			defer s.readers.Done()
			if s.rtPriority > 0 {
				// Never unlocked: the thread ends with the goroutine (Go parks the main thread
				// for good instead), so that no other goroutine inherits its policy.
				runtime.LockOSThread()
				attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(s.rtPriority)}
				if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
					if errors.Is(err, unix.EPERM) {
						err = fmt.Errorf("%w (needs CAP_SYS_NICE)", err)
					}
					started <- fmt.Errorf("port %d (%s): SCHED_FIFO priority %d for its reader: %w", r.p.num, r.p.iface, s.rtPriority, err)
					return
				}
			}
			started <- nil
			errs[i] = r.run()
		}()
	}
	var failed []error
	for range readers {
		if err := <-started; err != nil {
			failed = append(failed, err)
		}
	}
	if failed == nil {
		<-ctx.Done()
	}
	s.Close()
	return errors.Join(append(failed, errs...)...)
}

// reader is one port's (on AF_XDP, one queue's) receive loop and its batch state, allocated once.
type reader struct {
	s      *Set
	p      *port
	rc     syscall.RawConn // AF_PACKET
	xsk    *xsk            // the queue's socket; nil on AF_PACKET
	proc   Processor
	done   chan struct{}
	bufs   [BatchSize]*dataplane.Packet
	hdrs   [BatchSize]mmsghdr
	iovs   [BatchSize]unix.Iovec
	names  [BatchSize]unix.RawSockaddrLinklayer
	auxs   [BatchSize][auxSpace]byte
	in     []*dataplane.Packet
	out    []*dataplane.Packet
	tx     *txScratch
	n      int
	err    error
	readFn func(uintptr) bool
	// pollFn and pollClosed: readPolled's callback, built once, and whether it saw Close.
	pollFn     func(uintptr)
	pollClosed bool
}

func newReader(s *Set, p *port, rc syscall.RawConn, x *xsk, proc Processor) *reader {
	r := &reader{s: s, p: p, rc: rc, xsk: x, proc: proc, done: s.stop, tx: newTxScratch(),
		in:  make([]*dataplane.Packet, 0, BatchSize),
		out: make([]*dataplane.Packet, 0, 2*BatchSize+dataplane.DefaultMaxHeldPerUser)}
	for i := range r.hdrs {
		h := &r.hdrs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		h.Control = &r.auxs[i][0]
	}
	r.readFn, r.pollFn = r.recvmmsg, r.pollRead
	return r
}

// readPolled is an AF_PACKET reader's read at a real-time priority: it waits in poll(2) on its
// own thread, which the priority wakes at once, rather than in the Go poller, whose wake-up
// comes through an ordinary thread. Control keeps the socket open while it waits.
func (r *reader) readPolled() error {
	r.pollClosed = false
	if err := r.rc.Control(r.pollFn); err != nil {
		return err
	}
	if r.pollClosed {
		return net.ErrClosed
	}
	return nil
}

// pollRead is readPolled's wait and read on the socket fd (built once: pollFn).
func (r *reader) pollRead(fd uintptr) {
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for !r.recvmmsg(fd) {
		select {
		case <-r.done:
			r.pollClosed = true
			return
		default:
		}
		_, _ = unix.Poll(pfd[:], int(pollWait.Milliseconds()))
	}
}

// readXDP waits for frames on the rx ring and lends a batch as bufs, in poll(2) rather than
// the Go poller: the poller's epoll also listens for writability, which the kernel signals for
// every frame sent (a third of the UPF's time went to those wake-ups).
func (r *reader) readXDP() error {
	for {
		if r.n = r.xsk.receive(r.bufs[:]); r.n > 0 {
			return nil
		}
		select {
		case <-r.done:
			return net.ErrClosed
		default:
		}
		r.xsk.wait()
	}
}

func (r *reader) recvmmsg(fd uintptr) bool {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), BatchSize,
		unix.MSG_DONTWAIT, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false // wait for the poller
	}
	r.n, r.err = int(n), nil
	if e != 0 {
		r.n, r.err = 0, e
	}
	return true
}

func (r *reader) run() error {
	for {
		for i := range r.bufs {
			if r.xsk != nil {
				break // the socket lends its own frames
			}
			if r.bufs[i] == nil {
				if r.bufs[i] = r.s.pool.Get(r.done); r.bufs[i] == nil {
					r.release()
					return nil
				}
			}
			b := r.bufs[i].ReadBuffer()
			r.iovs[i].Base = &b[0]
			r.iovs[i].SetLen(len(b))
			r.hdrs[i].hdr.Namelen = unix.SizeofSockaddrLinklayer
			r.hdrs[i].hdr.SetControllen(int(auxSpace))
			r.hdrs[i].hdr.Flags = 0
		}
		var err error
		switch {
		case r.xsk != nil:
			err = r.readXDP()
		case r.s.rtPriority > 0:
			err = r.readPolled()
		default:
			err = r.rc.Read(r.readFn)
		}
		if err != nil {
			r.release()
			select {
			case <-r.done:
				return nil
			default:
				return fmt.Errorf("port %d (%s): read: %w", r.p.num, r.p.iface, err)
			}
		}
		if r.err != nil {
			r.s.log.Warn("port read failed", "port", r.p.num, "iface", r.p.iface, "err", r.err)
			continue
		}
		var in []*dataplane.Packet
		if r.xsk != nil {
			in = r.takeXDP()
		} else {
			in = r.takePacket()
		}
		r.p.stats.rxPackets.Add(uint64(len(in)))
		out := r.proc.Process(in, r.out[:0])
		r.s.send(r.tx, out)
		clear(out)
		r.out = out[:0]
	}
}

// takeXDP hands over the frames readXDP lent: they are as on the wire, tags included. A frame
// cut short inside its VLAN tag is dropped, as Linux drops it before a packet socket (or BMv2)
// sees it (skb_vlan_untag), so that every kind of port gives the pipeline the same frames.
func (r *reader) takeXDP() []*dataplane.Packet {
	in := r.in[:0]
	for i := range r.n {
		pkt := r.bufs[i]
		r.bufs[i] = nil
		if f := pkt.Frame(); len(f) < 18 && len(f) >= 14 && (f[12] == 0x81 && f[13] == 0x00 || f[12] == 0x88 && f[13] == 0xa8) {
			r.p.stats.rxTruncated.Add(1)
			r.s.pool.Put(pkt) // back to the socket
			continue
		}
		pkt.InPort = r.p.num
		r.p.stats.rxBytes.Add(uint64(len(pkt.Frame())))
		in = append(in, pkt)
	}
	return in
}

// takePacket hands over the frames recvmmsg read, without our own transmissions and truncated
// frames, with the VLAN tag the kernel took off put back.
func (r *reader) takePacket() []*dataplane.Packet {
	in := r.in[:0]
	for i := range r.n {
		if r.names[i].Pkttype == unix.PACKET_OUTGOING {
			continue // our own transmission; the buffer is reused
		}
		n := int(r.hdrs[i].n)
		if r.hdrs[i].hdr.Flags&unix.MSG_TRUNC != 0 || n > dataplane.MaxFrame {
			r.p.stats.rxTruncated.Add(1)
			continue
		}
		pkt := r.bufs[i]
		pkt.SetRead(n)
		if tpid, tci, tagged := vlanTag(r.auxs[i][:r.hdrs[i].hdr.Controllen]); tagged {
			if !pkt.InsertVLAN(tpid, tci) {
				r.p.stats.rxTruncated.Add(1)
				continue
			}
			n += 4
		}
		r.bufs[i] = nil
		pkt.InPort = r.p.num
		r.p.stats.rxBytes.Add(uint64(n))
		in = append(in, pkt)
	}
	return in
}

// auxSpace holds the one control message a port's socket gets: PACKET_AUXDATA, its header and
// a tpacket_auxdata, aligned (CMSG_SPACE; checked in the tests against unix.CmsgSpace).
const auxSpace = unix.SizeofCmsghdr + (unsafe.Sizeof(unix.TpacketAuxdata{})+7)&^7

// vlanTag reads the VLAN tag the kernel took off a frame from its PACKET_AUXDATA control
// message: TPID (802.1Q unless the kernel says otherwise) and TCI.
func vlanTag(ctrl []byte) (tpid, tci uint16, ok bool) {
	if len(ctrl) < unix.CmsgLen(int(unsafe.Sizeof(unix.TpacketAuxdata{}))) {
		return 0, 0, false
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
	if h.Level != unix.SOL_PACKET || h.Type != unix.PACKET_AUXDATA {
		return 0, 0, false
	}
	aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)]))
	if aux.Status&unix.TP_STATUS_VLAN_VALID == 0 {
		return 0, 0, false
	}
	tpid = 0x8100
	if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
		tpid = aux.Vlan_tpid
	}
	return tpid, aux.Vlan_tci, true
}

// release returns the reader's unused buffers.
func (r *reader) release() {
	for i, b := range r.bufs {
		if b != nil {
			r.s.pool.Put(b)
			r.bufs[i] = nil
		}
	}
}

// txScratch is one sender's sendmmsg state, allocated once.
type txScratch struct {
	pkts    []*dataplane.Packet
	hdrs    []mmsghdr
	iovs    []unix.Iovec
	from, n int
	sent    int
	err     error
	writeFn func(uintptr) bool
	gso     *gsoScratch
}

func newTxScratch() *txScratch {
	t := &txScratch{gso: newGSOScratch()}
	t.writeFn = t.sendmmsg
	return t
}

func (t *txScratch) sendmmsg(fd uintptr) bool {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&t.hdrs[t.from])),
		uintptr(t.n-t.from), unix.MSG_DONTWAIT, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	t.sent, t.err = int(n), nil
	if e != 0 {
		t.sent, t.err = 0, e
	}
	return true
}

// send transmits pkts grouped by OutPort (order kept within a port) and returns them to the
// pool. It sets the entries of pkts to nil as it takes them.
func (s *Set) send(t *txScratch, pkts []*dataplane.Packet) {
	for i, first := range pkts {
		if first == nil {
			continue
		}
		port := first.OutPort
		t.pkts = t.pkts[:0]
		for j := i; j < len(pkts); j++ {
			if pkts[j] != nil && pkts[j].OutPort == port {
				t.pkts = append(t.pkts, pkts[j])
				pkts[j] = nil
			}
		}
		s.sendPort(t, port)
		for k, pkt := range t.pkts {
			s.pool.Put(pkt)
			t.pkts[k] = nil
		}
	}
}

func (s *Set) sendPort(t *txScratch, num uint32) {
	var p *port
	if num <= MaxPort {
		p = s.byNum[num]
	}
	if p == nil {
		s.noPort.Add(uint64(len(t.pkts))) // dropped, as on a switch; counted and logged at exit
		return
	}
	if p.gso == nil {
		s.sendFrames(t, p, t.pkts)
		return
	}
	// Runs of one tunnel's datagrams (gso_linux.go) or of one TCP flow's segments (tso_linux.go)
	// leave as one frame each; the frames between them, in order, as they are.
	pkts, single := t.pkts, 0
	for i := 0; i < len(pkts); {
		n, tcp := 1, false
		if p.gso.udp {
			n = gsoRun(pkts[i:])
		}
		if n == 1 && p.gso.tcp {
			n, tcp = tcpRun(pkts[i:]), true
		}
		if n == 1 {
			i++
			continue
		}
		if single < i {
			s.sendFrames(t, p, pkts[single:i])
		}
		var err error
		if tcp {
			err = t.gso.sendTCP(p.gso, pkts[i:i+n])
		} else {
			err = t.gso.send(p.gso, pkts[i:i+n])
		}
		if err != nil {
			// E.g. the interface's offload turned off since the port opened: the kernel
			// does not cut a frame it sends past the qdisc. The frames go as they are.
			s.log.Debug("GSO write failed: frame by frame", "port", num, "iface", p.iface, "err", err, "frames", n)
			s.sendFrames(t, p, pkts[i:i+n])
		} else {
			var bytes uint64
			for _, pkt := range pkts[i : i+n] {
				bytes += uint64(len(pkt.Frame()))
			}
			p.stats.txPackets.Add(uint64(n))
			p.stats.txBytes.Add(bytes)
		}
		i += n
		single = i
	}
	if single < len(pkts) {
		s.sendFrames(t, p, pkts[single:])
	}
}

// sendFrames writes pkts on p's socket, each frame as it is.
func (s *Set) sendFrames(t *txScratch, p *port, pkts []*dataplane.Packet) {
	if p.xdp != nil {
		sent, bytes := p.xdp.queues[0].send(pkts)
		p.stats.txPackets.Add(uint64(sent))
		p.stats.txBytes.Add(bytes)
		p.stats.txErrors.Add(uint64(len(pkts) - sent))
		return
	}
	n := len(pkts)
	if cap(t.hdrs) < n {
		t.hdrs = make([]mmsghdr, n)
		t.iovs = make([]unix.Iovec, n)
	}
	t.hdrs, t.iovs = t.hdrs[:n], t.iovs[:n]
	var bytes uint64
	for k, pkt := range pkts {
		f := pkt.Frame()
		t.iovs[k].Base = unsafe.SliceData(f)
		t.iovs[k].SetLen(len(f))
		t.hdrs[k] = mmsghdr{}
		t.hdrs[k].hdr.Iov = &t.iovs[k]
		t.hdrs[k].hdr.SetIovlen(1)
		bytes += uint64(len(f))
	}
	t.from, t.n = 0, n
	failed := 0
	for t.from < t.n {
		if err := p.rc.Write(t.writeFn); err != nil {
			// Closed: what is left did not go out.
			p.stats.txErrors.Add(uint64(t.n - t.from))
			for _, iov := range t.iovs[t.from:t.n] {
				bytes -= iov.Len
			}
			n = t.from
			break
		}
		if t.err != nil {
			// The kernel refused the frame at t.from (e.g. EMSGSIZE): skip it.
			s.log.Debug("port write failed", "port", p.num, "iface", p.iface, "err", t.err)
			p.stats.txErrors.Add(1)
			failed++
			bytes -= uint64(t.iovs[t.from].Len)
			t.from++
			continue
		}
		t.from += t.sent
	}
	p.stats.txPackets.Add(uint64(n - failed))
	p.stats.txBytes.Add(bytes)
}
