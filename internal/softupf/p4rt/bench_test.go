package p4rt

import (
	"context"
	"net"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// discardServer accepts every WriteRequest and does nothing with it: what the same requests
// cost in gRPC and protobuf alone, the baseline of BenchmarkWrite.
type discardServer struct {
	p4v1.UnimplementedP4RuntimeServer
}

func (discardServer) Write(context.Context, *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	return &p4v1.WriteResponse{}, nil
}

// discardClient is a client of a discardServer over the same in-memory transport as the harness.
func discardClient(b *testing.B) p4v1.P4RuntimeClient {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	p4v1.RegisterP4RuntimeServer(gs, discardServer{})
	go func() { _ = gs.Serve(lis) }()
	b.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return p4v1.NewP4RuntimeClient(conn)
}

// BenchmarkWrite measures Write throughput over gRPC: INSERTs of exact-match entries with one
// action param, 1000 per request, in entries/s, beside the same requests sent to a server that
// discards them (baseline-entries/s, same run) and the ratio: what validating, storing and
// answering the entries costs over the transport.
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
	b.StopTimer()
	discard := discardClient(b)
	var base time.Duration
	for range b.N {
		start := time.Now()
		if _, err := discard.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(1), Updates: ups}); err != nil {
			b.Fatal(err)
		}
		base += time.Since(start)
	}
	b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "entries/s")
	b.ReportMetric(float64(b.N*batch)/base.Seconds(), "baseline-entries/s")
	b.ReportMetric(elapsed.Seconds()/base.Seconds(), "x-baseline-time")
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
