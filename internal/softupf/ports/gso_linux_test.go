package ports

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// gsoBatch is what the pipeline might hand port 2 in one batch: 20 datagrams of one tunnel
// (1,000-byte payloads), one from another source port, 18 more of the tunnel and a last, shorter
// one. Each payload starts with its index.
func gsoBatch(dst net.HardwareAddr) [][]byte {
	var frames [][]byte
	for i := range 40 {
		size, sport := 1000, uint16(2152)
		switch {
		case i == 20:
			sport = 2153
		case i == 39:
			size = 500
		}
		payload := bytes.Repeat([]byte{byte(i)}, size)
		binary.BigEndian.PutUint32(payload, uint32(i))
		frames = append(frames, wiretest.Build(wire.Ethernet{Dst: [6]byte(dst), Src: [6]byte{2, 0, 0, 0, 0, 2}},
			wire.IPv4{TTL: 64, Src: [4]byte{10, 77, 0, 1}, Dst: [4]byte{10, 77, 0, 2}},
			wire.UDP{SrcPort: sport, DstPort: 2152}, payload))
	}
	return frames
}

// The runs gsoBatch holds, as gsoRun must find them: 20 frames, 1, 19.
var gsoBatchRuns = []int{20, 1, 19}

func TestGSORunsOfABatch(t *testing.T) {
	frames := gsoBatch(net.HardwareAddr{2, 0, 0, 0, 0, 9})
	pkts := packetsOf(frames)
	if runs := runsOf(pkts, gsoRun); fmt.Sprint(runs) != fmt.Sprint(gsoBatchRuns) {
		t.Fatalf("runs %v, want %v", runs, gsoBatchRuns)
	}
	// Frames a run may not hold: each alone.
	for name, f := range map[string][]byte{
		"VLAN tag":       append(append(bytes.Clone(frames[0][:12]), 0x81, 0, 0, 1), frames[0][12:]...),
		"IPv4 options":   withByte(frames[0], 14, 0x46),
		"more fragments": withByte(frames[0], 20, 0x20),
		"TCP":            withByte(frames[0], 23, unix.IPPROTO_TCP),
		"trailing bytes": append(bytes.Clone(frames[0]), 0, 0),
	} {
		if _, ok := gsoPayload(f); ok {
			t.Errorf("%s: a run may hold it", name)
		}
	}
	if n := gsoRun(packetsOf([][]byte{frames[0], withByte(frames[1], 22, 63)})); n != 1 {
		t.Errorf("a frame with another TTL joined the run (%d)", n)
	}
}

func withByte(f []byte, i int, b byte) []byte {
	f = bytes.Clone(f)
	f[i] = b
	return f
}

// TestPortsSendRunsAsOneUDPGSOFrame: on a port whose interface has tx-udp-segmentation on, a
// batch's runs of one tunnel's datagrams leave as one frame each. Whole: a UDP socket with
// UDP_GRO beyond the veth reads each run in one datagram, cut at the run's size, and every
// payload in order. Cut by the kernel (the interface's offload taken away after the port
// opened, so that the kernel segments before the driver): each datagram on the wire is the
// frame the pipeline made, but for the IPv4 identification (counted up from the run's first),
// the header checksum and a UDP checksum, both valid.
func TestPortsSendRunsAsOneUDPGSOFrame(t *testing.T) {
	forEachKind(t, testPortsSendRunsAsOneUDPGSOFrame)
}

