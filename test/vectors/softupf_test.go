//go:build linux

package vectors

// Runs every vector against the real software UPF binary over veth pairs, once with each kind
// of port (--port-kind xdp, packet):
//
//	namespace jvtst-*                         namespace jvupf-*
//	runner (AF_PACKET) t-n3   ══ veth ══  u-n3   port 1 ┐
//	                   t-n6   ══ veth ══  u-n6   port 2 ├ softupf --grpc-addr 127.0.0.1:9559
//	                   t-wifi ══ veth ══  u-wifi port 3 ┘          --cpu-port 255 --port-kind K
//	runner (gRPC, dialled inside jvupf-*) ──────────────> 127.0.0.1:9559
//
// Nothing is configured in the root namespace; deleting the two namespaces removes everything.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/softupf/ports"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/p4"
	"github.com/junction-atsss/junction/test/netns"
)

// lockedBuffer collects the software UPF's output for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// portKinds are the kinds of port the software UPF is tested and measured with. Each is asked
// for by name (not auto), so a kind that cannot be had fails the test instead of falling back.
var portKinds = []ports.Kind{ports.KindXDP, ports.KindPacket}

func TestVectorsAgainstSoftUPF(t *testing.T) {
	netns.Require(t)
	for _, kind := range portKinds {
		t.Run(kind.String(), func(t *testing.T) { runAllCases(t, startSoftUPF(t, kind)) })
	}
}

// startSoftUPF builds ./cmd/softupf, runs it with ports of the given kind behind vectorTopology
// and returns the runner's configuration for it.
func startSoftUPF(t testing.TB, kind ports.Kind) Config {
	cfg, _ := startSoftUPFProcess(t, kind)
	return cfg
}

// startSoftUPFProcess is startSoftUPF, with more flags for cmd/softupf, that also returns the
// process's PID (its CPU time is measured by the benchmark).
func startSoftUPFProcess(t testing.TB, kind ports.Kind, flags ...string) (Config, int) {
	bin := filepath.Join(t.TempDir(), "softupf")
	build := exec.Command("go", "build", "-o", bin, "./cmd/softupf")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/softupf: %v\n%s", err, out)
	}
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	upf, tester, testerPorts := vectorTopology(t)
	args := append([]string{"--grpc-addr", upfGRPCAddr, "--cpu-port", fmt.Sprint(upfCPUPort), "--port-kind", kind.String()}, flags...)
	for _, p := range testPorts {
		args = append(args, "-i", fmt.Sprintf("%d@u-%s", p.Number, p.Name))
	}

	var logs lockedBuffer
	cmd := upf.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("softupf output:\n%s", logs.String())
		}
	})

	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := upf.Do(func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			return err
		})
		return c, err
	}
	waitListening(t, dial, exited, func() error { return waitErr }, &logs)
	return Config{
		Target:      upfGRPCAddr,
		DeviceID:    1,
		ElectionID:  [2]uint64{0, 1},
		P4Info:      info,
		Ports:       testerPorts,
		CPUPort:     upfCPUPort,
		Dial:        dial,
		InNamespace: tester.Do,
	}, cmd.Process.Pid
}

// vectorTopology builds the two namespaces and one veth pair per logical port: u-<port> on the
// target's side, t-<port> on the runner's.
func vectorTopology(t testing.TB) (target, tester *netns.Namespace, ports []Port) {
	target = netns.ForTest(t, "jvupf")
	tester = netns.ForTest(t, "jvtst")
	for _, p := range testPorts {
		if err := netns.AddVeth(netns.Link{Name: "u-" + p.Name, NS: target}, netns.Link{Name: "t-" + p.Name, NS: tester}); err != nil {
			t.Fatal(err)
		}
		// Frame by frame, as the vectors compare them: with these offloads on, the software
		// UPF's ports (and the runner's, the same code in the bench) send a run of one tunnel's
		// datagrams, or of one flow's TCP segments, as one frame (internal/softupf/ports,
		// gso_linux.go, tso_linux.go).
		for _, end := range []struct {
			ns    *netns.Namespace
			iface string
		}{{target, "u-" + p.Name}, {tester, "t-" + p.Name}} {
			if out, err := end.ns.Command("ethtool", "-K", end.iface, "tx-udp-segmentation", "off", "tx-tcp-segmentation", "off").CombinedOutput(); err != nil {
				t.Fatalf("ethtool -K %s tx-udp-segmentation off tx-tcp-segmentation off: %v: %s (hack/tools.sh dataplane installs ethtool)", end.iface, err, out)
			}
		}
		ports = append(ports, Port{Name: p.Name, Number: p.Number, Iface: "t-" + p.Name})
	}
	return target, tester, ports
}

// waitListening waits until the software UPF accepts connections, or fails if it exits.
func waitListening(t testing.TB, dial func(context.Context, string) (net.Conn, error), exited <-chan struct{}, waitErr func() error, logs *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := dial(ctx, upfGRPCAddr)
		cancel()
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("softupf exited before listening (%v):\n%s", waitErr(), logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("softupf did not listen on %s within 30s: %v\n%s", upfGRPCAddr, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
