//go:build linux

package vectors

// BenchmarkTargets prints the software UPF, on AF_XDP ports and on AF_PACKET ports, beside
// BMv2, p4lang's reference target, on the same veths with the same generator and the same
// P4Runtime client, in one run (these machines are shared: only ratios within a run mean
// anything):
//
//	go test ./test/vectors -run '^$' -bench Targets -benchtime 1x      (make bench-targets)
//
//	forwarding   downlink frames of 64 and 1,400 bytes offered as fast as one sender goes
//	             (n6; batches of 64 through the software UPF's own AF_PACKET sender,
//	             sendmmsg), GTP-U frames counted as the kernel receives them (n3); the
//	             target's CPU time over the same seconds (utime+stime of its process, which
//	             includes the softirq work run in its system calls) gives pps per core
//	latency      the same downlink at a fixed 10 kpps: p50 / p99 from the sender's write to
//	             the receiver's read, both user space in this process; the same over a bare
//	             veth pair is the floor (what the measurement itself costs)
//	users        the software UPFs only: 100,000 sessions installed beside the case's, each
//	             as 198.18.0.1 is (its own user, usage cell and path state), and 10 kpps for
//	             4 s, every other frame to one of 1,000 of them and the others to any of them,
//	             at random: the JUNCTION paper's Fig. 9, latency as the users grow
//	writes       3,000 tunnel_peers entries written in batches of 1, 100 and 1,000
//	RT           the last two columns: each software UPF again, its port readers at
//	             SCHED_FIFO priority (--realtime-priority), so that a frame's wake-up does
//	             not wait for the core
//
// The targets (issue 30): the software UPF on AF_XDP >= 1 Mpps forwarded per core and >= 3x
// AF_PACKET at 64 B; p99 <= 2x and p50 <= 3x bare veth's at 10 kpps; p99 with 100,000 users
// <= 1.2x the p99 with 1,000 (-bench SoftUPF in internal/softupf/dataplane times the pipeline
// alone, in memory, with as many users). The generator is one core
// of two, shared with the target: forwarding rates above its own send rate cannot show, and on
// veth the receiving side's kernel work (the XDP program, the copy into the UMEM) runs on the
// sender's core.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/ports"
	"github.com/junction-atsss/junction/test/netns"
)

const (
	benchBlast    = 3 * time.Second // per frame size
	benchRate     = 10_000          // latency: frames per second
	benchLatency  = 2 * time.Second
	benchEntries  = 3000
	benchPeerBase = 100 // tunnel_peers indexes written: the topology uses 3

	benchUsers    = 100_000
	benchHotUsers = 1_000
	benchUserBase = 1_000 // the users' first user index and usage cell: the cases use 1 to 7

	// benchRealtimePriority is the RT columns' --realtime-priority: any SCHED_FIFO priority
	// puts the readers ahead of every ordinary thread; 10 leaves room above for the kernel's.
	benchRealtimePriority = 10
)

// benchUserAddr is the session address of bench user i: 10.128.0.0/15 holds them.
func benchUserAddr(i int) [4]byte { return [4]byte{10, byte(128 + i>>16), byte(i >> 8), byte(i)} }

// latencies are one measurement's frames' latencies, sorted, and how many never came.
type latencies struct {
	lat  []time.Duration
	lost int
}

// at is the q quantile (0 with nothing measured).
func (l latencies) at(q float64) time.Duration {
	if len(l.lat) == 0 {
		return 0
	}
	return l.lat[int(q*float64(len(l.lat)-1))]
}

type targetResult struct {
	name          string
	offered, pps  [2]float64 // 64 and 1,400 bytes
	cores         [2]float64 // the target's CPU time over the blast's time: 0 when unknown
	p50, p99      time.Duration
	lost          int
	users         [2]latencies // spread over benchHotUsers and over benchUsers sessions; empty for BMv2
	writes        [3]float64   // entries per second at batch 1, 100, 1,000
	writesBatches [3]int
}

