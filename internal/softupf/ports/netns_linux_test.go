package ports

// Real interfaces: two network namespaces made for the test, joined by two veth pairs.
//
//	namespace "upf"  u1 ── veth ── p1  namespace "peer"
//	                 u2 ── veth ── p2
//
// The ports under test run on u1/u2 (in "upf"), each test once per kind (AF_XDP, AF_PACKET);
// the test's own AF_PACKET ports on p1/p2 (in "peer") inject frames and capture what comes out. No interface has an address and forwarding is off
// in both namespaces, so nothing leaves them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"

	"github.com/junction-atsss/junction/internal/testenv"
)

// testbed is a pair of namespaces with two veth pairs between them.
type testbed struct {
	upf, peer      string // namespace names
	u1, u2, p1, p2 string // interface names
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

func newTestbed(t testing.TB) *testbed {
	t.Helper()
	err := errors.New("not root")
	if os.Geteuid() == 0 {
		_, err = exec.LookPath("ip")
	}
	testenv.Require(t, "root and the ip command, for namespaces and veth pairs", err)
	id := fmt.Sprintf("%04x", rand.Uint32()&0xffff)
	tb := &testbed{upf: "jtu" + id, peer: "jtp" + id, u1: "jtu1" + id, u2: "jtu2" + id, p1: "jtp1" + id, p2: "jtp2" + id}
	for _, ns := range []string{tb.upf, tb.peer} {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	for _, pair := range [][2]string{{tb.u1, tb.p1}, {tb.u2, tb.p2}} {
		ipCmd(t, "link", "add", pair[0], "netns", tb.upf, "type", "veth", "peer", "name", pair[1], "netns", tb.peer)
		ipCmd(t, "-n", tb.upf, "link", "set", pair[0], "up")
		ipCmd(t, "-n", tb.peer, "link", "set", pair[1], "up")
		// Both sides' ports send frame by frame, as the tests compare them: a veth would take
		// runs of UDP datagrams or TCP segments whole (gso_linux.go, tso_linux.go).
		ethtoolK(t, tb.upf, pair[0], "tx-udp-segmentation", "off", "tx-tcp-segmentation", "off")
		ethtoolK(t, tb.peer, pair[1], "tx-udp-segmentation", "off", "tx-tcp-segmentation", "off")
	}
	for _, e := range tb.ends() {
		waitTransmitting(t, e[0], e[1])
	}
	return tb
}

// ends are the veth ends, each as namespace and name, in a frame's order from the peer to the peer.
func (tb *testbed) ends() [][2]string {
	return [][2]string{{tb.peer, tb.p1}, {tb.upf, tb.u1}, {tb.upf, tb.u2}, {tb.peer, tb.p2}}
}

// waitTransmitting waits until the kernel has given iface in ns its queueing discipline. A link
// set up sends into the noop qdisc until the kernel's link watch activates it, later on a busy
// machine; noop drops every frame, and a packet socket's send reports success all the same.
func waitTransmitting(t testing.TB, ns, iface string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, iface+"'s qdisc", func() error {
		out, err := exec.Command("tc", "-n", ns, "qdisc", "show", "dev", iface).CombinedOutput()
		if err != nil {
			return fmt.Errorf("tc qdisc show: %v: %s", err, out)
		}
		if len(out) == 0 || bytes.Contains(out, []byte("qdisc noop")) {
			return fmt.Errorf("not active yet: %q", out)
		}
		return nil
	})
}

// links is the kernel's view of the testbed's veth ends, for a failure message: where frames a
// port counted as sent went (a peer down, tx_dropped, rx_dropped).
func (tb *testbed) links() string {
	var b strings.Builder
	for _, e := range tb.ends() {
		out, _ := exec.Command("ip", "-n", e[0], "-s", "link", "show", "dev", e[1]).CombinedOutput()
		b.WriteString("\n")
		b.Write(out)
	}
	return b.String()
}

func ethtoolK(t testing.TB, ns, iface string, settings ...string) {
	t.Helper()
	args := append([]string{"netns", "exec", ns, "ethtool", "-K", iface}, settings...)
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ethtool -K %s %v: %v: %s (hack/tools.sh dataplane installs ethtool)", iface, settings, err, out)
	}
}

