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
// datagram. With UDP_GRO a read may hold several datagrams of one size back to back (the last
// may be shorter): segment says their size.
//
// Why the kernel's time: a probe reply's RTT ends when the reply reached the UE, not when the
// agent read it. A busy or starved agent (or one whose CPU the hypervisor took: 30-40% of it on
// the test machines at times) reads late, and a leg's socket buffer holds up to half a second of
// a download; that lateness read as the leg's queue moved autonomous load balance's split.
type batchReader struct {
	rc    syscall.RawConn
	hdrs  [rxBatch]mmsghdr
	iovs  [rxBatch]unix.Iovec
	ctrl  [rxBatch][ctrlSpace]byte // each read's control messages: its receive time, its GRO segment size
	n     int
	errno syscall.Errno
	fn    func(uintptr) bool
}

// stampSpace is the room for one SCM_TIMESTAMPNS control message: a header and a struct
// timespec, both multiples of the alignment (unix.CmsgSpace, as a constant).
const stampSpace = unix.SizeofCmsghdr + int(unsafe.Sizeof(unix.Timespec{}))

// ctrlSpace adds the room for a UDP_GRO control message (an int, aligned).
const ctrlSpace = stampSpace + unix.SizeofCmsghdr + 8

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
		// Best effort: without it the kernel cuts a UPF's UDP GSO frame (a run of datagrams
		// the software UPF sends as one) into datagrams before the socket.
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
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
		r.hdrs[i].hdr.SetControllen(ctrlSpace)
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

// arrival is when the kernel received the i-th read, or the zero time if it carries no
// receive time.
func (r *batchReader) arrival(i int) time.Time {
	if b := r.cmsg(i, unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS); len(b) >= int(unsafe.Sizeof(unix.Timespec{})) {
		ts := (*unix.Timespec)(unsafe.Pointer(&b[0]))
		return time.Unix(ts.Unix())
	}
	return time.Time{}
}

// segment is the size of the datagrams the i-th read holds: its UDP_GRO size, or its length.
func (r *batchReader) segment(i int) int {
	if b := r.cmsg(i, unix.IPPROTO_UDP, unix.UDP_GRO); len(b) >= 4 {
		if seg := int(*(*int32)(unsafe.Pointer(&b[0]))); seg > 0 {
			return seg
		}
	}
	return int(r.hdrs[i].n)
}

// cmsg is the data of the i-th read's control message of that level and type, or nil.
func (r *batchReader) cmsg(i int, level, typ int32) []byte {
	ctrl := r.ctrl[i][:min(int(r.hdrs[i].hdr.Controllen), ctrlSpace)]
	for len(ctrl) >= unix.SizeofCmsghdr {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		l := int(c.Len)
		if l < unix.SizeofCmsghdr || l > len(ctrl) {
			return nil
		}
		if c.Level == level && c.Type == typ {
			return ctrl[unix.SizeofCmsghdr:l]
		}
		ctrl = ctrl[min(len(ctrl), (l+7)&^7):] // CMSG_ALIGN
	}
	return nil
}

// datagram is the i-th datagram's length and whether it was cut to fit its buffer.
func (r *batchReader) datagram(i int) (n int, truncated bool) {
	return int(r.hdrs[i].n), r.hdrs[i].hdr.Flags&unix.MSG_TRUNC != 0
}
