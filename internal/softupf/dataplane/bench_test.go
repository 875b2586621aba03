package dataplane

// The software UPF benchmark: Process on the downlink (sessions → applications →
// session_overrides → steering → Junction/GTP-U encapsulation → route) with 1k, 10k and 100k
// users installed, against a baseline measured in the same run (plain IPv4 routing through the
// same pipeline: no session hit). One goroutine, so the rates are per core.
//
//	go test -run '^$' -bench SoftUPF -benchmem -v ./internal/softupf/dataplane/
//
// Each case reports packets/s (batches of 64, as the ports deliver them) and must show
// 0 allocs/op; the latency percentiles come from batches of one, timed with the monotonic clock
// (whose own ~20-40 ns is included). The cases' latencies are measured last, in rounds that take
// every case in turn, and each figure is the median over the rounds: a ratio of cases measured
// seconds apart followed the shared machine's load (docs/softupf.md, "Latency in rounds"). The last line
// is a table with ratios to the baseline and to 1k users, which is what to compare across
// machines.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

const benchBatch = 64

var benchUsers = []int{1_000, 10_000, 100_000}

// benchSetup installs n sessions (two legs each, path state set), four applications, and a
// load-balance override for every eighth session, and returns downlink frames toward random
// sessions.
func benchSetup(b *testing.B, n int) (*harness, [][]byte) { return benchSetupWith(b, n, false) }

// benchSetupWith is benchSetup, every session with a QoS flow of its own (flows) as the operator
// writes one (docs/pipeline.md, "QoS flows"): for another server than the frames', so each
// frame passes the flow's entry and hits its session's default flow entry under it.
func benchSetupWith(b *testing.B, n int, flows bool) (*harness, [][]byte) {
	h := topology(b, func(c *Config) { c.Pool = NewPool(4 * benchBatch); c.MaxHeld = 16 })
	h.pool = h.p.pool
	for i, port := range []uint64{53, 80, 443, 8443} {
		h.insert("applications", map[string]any{"proto": tv{17, 0xff}, "remote_port": rv{port, port}}, int32(100+i),
			"set_application", map[string]uint64{"app_id": uint64(10 + i), "mode": uint64(contract.ModeSmallestDelay),
				"access": uint64(contract.Access3GPP), "ratio_3gpp": 0, "rtt_threshold_us": 30000, "loss_limit_pct": 0})
	}
	installUsers(h, n)
	if flows {
		installQoSFlows(h, n)
	}
	base := ip4("10.0.0.0")
	rng := rand.New(rand.NewPCG(1, 2))
	frames := make([][]byte, 4096)
	for i := range frames {
		dst := base + uint64(rng.IntN(n))
		var a [4]byte
		a[0], a[1], a[2], a[3] = byte(dst>>24), byte(dst>>16), byte(dst>>8), byte(dst)
		frames[i] = fromDN(wiretest.Build(wire.IPv4{Src: addr(server), Dst: a},
			wire.UDP{SrcPort: 443, DstPort: 40000}, make([]byte, 1200)))
	}
	return h, frames
}

// installUsers installs n users of one session each (two legs, path state set) at 10.0.0.0 + i,
// a load-balance override for every eighth.
func installUsers(h *harness, n int) {
	base := ip4("10.0.0.0")
	for i := range n {
		sa := base + uint64(i)
		h.insert("sessions", map[string]any{"session_addr": sa}, 0, "set_session", map[string]uint64{
			"user_idx": uint64(i), "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": uint64(i + 1),
			"ue_addr_3gpp": ip4("10.60.0.1") + uint64(i), "ue_addr_non3gpp": ip4("198.51.100.0") + uint64(i%250), "gateway_non3gpp": 0, "teid_non3gpp": 0,
			"usage_idx": uint64(i + 1)})
		if i%8 == 0 && i/8 < 16384 {
			h.insert("session_overrides", map[string]any{"session_addr": sa, "app_id": uint64(12)}, 0,
				"override_steering", map[string]uint64{"mode": uint64(contract.ModeLoadBalance), "access": uint64(contract.Access3GPP), "ratio_3gpp": 64,
					"rtt_threshold_us": 0, "loss_limit_pct": 0, "seq_index": uint64(i / 8)})
		}
		h.setReg("rtt_3gpp", uint32(i), uint64(10000+i%5000))
		h.setReg("rtt_non3gpp", uint32(i), uint64(5000+i%9000))
	}
}