// inNetns runs f on a thread inside namespace ns. Sockets made there stay in ns.
func inNetns(t testing.TB, ns string, f func() error) error {
	t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: the runtime discards it when this goroutine ends.
		return fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func openIn(t testing.TB, ns string, kind Kind, ms []Mapping, pool *dataplane.Pool) *Set {
	t.Helper()
	var s *Set
	if err := inNetns(t, ns, func() (err error) {
		s, err = Open(ms, kind, 255, pool, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if kind != KindAuto {
		for _, st := range s.Stats() {
			if st.Kind != kind {
				t.Fatalf("port %d opened as %v, want %v", st.Port, st.Kind, kind)
			}
		}
	}
	return s
}

// kinds are the port kinds every test of the ports runs with, on the UPF's side.
var kinds = []Kind{KindXDP, KindPacket}

// forEachKind runs test once per port kind.
func forEachKind(t *testing.T, test func(t *testing.T, kind Kind)) {
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) { test(t, k) })
	}
}

// crossover sends what arrives on port 1 out of port 2 and the reverse, unchanged.
type crossover struct{}

func (crossover) Process(in, out []*dataplane.Packet) []*dataplane.Packet {
	for _, p := range in {
		p.OutPort = 3 - p.InPort
		out = append(out, p)
	}
	return out
}

// recorder keeps copies of IPv4 frames, tagged or not (the kernel's IPv6 chatter on new links is
// ignored).
type recorder struct {
	pool *dataplane.Pool
	mu   sync.Mutex
	got  map[uint32][][]byte
}

func (r *recorder) Process(in, out []*dataplane.Packet) []*dataplane.Packet {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range in {
		if f := p.Frame(); ours(f) {
			r.got[p.InPort] = append(r.got[p.InPort], bytes.Clone(f))
		}
		r.pool.Put(p)
	}
	return out
}

// ours says whether a frame is one a test sends: IPv4, or tagged (802.1Q, 802.1ad), whole or not.
func ours(f []byte) bool {
	return len(f) >= 14 && (f[12] == 0x08 && f[13] == 0x00 || f[12] == 0x81 && f[13] == 0x00 || f[12] == 0x88 && f[13] == 0xa8)
}

func (r *recorder) frames(port uint32) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[port]
}

// recordingPeer opens the peer's end of the mappings ms on AF_PACKET and records what it reads.
func recordingPeer(t testing.TB, ns string, ms []Mapping) (*Set, *recorder) {
	pool := dataplane.NewPool(4 * BatchSize)
	peer := openIn(t, ns, KindPacket, ms, pool)
	rec := &recorder{pool: pool, got: map[uint32][][]byte{}}
	run(t, peer, rec)
	return peer, rec
}

func run(t testing.TB, s *Set, p Processor) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestPortsCountFramesToUnmappedPorts: a frame the pipeline sends to a port number with no
// interface (a route naming a port the UPF was not started with) is dropped and counted.
func TestPortsCountFramesToUnmappedPorts(t *testing.T) {
	forEachKind(t, testPortsCountFramesToUnmappedPorts)
}

func testPortsCountFramesToUnmappedPorts(t *testing.T, kind Kind) {
	tb := newTestbed(t)
	pool := dataplane.NewPool(4 * BatchSize)
	s := openIn(t, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, pool)
	batch := make([]*dataplane.Packet, 0, 3)
	for _, port := range []uint32{7, 7, MaxPort + 1} {
		pkt := pool.Get(nil)
		pkt.SetFrame(make([]byte, 60))
		pkt.OutPort = port
		batch = append(batch, pkt)
	}
	s.Transmit(batch)
	if n := s.NoPortDrops(); n != 3 {
		t.Errorf("%d frames counted as sent to no port; want 3 (two to port 7, one beyond MaxPort)", n)
	}
	for _, st := range s.Stats() {
		if st.TxPackets != 0 {
			t.Errorf("port %d counted %d frames sent; the frames had no port", st.Port, st.TxPackets)
		}
	}
	if pool.Free() != pool.Size() {
		t.Errorf("%d of %d buffers back in the pool", pool.Free(), pool.Size())
	}
}

