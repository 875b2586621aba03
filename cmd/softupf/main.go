// Command softupf is Junction's software UPF: a P4Runtime server (internal/softupf/p4rt) in
// front of a data plane that runs the JUNCTION-UPF pipeline of docs/pipeline.md
// (internal/softupf/dataplane) over raw Linux interfaces (internal/softupf/ports).
//
// Like BMv2's simple_switch_grpc it starts with no pipeline: a controller pushes the P4Info
// with SetForwardingPipelineConfig and then writes entries. Ports map to interfaces as on BMv2:
//
//	softupf -i 1@veth0 -i 2@veth1 --grpc-addr 127.0.0.1:9559 --device-id 1 --cpu-port 255
//
// P4Runtime is mutual TLS with --tls-cert, --tls-key and --tls-client-ca (tls.go). Anything
// less lets whoever reaches the port program the UPF, so it needs --insecure: plaintext on an
// address other than loopback, or TLS without --tls-client-ca.
//
// Ports are AF_XDP sockets where an XDP program attaches to the interface, AF_PACKET sockets
// elsewhere (--port-kind=auto); --port-kind=xdp or packet insists on one. The log says which
// each port runs on. Interfaces facing it should have offloads off (see internal/softupf/ports).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/junction-atsss/junction/internal/memlimit"
	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
	"github.com/junction-atsss/junction/internal/softupf/ports"
)

// Tuning constants.
const (
	// maxGRPCMessage lets large Write batches and pipeline pushes through (P4Runtime spec 19.2).
	maxGRPCMessage = 256 << 20
	// stopGrace is how long a graceful gRPC stop may wait for open streams before they are cut.
	stopGrace = 2 * time.Second
	// spareBuffers covers packet-outs and redundant copies beyond the readers' batches.
	spareBuffers = 512
)

// portFlags collects repeated -i PORT@IFACE.
type portFlags []ports.Mapping

func (p *portFlags) String() string {
	s := make([]string, len(*p))
	for i, m := range *p {
		s[i] = m.String()
	}
	return strings.Join(s, ",")
}

func (p *portFlags) Set(v string) error {
	m, err := ports.ParseMapping(v)
	if err != nil {
		return err
	}
	*p = append(*p, m)
	return nil
}

type options struct {
	ports    portFlags
	portKind ports.Kind
	grpcAddr string
	deviceID uint64
	cpuPort  uint
	p4info   string
	netns    string
	tls      tlsFiles
	insecure bool
	logLevel slog.Level
	// rtPriority: the port readers' SCHED_FIFO priority, 0 for none (ports.Set.SetRealtimePriority).
	rtPriority int
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("softupf", flag.ContinueOnError)
	fs.Var(&o.ports, "i", "`PORT@IFACE`: serve P4 port PORT on Linux interface IFACE (repeatable), e.g. -i 1@veth0")
	fs.TextVar(&o.portKind, "port-kind", ports.KindAuto, "`kind` of the ports' sockets: auto (AF_XDP where the interface takes an XDP program, else AF_PACKET), xdp or packet")
	fs.StringVar(&o.grpcAddr, "grpc-addr", "127.0.0.1:9559", "P4Runtime gRPC listen `address`")
	fs.Uint64Var(&o.deviceID, "device-id", 1, "P4Runtime device_id of this UPF")
	fs.UintVar(&o.cpuPort, "cpu-port", 255, "port number of the controller for packet-in and packet-out")
	fs.StringVar(&o.p4info, "p4info", "", "optional P4Info `file` (text or binary protobuf) to check at start-up; "+
		"the pipeline itself is always pushed by the controller")
	fs.StringVar(&o.netns, "ports-netns", "", "open the ports' interfaces in this network `namespace` (a name under /var/run/netns or a path) "+
		"while gRPC listens in the process's own: how a testbed keeps the UPF's links in a namespace and its controller on loopback")
	fs.StringVar(&o.tls.cert, "tls-cert", "", "PEM `file` of the P4Runtime server's certificate chain: TLS with --tls-key (default plaintext)")
	fs.StringVar(&o.tls.key, "tls-key", "", "PEM `file` of the P4Runtime server's private key")
	fs.StringVar(&o.tls.clientCA, "tls-client-ca", "", "PEM `file` of the CAs a controller's client certificate must chain to: mutual TLS, required with --tls-cert unless --insecure")
	fs.BoolVar(&o.insecure, "insecure", false, "allow what lets anyone who reaches --grpc-addr program the UPF: plaintext on an address other than loopback, "+
		"or TLS without --tls-client-ca")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn, error")
	fs.IntVar(&o.rtPriority, "realtime-priority", 0, "SCHED_FIFO `priority` (1..99) of the threads that read the ports: a frame at light load "+
		"no longer waits for the core its reader wakes on, but a busy reader keeps its core from ordinary threads; needs CAP_SYS_NICE. 0: off")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.cpuPort > ports.MaxPort {
		return nil, fmt.Errorf("--cpu-port %d: ports are 0..%d", o.cpuPort, ports.MaxPort)
	}
	if err := ports.CheckRealtimePriority(o.rtPriority); err != nil {
		return nil, fmt.Errorf("--realtime-priority: %w", err)
	}
	if err := o.tls.check(); err != nil {
		return nil, err
	}
	if err := o.tls.checkExposure(o.grpcAddr, o.insecure); err != nil {
		return nil, err
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "softupf:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: o.logLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("softupf failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *options, log *slog.Logger) error {
	memLimit := memlimit.Apply() // before the tables are allocated
	cpuPort := uint32(o.cpuPort)
	pool := dataplane.NewPool(dataplane.DefaultMaxHeld + 2*ports.BatchSize*len(o.ports) + spareBuffers)
	set, err := openPorts(o, pool, log)
	if err != nil {
		return err
	}
	if err := set.SetRealtimePriority(o.rtPriority); err != nil { // checked with the flags
		set.Close()
		return err
	}
	dp, err := dataplane.New(dataplane.Config{Pool: pool, Sink: set, CPUPort: cpuPort, Logger: log})
	if err != nil {
		set.Close()
		return err
	}
	if o.p4info != "" {
		if err := checkP4Info(dp, o.p4info); err != nil {
			set.Close()
			return err
		}
		log.Info("p4info checked: this UPF can run it once a controller pushes it", "file", o.p4info)
	}
	srv := p4rt.New(dp, p4rt.Options{DeviceID: o.deviceID, Logger: log})
	gs, err := newGRPCServer(o.tls, srv)
	if err != nil {
		set.Close()
		return err
	}
	lis, err := net.Listen("tcp", o.grpcAddr)
	if err != nil {
		set.Close()
		return fmt.Errorf("--grpc-addr: %w", err)
	}
	log.Info("software UPF started", "grpc", lis.Addr().String(), "tls", tlsMode(o.tls), "device_id", o.deviceID,
		"cpu_port", cpuPort, "ports", o.ports.String(), "port_kinds", portKinds(set), "buffers", pool.Size(), "go_memory_limit", memLimit, "realtime_priority", o.rtPriority)
	if o.tls.clientCA == "" {
		log.Warn("P4Runtime authenticates no client: whoever reaches the address can program this UPF", "grpc", lis.Addr().String(), "tls", tlsMode(o.tls))
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(3)
	go func() { defer wg.Done(); errs <- set.Run(runCtx, dp) }()
	go func() { defer wg.Done(); errs <- dp.Run(runCtx) }()
	go func() {
		defer wg.Done()
		err := gs.Serve(lis)
		if errors.Is(err, grpc.ErrServerStopped) {
			err = nil
		}
		errs <- err
	}()

	var first error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case first = <-errs: // a part failed: stop the rest
		if first == nil {
			first = errors.New("a part of the UPF stopped unexpectedly")
		}
	}
	cancel()
	stopGRPC(gs)
	wg.Wait()
	close(errs)
	for err := range errs {
		first = cmp.Or(first, err)
	}
	logStats(log, dp, set, srv)
	return first
}

// openPorts opens the port sockets, inside --ports-netns when it is given (a packet socket stays
// in the namespace it was created in).
func openPorts(o *options, pool *dataplane.Pool, log *slog.Logger) (set *ports.Set, err error) {
	err = netnsexec.Do(o.netns, func() error {
		set, err = ports.Open(o.ports, o.portKind, uint32(o.cpuPort), pool, log)
		return err
	})
	if err != nil && set != nil {
		set.Close()
		set = nil
	}
	return set, err
}

// portKinds says which kind of socket each port runs on: "1=xdp,2=packet".
func portKinds(set *ports.Set) string {
	var b strings.Builder
	for i, st := range set.Stats() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d=%s", st.Port, st.Kind)
	}
	return b.String()
}

