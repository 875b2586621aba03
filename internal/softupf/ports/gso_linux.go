package ports

// UDP segmentation offload on transmit: a run of frames for one port that differ only in their
// UDP payload (one tunnel's datagrams: same Ethernet and IPv4 addresses, same UDP ports, the
// payloads of one size but the last) leaves as one frame of up to 64 KiB with a virtio-net
// header asking for UDP GSO (VIRTIO_NET_HDR_GSO_UDP_L4), written on an AF_PACKET socket of its
// own. The kernel cuts it into the datagrams the pipeline made where it has to: a device with
// tx-udp-segmentation (a veth, a NIC with USO) passes it on whole, a forwarding hop or a
// receiving host's UDP socket with UDP_GRO (the UE agent's legs) takes it as one, and whatever
// else is on the way cuts it at its own transmit. Per datagram, the kernel then does its
// transmit and receive work once per run instead of once per frame: on veth that work, not the
// pipeline, bounded a download through the UPF (docs/ue-agent.md).
//
// The datagrams that come out are the pipeline's but for what segmentation writes anew in each:
// the IPv4 identification (the run's first, 0 from the pipeline, counted up) and header
// checksum, and a UDP checksum (the pipeline sends none; a checksum is computed for every
// segment). A port coalesces only while its interface has tx-udp-segmentation on (ethtool -k):
// with it off, the kernel would cut the frame before the driver anyway, and what the UPF sends
// stays byte for byte the pipeline's, as the packet vectors compare it (the test interfaces
// have their offloads off). Order is kept within a port: the frames before a run go out first,
// and both sockets skip the qdisc (AF_XDP always, this one with PACKET_QDISC_BYPASS). Past the
// qdisc the kernel cuts no frame: should the offload be turned off after the port opened, a
// run's write fails and its frames go out one by one.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/wire"
)

const (
	gsoHeaders = 14 + 20 + 8 // Ethernet, IPv4 without options, UDP
	// gsoMaxSegs bounds a run: the kernel takes at most 64 segments in one UDP GSO send
	// (UDP_MAX_SEGMENTS) and a frame of at most 64 KiB of IPv4.
	gsoMaxSegs  = 64
	gsoMaxBytes = 65535 - 20 - 8 // UDP payload of one IPv4 datagram
	vnetHdrLen  = 10             // struct virtio_net_hdr
)

// gsoTX is a port's socket for coalesced runs. Any sender may use it: the scratch is the
// sender's (gsoScratch, in txScratch).
type gsoTX struct {
	f   *os.File
	rc  syscall.RawConn
	udp bool // tx-udp-segmentation: UDP runs (gsoRun)
	tcp bool // tx-tcp-segmentation: TCP runs (tcpRun, tso_linux.go)
}

// gsoScratch is one sender's message for a run: the virtio-net header and the run's headers,
// then each frame's payload (UDP's or TCP's).
type gsoScratch struct {
	head  [vnetHdrLen + tsoMaxHeaders]byte
	iovs  [gsoMaxSegs + 1]unix.Iovec
	msg   unix.Msghdr
	errno syscall.Errno
	fn    func(uintptr) bool
}

// openGSO opens the GSO socket of interface ifname (index ifindex) if the interface has
// tx-udp-segmentation or tx-tcp-segmentation on; nil if both are off. An interface whose
// features cannot be read (ethtool's ioctl) counts as off.
func openGSO(ifname string, ifindex int) (*gsoTX, error) {
	udp, err := featureOn(ifname, "tx-udp-segmentation")
	tcp, err2 := featureOn(ifname, "tx-tcp-segmentation")
	if err != nil || err2 != nil || !udp && !tcp {
		return nil, nil //nolint:nilerr // features unknown: no offload, the ordinary path
	}
	// Protocol 0: the socket receives nothing.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("GSO socket: %w", err)
	}
	fail := func(what string, err error) (*gsoTX, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("GSO socket: %s: %w", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fail("PACKET_VNET_HDR", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return fail("PACKET_QDISC_BYPASS", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, socketBuffer)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		return fail("bind", err)
	}
	f := os.NewFile(uintptr(fd), "gso:"+ifname)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("GSO socket: %w", err)
	}
	return &gsoTX{f: f, rc: rc, udp: udp, tcp: tcp}, nil
}

func (g *gsoTX) close() {
	if g != nil {
		g.f.Close()
	}
}

// gsoRun returns how many of pkts, from the first, form one run, at least 1. A run is frames
// of IPv4/UDP (no VLAN tag, no options, not fragments, lengths as the headers say) with the
// first's Ethernet header, addresses, TOS, TTL, flags and ports, and UDP payloads of the
// first's size but the last, which may be shorter; at most gsoMaxSegs frames and 64 KiB.
func gsoRun(pkts []*dataplane.Packet) int {
	first := pkts[0].Frame()
	seg, ok := gsoPayload(first)
	if !ok || len(pkts) < 2 {
		return 1
	}
	n, total := 1, seg
	for _, p := range pkts[1:min(len(pkts), gsoMaxSegs)] {
		f := p.Frame()
		size, ok := gsoPayload(f)
		if !ok || size > seg || total+size > gsoMaxBytes ||
			!bytes.Equal(f[:14], first[:14]) || f[15] != first[15] || // Ethernet, TOS
			!bytes.Equal(f[20:24], first[20:24]) || // flags, fragment offset, TTL, protocol
			!bytes.Equal(f[26:38], first[26:38]) { // addresses, ports
			break
		}
		n, total = n+1, total+size
		if size < seg {
			break // a shorter one ends the run
		}
	}
	return n
}