func TestPortsForwardBetweenVeths(t *testing.T) { forEachKind(t, testPortsForwardBetweenVeths) }

func testPortsForwardBetweenVeths(t *testing.T, kind Kind) {
	tb := newTestbed(t)
	upfPool := dataplane.NewPool(4 * BatchSize)
	upf := openIn(t, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, upfPool)
	seen := &lendCheck{}
	run(t, upf, seen)

	peer, rec := recordingPeer(t, tb.peer, []Mapping{{1, tb.p1}, {2, tb.p2}})

	const n = 200 // more than a batch, to exercise recvmmsg/sendmmsg batching
	frames := numberedFrames(n)
	crossInBatches(t, tb, upf, peer, rec, frames)
	// The peer's own transmissions on p1 are not received back on p1.
	if back := rec.frames(1); len(back) != 0 {
		t.Errorf("p1 saw %d IPv4 frames; outgoing frames must be ignored", len(back))
	}
	// A port counts a batch once its send returns, which can be after the peer read it (a CI run
	// under the race detector read 150 of 200 sent): the counters must get there, not be there.
	testenv.Eventually(t, 5*time.Second, "the UPF's port counters", func() error {
		if st := upf.Stats(); st[0].RxPackets < n || st[1].TxPackets < n {
			return fmt.Errorf("UPF port stats %+v: want at least %d received on 1 and sent on 2", st, n)
		}
		return nil
	})
	// AF_XDP lends the pipeline its frames where the kernel wrote them and takes no pool buffer;
	// AF_PACKET reads into pool buffers, and its readers hold one batch each while running.
	lent, pooled := seen.lent.Load(), seen.pooled.Load()
	free := upfPool.Free()
	if kind == KindXDP && (lent < n || pooled != 0 || free != upfPool.Size()) {
		t.Errorf("AF_XDP: %d frames lent, %d in pool buffers, %d of %d pool buffers free; want >= %d, 0, all", lent, pooled, free, upfPool.Size(), n)
	}
	if kind == KindPacket && (lent != 0 || pooled < n || free < upfPool.Size()-2*BatchSize) {
		t.Errorf("AF_PACKET: %d frames lent, %d in pool buffers, %d of %d pool buffers free; want 0, >= %d, >= %d", lent, pooled, free, upfPool.Size(), n, upfPool.Size()-2*BatchSize)
	}
	// Every chunk lent is back once the readers stop: the UMEM is unmapped only then.
	upf.Close()
	for _, p := range upf.ports {
		if p.xdp == nil {
			continue
		}
		for q, x := range p.xdp.queues {
			if x.out != 0 {
				t.Errorf("port %d queue %d: %d frames still lent after Close", p.num, q, x.out)
			}
		}
	}
}

// lendCheck is crossover counting the frames an AF_XDP port lent and those in pool buffers.
type lendCheck struct{ lent, pooled atomic.Int64 }

func (c *lendCheck) Process(in, out []*dataplane.Packet) []*dataplane.Packet {
	for _, p := range in {
		if p.Lent() {
			c.lent.Add(1)
		} else {
			c.pooled.Add(1)
		}
	}
	return crossover{}.Process(in, out)
}

// numberedFrames are n IPv4/UDP frames, each with its number in its IPv4 ID and payload.
func numberedFrames(n int) [][]byte {
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
			wire.IPv4{ID: uint16(i), Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}},
			wire.UDP{SrcPort: 1000, DstPort: 2000}, []byte(fmt.Sprintf("frame %d", i)))
	}
	return frames
}

