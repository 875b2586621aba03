//go:build linux

package bmv2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/junction-atsss/junction/internal/jsonfile"
	"github.com/junction-atsss/junction/test/netns"
)

// Tools is where hack/tools.sh p4tools puts p4c and BMv2, relative to the module root.
const Tools = "bin/p4tools/bin"

// Compile compiles the v1model program with p4c-bm2-ss into dir and returns the BMv2 JSON and
// p4c's P4Info (text). root is the module root.
func Compile(root, dir string) (jsonPath, p4infoPath string, err error) {
	jsonPath = filepath.Join(dir, "junction_upf.json")
	p4infoPath = filepath.Join(dir, "p4info.txtpb")
	cmd := exec.Command(filepath.Join(root, Tools, "p4c-bm2-ss"), "--arch", "v1model", "--std", "p4-16",
		"-o", jsonPath, "--p4runtime-files", p4infoPath, filepath.Join(root, "p4/v1model/junction_upf.p4"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("p4c-bm2-ss: %v\n%s", err, out)
	}
	// Without p4c's indentation, as hack/p4-build.sh writes it: a pipeline ConfigMap holds
	// 1 MiB, which the indented JSON exceeds.
	if err := jsonfile.Compact(jsonPath); err != nil {
		return "", "", fmt.Errorf("p4c-bm2-ss's output: %v", err)
	}
	return jsonPath, p4infoPath, nil
}

// Available says why BMv2 cannot run here (hack/tools.sh p4tools not run), or nil.
func Available(root string) error {
	for _, b := range []string{"simple_switch_grpc", "p4c-bm2-ss"} {
		if _, err := os.Stat(filepath.Join(root, Tools, b)); err != nil {
			return fmt.Errorf("%s missing (run hack/tools.sh p4tools): %w", b, err)
		}
	}
	return nil
}

// Options start a switch.
type Options struct {
	DeviceID uint64
	// Ports maps BMv2 port numbers to interfaces in the switch's namespace.
	Ports      map[uint32]string
	CPUPort    uint32 // 0: none
	GRPCAddr   string // default 127.0.0.1:9559
	ThriftPort int    // default 9090
	// LogFile, when set, gets BMv2's packet-by-packet log (--log-file); slow, for debugging.
	LogFile string
}

// Switch is a running simple_switch_grpc, started without a program (--no-p4): the controller
// pushes the pipeline over P4Runtime.
type Switch struct {
	NS         *netns.Namespace
	GRPCAddr   string
	ThriftAddr string
	cmd        *exec.Cmd
	logs       *syncBuffer
	exited     chan struct{}
	waitErr    error
	closers    []io.Closer
}

// Start runs simple_switch_grpc in ns and waits until both its P4Runtime and Thrift ports accept
// connections.
func Start(root string, ns *netns.Namespace, o Options) (*Switch, error) {
	if o.GRPCAddr == "" {
		o.GRPCAddr = "127.0.0.1:9559"
	}
	if o.ThriftPort == 0 {
		o.ThriftPort = 9090
	}
	if o.DeviceID == 0 {
		o.DeviceID = 1
	}
	args := []string{"--device-id", fmt.Sprint(o.DeviceID), "--no-p4", "--thrift-port", fmt.Sprint(o.ThriftPort)}
	nums := make([]uint32, 0, len(o.Ports))
	for n := range o.Ports {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	for _, n := range nums {
		args = append(args, "-i", fmt.Sprintf("%d@%s", n, o.Ports[n]))
	}
	if o.LogFile != "" {
		args = append(args, "--log-file", o.LogFile, "--log-flush")
	} else {
		// BMv2's default level is trace: without a sink it still formats every message, which
		// costs it most of its packet rate.
		args = append(args, "--log-level", "warn")
	}
	// Target options go after "--".
	args = append(args, "--", "--grpc-server-addr", o.GRPCAddr)
	if o.CPUPort != 0 {
		args = append(args, "--cpu-port", fmt.Sprint(o.CPUPort))
	}
	s := &Switch{NS: ns, GRPCAddr: o.GRPCAddr, ThriftAddr: fmt.Sprintf("127.0.0.1:%d", o.ThriftPort),
		logs: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = ns.Command(filepath.Join(root, Tools, "simple_switch_grpc"), args...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range []string{s.GRPCAddr, s.ThriftAddr} {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			c, err := s.Dial(ctx, addr)
			cancel()
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-s.exited:
				return nil, fmt.Errorf("simple_switch_grpc exited before listening (%v):\n%s", s.waitErr, s.Logs())
			default:
			}
			if time.Now().After(deadline) {
				s.Stop()
				return nil, fmt.Errorf("simple_switch_grpc did not listen on %s within 30s: %v\n%s", addr, err, s.Logs())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return s, nil
}

// Dial opens a TCP connection inside the switch's namespace.
func (s *Switch) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := s.NS.Do(func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// Forward listens on a loopback port of this process's namespace and relays every connection
// to the switch's P4Runtime port inside its namespace, for clients that cannot dial into a
// namespace (an operator under test). It returns the address; Stop closes it.
func (s *Switch) Forward() (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.closers = append(s.closers, lis)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go s.relay(c)
		}
	}()
	return lis.Addr().String(), nil
}

func (s *Switch) relay(c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	up, err := s.Dial(ctx, s.GRPCAddr)
	cancel()
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// Thrift connects to the switch's Thrift runtime.
func (s *Switch) Thrift(ctx context.Context) (*Thrift, error) {
	return DialThrift(ctx, s.ThriftAddr, s.Dial)
}

// Logs returns what the switch printed.
func (s *Switch) Logs() string { return s.logs.String() }

// Stop ends the switch.
func (s *Switch) Stop() {
	for _, c := range s.closers {
		c.Close()
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
