package ports

// AF_XDP ports on Linux.
//
// An XDP program on the interface redirects every frame to the XDP socket of the receive queue
// it arrived on (an XSKMAP indexed by queue; a frame on a queue with no socket goes on to the
// kernel). Each socket has its own UMEM, one anonymous mapping of umemFrames chunks of
// frameSize bytes: the first half receives (they cycle fill ring ─> kernel ─> rx ring ─> fill
// ring), the second half sends (free list ─> tx ring ─> kernel ─> completion ring ─> free
// list). Each queue has its reader goroutine; the port sends on queue 0's socket (in copy
// mode, on a second socket that shares its queue and UMEM: xsk).
//
// A frame's way: rx ring (a batch; poll(2) waits while it is empty) ─> lent to the pipeline
// where the kernel wrote it (dataplane.Packet.Lend: the chunk's XDP_PACKET_HEADROOM in front of
// the frame is the pipeline's headroom) ─> Processor.Process ─> Set.send ─> copied into a free
// tx chunk of the egress port ─> tx ring ─> sendto kicks the kernel; the pipeline's Put gives
// the packet back (Return) and the reader puts its chunk in the fill ring before its next read.
// XDP runs before the kernel takes a VLAN tag off, so the frame is as it was on the wire.
//
// Lending saves a copy of every frame received and the pool's channel twice: in a download
// through a session, copying each frame out of the UMEM was a third of the software UPF's CPU
// (docs/ue-agent.md). It holds because a lent packet comes back in the goroutine that read
// it, before its next read (dataplane/packet.go), so the chunks need no lock.
//
// The program is attached in driver (native) mode where the driver has it (veth does), else in
// generic (skb) mode; the socket binds zero-copy where the driver offers it, else in copy mode.
// A port falls back to AF_PACKET (kind auto) when any of this fails: no XDP, no AF_XDP socket,
// or an MTU larger than a chunk.

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
)

// Tuning constants.
const (
	// frameSize is one UMEM chunk (2048 to a page): 2 KiB holds a frame of a 1,500-byte MTU.
	frameSize = 2048
	// umemFrames is the chunks per queue, half to receive and half to send: 16 MiB, 4 ms of
	// 64-byte frames at 1 Mpps on either side, to ride out a reader's descheduling.
	umemFrames = 8192
	ringSize   = umemFrames / 2 // every ring holds one half's chunks, so none overflows
	// maxXDPFrame is the longest frame a chunk receives: the chunk less the kernel's headroom.
	maxXDPFrame = frameSize - unix.XDP_PACKET_HEADROOM
	// txKicks bounds the sendto calls that push one batch out (copy mode sends 32 per call)
	// and the waits for a free tx chunk before a frame is dropped.
	txKicks = 64
	// maxQueues bounds the sockets (and UMEMs) of one port.
	maxQueues = 64
	// pollWait bounds a reader's wait in poll(2): how long Close may wait for it.
	pollWait = 50 * time.Millisecond
	// bindWait is how long a bind waits for a queue a closed socket still holds.
	bindWait = 2 * time.Second
)

// xdpMode says how a port's XDP program and socket run, for logs and stats.
type xdpMode struct {
	attach   string // "driver" or "generic"
	zeroCopy bool
}

func (m xdpMode) String() string {
	if m.zeroCopy {
		return m.attach + ", zero-copy"
	}
	return m.attach + ", copy"
}

// ring is one of a socket's four rings, mapped from the kernel.
type ring struct {
	mem                    []byte
	prod, cons             *uint32
	flags                  *uint32
	descs                  unsafe.Pointer // [ringSize]unix.XDPDesc (rx, tx) or [ringSize]uint64 (fill, completion)
	cachedProd, cachedCons uint32         // the producer's own index; the consumer's own index
}

func mapRing(fd int, pgoff int64, off unix.XDPRingOffset, descSize uintptr) (ring, error) {
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+ringSize*int(descSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, err
	}
	base := unsafe.Pointer(&mem[0])
	r := ring{mem: mem, prod: (*uint32)(unsafe.Add(base, off.Producer)), cons: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags: (*uint32)(unsafe.Add(base, off.Flags)), descs: unsafe.Add(base, off.Desc)}
	r.cachedProd, r.cachedCons = atomic.LoadUint32(r.prod), atomic.LoadUint32(r.cons)
	return r, nil
}