// crossInBatches injects frames on the peer's port 1 in batches of 50, as the pipeline would
// hand them to the ports, and checks that the peer's port 2 receives them all, in order,
// through the UPF's crossover.
func crossInBatches(t *testing.T, tb *testbed, upf, peer *Set, rec *recorder, frames [][]byte) {
	t.Helper()
	for i := 0; i < len(frames); i += 50 {
		batch := make([]*dataplane.Packet, 0, 50)
		for _, f := range frames[i:min(i+50, len(frames))] {
			pkt := rec.pool.Get(nil)
			pkt.SetFrame(f)
			pkt.OutPort = 1
			batch = append(batch, pkt)
		}
		want := len(rec.frames(2)) + len(batch)
		peer.Transmit(batch)
		for wait := 0; len(rec.frames(2)) < want && wait < 1000; wait++ {
			time.Sleep(time.Millisecond) // one batch at a time, however busy the machine
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.frames(2)) < len(frames) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := rec.frames(2)
	if len(got) != len(frames) {
		t.Fatalf("port 2 of the peer received %d of %d frames (UPF ports %+v)%s", len(got), len(frames), upf.Stats(), tb.links())
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Fatalf("frame %d differs or is out of order:\ngot  %x\nwant %x", i, got[i], frames[i])
		}
	}
}

// TestPortsKeepVLANTags: a tagged frame reaches the pipeline with its tag where it was on the
// wire, and leaves with it (the kernel gives a packet socket the tag beside the frame,
// PACKET_AUXDATA; issue 30: the pipeline saw an 802.1Q-tagged IPv4 frame as untagged IPv4).
func TestPortsKeepVLANTags(t *testing.T) { forEachKind(t, testPortsKeepVLANTags) }

func testPortsKeepVLANTags(t *testing.T, kind Kind) {
	tb := newTestbed(t)
	upfPool := dataplane.NewPool(4 * BatchSize)
	upf := openIn(t, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, upfPool)
	seen := &recorder{pool: upfPool, got: map[uint32][][]byte{}}
	run(t, upf, teeCrossover{seen})

	peer, rec := recordingPeer(t, tb.peer, []Mapping{{1, tb.p1}, {2, tb.p2}})

	untagged := wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}}, wire.UDP{SrcPort: 1000, DstPort: 2000}, []byte("tagged"))
	tag := func(tpid, tci uint16) []byte { // the tag after the MAC addresses
		return append(append(bytes.Clone(untagged[:12]), byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci)), untagged[12:]...)
	}
	frames := [][]byte{tag(0x8100, 0x0064), tag(0x88a8, 0x2ffe), untagged}
	// A frame cut inside its tag goes first: Linux drops it before a packet socket reads it, and
	// every kind of port must give the pipeline the same (the differential test found it).
	cut := tag(0x88a8, 0x2ffe)[:16]
	for _, f := range append([][]byte{cut}, frames...) {
		pkt := rec.pool.Get(nil)
		pkt.SetFrame(f)
		pkt.OutPort = 1
		peer.Transmit([]*dataplane.Packet{pkt})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.frames(2)) < len(frames) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range []struct {
		where string
		got   [][]byte
	}{{"the UPF's pipeline read on port 1", seen.frames(1)}, {"the peer received on p2", rec.frames(2)}} {
		if len(c.got) != len(frames) {
			t.Fatalf("%s: %d frames, want %d (UPF ports %+v)%s", c.where, len(c.got), len(frames), upf.Stats(),
				tb.links())
		}
		for i, f := range frames {
			if !bytes.Equal(c.got[i], f) {
				t.Errorf("%s, frame %d:\ngot  %x\nwant %x", c.where, i, c.got[i], f)
			}
		}
	}
}

// teeCrossover records what the pipeline is given, then sends it out the other port.
type teeCrossover struct{ r *recorder }

func (c teeCrossover) Process(in, out []*dataplane.Packet) []*dataplane.Packet {
	c.r.mu.Lock()
	for _, p := range in {
		if f := p.Frame(); ours(f) {
			c.r.got[p.InPort] = append(c.r.got[p.InPort], bytes.Clone(f))
		}
	}
	c.r.mu.Unlock()
	return crossover{}.Process(in, out)
}

