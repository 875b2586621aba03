//go:build linux

package vectors

// BenchmarkTargets prints the software UPF beside BMv2, p4lang's reference target, on the same
// veths with the same generator and the same P4Runtime client, in one run (these machines are
// shared: only ratios within a run mean anything):
//
//	go test ./test/vectors -run '^$' -bench Targets -benchtime 1x      (make bench-targets)
//
//	forwarding   downlink frames of 64 and 1,400 bytes offered as fast as one AF_PACKET
//	             sender goes (n6), GTP-U frames counted as the kernel receives them (n3)
//	latency      the same downlink at a fixed 10 kpps: p50 / p99 from the sender's write to
//	             the receiver's read, both user space in this process; the same over a bare
//	             veth pair is the floor (what the measurement itself costs)
//	writes       3,000 tunnel_peers entries written in batches of 1, 100 and 1,000
//
// The target: the software UPF ≥ 20× BMv2's packets per second, p99 < 50 µs at 10 kpps,
// writes at least BMv2's at every batch size. The generator is one core of two, shared with
// the target: forwarding rates above its own send rate cannot show.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/test/netns"
)

const (
	benchBlast    = 3 * time.Second // per frame size
	benchRate     = 10_000          // latency: frames per second
	benchLatency  = 2 * time.Second
	benchEntries  = 3000
	benchPeerBase = 100 // tunnel_peers indexes written: the topology uses 3
)

type targetResult struct {
	name          string
	offered, pps  [2]float64 // 64 and 1,400 bytes
	p50, p99      time.Duration
	lost          int
	writes        [3]float64 // entries per second at batch 1, 100, 1,000
	writesBatches [3]int
}

func BenchmarkTargets(b *testing.B) {
	netns.Require(b)
	floor50, floor99 := latencyFloor(b)
	var results []targetResult
	for _, target := range []struct {
		name  string
		start func(testing.TB) Config
	}{{"software UPF", startSoftUPF}, {"BMv2", startBMv2}} {
		b.Run(strings.ReplaceAll(target.name, " ", "_"), func(b *testing.B) {
			results = append(results, measureTarget(b, target.name, target.start(b)))
		})
	}
	if len(results) != 2 {
		return
	}
	s, m := results[0], results[1]
	var out strings.Builder
	fmt.Fprintf(&out, "\n%-28s %14s %14s %8s\n", "", s.name, m.name, "ratio")
	for i, size := range []int{64, 1400} {
		fmt.Fprintf(&out, "%-28s %14.0f %14.0f %7.1fx\n", fmt.Sprintf("pps at %d B (offered)", size), s.offered[i], m.offered[i], s.offered[i]/m.offered[i])
		fmt.Fprintf(&out, "%-28s %14.0f %14.0f %7.1fx\n", fmt.Sprintf("pps at %d B (forwarded)", size), s.pps[i], m.pps[i], s.pps[i]/m.pps[i])
	}
	fmt.Fprintf(&out, "%-28s %14s %14s   (bare veth %s)\n", "p50 at 10 kpps", s.p50.Round(time.Microsecond), m.p50.Round(time.Microsecond), floor50.Round(time.Microsecond))
	fmt.Fprintf(&out, "%-28s %14s %14s   (bare veth %s)\n", "p99 at 10 kpps", s.p99.Round(time.Microsecond), m.p99.Round(time.Microsecond), floor99.Round(time.Microsecond))
	fmt.Fprintf(&out, "%-28s %14d %14d\n", "lost at 10 kpps", s.lost, m.lost)
	for i, batch := range []int{1, 100, 1000} {
		fmt.Fprintf(&out, "%-28s %14.0f %14.0f %7.1fx\n", fmt.Sprintf("entries/s, batch %d", batch), s.writes[i], m.writes[i], s.writes[i]/m.writes[i])
	}
	fmt.Print(out.String())
}

func measureTarget(b *testing.B, name string, cfg Config) targetResult {
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
	for i, size := range []int{64, 1400} {
		frame := downlinkFrame(size, 0)
		rx0, err := rxPackets(cfg, "t-n3")
		if err != nil {
			b.Fatal(err)
		}
		sent, start := 0, time.Now()
		for time.Since(start) < benchBlast {
			for range 64 {
				if send.Send(frame) == nil {
					sent++
				}
			}
		}
		elapsed := time.Since(start)
		time.Sleep(300 * time.Millisecond) // what is still in the target's queues
		rx1, err := rxPackets(cfg, "t-n3")
		if err != nil {
			b.Fatal(err)
		}
		res.offered[i] = float64(sent) / elapsed.Seconds()
		res.pps[i] = float64(rx1-rx0) / elapsed.Seconds()
	}

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
	res.p50, res.p99, res.lost = measureLatency(b, send, col)

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

// measureLatency sends numbered frames (the last 8 bytes) at benchRate on send and matches
// what col receives: p50, p99 and how many never came.
func measureLatency(b *testing.B, send PortIO, col *collector) (p50, p99 time.Duration, lost int) {
	n := int(benchLatency.Seconds() * benchRate)
	sentAt := make([]time.Time, n)
	start := time.Now()
	for i := range n {
		// Sleep, not spin: a spinning sender would take a core from the target and the receiver.
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / benchRate)))
		sentAt[i] = time.Now()
		if err := send.Send(downlinkFrame(128, uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	got, _ := col.take()
	var lat []time.Duration
	for _, f := range got {
		if len(f.frame) < 8 {
			continue
		}
		if i := binary.BigEndian.Uint64(f.frame[len(f.frame)-8:]); i < uint64(n) {
			lat = append(lat, f.at.Sub(sentAt[i]))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		p50, p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return p50, p99, n - len(lat)
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
	p50, p99, _ = measureLatency(b, send, col)
	return p50, p99
}

// downlinkFrame is a UDP frame of size bytes from the data network to the vectors' session
// 198.18.0.1 (docs: common/topology.yaml), numbered n in its last 8 bytes.
func downlinkFrame(size int, n uint64) []byte {
	f := make([]byte, size)
	copy(f, []byte{2, 0, 0, 0, 1, 6, 2, 0, 0, 0, 2, 6, 8, 0}) // to the UPF's n6 MAC
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	copy(ip[12:], []byte{203, 0, 113, 10, 198, 18, 0, 1})
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