func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&(ringSize-1))*8))
}

func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&(ringSize-1))*unsafe.Sizeof(unix.XDPDesc{})))
}

// available is what a consumer ring (rx, completion) holds now, from index cachedCons.
func (r *ring) available() uint32 { return atomic.LoadUint32(r.prod) - r.cachedCons }

// release gives n consumed entries back to the kernel.
func (r *ring) release(n uint32) {
	r.cachedCons += n
	atomic.StoreUint32(r.cons, r.cachedCons)
}

// submit publishes a producer ring's (fill, tx) entries written up to cachedProd.
func (r *ring) submit() { atomic.StoreUint32(r.prod, r.cachedProd) }

func (r *ring) needsWakeup() bool { return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0 }

// xdpPort is one port's XDP program and its sockets, one per receive queue.
type xdpPort struct {
	mode   xdpMode
	prog   *ebpf.Program
	xsks   *ebpf.Map
	link   link.Link
	queues []*xsk
}

// xsk is one receive queue's XDP socket and its UMEM.
//
// In copy mode the port sends through a second socket on the same queue and UMEM (txfd, bound
// with XDP_SHARED_UMEM, with a tx ring and no rx ring): the kernel makes poll(2) on a copy-mode
// socket with a tx ring transmit that ring, under the socket's mutex, so the reader's poll of
// the receiving socket would take the mutex of every send on its port (a send holds it while
// veth runs the receiving namespace's stack). In a download through a session, readers spun on
// that mutex for 6% of the software UPF's CPU (perf, bench-path). The receiving socket's own tx
// ring stays empty.
type xsk struct {
	fd    int // open until release
	txfd  int // the socket sends go out on: fd in zero-copy mode; open until release
	umem  []byte
	poll  [1]unix.PollFd
	fill  ring
	rx    ring
	unmap sync.Once

	// The reader's: lent[i] is rx chunk i lent to the pipeline, returned its chunks given back
	// since the last read, out how many are lent now.
	lent     []dataplane.Packet
	returned []uint64
	out      int

	txMu   sync.Mutex // guards tx, comp, txFree, closed, and fd's closing: any goroutine may send on the port
	tx     ring
	comp   ring
	txFree []uint64 // free tx chunks
	closed bool
	drops  uint64 // the kernel's drop counters when the socket closed
}

// openXDP attaches the XDP program to ifi and binds an XDP socket to each of its receive queues.
func openXDP(ifi *net.Interface) (_ *xdpPort, err error) {
	if ifi.MTU+14+4 > maxXDPFrame { // Ethernet header and one VLAN tag
		return nil, fmt.Errorf("MTU %d: an AF_XDP chunk holds frames up to %d bytes", ifi.MTU, maxXDPFrame)
	}
	n, err := rxQueues(ifi.Index)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > maxQueues {
		return nil, fmt.Errorf("%d receive queues: AF_XDP ports take 1 to %d (ethtool -L %s combined N)", n, maxQueues, ifi.Name)
	}
	xp := &xdpPort{}
	defer func() {
		if err != nil {
			xp.close()
			xp.release()
		}
	}()
	if err := xp.attach(ifi, n); err != nil {
		return nil, err
	}
	// n is the queues the device has room for; binding past the ones in use fails (EINVAL).
	for q := range n {
		x, err := openXSK(ifi, q, &xp.mode)
		if q > 0 && errors.Is(err, errNoQueue) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("queue %d: %w", q, err)
		}
		xp.queues = append(xp.queues, x)
		if err := xp.xsks.Put(uint32(q), uint32(x.fd)); err != nil {
			return nil, fmt.Errorf("XSKMAP: %w", err)
		}
	}
	return xp, nil
}