func TestParseMapping(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mapping
		ok   bool
	}{
		{"1@veth0", Mapping{1, "veth0"}, true},
		{"511@eth1", Mapping{511, "eth1"}, true},
		{"512@eth1", Mapping{}, false},
		{"veth0", Mapping{}, false},
		{"@veth0", Mapping{}, false},
		{"1@", Mapping{}, false},
		{"x@veth0", Mapping{}, false},
	} {
		got, err := ParseMapping(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseMapping(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	if err := checkMappings([]Mapping{{1, "a"}, {1, "b"}}, 255); err == nil {
		t.Error("a port mapped twice was accepted")
	}
	if err := checkMappings([]Mapping{{255, "a"}}, 255); err == nil {
		t.Error("the CPU port was accepted as a data port")
	}
}

// counter counts IPv4 frames per port without keeping them.
type counter struct {
	pool *dataplane.Pool
	n    [4]atomic.Int64
}

func (c *counter) Process(in, out []*dataplane.Packet) []*dataplane.Packet {
	for _, p := range in {
		if f := p.Frame(); len(f) > 14 && f[12] == 0x08 && f[13] == 0x00 && p.InPort < 4 {
			c.n[p.InPort].Add(1)
		}
		c.pool.Put(p)
	}
	return out
}

func TestPortsSteadyStateAllocatesNothing(t *testing.T) {
	forEachKind(t, testPortsSteadyStateAllocatesNothing)
}

func testPortsSteadyStateAllocatesNothing(t *testing.T, kind Kind) {
	tb := newTestbed(t)
	upfPool := dataplane.NewPool(4 * BatchSize)
	upf := openIn(t, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, upfPool)
	run(t, upf, crossover{})
	peerPool := dataplane.NewPool(8 * BatchSize)
	peer := openIn(t, tb.peer, KindPacket, []Mapping{{1, tb.p1}, {2, tb.p2}}, peerPool)
	cnt := &counter{pool: peerPool}
	run(t, peer, cnt)

	frame := wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}}, wire.UDP{SrcPort: 1, DstPort: 2}, make([]byte, 100))
	batch := make([]*dataplane.Packet, BatchSize)
	// send transmits rounds batches, each after the previous one crossed (or a second passed),
	// so that no socket buffer overflows on a busy machine: every frame must cross.
	send := func(rounds int) int64 {
		for range rounds {
			want := cnt.n[2].Load() + BatchSize
			for i := range batch {
				batch[i] = peerPool.Get(nil)
				batch[i].SetFrame(frame)
				batch[i].OutPort = 1
			}
			peer.Transmit(batch)
			for wait := 0; cnt.n[2].Load() < want && wait < 1000; wait++ {
				time.Sleep(time.Millisecond)
			}
		}
		return cnt.n[2].Load()
	}
	send(20) // warm up: batch slices and pollers settle
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rounds = 100
	start := cnt.n[2].Load()
	got := send(rounds) - start
	runtime.ReadMemStats(&after)
	if got != rounds*BatchSize {
		t.Fatalf("%d of %d frames crossed the UPF; paced batches over veths lose none", got, rounds*BatchSize)
	}
	// Both sides' readers and senders run in this process: a per-packet allocation anywhere
	// on the path would show up as thousands here. The test's own waiting allocates a little.
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d frames", allocs, got)
	if allocs > uint64(got)/20 {
		t.Errorf("%d allocations for %d frames through two port sets", allocs, got)
	}
}

