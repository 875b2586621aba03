package vectors

// Test-side packet I/O: one AF_PACKET socket per logical port, bound to the test's end of a
// link (a veth whose other end is the target's port). Frames go out unchanged; every frame that
// arrives is logged with its port and arrival time until the port closes.
//
//	vector frame ──send──> test iface ══ veth ══ target port
//	collector <──recv── test iface <══ veth ══ target port

import (
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// maxFrame is larger than any frame a vector sends or a target emits on a 1500-MTU link.
const maxFrame = 9216

// packetPort is one open test-side interface.
type packetPort struct {
	name  string // logical name
	iface string
	file  *os.File
	done  chan struct{}
}

// htons converts the EtherType for the socket calls, which take it in network byte order.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openPacketPort opens a raw socket on iface that sees every frame arriving on it (not the
// frames it sends), and starts logging them into c. It runs in the caller's namespace.
func openPacketPort(name, iface string, c *collector) (*packetPort, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("port %s: interface %s: %w", name, iface, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("port %s: AF_PACKET socket: %w (the runner needs CAP_NET_RAW)", name, err)
	}
	// Outgoing frames would otherwise be read back as if the target had sent them; older
	// kernels lack the option, and recvfrom's packet type filters them anyway.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("port %s: bind to %s: %w", name, iface, err)
	}
	p := &packetPort{name: name, iface: iface, file: os.NewFile(uintptr(fd), "packet:"+iface), done: make(chan struct{})}
	go p.receive(c)
	return p, nil
}

func (p *packetPort) receive(c *collector) {
	defer close(p.done)
	rc, err := p.file.SyscallConn()
	if err != nil {
		c.fail(err)
		return
	}
	buf := make([]byte, maxFrame)
	for {
		var n int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), buf, 0)
			return rerr != unix.EAGAIN
		})
		if err != nil { // closed
			return
		}
		if rerr != nil {
			c.fail(fmt.Errorf("port %s: receive: %w", p.name, rerr))
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		c.add(received{port: p.name, at: time.Now(), frame: append([]byte(nil), buf[:n]...)})
	}
}

// Send puts one frame on the wire unchanged.
func (p *packetPort) Send(frame []byte) error {
	if _, err := p.file.Write(frame); err != nil {
		return fmt.Errorf("port %s: send on %s: %w", p.name, p.iface, err)
	}
	return nil
}

func (p *packetPort) Close() {
	p.file.Close()
	<-p.done
}