// openXSK binds an XDP socket with its own UMEM to queue q: zero-copy where the driver offers
// it (the first queue decides, in mode), else copy mode.
func openXSK(ifi *net.Interface, q int, mode *xdpMode) (_ *xsk, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_XDP socket: %w", err)
	}
	x := &xsk{fd: fd, txfd: -1, poll: [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, txFree: make([]uint64, 0, umemFrames/2),
		lent: make([]dataplane.Packet, umemFrames/2), returned: make([]uint64, 0, umemFrames/2)}
	defer func() {
		if err != nil {
			x.close()
			x.release()
		}
	}()
	if x.umem, err = unix.Mmap(-1, 0, umemFrames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE); err != nil {
		return nil, fmt.Errorf("UMEM: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))), Len: uint64(len(x.umem)), Size: frameSize}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return nil, fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o, ringSize); err != nil {
			return nil, fmt.Errorf("ring size (option %d): %w", o, err)
		}
	}
	off, err := mmapOffsets(fd)
	if err != nil {
		return nil, err
	}
	for _, r := range []struct {
		ring  *ring
		pgoff int64
		off   unix.XDPRingOffset
		size  uintptr
	}{{&x.fill, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, 8}, {&x.comp, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, 8},
		{&x.rx, unix.XDP_PGOFF_RX_RING, off.Rx, unsafe.Sizeof(unix.XDPDesc{})}, {&x.tx, unix.XDP_PGOFF_TX_RING, off.Tx, unsafe.Sizeof(unix.XDPDesc{})}} {
		if *r.ring, err = mapRing(fd, r.pgoff, r.off, r.size); err != nil {
			return nil, fmt.Errorf("ring mmap: %w", err)
		}
	}
	// The first half of the chunks waits in the fill ring for frames; the second is free to send.
	for i := range uint64(umemFrames / 2) {
		*x.fill.addr(x.fill.cachedProd) = i * frameSize
		x.fill.cachedProd++
		x.txFree = append(x.txFree, (umemFrames/2+i)*frameSize)
	}
	x.fill.submit()

	sa := unix.SockaddrXDP{Flags: unix.XDP_USE_NEED_WAKEUP | unix.XDP_COPY, Ifindex: uint32(ifi.Index), QueueID: uint32(q)}
	if q == 0 {
		mode.zeroCopy = bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_USE_NEED_WAKEUP | unix.XDP_ZEROCOPY, Ifindex: uint32(ifi.Index)}) == nil
		if mode.zeroCopy {
			x.txfd = fd
			return x, nil
		}
	} else if mode.zeroCopy {
		sa.Flags = unix.XDP_USE_NEED_WAKEUP | unix.XDP_ZEROCOPY
	}
	if err := bind(fd, &sa); err != nil {
		if err == unix.EINVAL {
			return nil, fmt.Errorf("%w: bind XDP socket: %w", errNoQueue, err)
		}
		return nil, fmt.Errorf("bind XDP socket: %w", err)
	}
	if mode.zeroCopy {
		x.txfd = fd
		return x, nil
	}
	if err := x.openTX(ifi, q); err != nil {
		return nil, fmt.Errorf("XDP socket to send: %w", err)
	}
	return x, nil
}

// openTX opens the copy-mode socket that sends (xsk's txfd): a tx ring of its own, the
// receiving socket's UMEM and completion ring. Its ring replaces the receiving socket's.
func (x *xsk) openTX(ifi *net.Interface, q int) error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	x.txfd = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_TX_RING, ringSize); err != nil {
		return fmt.Errorf("ring size: %w", err)
	}
	off, err := mmapOffsets(fd)
	if err != nil {
		return err
	}
	tx, err := mapRing(fd, unix.XDP_PGOFF_TX_RING, off.Tx, unsafe.Sizeof(unix.XDPDesc{}))
	if err != nil {
		return fmt.Errorf("ring mmap: %w", err)
	}
	unix.Munmap(x.tx.mem)
	x.tx = tx
	return bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(ifi.Index), QueueID: uint32(q), SharedUmemFD: uint32(x.fd)})
}

// mmapOffsets is where a socket's rings lie in their mappings.
func mmapOffsets(fd int) (off unix.XDPMmapOffsets, err error) {
	offLen := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&offLen)), 0); e != 0 {
		return off, fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	return off, nil
}

