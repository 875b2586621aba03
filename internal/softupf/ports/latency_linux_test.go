package ports

// BenchmarkLatencyStages prints where a frame's time goes on its way through the ports at a
// fixed 10 kpps (issue 30, item 2), on the testbed of netns_linux_test.go:
//
//	go test ./internal/softupf/ports -run '^$' -bench LatencyStages -benchtime 1x   (make bench-targets)
//
// The test's sender writes one 64-byte frame at a time on p1 (a packet socket, as a gNB's kernel
// would) and notes the time; the ports under test on u1/u2 run a Processor that notes when the
// frame reaches the pipeline and crosses it over to port 2, unchanged; the test's receiver on p2
// notes when it reads it. Per frame:
//
//	in    sender's write ─> the UPF's pipeline has it: the veth, the socket (the XDP program and
//	      the copy into the UMEM on AF_XDP), the reader's wake-up (the kernel's and the Go
//	      scheduler's)
//	out   the pipeline's hand-off ─> the receiver has it: the UPF's send (its system call, the
//	      copy into the tx ring on AF_XDP; on veth the kernel runs the receiving side's work
//	      inside it), the second veth and the receiver's own wake-up
//
// Two references in the same run: one veth alone (the sender and a receiver of the same kind on
// u1: one hop and one wake-up, what the measurement itself costs), and the kernel forwarding
// the same frames from u1 to u2 (IPv4 routing in the namespace, no UPF: the floor for any
// forwarder on this path). The pipeline itself is not in these numbers (the crossover takes
// nanoseconds; dataplane's BenchmarkSoftUPF prints what the real one costs per frame). The last
// columns are the garbage collections during the run and the test process's CPU time per second
// of it (sender, ports and receiver together; the kernel's forwarding is softirq work the
// sender's system call runs).
//
// The sender, the ports and the receiver share this process and its Go scheduler, which a
// software UPF in a process of its own (test/vectors' BenchmarkTargets) does not: a change
// must show there too. Tried and left out (issue 30's closing note): busy polling in the
// readers (50 µs of looking again before sleeping) made every percentile worse here, the
// spinning reader holding a processor the receiver and the Go poller need; AF_PACKET readers
// waiting in poll(2) rather than the Go poller halved the total p50 here (75 to 38 µs) and
// gained nothing in BenchmarkTargets (p50 58-71 µs before, 72-78 after).

