// Package tun opens Linux TUN devices (IFF_TUN, IFF_NO_PI) on Go's runtime poller, so Close
// unblocks a reader. With Config.Offload the kernel hands over TCP super-packets that Read splits
// into segments (offload_linux.go); without it, one packet per read. The batch signatures (bufs,
// sizes, offset) are wireguard-go's tun.Device's.
package tun

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Config names the device to create.
type Config struct {
	Name string // at most 15 bytes (IFNAMSIZ-1)
	MTU  int    // 0 leaves the kernel's default
	// Offload asks for TSO and checksum offload (IFF_VNET_HDR): Read may return up to
	// MaxSegments packets, and Write needs VirtioHeaderRoom bytes before offset.
	Offload bool
}

// VirtioHeaderRoom is the room an offloading device's Write needs in front of each packet.
const VirtioHeaderRoom = virtioHdrLen

// Device is an open TUN.
type Device struct {
	f       *os.File
	name    string
	offload bool
	rbuf    []byte // offload: one read, header and super-packet
	wbuf    []byte // offload: one coalesced write (WriteCoalesced's caller serializes writes)
}

// Create opens /dev/net/tun and attaches a new device named cfg.Name in the calling thread's
// network namespace, then sets its MTU. The device disappears when the Device is closed.
func Create(cfg Config) (*Device, error) {
	if len(cfg.Name) == 0 || len(cfg.Name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("TUN name %q: must be 1 to %d bytes", cfg.Name, unix.IFNAMSIZ-1)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(cfg.Name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if cfg.Offload {
		flags |= unix.IFF_VNET_HDR
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", cfg.Name, err)
	}
	if cfg.Offload {
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tunFCsum|tunFTSO4); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("TUNSETOFFLOAD %s: %w", cfg.Name, err)
		}
	}
	d := &Device{f: os.NewFile(uintptr(fd), "/dev/net/tun"), name: ifr.Name(), offload: cfg.Offload}
	if cfg.Offload {
		d.rbuf = make([]byte, virtioHdrLen+65535)
		d.wbuf = make([]byte, 0, virtioHdrLen+maxCoalesced)
		if err := setGSOMaxSegs(d.name, MaxSegments); err != nil {
			d.Close()
			return nil, err
		}
	}
	if cfg.MTU > 0 {
		if err := setMTU(d.name, cfg.MTU); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// setGSOMaxSegs caps the segments of the super-packets the kernel hands the device; it segments
// larger ones itself first.
func setGSOMaxSegs(name string, segs int) error {
	link, err := netlink.LinkByName(name)
	if err == nil {
		err = netlink.LinkSetGSOMaxSegs(link, segs)
	}
	if err != nil {
		return fmt.Errorf("gso_max_segs %d on %s: %w", segs, name, err)
	}
	return nil
}

func setMTU(name string, mtu int) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	var ifr [unix.IFNAMSIZ + 24]byte
	copy(ifr[:], name)
	*(*int32)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = int32(mtu)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s), unix.SIOCSIFMTU, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return fmt.Errorf("MTU %d on %s: %w", mtu, name, e)
	}
	return nil
}

// Name is the device's name.
func (d *Device) Name() string { return d.name }

// ErrBadPacket wraps Read's errors for one packet it could not deliver (too large for the
// buffers, a super-packet it cannot take apart): the packet is lost, the device stays usable,
// and the caller counts it and reads on. Any other error is the device's.
var ErrBadPacket = errors.New("tun: packet dropped")

// Read reads packets into bufs[i][offset:] and their lengths into sizes[i]; it returns how many:
// one, or with offloads the segments of one TCP super-packet.
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if d.offload {
		n, err := d.f.Read(d.rbuf)
		if err != nil {
			return 0, err
		}
		if n < virtioHdrLen {
			return 0, fmt.Errorf("%w: read shorter than the virtio-net header", ErrBadPacket)
		}
		var h virtioHdr
		h.decode(d.rbuf)
		return split(&h, d.rbuf[virtioHdrLen:n], bufs, sizes, offset)
	}
	n, err := d.f.Read(bufs[0][offset:])
	if err != nil {
		return 0, err
	}
	if n == len(bufs[0])-offset {
		return 0, fmt.Errorf("%w: packet larger than the read buffer", ErrBadPacket)
	}
	sizes[0] = n
	return 1, nil
}

// Write writes each bufs[i][offset:] as one packet. With offloads the VirtioHeaderRoom bytes
// before offset are overwritten with a zero header (a complete packet, no GSO).
func (d *Device) Write(bufs [][]byte, offset int) (int, error) {
	start := offset
	if d.offload {
		start -= virtioHdrLen
	}
	for i, b := range bufs {
		if d.offload {
			clear(b[start:offset])
		}
		if _, err := d.f.Write(b[start:]); err != nil {
			return i, err
		}
	}
	return len(bufs), nil
}

// Close detaches and removes the device.
func (d *Device) Close() error { return d.f.Close() }