// installQoSFlows gives each of installUsers' n sessions a QoS flow (installQoSFlow, block i).
func installQoSFlows(h *harness, n int) {
	base := ip4("10.0.0.0")
	for i := range n {
		installQoSFlow(h, base+uint64(i), uint64(i))
	}
}

// installQoSFlow gives the session of address ue a QoS flow for 198.51.100.77 (QFI 2, cell
// 5 × block) and its default flow's entries (cell 5 × block + 4), both ways, as the operator
// writes them (docs/pipeline.md, "QoS flows").
func installQoSFlow(h *harness, ue, block uint64) {
	for _, up := range []uint64{0, 1} {
		h.insert("qos_flows", map[string]any{"ue_addr": ue, "uplink": up, "remote_addr": tv{ip4("198.51.100.77"), 0xffffffff}},
			65535-128, "set_qos_flow", map[string]uint64{"flow_qfi": 2, "flow_idx": 5 * block, "gbr": 0})
		h.insert("qos_flows", map[string]any{"ue_addr": ue, "uplink": up}, 1, "set_qos_flow", map[string]uint64{"flow_qfi": 0, "flow_idx": 5*block + 4, "gbr": 0})
	}
}

// BenchmarkMemoryPerUser reports the software UPF's heap per user (one session, its path state
// and every eighth with an override) with 100k users installed, Table V's measured column: what
// installing them added (B/user-added), and the whole pipeline's heap, with the registers it
// sizes for every user index up front, divided by the users (B/user-total).
//
//	go test -run '^$' -bench MemoryPerUser ./internal/softupf/dataplane/
func BenchmarkMemoryPerUser(b *testing.B) {
	const n = 100_000
	for range b.N {
		empty := heapAfterGC()
		h := topology(b, func(c *Config) { c.Pool = NewPool(4 * benchBatch); c.MaxHeld = 16 })
		before := heapAfterGC()
		installUsers(h, n)
		after := heapAfterGC()
		b.ReportMetric(float64(after-before)/n, "B/user-added")
		b.ReportMetric(float64(after-empty)/n, "B/user-total")
		runtime.KeepAlive(h)
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchResult is one row of the table.
type benchResult struct {
	name           string
	pps            float64
	p50, p99, p999 time.Duration // medians over the rounds
	p99Vs1k        float64       // median over the rounds of p99 / the 1k users' p99 in the round
	h              *harness      // kept for the latency rounds
	frames         [][]byte
}

// latencyRounds and latencyPerRound: 200,000 packets per case, in 10 rounds.
const latencyRounds, latencyPerRound = 10, 20_000

// routeOnlyFrames are downlink frames to addresses that are no session: plain routing.
func routeOnlyFrames() [][]byte {
	frames := make([][]byte, 4096)
	for i := range frames {
		frames[i] = fromDN(wiretest.Build(wire.IPv4{Src: addr(server), Dst: [4]byte{172, 16, byte(i >> 8), byte(i)}},
			wire.UDP{SrcPort: 443, DstPort: 40000}, make([]byte, 1200)))
	}
	return frames
}

func BenchmarkSoftUPF(b *testing.B) {
	var rows []benchResult
	measure := func(name string, n int, flows bool, frames func(*harness, [][]byte) [][]byte) {
		var r benchResult
		b.Run(name, func(b *testing.B) {
			h, sessionFrames := benchSetupWith(b, n, flows)
			fs := frames(h, sessionFrames)
			r = benchResult{name: name, pps: throughput(b, h, fs), h: h, frames: fs}
		})
		rows = append(rows, r)
	}
	measure("route-only", 1_000, false, func(*harness, [][]byte) [][]byte { return routeOnlyFrames() })
	for _, n := range benchUsers {
		measure(fmt.Sprintf("downlink users=%d", n), n, false, func(_ *harness, fs [][]byte) [][]byte { return fs })
	}
	// MAX_QOS_FLOWS (65,536 cells and entries) holds 13,107 sessions' flows: 10k of them here.
	measure("downlink users=10000, a QoS flow each", 10_000, true, func(_ *harness, fs [][]byte) [][]byte { return fs })
	if len(rows) < 2 || rows[0].pps == 0 || rows[1].pps == 0 {
		return // a -bench filter ran only some cases
	}
	latencyInRounds(rows, 1)
	var t strings.Builder
	t.WriteString("\n| case | Mpps/core | vs route-only | p50 | p99 | p99.9 | p99 vs 1k users |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&t, "| %s | %.2f | %.2f | %v | %v | %v | %.2f |\n", r.name, r.pps/1e6, r.pps/rows[0].pps,
			r.p50, r.p99, r.p999, r.p99Vs1k)
	}
	b.Log(t.String())
}

// throughput runs b.N packets through Process in batches and returns packets per second.
func throughput(b *testing.B, h *harness, frames [][]byte) float64 {
	in := make([]*Packet, 0, benchBatch)
	out := make([]*Packet, 0, 2*benchBatch)
	sent := 0
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += benchBatch {
		in = in[:0]
		for j := 0; j < benchBatch && i+j < b.N; j++ {
			pkt := h.pool.TryGet()
			pkt.SetFrame(frames[(i+j)%len(frames)])
			in = append(in, pkt)
		}
		out = h.p.Process(in, out[:0])
		sent += len(out)
		for _, p := range out {
			h.pool.Put(p)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	if sent != b.N {
		b.Fatalf("%d of %d packets sent; drops %v", sent, b.N, h.p.Stats().Drops)
	}
	pps := float64(b.N) / el.Seconds()
	b.ReportMetric(pps, "pkts/s")
	return pps
}

// latencyInRounds fills the rows' latencies: latencyRounds rounds, each timing every row's
// packets in turn, and per row the medians over the rounds of its percentiles and of its p99
// over row ref's p99 in the same round.
func latencyInRounds(rows []benchResult, ref int) {
	type round struct {
		p50, p99, p999 time.Duration
		vsRef          float64
	}
	per := make([][]round, len(rows))
	for range latencyRounds {
		rs := make([]round, len(rows))
		for i, r := range rows {
			rs[i].p50, rs[i].p99, rs[i].p999 = latency(r.h, r.frames, latencyPerRound)
		}
		for i := range rs {
			rs[i].vsRef = float64(rs[i].p99) / float64(rs[ref].p99)
			per[i] = append(per[i], rs[i])
		}
	}
	median := func(rs []round, f func(round) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for i := range rows {
		rows[i].p50 = time.Duration(median(per[i], func(r round) float64 { return float64(r.p50) }))
		rows[i].p99 = time.Duration(median(per[i], func(r round) float64 { return float64(r.p99) }))
		rows[i].p999 = time.Duration(median(per[i], func(r round) float64 { return float64(r.p999) }))
		rows[i].p99Vs1k = median(per[i], func(r round) float64 { return r.vsRef })
		rows[i].h, rows[i].frames = nil, nil
	}
}

// latency times n packets one at a time and returns the 50th, 99th and 99.9th percentiles.
func latency(h *harness, frames [][]byte, n int) (p50, p99, p999 time.Duration) {
	lat := make([]time.Duration, n)
	in := make([]*Packet, 1)
	out := make([]*Packet, 0, 2)
	for i := range lat {
		pkt := h.pool.TryGet()
		pkt.SetFrame(frames[i%len(frames)])
		in[0] = pkt
		t0 := time.Now()
		out = h.p.Process(in, out[:0])
		lat[i] = time.Since(t0)
		for _, p := range out {
			h.pool.Put(p)
		}
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	return at(0.50), at(0.99), at(0.999)
}