func BenchmarkTargets(b *testing.B) {
	netns.Require(b)
	floor50, floor99 := latencyFloor(b)
	var results []targetResult
	// users: the latency with users is measured on the software UPFs (BMv2 falls behind 10 kpps).
	type target struct {
		name  string
		start func(testing.TB) (Config, int)
		users bool
	}
	var targets []target
	for _, kind := range portKinds {
		targets = append(targets, target{"UPF " + kindLabel[kind], func(tb testing.TB) (Config, int) { return startSoftUPFProcess(tb, kind) }, true})
	}
	targets = append(targets, target{"BMv2", func(tb testing.TB) (Config, int) { return startBMv2(tb), 0 }, false})
	for _, kind := range portKinds {
		targets = append(targets, target{"RT " + kindLabel[kind], func(tb testing.TB) (Config, int) {
			return startSoftUPFProcess(tb, kind, "--realtime-priority", fmt.Sprint(benchRealtimePriority))
		}, true})
	}
	for _, t := range targets {
		b.Run(strings.ReplaceAll(t.name, " ", "_"), func(b *testing.B) {
			cfg, pid := t.start(b)
			results = append(results, measureTarget(b, t.name, cfg, pid, t.users))
		})
	}
	if len(results) != len(targets) {
		return
	}
	// The columns: each software UPF, BMv2, each software UPF with real-time readers, then
	// AF_XDP over AF_PACKET and over BMv2.
	x, p, m, rtx, rtp := results[0], results[1], results[2], results[3], results[4]
	var out strings.Builder
	// row prints one measure per target (- where it was not measured) and, for rates, the ratios.
	row := func(label string, v func(targetResult) float64, format string, ratios bool) {
		fmt.Fprintf(&out, "%-28s", label)
		for _, r := range results {
			if v(r) == 0 {
				fmt.Fprintf(&out, " %14s", "-")
			} else {
				fmt.Fprintf(&out, " "+format, v(r))
			}
		}
		if ratios {
			fmt.Fprintf(&out, " %9.1fx %9.1fx", v(x)/v(p), v(x)/v(m))
		}
		fmt.Fprintln(&out)
	}
	fmt.Fprintf(&out, "\n%-28s", "")
	for _, r := range results {
		fmt.Fprintf(&out, " %14s", r.name)
	}
	fmt.Fprintf(&out, " %10s %10s\n", "XDP/PACKET", "XDP/BMv2")
	for i, size := range []int{64, 1400} {
		row(fmt.Sprintf("pps at %d B (offered)", size), func(r targetResult) float64 { return r.offered[i] }, "%14.0f", false)
		row(fmt.Sprintf("pps at %d B (forwarded)", size), func(r targetResult) float64 { return r.pps[i] }, "%14.0f", true)
		row(fmt.Sprintf("target cores at %d B", size), func(r targetResult) float64 { return r.cores[i] }, "%14.2f", false)
		row(fmt.Sprintf("pps per core at %d B", size), func(r targetResult) float64 { return perCore(r.pps[i], r.cores[i]) }, "%14.0f", false)
	}
	lat := func(label string, v func(targetResult) time.Duration, floor time.Duration) {
		fmt.Fprintf(&out, "%-28s", label)
		for _, r := range results {
			fmt.Fprintf(&out, " %14s", v(r).Round(time.Microsecond))
		}
		fmt.Fprintf(&out, "   (bare veth %s)\n", floor.Round(time.Microsecond))
	}
	lat("p50 at 10 kpps", func(r targetResult) time.Duration { return r.p50 }, floor50)
	lat("p99 at 10 kpps", func(r targetResult) time.Duration { return r.p99 }, floor99)
	fmt.Fprintf(&out, "%-28s", "lost at 10 kpps")
	for _, r := range results {
		fmt.Fprintf(&out, " %14d", r.lost)
	}
	fmt.Fprintln(&out)
	for p, users := range []string{"1k", "100k"} {
		for _, q := range []float64{0.50, 0.99} {
			fmt.Fprintf(&out, "%-28s", fmt.Sprintf("p%.0f, %s users", 100*q, users))
			for _, r := range results {
				if len(r.users[p].lat) == 0 {
					fmt.Fprintf(&out, " %14s", "-")
				} else {
					fmt.Fprintf(&out, " %14s", r.users[p].at(q).Round(time.Microsecond))
				}
			}
			fmt.Fprintln(&out)
		}
	}
	for i, batch := range []int{1, 100, 1000} {
		row(fmt.Sprintf("entries/s, batch %d", batch), func(r targetResult) float64 { return r.writes[i] }, "%14.0f", true)
	}
	fmt.Fprintf(&out, "targets at 64 B: AF_XDP %.0f pps per core (>= 1,000,000: %s), forwarded %.1fx AF_PACKET's (>= 3x: %s), per core %.1fx\n",
		perCore(x.pps[0], x.cores[0]), met(perCore(x.pps[0], x.cores[0]) >= 1e6), x.pps[0]/p.pps[0], met(x.pps[0] >= 3*p.pps[0]),
		perCore(x.pps[0], x.cores[0])/perCore(p.pps[0], p.cores[0]))
	fmt.Fprintf(&out, "targets at 10 kpps: AF_XDP p50 %.1fx bare veth (<= 3x: %s), p99 %.1fx (<= 2x: %s)\n",
		float64(x.p50)/float64(floor50), met(x.p50 <= 3*floor50), float64(x.p99)/float64(floor99), met(x.p99 <= 2*floor99))
	fmt.Fprintf(&out, "the same with real-time readers (--realtime-priority %d): AF_XDP p50 %.1fx bare veth (<= 3x: %s), p99 %.1fx (<= 2x: %s); AF_PACKET p50 %.1fx, p99 %.1fx\n",
		benchRealtimePriority, float64(rtx.p50)/float64(floor50), met(rtx.p50 <= 3*floor50), float64(rtx.p99)/float64(floor99), met(rtx.p99 <= 2*floor99),
		float64(rtp.p50)/float64(floor50), float64(rtp.p99)/float64(floor99))
	usersRatio := float64(x.users[1].at(0.99)) / float64(x.users[0].at(0.99))
	fmt.Fprintf(&out, "targets with users: AF_XDP p99 at 100k users %.2fx 1k users' (<= 1.2x: %s; lost %d and %d)\n",
		usersRatio, met(usersRatio <= 1.2), x.users[0].lost, x.users[1].lost)
	fmt.Print(out.String())
}

