// Package ports connects the software UPF's data plane to Linux network interfaces: one socket
// per P4 port, an AF_XDP socket fed by an XDP program on the interface (xdp_linux.go) or a raw
// AF_PACKET socket in promiscuous mode (ports_linux.go), read in batches by one goroutine per
// port (per queue on AF_XDP) and written in batches. A mapping
// `-i 1@veth0 -i 2@veth1` names the interface of each port, as on BMv2; Kind chooses the
// socket, and KindAuto takes AF_XDP where it works on the interface and AF_PACKET elsewhere.
//
// A frame's way: a batch read into pool buffers at dataplane.Headroom (AF_PACKET) or lent where
// the kernel wrote it (AF_XDP's UMEM) ─> Processor.Process ─> frames grouped by egress port ─> a
// batch written on that port's socket ─> buffers back to the pool or to the AF_XDP socket.
// Either kind gives the pipeline the frame as it was on the wire, VLAN tag included.
//
// Interfaces facing the software UPF should have offloads off (TSO/GSO/GRO and TX checksum;
// `ethtool -K IFACE tso off gso off gro off tx off` on the peers), as with BMv2: an AF_PACKET
// socket sees the kernel's unsegmented and partially checksummed packets otherwise. The UPF's
// own interfaces decide how it sends: where one has tx-udp-segmentation on, runs of one tunnel's
// datagrams leave as one UDP GSO frame (gso_linux.go); where it has tx-tcp-segmentation on, runs
// of one flow's TCP segments as one TSO frame (tso_linux.go); else every frame as the pipeline
// made it.
package ports

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
)

// Tuning constants.
const (
	// BatchSize is how many frames one recvmmsg/sendmmsg moves: enough to amortize the system
	// call and the pipeline's read lock, small enough to keep a batch in cache.
	BatchSize = 64
	// MaxPort is the largest P4 port number (ports are bit<9>).
	MaxPort = 511
	// MaxRealtimePriority is the highest SCHED_FIFO priority Linux gives a thread.
	MaxRealtimePriority = 99
)

// CheckRealtimePriority says whether prio is a priority SetRealtimePriority takes: 0 (off) or a
// SCHED_FIFO priority.
func CheckRealtimePriority(prio int) error {
	if prio < 0 || prio > MaxRealtimePriority {
		return fmt.Errorf("real-time priority %d: SCHED_FIFO priorities are 1..%d (0: off)", prio, MaxRealtimePriority)
	}
	return nil
}

// Mapping binds a P4 port number to a Linux interface.
type Mapping struct {
	Port  uint32
	Iface string
}

func (m Mapping) String() string { return fmt.Sprintf("%d@%s", m.Port, m.Iface) }

// ParseMapping parses "PORT@IFACE", as BMv2's -i.
func ParseMapping(s string) (Mapping, error) {
	num, iface, ok := strings.Cut(s, "@")
	if !ok || num == "" || iface == "" {
		return Mapping{}, fmt.Errorf("port mapping %q: want PORT@IFACE, e.g. 1@veth0", s)
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || n > MaxPort {
		return Mapping{}, fmt.Errorf("port mapping %q: port must be a number 0..%d", s, MaxPort)
	}
	return Mapping{Port: uint32(n), Iface: iface}, nil
}

// Kind is the kind of socket behind the ports.
type Kind int

const (
	// KindAuto is AF_XDP on each interface where the XDP program attaches and a socket binds,
	// AF_PACKET on the others.
	KindAuto Kind = iota
	// KindXDP is AF_XDP on every port; Open fails where it cannot be had.
	KindXDP
	// KindPacket is AF_PACKET on every port.
	KindPacket
)

var kindNames = [...]string{KindAuto: "auto", KindXDP: "xdp", KindPacket: "packet"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// MarshalText and UnmarshalText make a Kind a flag value (auto, xdp, packet).
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if string(b) == n {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("port kind %q: want auto, xdp or packet", b)
}

// Processor is the data plane as the ports see it (dataplane.Pipeline).
type Processor interface {
	Process(in, out []*dataplane.Packet) []*dataplane.Packet
}

// PortStats counts one port's traffic since Open.
type PortStats struct {
	Port               uint32
	Iface              string
	Kind               Kind   // KindXDP or KindPacket: what the port runs on
	Mode               string // for AF_XDP, how: "driver" or "generic" XDP, "zero-copy" or "copy"
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	RxTruncated        uint64 // frames longer than dataplane.MaxFrame or cut inside their VLAN tag, dropped
	TxErrors           uint64 // frames the kernel refused (e.g. longer than the MTU) or, on AF_XDP, that found no free chunk
	KernelDrops        uint64 // AF_XDP: frames the kernel dropped before the socket (rx ring full, no fill chunk)
}

type portCounters struct {
	rxPackets, rxBytes, txPackets, txBytes, rxTruncated, txErrors atomic.Uint64
}

func (c *portCounters) snapshot(port uint32, iface string, kind Kind, mode string) PortStats {
	return PortStats{Port: port, Iface: iface, Kind: kind, Mode: mode,
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(),
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(),
		RxTruncated: c.rxTruncated.Load(), TxErrors: c.txErrors.Load()}
}

// checkMappings refuses duplicate ports or interfaces. No mapping at all is fine: a UPF
// without ports still serves P4Runtime (control-plane tests, demos).
func checkMappings(ms []Mapping, cpuPort uint32) error {
	ports, ifaces := map[uint32]bool{}, map[string]bool{}
	for _, m := range ms {
		if m.Port > MaxPort {
			return fmt.Errorf("port %d out of range 0..%d", m.Port, MaxPort)
		}
		if m.Port == cpuPort {
			return fmt.Errorf("port %d is the CPU port", m.Port)
		}
		if ports[m.Port] {
			return fmt.Errorf("port %d mapped twice", m.Port)
		}
		if ifaces[m.Iface] {
			return fmt.Errorf("interface %q mapped twice", m.Iface)
		}
		ports[m.Port], ifaces[m.Iface] = true, true
	}
	return nil
}