func testPortsSendRunsAsOneUDPGSOFrame(t *testing.T, kind Kind) {
	tb := newTestbed(t)
	ethtoolK(t, tb.upf, tb.u2, "tx-udp-segmentation", "on")
	ipCmd(t, "-n", tb.peer, "addr", "add", "10.77.0.2/24", "dev", tb.p2)
	var p2 net.HardwareAddr
	var sock int
	if err := inNetns(t, tb.peer, func() error {
		ifi, err := net.InterfaceByName(tb.p2)
		if err != nil {
			return err
		}
		p2 = ifi.HardwareAddr
		if sock, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(sock, unix.IPPROTO_UDP, unix.UDP_GRO, 1); err != nil {
			return err
		}
		return unix.Bind(sock, &unix.SockaddrInet4{Port: 2152, Addr: [4]byte{10, 77, 0, 2}})
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	_ = unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})

	pool := dataplane.NewPool(4 * BatchSize)
	upf := openIn(t, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, pool)
	frames := gsoBatch(p2)
	transmit := func() {
		var batch []*dataplane.Packet
		for _, f := range frames {
			p := pool.Get(nil)
			p.SetFrame(f)
			p.OutPort = 2
			batch = append(batch, p)
		}
		upf.Transmit(batch)
	}

	t.Run("whole", func(t *testing.T) {
		transmit()
		buf, oob := make([]byte, 65536), make([]byte, 64)
		next := 0
		for _, run := range gsoBatchRuns {
			n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, 0)
			if err != nil {
				t.Fatalf("datagram for frames %d..: %v", next, err)
			}
			seg := groSize(oob[:oobn], n)
			if want := len(frames[next]) - gsoHeaders; seg != want {
				t.Errorf("frames %d..%d: segment size %d, want %d", next, next+run-1, seg, want)
			}
			for off := 0; off < n; off += seg {
				want := frames[next][gsoHeaders:]
				if got := buf[off:min(off+seg, n)]; !bytes.Equal(got, want) {
					t.Fatalf("datagram %d of the read at frame %d: %d bytes starting %x, want frame %d's payload (%d bytes)", off/seg, next, len(got), got[:4], next, len(want))
				}
				next++
			}
		}
		if next != len(frames) {
			t.Fatalf("%d of %d payloads read", next, len(frames))
		}
		if st := upf.Stats()[1]; st.TxPackets != uint64(len(frames)) || st.TxErrors != 0 {
			t.Errorf("port 2 counted %d frames sent, %d errors; want %d and 0", st.TxPackets, st.TxErrors, len(frames))
		}
	})

	t.Run("cut by the kernel", func(t *testing.T) {
		// The port's own socket skips the qdisc, past which the kernel cuts no frame: with the
		// offload off, its writes fail and the frames go one by one (counted as sent).
		ethtoolK(t, tb.upf, tb.u2, "tx", "off")
		before := upf.Stats()[1]
		transmit()
		if st := upf.Stats()[1]; st.TxPackets-before.TxPackets != uint64(len(frames)) || st.TxErrors != before.TxErrors {
			t.Errorf("with the offload off, port 2 counted %d more frames sent and %d errors; want %d and 0", st.TxPackets-before.TxPackets, st.TxErrors-before.TxErrors, len(frames))
		}
		drain(sock)
		// What segmentation makes of a run: the same writes on a socket through the qdisc,
		// which cuts them in software with checksums, as a hop without the offload would.
		tx := qdiscGSO(t, tb)
		defer tx.close()
		_, rec := recordingPeer(t, tb.peer, []Mapping{{2, tb.p2}})
		g := newGSOScratch()
		for i := 0; i < len(frames); {
			var run []*dataplane.Packet
			for _, f := range frames[i:] {
				p := pool.Get(nil)
				p.SetFrame(f)
				run = append(run, p)
			}
			n := gsoRun(run)
			if n > 1 { // a frame alone goes as it is (above)
				if err := g.send(tx, run[:n]); err != nil {
					t.Fatalf("frames %d..%d: %v", i, i+n-1, err)
				}
			}
			for _, p := range run {
				pool.Put(p)
			}
			i += n
		}
		var want [][]byte // the runs' frames
		for i := 0; i < len(frames); i++ {
			if i != 20 {
				want = append(want, frames[i])
			}
		}
		got := rec.onWire(t, 2, len(want))
		first := 0
		for _, run := range []int{20, 19} {
			for i := first; i < first+run; i++ {
				g, w := got[i], want[i]
				if len(g) != len(w) || !bytes.Equal(g[:18], w[:18]) || !bytes.Equal(g[20:24], w[20:24]) || !bytes.Equal(g[26:40], w[26:40]) || !bytes.Equal(g[42:], w[42:]) {
					t.Fatalf("frame %d of the runs:\ngot  %x\nwant %x (but for ID, checksums)", i, g, w)
				}
				if id := binary.BigEndian.Uint16(g[18:]); id != uint16(i-first) {
					t.Errorf("frame %d of the runs: IPv4 identification %d, want %d", i, id, i-first)
				}
				if !wire.VerifyIPv4Checksum(g[14:34]) {
					t.Errorf("frame %d of the runs: IPv4 header checksum wrong", i)
				}
				udp := bytes.Clone(g[34:])
				got := binary.BigEndian.Uint16(udp[6:])
				clear(udp[6:8])
				if want := wiretest.TransportChecksum([4]byte(g[26:30]), [4]byte(g[30:34]), unix.IPPROTO_UDP, udp); got != want {
					t.Errorf("frame %d of the runs: UDP checksum %#04x, want %#04x", i, got, want)
				}
			}
			first += run
		}
	})
}

// drain reads what sock holds, without waiting.
func drain(sock int) {
	buf := make([]byte, 65536)
	for {
		if _, _, err := unix.Recvfrom(sock, buf, unix.MSG_DONTWAIT); err != nil {
			return
		}
	}
}

// groSize is the segment size of a datagram read with UDP_GRO: its control message's, or the
// datagram's length when the kernel gave none (a single datagram).
func groSize(oob []byte, n int) int {
	msgs, _ := unix.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 2 {
			return int(*(*uint16)(unsafe.Pointer(&m.Data[0])))
		}
	}
	return n
}

// qdiscGSO is a socket like a port's GSO socket on tb.u2 (virtio-net headers) whose frames go
// through the qdisc, which cuts a run in software with checksums where the interface's
// offloads are off, as a hop without the offload would. The caller closes it.
func qdiscGSO(t *testing.T, tb *testbed) *gsoTX {
	t.Helper()
	var tx *gsoTX
	if err := inNetns(t, tb.upf, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), "gso-qdisc")
		tx = &gsoTX{f: f}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(tb.u2)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
			return err
		}
		tx.rc, err = f.SyscallConn()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return tx
}

// packetsOf puts each frame into a packet of a pool of their own.
func packetsOf(frames [][]byte) []*dataplane.Packet {
	pool := dataplane.NewPool(len(frames))
	var pkts []*dataplane.Packet
	for _, f := range frames {
		p := pool.Get(nil)
		p.SetFrame(f)
		pkts = append(pkts, p)
	}
	return pkts
}

// onWire waits until the recorder has n frames from port and returns them; more or fewer fails t.
func (r *recorder) onWire(t *testing.T, port uint32, n int) [][]byte {
	t.Helper()
	testenv.Eventually(t, 5*time.Second, "the frames on the wire", func() error {
		if got := len(r.frames(port)); got < n {
			return fmt.Errorf("%d of %d frames", got, n)
		}
		return nil
	})
	got := r.frames(port)
	if len(got) != n {
		t.Fatalf("%d frames on the wire, want %d", len(got), n)
	}
	return got
}

// runsOf is the lengths of the runs find finds in pkts, one after the other.
func runsOf(pkts []*dataplane.Packet, find func([]*dataplane.Packet) int) []int {
	var runs []int
	for i := 0; i < len(pkts); {
		n := find(pkts[i:])
		runs, i = append(runs, n), i+n
	}
	return runs
}
