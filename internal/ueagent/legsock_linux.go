package ueagent

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/internal/wire"
)

// dialLeg opens a leg's UDP socket: bound to the leg's UE address and the Junction port, and
// to the interface that holds the address, so that the leg's packets leave through that access
// whatever the main routing table prefers for the UPF's address; and connected to the UPF's
// Junction endpoint, which never changes for a tunnel. Connected, the socket takes only the
// UPF's datagrams (the kernel drops anyone else's before the agent reads them), a received
// datagram finds the socket and its route without a routing lookup (UDP early demux: the
// lookup through the agent's policy rules was 6% of all CPU in a download through the
// software UPF, perf in bench-path), and a send reuses the socket's cached route.
func dialLeg(ns string, local netip.Addr, iface string, upf netip.AddrPort) (conn *net.UDPConn, err error) {
	d := net.Dialer{
		LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, wire.JunctionPort)),
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				if iface != "" {
					serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, iface)
				}
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	var c net.Conn
	err = netnsexec.Do(ns, func() (err error) {
		c, err = d.Dial("udp4", upf.String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("leg socket %s:%d on %s to %s: %w", local, wire.JunctionPort, iface, upf, err)
	}
	conn = c.(*net.UDPConn)
	// Bursts from the UPF arrive faster than one reader drains them at small intervals.
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	return conn, nil
}

// batchReader reads up to rxBatch datagrams per system call (recvmmsg) into the caller's
// buffers, with the times the kernel received them (SO_TIMESTAMPNS), allocating nothing per
// datagram.
//
// Why the kernel's time: a probe reply's RTT ends when the reply reached the UE, not when the
// agent read it. A busy or starved agent (or one whose CPU the hypervisor took: 30-40% of it on
// the test machines at times) reads late, and a leg's socket buffer holds up to half a second of
// a download; that lateness read as the leg's queue moved autonomous load balance's split.
type batchReader struct {
	rc    syscall.RawConn
	hdrs  [rxBatch]mmsghdr
	iovs  [rxBatch]unix.Iovec
	ctrl  [rxBatch][stampSpace]byte // each datagram's control message: its receive time
	n     int
	errno syscall.Errno
	fn    func(uintptr) bool
}

// stampSpace is the room for one SCM_TIMESTAMPNS control message: a header and a struct
// timespec, both multiples of the alignment (unix.CmsgSpace, as a constant).
const stampSpace = unix.SizeofCmsghdr + int(unsafe.Sizeof(unix.Timespec{}))

// mmsghdr is struct mmsghdr: a msghdr and the length received.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

func newBatchReader(c *net.UDPConn) (*batchReader, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("leg socket: receive timestamps (SO_TIMESTAMPNS): %w", serr)
	}
	r := &batchReader{rc: rc}
	for i := range r.hdrs {
		h := &r.hdrs[i].hdr
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		h.Control = &r.ctrl[i][0]
	}
	r.fn = r.recvmmsg
	return r, nil
}

func (r *batchReader) recvmmsg(fd uintptr) bool {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false // wait for the poller
	}
	r.n, r.errno = int(n), e
	return true
}

// read fills bufs[i] (at most rxBatch) and returns how many datagrams arrived.
func (r *batchReader) read(bufs [][]byte) (int, error) {
	for i, b := range bufs[:min(len(bufs), rxBatch)] {
		r.iovs[i].Base = &b[0]
		r.iovs[i].SetLen(len(b))
		r.hdrs[i].hdr.SetControllen(stampSpace)
		r.hdrs[i].hdr.Flags = 0
	}
	if err := r.rc.Read(r.fn); err != nil {
		return 0, err
	}
	if r.errno != 0 {
		return 0, r.errno
	}
	return r.n, nil
}

// stamp is one datagram's receive time, still in the reader's control buffer: read only for
// the datagrams that need it (probe replies), not on every data packet's path.
type stamp struct {
	r *batchReader
	i int
}

// time is when the kernel received the datagram, or the zero time if it carries no receive time.
func (s stamp) time() time.Time { return s.r.arrival(s.i) }

// arrival is when the kernel received the i-th datagram, or the zero time if the datagram
// carries no receive time.
func (r *batchReader) arrival(i int) time.Time {
	h := &r.hdrs[i].hdr
	if int(h.Controllen) < stampSpace {
		return time.Time{}
	}
	c := (*unix.Cmsghdr)(unsafe.Pointer(&r.ctrl[i][0]))
	if c.Level != unix.SOL_SOCKET || c.Type != unix.SCM_TIMESTAMPNS {
		return time.Time{}
	}
	ts := (*unix.Timespec)(unsafe.Pointer(&r.ctrl[i][unix.SizeofCmsghdr]))
	return time.Unix(ts.Unix())
}

// datagram is the i-th datagram's length and whether it was cut to fit its buffer.
func (r *batchReader) datagram(i int) (n int, truncated bool) {
	return int(r.hdrs[i].n), r.hdrs[i].hdr.Flags&unix.MSG_TRUNC != 0
}