// bind binds an XDP socket, waiting up to bindWait while the queue is busy: the kernel frees a
// closed socket's hold on its queue in a work queue, after close returns (a restarted UPF, a
// port set opened again).
func bind(fd int, sa *unix.SockaddrXDP) error {
	deadline := time.Now().Add(bindWait)
	for {
		err := unix.Bind(fd, sa)
		if err != unix.EBUSY || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// errNoQueue is a bind to a queue the device does not use.
var errNoQueue = errors.New("no such queue")

// attach loads the redirecting program and attaches it in driver mode, else in generic mode.
func (x *xdpPort) attach(ifi *net.Interface, queues int) (err error) {
	if x.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: "junction_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues)}); err != nil {
		return fmt.Errorf("XSKMAP: %w", err)
	}
	// return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	if x.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "junction_xsk", Type: ebpf.XDP, License: "Dual MIT/GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 16, asm.Word), // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index
			asm.LoadMapPtr(asm.R1, x.xsks.FD()),
			asm.Mov.Imm(asm.R3, 2), // XDP_PASS when the queue has no socket
			asm.FnRedirectMap.Call(),
			asm.Return(),
		},
	}); err != nil {
		return fmt.Errorf("load XDP program: %w", err)
	}
	x.mode.attach = "driver"
	x.link, err = link.AttachXDP(link.XDPOptions{Program: x.prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
	if err != nil {
		x.mode.attach = "generic"
		var gerr error
		if x.link, gerr = link.AttachXDP(link.XDPOptions{Program: x.prog, Interface: ifi.Index, Flags: link.XDPGenericMode}); gerr != nil {
			return fmt.Errorf("attach XDP program: driver mode: %v; generic mode: %w", err, gerr)
		}
	}
	return nil
}

// close detaches the program and closes the sockets; sends after it are dropped. Their memory
// stays mapped until release, once no reader touches it.
func (x *xdpPort) close() error {
	var errs []error
	for _, q := range x.queues {
		errs = append(errs, q.close())
	}
	if x.link != nil {
		errs = append(errs, x.link.Close())
	}
	if x.prog != nil {
		errs = append(errs, x.prog.Close())
	}
	if x.xsks != nil {
		errs = append(errs, x.xsks.Close())
	}
	return errors.Join(errs...)
}

func (x *xdpPort) release() {
	for _, q := range x.queues {
		q.release()
	}
}

// close makes sends drop their frames; the socket stays open for its readers until release.
func (x *xsk) close() error {
	x.txMu.Lock()
	x.closed = true
	x.txMu.Unlock()
	return nil
}

// release closes the socket and unmaps the rings and the UMEM, once no reader uses them.
func (x *xsk) release() {
	x.unmap.Do(func() {
		x.txMu.Lock()
		x.drops = x.kernelDropsLocked()
		if x.txfd >= 0 && x.txfd != x.fd {
			unix.Close(x.txfd)
		}
		unix.Close(x.fd)
		x.fd, x.txfd, x.closed = -1, -1, true
		x.txMu.Unlock()
		mems := [][]byte{x.fill.mem, x.comp.mem, x.rx.mem, x.tx.mem, x.umem}
		if x.out != 0 {
			mems = mems[:4] // a packet still lent would read unmapped memory: the UMEM stays
		}
		for _, m := range mems {
			if m != nil {
				unix.Munmap(m)
			}
		}
	})
}

// The pipeline's headroom must fit in front of a received frame in its chunk.
const _ = uint(unix.XDP_PACKET_HEADROOM - dataplane.Headroom)

// receive lends up to len(bufs) frames from the rx ring as bufs, after giving the chunks returned
// since the last call back to the fill ring; it returns how many it lent, 0 when the ring is empty.
func (x *xsk) receive(bufs []*dataplane.Packet) int {
	x.refill()
	n := min(x.rx.available(), uint32(len(bufs)))
	if n == 0 {
		return 0
	}
	for i := range n {
		d := x.rx.desc(x.rx.cachedCons + i)
		base := d.Addr &^ (frameSize - 1)
		pkt := &x.lent[base/frameSize]
		pkt.Lend(x.umem[base:base+frameSize:base+frameSize], int(d.Addr-base), int(d.Len), x)
		bufs[i] = pkt
	}
	x.rx.release(n)
	x.out += int(n)
	return int(n)
}

// Return takes a lent packet back (dataplane.Lender); its chunk goes to the fill ring at the
// reader's next read.
func (x *xsk) Return(pkt *dataplane.Packet) {
	i := (uintptr(unsafe.Pointer(pkt)) - uintptr(unsafe.Pointer(&x.lent[0]))) / unsafe.Sizeof(x.lent[0])
	x.returned = append(x.returned, uint64(i)*frameSize)
	x.out--
}

// refill puts the returned chunks in the fill ring.
func (x *xsk) refill() {
	if len(x.returned) == 0 {
		return
	}
	for _, addr := range x.returned {
		*x.fill.addr(x.fill.cachedProd) = addr
		x.fill.cachedProd++
	}
	x.returned = x.returned[:0]
	x.fill.submit()
	if x.fill.needsWakeup() { // a zero-copy driver that ran out of fill entries waits for this
		unix.Syscall6(unix.SYS_RECVFROM, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

// wait returns when the rx ring has frames, after pollWait, or on a signal. poll(2) also wakes
// a driver that waits for fill ring entries (need_wakeup).
func (x *xsk) wait() {
	_, _ = unix.Poll(x.poll[:], int(pollWait.Milliseconds())) // ppoll(2) where poll(2) is not (arm64)
}

// reapLocked moves sent chunks from the completion ring to the free list.
func (x *xsk) reapLocked() {
	n := x.comp.available()
	for i := range n {
		x.txFree = append(x.txFree, *x.comp.addr(x.comp.cachedCons + i))
	}
	x.comp.release(n)
}

// kickLocked makes the kernel send what the tx ring holds (copy mode sends in sendto).
func (x *xsk) kickLocked() {
	for range txKicks {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(x.txfd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		if atomic.LoadUint32(x.tx.cons) == x.tx.cachedProd {
			return
		}
		if e != 0 && e != unix.EAGAIN && e != unix.EBUSY && e != unix.ENOBUFS {
			return
		}
	}
}

// send queues pkts on the tx ring and kicks the kernel. It returns how many frames and bytes
// went out; the rest were dropped (too long, closed, or no tx chunk came free in time).
func (x *xsk) send(pkts []*dataplane.Packet) (sent int, bytes uint64) {
	x.txMu.Lock()
	defer x.txMu.Unlock()
	if x.closed {
		return 0, 0
	}
	x.reapLocked()
	for _, pkt := range pkts {
		f := pkt.Frame()
		if len(f) > frameSize {
			continue
		}
		for wait := 0; len(x.txFree) == 0 && wait < txKicks; wait++ {
			x.tx.submit()
			x.kickLocked()
			x.reapLocked()
			if len(x.txFree) == 0 {
				runtime.Gosched()
			}
		}
		if len(x.txFree) == 0 {
			continue
		}
		addr := x.txFree[len(x.txFree)-1]
		x.txFree = x.txFree[:len(x.txFree)-1]
		copy(x.umem[addr:addr+frameSize], f)
		*x.tx.desc(x.tx.cachedProd) = unix.XDPDesc{Addr: addr, Len: uint32(len(f))}
		x.tx.cachedProd++
		sent++
		bytes += uint64(len(f))
	}
	x.tx.submit()
	x.kickLocked()
	return sent, bytes
}

// kernelDrops is what the kernel dropped before the port's sockets.
func (x *xdpPort) kernelDrops() (n uint64) {
	for _, q := range x.queues {
		n += q.kernelDrops()
	}
	return n
}

// kernelDrops is the kernel's drop counters of the socket: rx ring full, no fill chunk.
func (x *xsk) kernelDrops() uint64 {
	x.txMu.Lock() // the socket stays open while it is held
	defer x.txMu.Unlock()
	return x.kernelDropsLocked()
}

func (x *xsk) kernelDropsLocked() uint64 {
	if x.fd < 0 {
		return x.drops
	}
	var st unix.XDPStatistics
	l := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(x.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0
	}
	return st.Rx_dropped + st.Rx_ring_full + st.Rx_fill_ring_empty_descs
}

func setsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), size, 0); e != 0 {
		return e
	}
	return nil
}

// rxQueues is how many receive queues the interface has room for (IFLA_NUM_RX_QUEUES; ethtool
// -l may set fewer in use), in the calling thread's network namespace.
func rxQueues(ifindex int) (int, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return 0, fmt.Errorf("list links: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return 0, fmt.Errorf("list links: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWLINK || len(m.Data) < syscall.SizeofIfInfomsg {
			continue
		}
		if int((*syscall.IfInfomsg)(unsafe.Pointer(&m.Data[0])).Index) != ifindex {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return 0, err
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFLA_NUM_RX_QUEUES && len(a.Value) >= 4 {
				return int(*(*uint32)(unsafe.Pointer(&a.Value[0]))), nil
			}
		}
		return 1, nil
	}
	return 0, fmt.Errorf("interface %d not found", ifindex)
}