// kindLabel names a port kind in the table.
var kindLabel = map[ports.Kind]string{ports.KindXDP: "AF_XDP", ports.KindPacket: "AF_PACKET"}

func perCore(pps, cores float64) float64 {
	if cores == 0 {
		return 0
	}
	return pps / cores
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// cpuTime is a process's user and system time so far (0 for pid 0: not measured).
func cpuTime(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(u+s) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTicks = 100

func measureTarget(b *testing.B, name string, cfg Config, pid int, withUsers bool) targetResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := NewRunner(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	cases, err := LoadCases("cases", regexp.MustCompile("^downlink-default-application$"))
	if err != nil || len(cases) != 1 {
		b.Fatalf("the downlink case: %v", err)
	}
	cr := newCaseRun(r, cases[0])
	if err := cr.setup(ctx); err != nil {
		b.Fatal(err)
	}
	res := targetResult{name: name}

	// The runner's n3 socket would copy every frame of the blast: close it; the kernel counts.
	r.ports["n3"].Close()
	delete(r.ports, "n3")
	send := r.ports["n6"]
	blaster := openBlaster(b, cfg, "t-n6")
	for i, size := range []int{64, 1400} {
		frame := downlinkFrame(size, downlinkDst, 0)
		rx0, err := rxPackets(cfg, "t-n3")
		if err != nil {
			b.Fatal(err)
		}
		cpu0, err := cpuTime(pid)
		if err != nil {
			b.Fatal(err)
		}
		sent, start := blaster.blast(frame, benchBlast)
		elapsed := time.Since(start)
		cpu1, err := cpuTime(pid)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // what is still in the target's queues
		rx1, err := rxPackets(cfg, "t-n3")
		if err != nil {
			b.Fatal(err)
		}
		res.offered[i] = float64(sent) / elapsed.Seconds()
		res.pps[i] = float64(rx1-rx0) / elapsed.Seconds()
		res.cores[i] = (cpu1 - cpu0).Seconds() / elapsed.Seconds()
	}
	blaster.set.Close()

	// Latency: a fresh receiver on n3, frames numbered in their last 8 bytes.
	col := newCollector()
	var recv *packetPort
	if err := r.cfg.InNamespace(func() (err error) {
		recv, err = openPacketPort("n3", "t-n3", col)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer recv.Close()
	l := measureLatency(b, send, col, int(benchLatency.Seconds()*benchRate), toSession)[0]
	res.p50, res.p99, res.lost = l.at(0.50), l.at(0.99), l.lost
	if withUsers {
		res.users = usersLatency(ctx, b, cr, send, col)
	}

	// P4Runtime writes.
	for i, batch := range []int{1, 100, 1000} {
		var ups []*p4v1.Update
		for k := range benchEntries {
			te, err := cr.tableEntry(Entry{Table: "tunnel_peers", Match: map[string]any{"peer_idx": benchPeerBase + k},
				Action: "set_tunnel_peer", Params: map[string]any{"peer_addr": fmt.Sprintf("10.%d.%d.1", k/250, k%250)}})
			if err != nil {
				b.Fatal(err)
			}
			ups = append(ups, update(p4v1.Update_INSERT, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}))
		}
		start := time.Now()
		for k := 0; k < len(ups); k += batch {
			if err := r.client.write(ctx, ups[k:min(k+batch, len(ups))]...); err != nil {
				b.Fatalf("batch %d: %v", batch, err)
			}
		}
		res.writes[i] = float64(len(ups)) / time.Since(start).Seconds()
		for k := range ups {
			ups[k].Type = p4v1.Update_DELETE
		}
		for k := 0; k < len(ups); k += 1000 {
			if err := r.client.write(ctx, ups[k:min(k+1000, len(ups))]...); err != nil {
				b.Fatalf("delete: %v", err)
			}
		}
	}
	if err := cr.cleanup(ctx); err != nil {
		b.Fatal(err)
	}
	return res
}

// blaster is the forwarding benchmark's sender: the software UPF's AF_PACKET port code, which
// sends a batch in one sendmmsg (the runner's port sends a frame per write).
type blaster struct {
	set  *ports.Set
	pool *dataplane.Pool
}

func openBlaster(b *testing.B, cfg Config, iface string) *blaster {
	bl := &blaster{pool: dataplane.NewPool(2 * ports.BatchSize)}
	if err := cfg.InNamespace(func() (err error) {
		bl.set, err = ports.Open([]ports.Mapping{{Port: 1, Iface: iface}}, ports.KindPacket, upfCPUPort, bl.pool, nil)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bl.set.Close() })
	return bl
}

// blast sends frame in batches for d and returns how many went out and when it started.
func (bl *blaster) blast(frame []byte, d time.Duration) (int, time.Time) {
	batch := make([]*dataplane.Packet, ports.BatchSize)
	sent0 := bl.set.Stats()[0].TxPackets
	start := time.Now()
	for time.Since(start) < d {
		for i := range batch {
			batch[i] = bl.pool.Get(nil)
			batch[i].SetFrame(frame)
			batch[i].OutPort = 1
		}
		bl.set.Transmit(batch)
	}
	return int(bl.set.Stats()[0].TxPackets - sent0), start
}

// measureLatency sends n frames of 128 bytes at benchRate on send, numbered i in their last 8
// bytes, and matches what col receives. Frame i goes to dsts[i % len(dsts)](), and each
// destination's latencies come back apart: interleaved frame by frame, the destinations meet
// any stall of the target or of the machine alike.
func measureLatency(b *testing.B, send PortIO, col *collector, n int, dsts ...func() [4]byte) []latencies {
	sentAt := make([]time.Time, n)
	start := time.Now()
	for i := range n {
		// Sleep, not spin: a spinning sender would take a core from the target and the receiver.
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / benchRate)))
		frame := downlinkFrame(128, dsts[i%len(dsts)](), uint64(i))
		sentAt[i] = time.Now()
		if err := send.Send(frame); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	got, _ := col.take()
	out := make([]latencies, len(dsts))
	for _, f := range got {
		if len(f.frame) < 8 {
			continue
		}
		if i := binary.BigEndian.Uint64(f.frame[len(f.frame)-8:]); i < uint64(n) {
			l := &out[i%uint64(len(dsts))]
			l.lat = append(l.lat, f.at.Sub(sentAt[i]))
		}
	}
	for d := range out {
		slices.Sort(out[d].lat)
		out[d].lost = (n+len(dsts)-1-d)/len(dsts) - len(out[d].lat) // frames d, d+len(dsts), ...
	}
	return out
}

// toSession is the destination of the vectors' session, for measureLatency.
func toSession() [4]byte { return downlinkDst }

// usersLatency installs benchUsers sessions, each as the topology's 198.18.0.1 is but with its
// own address, user index, usage cell and path state, and returns the latencies of frames to
// one of the first benchHotUsers of them, at random, and of frames to any of them, sent
// alternately.
func usersLatency(ctx context.Context, b *testing.B, cr *caseRun, send PortIO, col *collector) [2]latencies {
	// Path state first, as the topology's (the runner's writes, a thousand users a request: one
	// request of them all would pass gRPC's 4 MB), so that no packet meets a user without it.
	for i := 0; i < benchUsers; i += 1000 {
		cells := map[string]any{}
		for u := benchUserBase + i; u < benchUserBase+min(i+1000, benchUsers); u++ {
			cells[fmt.Sprintf("rtt_3gpp[%d]", u)], cells[fmt.Sprintf("rtt_non3gpp[%d]", u)] = 2000, 1000
		}
		if err := cr.writeRegisters(ctx, cells); err != nil {
			b.Fatalf("the users' path state: %v", err)
		}
	}
	var ups []*p4v1.Update
	for i := range benchUsers {
		a := benchUserAddr(i)
		te, err := cr.tableEntry(Entry{Table: "sessions", Match: map[string]any{"session_addr": net.IP(a[:]).String()},
			Action: "set_session", Params: map[string]any{"user_idx": benchUserBase + i, "endpoint_idx": 1, "peer_idx": 3, "teid": 0x200,
				"ue_addr_3gpp": "198.18.1.1", "ue_addr_non3gpp": "198.18.2.1", "gateway_non3gpp": "0.0.0.0", "teid_non3gpp": 0,
				"usage_idx": benchUserBase + i}})
		if err != nil {
			b.Fatal(err)
		}
		ups = append(ups, update(p4v1.Update_INSERT, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}))
	}
	writeBatches := func(what string) {
		for k := 0; k < len(ups); k += 1000 {
			if err := cr.r.client.write(ctx, ups[k:min(k+1000, len(ups))]...); err != nil {
				b.Fatalf("%s the users' sessions: %v", what, err)
			}
		}
	}
	writeBatches("installing")
	rng := rand.New(rand.NewPCG(3, 4))
	hot := func() [4]byte { return benchUserAddr(rng.IntN(benchHotUsers)) }
	all := func() [4]byte { return benchUserAddr(rng.IntN(benchUsers)) }
	l := measureLatency(b, send, col, 2*int(benchLatency.Seconds()*benchRate), hot, all)
	for k := range ups {
		ups[k].Type = p4v1.Update_DELETE
	}
	writeBatches("deleting")
	return [2]latencies{l[0], l[1]}
}

