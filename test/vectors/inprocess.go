package vectors

// The software UPF in the runner's own process: its data plane and P4Runtime server, reached over
// an in-memory gRPC connection, with frames handed to Pipeline.Process and taken from what it
// emits. The vectors then need no namespaces, veths or privileges, and run on any OS. The ports
// layer (internal/softupf/ports: AF_PACKET batching) is what this leaves out; the namespace run
// (TestVectorsAgainstSoftUPF) covers it.
//
//	runner ──Send──> Pipeline.Process ──emitted──> runner's collector
//	runner ──gRPC (bufconn)──> p4rt.Server ──> Pipeline (tables, registers, digests)

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
)

// inProcessBuffers is the packet pool: the reorder queues' bound plus room for a step's frames.
const inProcessBuffers = dataplane.DefaultMaxHeld + 256

// InProcess is a software UPF running in this process. It is the data plane's Sink and the
// runner's Wire.
type InProcess struct {
	pool   *dataplane.Pool
	dp     *dataplane.Pipeline
	gs     *grpc.Server
	lis    *bufconn.Listener
	cancel context.CancelFunc
	done   sync.WaitGroup

	portList []Port
	cpuPort  uint32

	mu      sync.RWMutex
	ports   map[uint32]bool
	deliver map[uint32]func([]byte)
}

// StartInProcess starts a software UPF with the given ports and CPU port. Close stops it.
func StartInProcess(ports []Port, cpuPort uint32) (*InProcess, error) {
	ip := &InProcess{pool: dataplane.NewPool(inProcessBuffers), portList: ports, cpuPort: cpuPort,
		ports: map[uint32]bool{}, deliver: map[uint32]func([]byte){}}
	for _, p := range ports {
		ip.ports[p.Number] = true
	}
	dp, err := dataplane.New(dataplane.Config{Pool: ip.pool, Sink: ip, CPUPort: cpuPort})
	if err != nil {
		return nil, err
	}
	ip.dp = dp
	ip.lis = bufconn.Listen(1 << 20)
	ip.gs = grpc.NewServer()
	p4v1.RegisterP4RuntimeServer(ip.gs, p4rt.New(dp, p4rt.Options{DeviceID: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	ip.cancel = cancel
	ip.done.Add(2)
	go func() { defer ip.done.Done(); ip.gs.Serve(ip.lis) }()
	go func() { defer ip.done.Done(); dp.Run(ctx) }() // reorder timeouts
	return ip, nil
}

// Config is the runner's configuration for this UPF running info.
func (ip *InProcess) Config(info *p4configv1.P4Info) Config {
	return Config{
		Target:   "in-process",
		DeviceID: 1,
		P4Info:   info,
		Ports:    ip.portList,
		CPUPort:  ip.cpuPort,
		Dial:     func(ctx context.Context, _ string) (net.Conn, error) { return ip.lis.DialContext(ctx) },
		Wire:     ip,
	}
}

// Close stops the server and the data plane's timers.
func (ip *InProcess) Close() {
	ip.gs.Stop()
	ip.cancel()
	ip.done.Wait()
}

// Attach implements Wire.
func (ip *InProcess) Attach(port Port, deliver func([]byte)) (PortIO, error) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if !ip.ports[port.Number] {
		return nil, fmt.Errorf("port %s: the in-process UPF has no port %d", port.Name, port.Number)
	}
	ip.deliver[port.Number] = deliver
	return &inProcessPort{ip: ip, port: port}, nil
}

// Transmit implements dataplane.Sink: frames go to whoever attached their port.
func (ip *InProcess) Transmit(pkts []*dataplane.Packet) {
	ip.mu.RLock()
	defer ip.mu.RUnlock()
	for _, pkt := range pkts {
		if deliver := ip.deliver[pkt.OutPort]; deliver != nil {
			deliver(pkt.Frame())
		}
		ip.pool.Put(pkt)
	}
}

// HasPort implements dataplane.Sink.
func (ip *InProcess) HasPort(port uint32) bool { return ip.ports[port] }

// inProcessPort sends into one port of an InProcess.
type inProcessPort struct {
	ip   *InProcess
	port Port
}

func (p *inProcessPort) Send(frame []byte) error {
	pkt := p.ip.pool.TryGet()
	if pkt == nil {
		return errors.New("in-process UPF: no free packet buffer")
	}
	if !pkt.SetFrame(frame) {
		p.ip.pool.Put(pkt)
		return fmt.Errorf("port %s: frame of %d bytes is larger than the data plane takes", p.port.Name, len(frame))
	}
	pkt.InPort, pkt.OutPort = p.port.Number, 0
	p.ip.Transmit(p.ip.dp.Process([]*dataplane.Packet{pkt}, nil))
	return nil
}

func (p *inProcessPort) Close() {
	p.ip.mu.Lock()
	defer p.ip.mu.Unlock()
	delete(p.ip.deliver, p.port.Number)
}
