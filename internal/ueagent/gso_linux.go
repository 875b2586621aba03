package ueagent

// Uplink batching with UDP GSO (UDP_SEGMENT): the segments of one TSO super-packet from the TUN
// leave on a leg in one sendmsg, each its own datagram with its own Junction header, as if sent
// one by one. The kernel cuts the buffer every `segment` bytes; every frame but the last of a
// batch must have that size.

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// maxGSOSegments is the kernel's UDP_MAX_SEGMENTS on the oldest kernels with UDP GSO (4.18).
	maxGSOSegments = 64
	// maxGSOBytes keeps one sendmsg under the 64 KiB IP datagram limit with room for headers.
	maxGSOBytes = 65000
)

// gsoBatch collects same-sized frames for one leg; owned by the TUN reader.
type gsoBatch struct {
	leg     *leg
	buf     []byte
	segment int  // the size of every frame but the last
	n       int  // frames in buf
	closed  bool // a shorter frame ended the batch
	oob     [unix.SizeofCmsghdr + 8]byte
}

// add appends frame for leg l, sending what was collected first if frame does not fit.
func (b *gsoBatch) add(l *leg, frame []byte) {
	if b.n > 0 && (l != b.leg || b.closed || len(frame) > b.segment || b.n == maxGSOSegments || len(b.buf)+len(frame) > maxGSOBytes) {
		b.flush()
	}
	if b.n == 0 {
		b.leg, b.segment, b.closed = l, len(frame), false
		b.buf = b.buf[:0]
	}
	b.buf = append(b.buf, frame...)
	b.n++
	if len(frame) < b.segment {
		b.closed = true
	}
}

// flush sends what was collected.
func (b *gsoBatch) flush() {
	switch {
	case b.n == 0:
		return
	case b.n == 1 || !b.leg.gsoOK.Load():
		for off := 0; off < len(b.buf); off += b.segment {
			b.leg.send(b.buf[off:min(off+b.segment, len(b.buf))])
		}
	default:
		b.leg.sendGSO(b.buf, b.segment, b.n, b.oob[:])
	}
	b.n = 0
}

// sendGSO writes frames of size segment (the last may be shorter) as separate datagrams in one
// call. A kernel or socket that refuses UDP_SEGMENT turns GSO off for the leg, and the frames go
// one by one.
func (l *leg) sendGSO(buf []byte, segment, n int, oob []byte) {
	c := l.conn.Load()
	if c == nil {
		l.m.txErrors.Add(float64(n))
		return
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], uint16(segment))
	_, _, err := c.WriteMsgUDPAddrPort(buf, oob[:unix.CmsgSpace(2)], netip.AddrPort{}) // connected: to the UPF
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) && (errno == unix.EIO || errno == unix.EINVAL || errno == unix.ENOPROTOOPT) {
			l.t.log.Info("UDP GSO refused; the leg sends one datagram per call", "access", l.access, "err", err)
			l.gsoOK.Store(false)
			for off := 0; off < len(buf); off += segment {
				l.send(buf[off:min(off+segment, len(buf))])
			}
			return
		}
		l.m.txErrors.Add(float64(n))
		return
	}
	l.m.txPackets.Add(float64(n))
	l.m.txBytes.Add(float64(len(buf)))
	l.carried.Add(uint64(len(buf)))
}