import (
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

const (
	stagesRate   = 10_000      // frames per second
	stagesFrames = 20_000      // per configuration: 2 s
	stagesWarmup = 500         // frames sent first and not counted (sockets, caches, the scheduler)
	seqOffset    = 14 + 20 + 8 // the UDP payload: a frame's sequence number
)

// stamps are the times (since the run's start) a frame was sent, reached the pipeline and was
// received, indexed by its sequence number; 0: not seen.
type stamps struct {
	start          time.Time
	mu             sync.Mutex
	sent, in, recv []time.Duration
}

func frameSeq(f []byte) (int, bool) {
	if len(f) < seqOffset+4 || f[12] != 0x08 || f[13] != 0x00 || f[23] != 17 {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(f[seqOffset:])), true
}

// stamp notes, in at, when each frame of in with a sequence number is seen, and passes the
// frames on to port to (0: back to the pool).
type stamp struct {
	st   *stamps
	at   func(*stamps) []time.Duration
	pool *dataplane.Pool
	to   uint32
}

func (s stamp) Process(in, out []*dataplane.Packet) []*dataplane.Packet {
	now := time.Since(s.st.start)
	s.st.mu.Lock()
	times := s.at(s.st)
	for _, p := range in {
		if seq, ok := frameSeq(p.Frame()); ok && seq < len(times) && times[seq] == 0 {
			times[seq] = now
		}
	}
	s.st.mu.Unlock()
	for _, p := range in {
		if s.to == 0 {
			s.pool.Put(p)
			continue
		}
		p.OutPort = s.to
		out = append(out, p)
	}
	return out
}

type stagesRow struct {
	name           string
	in, out, total [3]time.Duration // p50, p99, p99.9
	lost, gcs      int
	cpuPerSecond   float64
	way            stagesWay
}

// stagesWay is what is between the sender and the receiver.
type stagesWay int

const (
	stagesVeth     stagesWay = iota // nothing: the receiver is on u1
	stagesKernel                    // the kernel's IPv4 forwarding from u1 to u2
	stagesPorts                     // the ports under test on u1 and u2
	stagesGoPoller                  // the same, AF_PACKET readers waiting in the Go poller
)

func BenchmarkLatencyStages(b *testing.B) {
	var rows []stagesRow
	rows = append(rows, measureStages(b, "veth alone (one hop)", stagesVeth, KindPacket))
	rows = append(rows, measureStages(b, "kernel forwarding u1 to u2", stagesKernel, KindPacket))
	for _, kind := range kinds {
		rows = append(rows, measureStages(b, "ports "+kind.String()+" (crossover)", stagesPorts, kind))
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nlatency at %d frames/s, %d frames a row (p50 / p99 / p99.9):\n", stagesRate, stagesFrames)
	fmt.Fprintf(&out, "%-30s %-26s %-26s %-26s %5s %4s %12s\n", "", "in (to the pipeline)", "out (to the receiver)", "total", "lost", "GCs", "CPU s per s")
	cell := func(d [3]time.Duration) string {
		return fmt.Sprintf("%s / %s / %s", d[0].Round(time.Microsecond), d[1].Round(time.Microsecond), d[2].Round(time.Microsecond))
	}
	for _, r := range rows {
		in, o := cell(r.in), cell(r.out)
		if r.way != stagesPorts {
			in, o = "-", "-"
		}
		fmt.Fprintf(&out, "%-30s %-26s %-26s %-26s %5d %4d %12.2f\n", r.name, in, o, cell(r.total), r.lost, r.gcs, r.cpuPerSecond)
	}
	veth, kernel := rows[0].total, rows[1].total
	for _, r := range rows[2:] {
		fmt.Fprintf(&out, "%-30s total p50 %.1fx, p99 %.1fx one veth's; %.1fx, %.1fx the kernel's forwarding\n", r.name,
			ratio(r.total[0], veth[0]), ratio(r.total[1], veth[1]), ratio(r.total[0], kernel[0]), ratio(r.total[1], kernel[1]))
	}
	fmt.Print(out.String())
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// measureStages sends stagesFrames frames at stagesRate the given way, through ports of kind
// kind, and returns the stages' percentiles.
func measureStages(b *testing.B, name string, way stagesWay, kind Kind) stagesRow {
	tb := newTestbed(b)
	dst := [6]byte{2, 0, 0, 0, 0, 1}
	n := stagesWarmup + stagesFrames
	st := &stamps{start: time.Now(), sent: make([]time.Duration, n), in: make([]time.Duration, n), recv: make([]time.Duration, n)}

	peerPool := dataplane.NewPool(8 * BatchSize)
	peer := openIn(b, tb.peer, KindPacket, []Mapping{{1, tb.p1}, {2, tb.p2}}, peerPool)
	upfPool := dataplane.NewPool(8 * BatchSize)
	switch way {
	case stagesVeth:
		recv := openIn(b, tb.upf, kind, []Mapping{{1, tb.u1}}, upfPool)
		run(b, recv, stamp{st: st, at: func(s *stamps) []time.Duration { return s.recv }, pool: upfPool})
	case stagesKernel:
		dst = kernelForwarding(b, tb)
	case stagesPorts:
		upf := openIn(b, tb.upf, kind, []Mapping{{1, tb.u1}, {2, tb.u2}}, upfPool)
		run(b, upf, stamp{st: st, at: func(s *stamps) []time.Duration { return s.in }, pool: upfPool, to: 2})
	}
	run(b, peer, stamp{st: st, at: func(s *stamps) []time.Duration { return s.recv }, pool: peerPool})

	frame := wiretest.Build(wire.Ethernet{Dst: dst, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{TTL: 64, Src: [4]byte{198, 51, 100, 1}, Dst: [4]byte{203, 0, 113, 1}},
		wire.UDP{SrcPort: 1000, DstPort: 2000}, make([]byte, 18)) // 60 bytes: the 64 less the FCS
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	cpu0 := processCPU()
	t0 := time.Now()
	b.ResetTimer()
	next := time.Now()
	for seq := range n {
		pkt := peerPool.Get(nil)
		pkt.SetFrame(frame)
		binary.BigEndian.PutUint32(pkt.Frame()[seqOffset:], uint32(seq))
		pkt.OutPort = 1
		now := time.Since(st.start)
		st.mu.Lock()
		st.sent[seq] = now
		st.mu.Unlock()
		peer.Transmit([]*dataplane.Packet{pkt})
		next = next.Add(time.Second / stagesRate)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
	time.Sleep(100 * time.Millisecond) // the last frames' way
	b.StopTimer()
	elapsed := time.Since(t0)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&gc1)

	st.mu.Lock()
	defer st.mu.Unlock()
	row := stagesRow{name: name, way: way, gcs: int(gc1.NumGC - gc0.NumGC), cpuPerSecond: cpu.Seconds() / elapsed.Seconds()}
	var in, out, total []time.Duration
	for seq := stagesWarmup; seq < n; seq++ {
		s, r := st.sent[seq], st.recv[seq]
		if r == 0 {
			row.lost++
			continue
		}
		total = append(total, r-s)
		if st.in[seq] != 0 {
			in = append(in, st.in[seq]-s)
			out = append(out, r-st.in[seq])
		}
	}
	if len(total) < stagesFrames/2 {
		b.Fatalf("%s: %d of %d frames received", name, len(total), stagesFrames)
	}
	row.in, row.out, row.total = percentiles(in), percentiles(out), percentiles(total)
	return row
}

// kernelForwarding makes the upf namespace route the sender's frames from u1 to p2 (addresses
// on u1 and u2, a route to the frames' destination via p2, p2's MAC as its neighbour, no
// reverse-path filter) and returns the MAC the sender must address: u1's.
func kernelForwarding(b *testing.B, tb *testbed) [6]byte {
	for _, args := range [][]string{
		{"-n", tb.upf, "addr", "add", "192.0.2.1/30", "dev", tb.u1},
		{"-n", tb.upf, "addr", "add", "192.0.2.5/30", "dev", tb.u2},
		{"-n", tb.upf, "neigh", "add", "192.0.2.6", "lladdr", macOf(b, tb.peer, tb.p2).String(), "dev", tb.u2},
		{"-n", tb.upf, "route", "add", "203.0.113.0/24", "via", "192.0.2.6"},
	} {
		ipCmd(b, args...)
	}
	for _, key := range []string{"net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf." + tb.u1 + ".rp_filter=0"} {
		if out, err := exec.Command("ip", "netns", "exec", tb.upf, "sysctl", "-qw", key).CombinedOutput(); err != nil {
			b.Fatalf("sysctl %s: %v: %s", key, err, out)
		}
	}
	return [6]byte(macOf(b, tb.upf, tb.u1))
}

// macOf is the MAC address of interface ifname in namespace ns.
func macOf(b *testing.B, ns, ifname string) net.HardwareAddr {
	var mac net.HardwareAddr
	if err := inNetns(b, ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return mac
}

// percentiles returns p50, p99 and p99.9 of ds (sorted in place).
func percentiles(ds []time.Duration) (p [3]time.Duration) {
	if len(ds) == 0 {
		return p
	}
	slices.Sort(ds)
	for i, q := range []float64{0.50, 0.99, 0.999} {
		p[i] = ds[min(int(q*float64(len(ds))), len(ds)-1)]
	}
	return p
}

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
