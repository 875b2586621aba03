// Package tun opens Linux TUN devices (IFF_TUN, IFF_NO_PI) on Go's runtime poller, so Close
// unblocks a reader. One packet per read and write: no virtio-net header, no TSO/GSO. The batch
// signatures (bufs, sizes, offset) match wireguard-go's tun.Device so the offload path
// (IFF_VNET_HDR, TUNSETOFFLOAD, splitting TSO super-packets) can come in without changing callers.
package tun

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Config names the device to create.
type Config struct {
	Name string // at most 15 bytes (IFNAMSIZ-1)
	MTU  int    // 0 leaves the kernel's default
}

// Device is an open TUN.
type Device struct {
	f    *os.File
	name string
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
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", cfg.Name, err)
	}
	d := &Device{f: os.NewFile(uintptr(fd), "/dev/net/tun"), name: ifr.Name()}
	if cfg.MTU > 0 {
		if err := setMTU(d.name, cfg.MTU); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
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

// Read reads one packet into bufs[0][offset:] and its length into sizes[0]; it returns the
// number of packets read (1). Packets longer than the buffer are truncated by the kernel and
// reported as an error.
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	n, err := d.f.Read(bufs[0][offset:])
	if err != nil {
		return 0, err
	}
	if n == len(bufs[0])-offset {
		return 0, errors.New("TUN packet larger than the read buffer")
	}
	sizes[0] = n
	return 1, nil
}

// Write writes each bufs[i][offset:] as one packet.
func (d *Device) Write(bufs [][]byte, offset int) (int, error) {
	for i, b := range bufs {
		if _, err := d.f.Write(b[offset:]); err != nil {
			return i, err
		}
	}
	return len(bufs), nil
}

// Close detaches and removes the device.
func (d *Device) Close() error { return d.f.Close() }
