package upfclient

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

func TestSlowDigestHandlerDropsInsteadOfBlockingTheStream(t *testing.T) {
	release := make(chan struct{})
	var handled atomic.Int32
	u, d := primaryWithPipeline(t, nil, func(c *Config) {
		c.DigestBuffer = 1
		c.DigestHandler = func(ctx context.Context, _ DigestList) {
			handled.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	probeAck := probeTopology(t, u, d, 3)
	// Ack timeout 0: the device sends every list at once, without waiting for acks.
	if err := d.ConfigureDigest(ctxT(t), "probe_reports", 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	const lists = 6
	for i := range lists {
		u.process(1, probeAck(uint32(1000+i))) // distinct RTTs: distinct messages
	}
	dropped := func() int { return int(testutil.ToFloat64(d.m.DigestDrops.WithLabelValues(d.Name()))) }
	deadline := time.After(eventually)
	for int(handled.Load())+len(d.digestQ)+dropped() < lists {
		select {
		case <-deadline:
			t.Fatalf("handled %d, queued %d, dropped %d of %d lists", handled.Load(), len(d.digestQ), dropped(), lists)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// One list in the handler, at most one queued: the others were dropped and counted.
	if n := dropped(); n < lists-2 {
		t.Fatalf("dropped %d lists, want at least %d", n, lists-2)
	}
	// The stream kept flowing while the handler was stuck: a packet-in still arrives.
	u.process(4, wiretest.Build(wire.Ethernet{Type: 0x0806}, make([]byte, 28)))
	select {
	case <-d.PacketIns():
	case <-time.After(eventually):
		t.Fatal("the stream is blocked by the digest handler")
	}
	close(release)
}

// blackhole is a TCP relay that can silently stop delivering bytes in both directions, as a
// cut link or a switch that lost power does: no RST, no FIN, nothing. Connections open when
// the link is cut stay cut for good (their peers have given up on them); connections made
// after it heals work.
type blackhole struct {
	lis   net.Listener
	mu    sync.Mutex
	dead  bool
	epoch int // incremented by every cut
}

func startBlackhole(t *testing.T, target string) *blackhole {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{lis: lis}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); up.Close() })
			b.mu.Lock()
			epoch := b.epoch
			b.mu.Unlock()
			go b.relay(c, up, epoch)
			go b.relay(up, c, epoch)
		}
	}()
	return b
}

func (b *blackhole) cut() {
	b.mu.Lock()
	b.dead, b.epoch = true, b.epoch+1
	b.mu.Unlock()
}

func (b *blackhole) heal() {
	b.mu.Lock()
	b.dead = false
	b.mu.Unlock()
}

// passes reports whether bytes of a connection accepted in epoch get through now.
func (b *blackhole) passes(epoch int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.dead && b.epoch == epoch
}

func (b *blackhole) relay(src, dst net.Conn, epoch int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			if b.passes(epoch) {
				dst.Close()
			}
			return
		}
		if b.passes(epoch) {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

func TestSilentDeviceIsDetectedAndItsStaleStreamPreempted(t *testing.T) {
	u := startUPF(t, "127.0.0.1:0")
	bh := startBlackhole(t, u.addr)
	// The recommended election ID: leadership epoch high, a per-call counter low.
	var calls atomic.Uint64
	d, err := New(Config{
		Name: t.Name(), Address: bh.lis.Addr().String(), DeviceID: testDeviceID,
		ElectionID:    func() (uint64, uint64) { return 1, calls.Add(1) },
		Backoff:       Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		ProbeInterval: 50 * time.Millisecond,
		DialTimeout:   500 * time.Millisecond,
		Metrics:       NewMetrics(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitPrimary(t, d)

	bh.cut()
	st := waitState(t, d, "the silent device noticed", func(s State) bool { return !s.Connected })
	if st.Err == nil || !strings.Contains(st.Err.Error(), "liveness probe") {
		t.Fatalf("state %+v", st)
	}

	// The link heals. The device still holds the old stream as primary (nothing told it
	// otherwise); the new session's higher ID preempts it.
	bh.heal()
	st = waitPrimary(t, d)
	if st.Generation != 2 || st.ElectionID.GetLow() < 2 {
		t.Fatalf("after healing: %+v", st)
	}
}

func TestMutualTLS(t *testing.T) {
	pki := testenv.NewPKI(t)
	roots, serverCert, clientCert := pki.Pool, pki.ServerPair(t), pki.ClientPair(t)
	u := startUPF(t, "127.0.0.1:0", withServerOptions(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: roots, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS13,
	}))))

	var eid atomic.Uint64
	eid.Store(1)
	d, _ := startDevice(t, u.addr, &eid, func(c *Config) {
		c.TLS = &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS13}
	})
	waitPrimary(t, d)
	info, cfg := pipeline(t)
	if _, err := d.EnsurePipeline(ctxT(t), info, cfg, Cookie(info, cfg), PushIfDifferent); err != nil {
		t.Fatal(err)
	}

	// Without a client certificate, or in plaintext, the device is unreachable: the Device
	// keeps retrying and says why.
	for name, tc := range map[string]*tls.Config{
		"no client certificate": {RootCAs: roots, MinVersion: tls.VersionTLS13},
		"plaintext":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			var eid2 atomic.Uint64
			eid2.Store(2)
			bad, _ := startDevice(t, u.addr, &eid2, func(c *Config) { c.TLS = tc })
			st := waitState(t, bad, "a failed attempt", func(s State) bool { return s.Err != nil })
			if st.Connected || st.Primary {
				t.Fatalf("state %+v", st)
			}
		})
	}
	if st := d.State(); !st.Primary || st.Generation != 1 {
		t.Fatalf("the authorized controller was disturbed: %+v", st)
	}
}

