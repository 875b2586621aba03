package linkem

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/netnsexec"
)

const (
	maxFrame = 9216 + 14
	// inFlight bounds the frames one direction holds between admission and delivery: a
	// bandwidth-delay product of 1 Gbit/s x 100 ms in full-size frames.
	inFlight = 8192
)

// Link bridges interfaces A and B of a network namespace frame by frame: what arrives on A
// leaves on B after AtoB, what arrives on B leaves on A after BtoA. The interfaces must have
// their offloads off (ethtool -K ... tso off gso off gro off): a Shaper counts real frames.
type Link struct {
	a, b   *rawPort
	wg     sync.WaitGroup
	closed chan struct{}
}

type rawPort struct {
	name string
	f    *os.File
	rc   syscall.RawConn
}

type frame struct {
	buf     []byte
	deliver time.Time
}

// Open starts bridging ifA and ifB in namespace ns ("" the process's).
func Open(ns, ifA, ifB string, aToB, bToA *Shaper) (*Link, error) {
	l := &Link{closed: make(chan struct{})}
	var err error
	if err = netnsexec.Do(ns, func() error {
		if l.a, err = openRaw(ifA); err != nil {
			return err
		}
		l.b, err = openRaw(ifB)
		return err
	}); err != nil {
		l.Close()
		return nil, err
	}
	l.direction(l.a, l.b, aToB)
	l.direction(l.b, l.a, bToA)
	return l, nil
}

func openRaw(name string) (*rawPort, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("linkem: interface %s: %w", name, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("linkem: raw socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("linkem: bind %s: %w", name, err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("linkem: promiscuous %s: %w", name, err)
	}
	// Our own transmissions must not come back as arrivals.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("linkem: PACKET_IGNORE_OUTGOING on %s: %w", name, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
	f := os.NewFile(uintptr(fd), "packet:"+name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &rawPort{name: name, f: f, rc: rc}, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// direction runs one way: a reader that admits frames and a writer that sends them when due.
func (l *Link) direction(in, out *rawPort, s *Shaper) {
	q := make(chan frame, inFlight)
	free := make(chan []byte, inFlight+1)
	for range inFlight + 1 {
		free <- make([]byte, maxFrame)
	}
	l.wg.Add(2)
	go func() { // reader
		defer l.wg.Done()
		defer close(q)
		for {
			var buf []byte
			select {
			case buf = <-free:
			case <-l.closed:
				return
			}
			n, err := in.f.Read(buf)
			if err != nil {
				free <- buf
				if errors.Is(err, os.ErrClosed) {
					return
				}
				// ENETDOWN while an interface is down (a lost carrier): keep reading.
				select {
				case <-l.closed:
					return
				case <-time.After(time.Millisecond):
				}
				continue
			}
			deliver, drop := s.Admit(time.Now(), n)
			if drop != "" {
				free <- buf
				continue
			}
			select {
			case q <- frame{buf: buf[:n], deliver: deliver}:
			default:
				free <- buf // more in flight than any emulated path holds
			}
		}
	}()
	go func() { // writer
		defer l.wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for f := range q {
			if d := time.Until(f.deliver); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-l.closed:
					return
				}
			}
			out.f.Write(f.buf) // a full socket buffer drops the frame, as a NIC would
			free <- f.buf[:cap(f.buf)]
		}
	}()
}

// Close stops bridging.
func (l *Link) Close() error {
	select {
	case <-l.closed:
		return nil
	default:
	}
	close(l.closed)
	var errs []error
	for _, p := range []*rawPort{l.a, l.b} {
		if p != nil {
			errs = append(errs, p.f.Close())
		}
	}
	l.wg.Wait()
	return errors.Join(errs...)
}