// newGRPCServer is the P4Runtime server's gRPC server, with TLS when the files are given.
func newGRPCServer(f tlsFiles, srv p4v1.P4RuntimeServer) (*grpc.Server, error) {
	creds, err := f.serverOptions()
	if err != nil {
		return nil, err
	}
	gs := grpc.NewServer(append(creds, grpc.MaxRecvMsgSize(maxGRPCMessage), grpc.MaxSendMsgSize(maxGRPCMessage))...)
	p4v1.RegisterP4RuntimeServer(gs, srv)
	return gs, nil
}

func tlsMode(f tlsFiles) string {
	switch {
	case f.clientCA != "":
		return "mutual"
	case f.enabled():
		return "server"
	}
	return "off"
}

// stopGRPC lets in-flight RPCs finish, then cuts the long-lived streams.
func stopGRPC(gs *grpc.Server) {
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		gs.Stop()
		<-done
	}
}

// checkP4Info reads a P4Info file and asks the data plane whether it can run it.
func checkP4Info(dp *dataplane.Pipeline, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--p4info: %w", err)
	}
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(b, info); err != nil {
		if berr := proto.Unmarshal(b, info); berr != nil {
			return fmt.Errorf("--p4info %s: neither text (%v) nor binary (%v) protobuf", path, err, berr)
		}
	}
	if err := dp.CheckPipeline(info, nil); err != nil {
		return fmt.Errorf("--p4info %s: %w", path, err)
	}
	return nil
}

func logStats(log *slog.Logger, dp *dataplane.Pipeline, set *ports.Set, srv *p4rt.Server) {
	st := dp.Stats()
	drops := []any{}
	for r, n := range st.Drops {
		if n > 0 {
			drops = append(drops, dataplane.DropReason(r).String(), n)
		}
	}
	log.Info("data plane totals", append([]any{"held", st.Held, "packet_outs_dropped", st.PacketOutDrops}, drops...)...)
	for _, p := range set.Stats() {
		log.Info("port totals", "port", p.Port, "iface", p.Iface, "kind", p.Kind, "rx", p.RxPackets, "tx", p.TxPackets,
			"rx_truncated", p.RxTruncated, "tx_errors", p.TxErrors, "kernel_drops", p.KernelDrops)
	}
	if n := set.NoPortDrops(); n > 0 {
		log.Warn("frames routed to a port this UPF has no interface for were dropped (a route's port not given with -i)", "frames", n)
	}
	s := srv.Stats()
	log.Info("p4runtime totals", "writes", s.WriteRequests, "reads", s.ReadRequests,
		"packet_ins", s.PacketIns, "packet_outs", s.PacketOuts, "digest_lists", s.DigestLists)
}