// BenchmarkWriteSessions measures batched session writes into the software UPF: 10k INSERTs
// then 10k DELETEs per iteration, in updates per second, beside the same updates sent as plain
// WriteRequests of the same size on a connection of its own (baseline-updates/s, same run,
// same server, one after the other): the ratio is what the client adds (per-update errors,
// metrics) or saves (it keeps a large batch's requests in flight together).
func BenchmarkWriteSessions(b *testing.B) {
	u, d := primaryWithPipeline(b, nil, func(c *Config) { c.Log = logr.Discard() })
	const n = 10_000
	inserts := make([]*p4v1.Update, n)
	deletes := make([]*p4v1.Update, n)
	for i := range n {
		te, err := d.Schema().Build(Entry{
			Table:  "sessions",
			Match:  []Match{Exact("session_addr", Uint(uint64(0x0a400000+i)))},
			Action: "set_session",
			Params: map[string][]byte{
				"user_idx": Uint(uint64(i)), "endpoint_idx": Uint(0), "peer_idx": Uint(1), "teid": Uint(uint64(i + 1)),
				"ue_addr_3gpp": Uint(uint64(0x0a000000 + i)), "ue_addr_non3gpp": Uint(uint64(0xc0a80000 + i)), "gateway_non3gpp": Uint(0), "teid_non3gpp": Uint(0), "usage_idx": Uint(uint64(i + 1)),
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		inserts[i], deletes[i] = Insert(te), Delete(te)
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, batch := range [][]*p4v1.Update{inserts, deletes} {
			if errs := d.Write(ctx, batch); errs != nil {
				first, _ := FirstError(errs)
				b.Fatal(first)
			}
		}
	}
	took := time.Since(start)
	b.StopTimer()

	conn, err := grpc.NewClient(u.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	raw := p4v1.NewP4RuntimeClient(conn)
	eid := d.State().ElectionID
	baseStart := time.Now()
	for range b.N {
		for _, batch := range [][]*p4v1.Update{inserts, deletes} {
			starts := append(d.chunks(batch), len(batch)) // the client's own WriteRequests
			for i := 0; i+1 < len(starts); i++ {
				req := &p4v1.WriteRequest{DeviceId: testDeviceID, ElectionId: eid, Updates: batch[starts[i]:starts[i+1]],
					Atomicity: p4v1.WriteRequest_CONTINUE_ON_ERROR}
				if _, err := raw.Write(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	base := time.Since(baseStart)
	b.ReportMetric(float64(2*n*b.N)/took.Seconds(), "updates/s")
	b.ReportMetric(float64(2*n*b.N)/base.Seconds(), "baseline-updates/s")
	b.ReportMetric(took.Seconds()/base.Seconds(), "x-baseline-time")
}
