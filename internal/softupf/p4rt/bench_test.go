package p4rt

import (
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// BenchmarkWrite measures Write throughput over gRPC: INSERTs of exact-match entries with one
// action param, 1000 per request. Reported as entries/s.
func BenchmarkWrite(b *testing.B) {
	h, _ := ready(b, Options{})
	h.target.record = false
	const batch = 1000
	ups := make([]*p4v1.Update, batch)
	key := uint32(0)
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if key+batch > 1<<20 { // big_t is full: start over with a fresh pipeline
			if err := h.setPipeline(testP4Info(), 1, 1); err != nil {
				b.Fatal(err)
			}
			key = 0
		}
		for j := range ups {
			ups[j] = ins(bigEntry(key))
			key++
		}
		b.StartTimer()
		start := time.Now()
		if err := h.write(1, ups...); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "entries/s")
}

// BenchmarkWildcardRead measures reading a 100k-entry table back.
func BenchmarkWildcardRead(b *testing.B) {
	h, _ := ready(b, Options{})
	h.target.record = false
	insertBig(b, h, 100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, _, err := h.read(tableEnt(&p4v1.TableEntry{TableId: tblBig}))
		if err != nil || len(out) != 100_000 {
			b.Fatal(len(out), err)
		}
	}
	b.ReportMetric(float64(b.N*100_000)/b.Elapsed().Seconds(), "entries/s")
}
