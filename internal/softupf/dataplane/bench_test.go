package dataplane

// Benchmarks of Process on the downlink (sessions → applications → session_overrides →
// steering → Junction/GTP-U encapsulation → route), with 1k, 10k and 100k users installed.
//
//	go test -run '^$' -bench Pipeline -benchmem ./internal/softupf/dataplane/
//
// BenchmarkPipeline reports packets/s and must show 0 allocs/op; BenchmarkPipelineLatency
// reports the per-packet latency percentiles (batches of one, timed with the monotonic clock,
// whose own cost of ~20-40 ns is included).

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

const benchBatch = 64

var benchUsers = []int{1_000, 10_000, 100_000}

// benchSetup installs n sessions (two legs each, path state set), four applications, and a
// load-balance override for every eighth session, and returns downlink frames toward random
// sessions.
func benchSetup(b *testing.B, n int) (*harness, [][]byte) {
	h := topology(b, func(c *Config) { c.Pool = NewPool(4 * benchBatch); c.MaxHeld = 16 })
	h.pool = h.p.pool
	for i, port := range []uint64{53, 80, 443, 8443} {
		h.insert("applications", map[string]any{"proto": tv{17, 0xff}, "remote_port": rv{port, port}}, int32(100+i),
			"set_application", map[string]uint64{"app_id": uint64(10 + i), "mode": ModeSmallestDelay,
				"access": Access3GPP, "ratio_3gpp": 0, "rtt_threshold_us": 30000})
	}
	base := ip4("10.0.0.0")
	for i := range n {
		sa := base + uint64(i)
		h.insert("sessions", map[string]any{"session_addr": sa}, 0, "set_session", map[string]uint64{
			"user_idx": uint64(i), "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": uint64(i + 1),
			"ue_addr_3gpp": ip4("10.60.0.1") + uint64(i), "ue_addr_non3gpp": ip4("198.51.100.0") + uint64(i%250)})
		if i%8 == 0 && i/8 < 16384 {
			h.insert("session_overrides", map[string]any{"session_addr": sa, "app_id": uint64(12)}, 0,
				"override_steering", map[string]uint64{"mode": ModeLoadBalance, "access": Access3GPP, "ratio_3gpp": 64,
					"rtt_threshold_us": 0, "seq_index": uint64(i / 8)})
		}
		h.setReg("rtt_3gpp", uint32(i), uint64(10000+i%5000))
		h.setReg("rtt_non3gpp", uint32(i), uint64(5000+i%9000))
	}
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

func BenchmarkPipeline(b *testing.B) {
	for _, n := range benchUsers {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			h, frames := benchSetup(b, n)
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
			b.ReportMetric(float64(b.N)/el.Seconds(), "pkts/s")
			if sent != b.N {
				b.Fatalf("%d of %d packets sent; drops %v", sent, b.N, h.p.Stats().Drops)
			}
		})
	}
}

func BenchmarkPipelineLatency(b *testing.B) {
	for _, n := range benchUsers {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			h, frames := benchSetup(b, n)
			lat := make([]time.Duration, 0, min(b.N, 1<<20))
			in := make([]*Packet, 1)
			out := make([]*Packet, 0, 2)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				pkt := h.pool.TryGet()
				pkt.SetFrame(frames[i%len(frames)])
				in[0] = pkt
				t0 := time.Now()
				out = h.p.Process(in, out[:0])
				d := time.Since(t0)
				if len(lat) < cap(lat) {
					lat = append(lat, d)
				}
				for _, p := range out {
					h.pool.Put(p)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) }
			b.ReportMetric(pct(0.50), "p50-ns")
			b.ReportMetric(pct(0.99), "p99-ns")
			b.ReportMetric(pct(0.999), "p99.9-ns")
			b.Logf("\n| users | packets | p50 | p99 | p99.9 |\n|---|---|---|---|---|\n| %d | %d | %.0f ns | %.0f ns | %.0f ns |",
				n, len(lat), pct(0.50), pct(0.99), pct(0.999))
		})
	}
}