// gsoPayload is the UDP payload size of f if f is a frame a run may hold.
func gsoPayload(f []byte) (int, bool) {
	if len(f) <= gsoHeaders || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[23] != unix.IPPROTO_UDP {
		return 0, false
	}
	ipLen, udpLen := int(binary.BigEndian.Uint16(f[16:])), int(binary.BigEndian.Uint16(f[38:]))
	if f[20]&0x3f != 0 || f[21] != 0 || ipLen != len(f)-14 || udpLen != ipLen-20 { // MF, offset
		return 0, false
	}
	return udpLen - 8, true
}

func newGSOScratch() *gsoScratch {
	g := &gsoScratch{}
	g.msg.Iov = &g.iovs[0]
	g.fn = g.sendmsg
	return g
}

func (g *gsoScratch) sendmsg(fd uintptr) bool {
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&g.msg)), unix.MSG_DONTWAIT)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	g.errno = e
	return true
}

// send writes run (gsoRun's) on tx as one frame.
func (g *gsoScratch) send(tx *gsoTX, run []*dataplane.Packet) error {
	first := run[0].Frame()
	seg := len(first) - gsoHeaders
	payload := 0
	for i, p := range run {
		f := p.Frame()[gsoHeaders:]
		g.iovs[i+1].Base = unsafe.SliceData(f)
		g.iovs[i+1].SetLen(len(f))
		payload += len(f)
	}
	h := g.head[:]
	clear(h[:vnetHdrLen])
	h[0] = 1                                          // VIRTIO_NET_HDR_F_NEEDS_CSUM
	h[1] = 5                                          // VIRTIO_NET_HDR_GSO_UDP_L4
	binary.LittleEndian.PutUint16(h[2:], gsoHeaders)  // hdr_len
	binary.LittleEndian.PutUint16(h[4:], uint16(seg)) // gso_size
	binary.LittleEndian.PutUint16(h[6:], 14+20)       // csum_start: the UDP header
	binary.LittleEndian.PutUint16(h[8:], 6)           // csum_offset: its checksum
	copy(h[vnetHdrLen:], first[:gsoHeaders])
	ip, udp := h[vnetHdrLen+14:vnetHdrLen+34], h[vnetHdrLen+34:]
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+payload))
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4Checksum(ip))
	binary.BigEndian.PutUint16(udp[4:], uint16(8+payload))
	// CHECKSUM_PARTIAL: the field holds the pseudo-header's sum, each segment's is completed.
	binary.BigEndian.PutUint16(udp[6:], wire.Fold(wire.PseudoSum(ip[12:16], ip[16:20], unix.IPPROTO_UDP, 8+payload)))
	return g.write(tx, h[:vnetHdrLen+gsoHeaders], len(run))
}

// write sends head (the virtio-net header and the run's headers) and the payloads in
// g.iovs[1:frames+1] as one frame.
func (g *gsoScratch) write(tx *gsoTX, head []byte, frames int) error {
	g.iovs[0].Base = &head[0]
	g.iovs[0].SetLen(len(head))
	g.msg.SetIovlen(frames + 1)
	if err := tx.rc.Write(g.fn); err != nil {
		return err
	}
	if g.errno != 0 {
		return g.errno
	}
	return nil
}

// featureOn reports whether the interface's offload feature named name (as ethtool -k names
// it) is active, read with ethtool's ioctls: the names of the feature strings, then the bits.
func featureOn(ifname, name string) (bool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	const ethSSFeatures, ethGStringLen = 4, 32 // ETH_SS_FEATURES, ETH_GSTRING_LEN
	info := struct {
		cmd, reserved uint32
		mask          uint64
		count         uint32
	}{cmd: unix.ETHTOOL_GSSET_INFO, mask: 1 << ethSSFeatures}
	if err := ethtool(fd, ifname, unsafe.Pointer(&info)); err != nil {
		return false, err
	}
	if info.mask == 0 || info.count == 0 || info.count > 1024 {
		return false, fmt.Errorf("%s: no feature strings", ifname)
	}
	n := int(info.count)
	strs := make([]byte, 12+n*ethGStringLen)
	binary.NativeEndian.PutUint32(strs[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(strs[4:], ethSSFeatures)
	binary.NativeEndian.PutUint32(strs[8:], uint32(n))
	if err := ethtool(fd, ifname, unsafe.Pointer(&strs[0])); err != nil {
		return false, err
	}
	bit := -1
	for i := range n {
		s := strs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if strings.TrimRight(string(s), "\x00") == name {
			bit = i
			break
		}
	}
	if bit < 0 {
		return false, fmt.Errorf("%s: no feature %q", ifname, name)
	}
	blocks := (n + 31) / 32
	feat := make([]uint32, 2+4*blocks) // cmd, size, then {available, requested, active, never_changed} per block
	feat[0], feat[1] = unix.ETHTOOL_GFEATURES, uint32(blocks)
	if err := ethtool(fd, ifname, unsafe.Pointer(&feat[0])); err != nil {
		return false, err
	}
	return feat[2+4*(bit/32)+2]&(1<<(bit%32)) != 0, nil
}

// ethtool runs one SIOCETHTOOL request on ifname with data.
func ethtool(fd int, ifname string, data unsafe.Pointer) error {
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], ifname)
	ifr.data = data
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return os.NewSyscallError("SIOCETHTOOL", e)
	}
	return nil
}