// latencyFloor is measureLatency over a bare veth pair: what the test's own sender and
// receiver cost, the floor under both targets' figures.
func latencyFloor(b *testing.B) (p50, p99 time.Duration) {
	ns := netns.ForTest(b, "jbflr")
	if err := netns.AddVeth(netns.Link{Name: "fa", NS: ns}, netns.Link{Name: "fb", NS: ns}); err != nil {
		b.Fatal(err)
	}
	col := newCollector()
	var send, recv *packetPort
	if err := ns.Do(func() (err error) {
		if send, err = openPacketPort("fa", "fa", newCollector()); err != nil {
			return err
		}
		recv, err = openPacketPort("fb", "fb", col)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer send.Close()
	defer recv.Close()
	l := measureLatency(b, send, col, int(benchLatency.Seconds()*benchRate), toSession)[0]
	return l.at(0.50), l.at(0.99)
}

// downlinkDst is the vectors' session 198.18.0.1 (docs: common/topology.yaml).
var downlinkDst = [4]byte{198, 18, 0, 1}

// downlinkFrame is a UDP frame of size bytes from the data network to dst, numbered n in its
// last 8 bytes.
func downlinkFrame(size int, dst [4]byte, n uint64) []byte {
	f := make([]byte, size)
	copy(f, []byte{2, 0, 0, 0, 1, 6, 2, 0, 0, 0, 2, 6, 8, 0}) // to the UPF's n6 MAC
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	copy(ip[12:], []byte{203, 0, 113, 10})
	copy(ip[16:], dst[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 443)
	binary.BigEndian.PutUint16(udp[2:], 40000)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	binary.BigEndian.PutUint64(f[size-8:], n)
	return f
}

// rxPackets reads an interface's received-packet count in the test-side namespace, from
// /proc/thread-self/net/dev, which shows the calling thread's namespace.
func rxPackets(cfg Config, iface string) (uint64, error) {
	var n uint64
	err := cfg.InNamespace(func() error {
		f, err := os.Open("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
			if ok && name == iface {
				fields := strings.Fields(rest)
				n, err = strconv.ParseUint(fields[1], 10, 64) // bytes, then packets
				return err
			}
		}
		return fmt.Errorf("%s not in /proc/net/dev", iface)
	})
	return n, err
}