// TestPortsFallBackToPacket: kind auto runs a port on AF_XDP where the interface takes it and on
// AF_PACKET where it does not (here an MTU larger than a UMEM chunk holds), says so in the log,
// and forwards between the two; kind xdp refuses such a port; kind packet takes AF_PACKET.
func TestPortsFallBackToPacket(t *testing.T) {
	tb := newTestbed(t)
	ipCmd(t, "-n", tb.upf, "link", "set", tb.u2, "mtu", "9000")
	ms := []Mapping{{1, tb.u1}, {2, tb.u2}}
	open := func(kind Kind, log *slog.Logger) (s *Set, err error) {
		err = inNetns(t, tb.upf, func() (err error) {
			s, err = Open(ms, kind, 255, dataplane.NewPool(4*BatchSize), log)
			return err
		})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}

	if _, err := open(KindXDP, nil); err == nil || !strings.Contains(err.Error(), "MTU 9000") {
		t.Errorf("kind xdp on a port with MTU 9000: %v; want an error naming the MTU", err)
	}
	s, err := open(KindPacket, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range s.Stats() {
		if st.Kind != KindPacket {
			t.Errorf("kind packet: port %d runs on %v", st.Port, st.Kind)
		}
	}
	s.Close()

	var logs bytes.Buffer
	upf, err := open(KindAuto, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st := upf.Stats()
	// veth has native XDP and no zero-copy.
	if st[0].Kind != KindXDP || st[0].Mode != "driver, copy" || st[1].Kind != KindPacket {
		t.Errorf("kind auto: port 1 %v (%s), port 2 %v; want xdp (driver, copy) and packet", st[0].Kind, st[0].Mode, st[1].Kind)
	}
	for _, line := range []string{"port=1 iface=" + tb.u1 + " kind=xdp", "AF_XDP not available on this interface: the port uses AF_PACKET\" port=2",
		"port=2 iface=" + tb.u2 + " kind=packet"} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("the log does not say %q:\n%s", line, logs.String())
		}
	}
	run(t, upf, crossover{})
	peer, rec := recordingPeer(t, tb.peer, []Mapping{{1, tb.p1}, {2, tb.p2}})
	frame := wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}}, wire.UDP{SrcPort: 1, DstPort: 2}, []byte("either way"))
	for _, out := range []uint32{1, 2} {
		pkt := rec.pool.Get(nil)
		pkt.SetFrame(frame)
		pkt.OutPort = out
		peer.Transmit([]*dataplane.Packet{pkt})
	}
	deadline := time.Now().Add(10 * time.Second)
	for (len(rec.frames(1)) < 1 || len(rec.frames(2)) < 1) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range []uint32{1, 2} {
		if got := rec.frames(p); len(got) != 1 || !bytes.Equal(got[0], frame) {
			t.Errorf("p%d received %x; want the frame sent on the other side", p, got)
		}
	}
}

// TestXDPTransmitAllocatesNothing: a batch sent on an AF_XDP port allocates nothing.
func TestXDPTransmitAllocatesNothing(t *testing.T) {
	tb := newTestbed(t)
	pool := dataplane.NewPool(2 * BatchSize)
	s := openIn(t, tb.upf, KindXDP, []Mapping{{1, tb.u1}}, pool)
	frame := wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}}, wire.UDP{SrcPort: 1, DstPort: 2}, make([]byte, 18))
	batch := make([]*dataplane.Packet, BatchSize)
	const runs = 100
	allocs := testing.AllocsPerRun(runs, func() {
		for i := range batch {
			batch[i] = pool.Get(nil)
			batch[i].SetFrame(frame)
			batch[i].OutPort = 1
		}
		s.Transmit(batch)
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per batch of %d sent on AF_XDP", allocs, BatchSize)
	}
	if st := s.Stats()[0]; st.TxPackets != (runs+1)*BatchSize {
		t.Errorf("%d frames sent, %d refused; want %d sent", st.TxPackets, st.TxErrors, (runs+1)*BatchSize)
	}
}

// TestXDPGenericModeWhereNoDriverMode: an interface whose driver has no XDP (a bridge) takes
// the program in generic mode.
func TestXDPGenericModeWhereNoDriverMode(t *testing.T) {
	tb := newTestbed(t)
	br := "jbr" + tb.upf[3:]
	ipCmd(t, "-n", tb.upf, "link", "add", br, "type", "bridge")
	ipCmd(t, "-n", tb.upf, "link", "set", br, "up")
	s := openIn(t, tb.upf, KindXDP, []Mapping{{1, br}}, dataplane.NewPool(2*BatchSize))
	if st := s.Stats()[0]; st.Mode != "generic, copy" {
		t.Errorf("XDP on a bridge runs %q; want generic, copy", st.Mode)
	}
}

