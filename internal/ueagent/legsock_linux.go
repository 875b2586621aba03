package ueagent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/internal/wire"
)

// listenLeg opens a leg's UDP socket: bound to the leg's UE address and the Junction port, and
// to the interface that holds the address, so that the leg's packets leave through that access
// whatever the main routing table prefers for the UPF's address.
func listenLeg(ns string, local netip.Addr, iface string) (conn *net.UDPConn, err error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
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
	}}
	var pc net.PacketConn
	err = netnsexec.Do(ns, func() (err error) {
		pc, err = lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(local, wire.JunctionPort).String())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("leg socket %s:%d on %s: %w", local, wire.JunctionPort, iface, err)
	}
	conn = pc.(*net.UDPConn)
	// Bursts from the UPF arrive faster than one reader drains them at small intervals.
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	return conn, nil
}
