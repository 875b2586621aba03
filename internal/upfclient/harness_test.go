package upfclient

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
	"github.com/junction-atsss/junction/p4"
)

// Named timeouts: how long a test waits for something that happens in milliseconds when all
// is well. Generous, because the machine is shared.
const (
	eventually = 20 * time.Second
)

const testDeviceID = 1

// softUPF is the real software UPF (P4Runtime server + data plane) on a loopback listener.
type softUPF struct {
	t    testing.TB
	addr string
	srv  *p4rt.Server
	dp   *dataplane.Pipeline
	pool *dataplane.Pool
	gs   *grpc.Server
	now  atomic.Uint32 // the data plane's now_us
}

// upfSetup is what a test may change about the software UPF.
type upfSetup struct {
	p4rt p4rt.Options
	grpc []grpc.ServerOption
}

type upfOption func(*upfSetup)

func withReadChunk(n int) upfOption { return func(s *upfSetup) { s.p4rt.MaxReadChunk = n } }

func withServerOptions(o ...grpc.ServerOption) upfOption {
	return func(s *upfSetup) { s.grpc = append(s.grpc, o...) }
}

// startUPF serves a fresh software UPF on addr ("127.0.0.1:0" for any port); Cleanup stops it.
func startUPF(t testing.TB, addr string, opts ...upfOption) *softUPF {
	t.Helper()
	u := &softUPF{t: t, pool: dataplane.NewPool(64)}
	u.now.Store(1_000_000)
	dp, err := dataplane.New(dataplane.Config{
		Pool: u.pool, CPUPort: 255, Now: u.now.Load, MaxHeldPerUser: 4, MaxHeld: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	u.dp = dp
	setup := upfSetup{p4rt: p4rt.Options{DeviceID: testDeviceID}}
	for _, f := range opts {
		f(&setup)
	}
	u.srv = p4rt.New(dp, setup.p4rt)

	var lis net.Listener
	deadline := time.Now().Add(eventually)
	for {
		lis, err = net.Listen("tcp", addr)
		// Rebinding a port that was just closed can race with the old listener's teardown.
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	u.addr = lis.Addr().String()
	u.gs = grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(64 << 20),
		// Allow this package's keepalive pings (gRPC's default policy rejects pings more
		// often than every 5 minutes).
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}, setup.grpc...)...)
	p4v1.RegisterP4RuntimeServer(u.gs, u.srv)
	go u.gs.Serve(lis) //nolint:errcheck // Serve returns when stopped
	t.Cleanup(u.stop)
	return u
}

// stop ends the server abruptly, as a crash or a reboot would: streams break.
func (u *softUPF) stop() { u.gs.Stop() }

// process feeds one frame received on port into the data plane; it returns the frames sent.
func (u *softUPF) process(port uint32, frame []byte) int {
	u.t.Helper()
	pkt := u.pool.TryGet()
	if pkt == nil || !pkt.SetFrame(frame) {
		u.t.Fatal("no packet buffer for the frame")
	}
	pkt.InPort = port
	out := u.dp.Process([]*dataplane.Packet{pkt}, nil)
	for _, o := range out {
		u.pool.Put(o)
	}
	return len(out)
}

// pipeline is the real JUNCTION-UPF P4Info (p4/p4info.txtpb) and a device config.
func pipeline(t testing.TB) (*p4configv1.P4Info, []byte) {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	return proto.Clone(info).(*p4configv1.P4Info), []byte("softupf")
}

type deviceOption func(*Config)

// startDevice runs a Device against addr with election ID (0, *eid); Cleanup stops it and
// waits for Run to return.
func startDevice(t testing.TB, addr string, eid *atomic.Uint64, opts ...deviceOption) (*Device, context.CancelFunc) {
	t.Helper()
	cfg := Config{
		Name:       t.Name(),
		Address:    addr,
		DeviceID:   testDeviceID,
		ElectionID: func() (uint64, uint64) { return 0, eid.Load() },
		Log:        testr.NewWithInterface(t, testr.Options{Verbosity: 0}),
		Backoff:    Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		Metrics:    NewMetrics(),
	}
	for _, f := range opts {
		f(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return d, stop
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	t.Cleanup(cancel)
	return ctx
}

func waitPrimary(t testing.TB, d *Device) State {
	t.Helper()
	st, err := d.WaitPrimary(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitState waits until the device's state satisfies ok.
func waitState(t testing.TB, d *Device, what string, ok func(State) bool) State {
	t.Helper()
	deadline := time.After(eventually)
	for {
		d.mu.Lock()
		st, ch := d.state, d.changed
		d.mu.Unlock()
		if ok(st) {
			return st
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: state %+v", what, st)
		}
	}
}

// primaryWithPipeline starts a UPF and a primary Device with the pipeline pushed.
func primaryWithPipeline(t testing.TB, opts []upfOption, dopts ...deviceOption) (*softUPF, *Device) {
	t.Helper()
	u := startUPF(t, "127.0.0.1:0", opts...)
	var eid atomic.Uint64
	eid.Store(1)
	d, _ := startDevice(t, u.addr, &eid, dopts...)
	waitPrimary(t, d)
	info, cfg := pipeline(t)
	if _, err := d.EnsurePipeline(ctxT(t), info, cfg, Cookie(info, cfg), PushIfDifferent); err != nil {
		t.Fatal(err)
	}
	return u, d
}

func mustBuild(t testing.TB, d *Device, e Entry) *p4v1.TableEntry {
	t.Helper()
	te, err := d.Schema().Build(e)
	if err != nil {
		t.Fatal(err)
	}
	return te
}

func mustWrite(t testing.TB, d *Device, updates ...*p4v1.Update) {
	t.Helper()
	if errs := d.Write(ctxT(t), updates); errs != nil {
		first, n := FirstError(errs)
		t.Fatalf("%d of %d updates failed, first: %v", n, len(updates), first)
	}
}