// TestXDPReadsEveryQueue: on an interface with two receive queues, frames of many flows (spread
// over both queues by the sender's hash) all reach the pipeline: each queue has its socket.
func TestXDPReadsEveryQueue(t *testing.T) {
	tb := newTestbed(t)
	mq, mqPeer := "jmq"+tb.upf[3:], "jmp"+tb.upf[3:]
	ipCmd(t, "link", "add", mq, "numtxqueues", "2", "numrxqueues", "2", "netns", tb.upf, "type", "veth",
		"peer", "name", mqPeer, "numtxqueues", "2", "numrxqueues", "2", "netns", tb.peer)
	for _, l := range [][2]string{{tb.upf, mq}, {tb.peer, mqPeer}} {
		if out, err := exec.Command("ip", "netns", "exec", l[0], "ethtool", "-L", l[1], "rx", "2", "tx", "2").CombinedOutput(); err != nil {
			t.Fatalf("ethtool -L %s rx 2 tx 2: %v: %s", l[1], err, out)
		}
		ipCmd(t, "-n", l[0], "link", "set", l[1], "up")
	}
	upfPool := dataplane.NewPool(4 * BatchSize)
	var logs bytes.Buffer
	var upf *Set
	if err := inNetns(t, tb.upf, func() (err error) {
		upf, err = Open([]Mapping{{1, mq}, {2, tb.u2}}, KindXDP, 255, upfPool, slog.New(slog.NewTextHandler(&logs, nil)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "iface="+mq+" kind=xdp xdp=\"driver, copy\" queues=2") {
		t.Errorf("the log does not show two queues on %s:\n%s", mq, logs.String())
	}
	run(t, upf, crossover{})
	peerPool := dataplane.NewPool(4 * BatchSize)
	peer := openIn(t, tb.peer, KindPacket, []Mapping{{1, mqPeer}, {2, tb.p2}}, peerPool)
	cnt := &counter{pool: peerPool}
	run(t, peer, cnt)

	const flows = 256
	for i := 0; i < flows; i += 32 {
		batch := make([]*dataplane.Packet, 0, 32)
		for f := i; f < i+32; f++ {
			pkt := peerPool.Get(nil)
			pkt.SetFrame(wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
				wire.IPv4{Src: [4]byte{198, 51, 100, byte(f)}, Dst: [4]byte{203, 0, 113, 1}},
				wire.UDP{SrcPort: uint16(1000 + f), DstPort: 2000}, []byte("flow")))
			pkt.OutPort = 1
			batch = append(batch, pkt)
		}
		peer.Transmit(batch)
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for cnt.n[2].Load() < flows && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := cnt.n[2].Load(); got != flows {
		t.Errorf("%d of %d flows' frames crossed a port with two queues", got, flows)
	}
}

// TestXDPCountsKernelDrops: frames that find the rx ring full are dropped by the kernel and
// counted in the port's KernelDrops, which Close keeps (the UPF logs its totals after it).
func TestXDPCountsKernelDrops(t *testing.T) {
	tb := newTestbed(t)
	upf := openIn(t, tb.upf, KindXDP, []Mapping{{1, tb.u1}}, dataplane.NewPool(2*BatchSize))
	// No reader runs: the rx ring (ringSize frames) fills and the rest is dropped.
	peerPool := dataplane.NewPool(2 * BatchSize)
	peer := openIn(t, tb.peer, KindPacket, []Mapping{{1, tb.p1}}, peerPool)
	frame := wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 1}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}}, wire.UDP{SrcPort: 1, DstPort: 2}, []byte("dropped"))
	const sent = ringSize + 1000
	batch := make([]*dataplane.Packet, BatchSize)
	for range sent / BatchSize {
		for i := range batch {
			batch[i] = peerPool.Get(nil)
			batch[i].SetFrame(frame)
			batch[i].OutPort = 1
		}
		peer.Transmit(batch)
		time.Sleep(time.Millisecond) // within veth's own queue (256 frames)
	}
	deadline := time.Now().Add(5 * time.Second)
	for upf.Stats()[0].KernelDrops < sent/BatchSize*BatchSize-ringSize && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	before := upf.Stats()[0].KernelDrops
	if want := uint64(sent/BatchSize*BatchSize - ringSize); before < want {
		t.Errorf("%d kernel drops counted; want at least %d (%d frames into a ring of %d)", before, want, sent/BatchSize*BatchSize, ringSize)
	}
	upf.Close()
	if after := upf.Stats()[0].KernelDrops; after != before {
		t.Errorf("after Close the port counts %d kernel drops; it counted %d", after, before)
	}
}

// TestReadersRunAtRealtimePriority: with a real-time priority set, every reader (one per
// AF_PACKET port, one per AF_XDP queue) runs on a thread of its own at that SCHED_FIFO
// priority while Run runs, frames cross in batches (an AF_PACKET reader then waits in poll(2),
// not in Go's poller), and the threads end with Run, so that no other goroutine inherits the
// policy. (A reader that ran on the process's main thread leaves it parked for good instead:
// Go never ends the main thread, so it is not counted.)
func TestReadersRunAtRealtimePriority(t *testing.T) {
	forEachKind(t, testReadersRunAtRealtimePriority)
}

func testReadersRunAtRealtimePriority(t *testing.T, kind Kind) {
	const prio = 7
	tb := newTestbed(t)
	upf := openIn(t, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, dataplane.NewPool(4*BatchSize))
	if err := upf.SetRealtimePriority(MaxRealtimePriority + 1); err == nil {
		t.Errorf("SetRealtimePriority(%d) accepted", MaxRealtimePriority+1)
	}
	if err := upf.SetRealtimePriority(prio); err != nil {
		t.Fatal(err)
	}
	readers := 0
	for _, p := range upf.ports {
		if p.xdp != nil {
			readers += len(p.xdp.queues)
		} else {
			readers++
		}
	}
	n, mainBefore := fifoThreads(t, prio) // an earlier run may have parked the main thread so
	if n != 0 {
		t.Fatalf("%d threads at SCHED_FIFO %d before Run", n, prio)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- upf.Run(ctx, crossover{}) }()
	testenv.Eventually(t, 5*time.Second, "the readers at SCHED_FIFO", func() error {
		n, onMain := fifoThreads(t, prio)
		if onMain && !mainBefore {
			n++
		}
		if n != readers {
			return fmt.Errorf("%d threads at SCHED_FIFO %d, want %d (one per reader)", n, prio, readers)
		}
		return nil
	})

	peer, rec := recordingPeer(t, tb.peer, []Mapping{{1, tb.p1}, {2, tb.p2}})
	crossInBatches(t, tb, upf, peer, rec, numberedFrames(200))

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	testenv.Eventually(t, 5*time.Second, "the readers' threads gone", func() error {
		if n, _ := fifoThreads(t, prio); n != 0 {
			return fmt.Errorf("%d threads still at SCHED_FIFO %d after Run returned", n, prio)
		}
		return nil
	})
}

// fifoThreads counts this process's threads but the main one whose policy is SCHED_FIFO at
// priority prio, and says whether the main one is, from /proc/self/task/*/stat (proc(5):
// rt_priority and policy are its 40th and 41st fields).
func fifoThreads(t *testing.T, prio int) (n int, main bool) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		// Fields from the 3rd on follow the command name's closing parenthesis.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 38 && f[38] == fmt.Sprint(unix.SCHED_FIFO) && f[37] == fmt.Sprint(prio) {
			if task.Name() == fmt.Sprint(os.Getpid()) {
				main = true
			} else {
				n++
			}
		}
	}
	return n, main
}
