//go:build linux

// Package netns builds small network topologies for tests: named network namespaces, veth
// pairs between them, addresses, static neighbours, and a way to run Go code (opening a socket,
// dialling gRPC) inside a namespace.
//
// It drives iproute2 (`ip`), which every Linux test machine has, instead of speaking netlink
// itself: the topology is built once per test and the commands show up readably in errors.
// Everything needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); Available says whether this process
// can do it, so tests can skip with a clear message.
package netns

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/testenv"
)

// runDir is where `ip netns add` bind-mounts named namespaces.
const runDir = "/var/run/netns"

// Namespace is a named network namespace created by New, or the namespace of this process
// (Root). The zero Name means the current namespace.
type Namespace struct {
	Name string
}

// Root is the namespace this process runs in; its methods work like those of a named one.
func Root() *Namespace { return &Namespace{} }

// UniqueName returns prefix followed by random hex digits, short enough for interface names
// (15 bytes) when prefix is at most 8 bytes, so that parallel test runs do not collide.
func UniqueName(prefix string) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// Available reports why this process cannot build topologies, or nil when it can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (run the test as root, e.g. sudo -E go test)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("iproute2 `ip` is not installed")
	}
	// Creating a namespace is the real test: containers without CAP_SYS_ADMIN refuse it.
	probe := UniqueName("jprobe")
	if err := ip("netns", "add", probe); err != nil {
		return fmt.Errorf("cannot create a network namespace: %w", err)
	}
	return ip("netns", "del", probe)
}

// New creates a named namespace with its loopback up and IPv6 disabled by default, so that
// interfaces moved into it stay silent (no router solicitations or MLD reports) unless a test
// sends something.
func New(name string) (*Namespace, error) {
	if err := ip("netns", "add", name); err != nil {
		return nil, err
	}
	ns := &Namespace{Name: name}
	if err := ns.ip("link", "set", "lo", "up"); err != nil {
		ns.Close()
		return nil, err
	}
	for _, key := range []string{"all", "default"} {
		if err := ns.Sysctl("net/ipv6/conf/"+key+"/disable_ipv6", "1"); err != nil {
			ns.Close()
			return nil, err
		}
	}
	return ns, nil
}

// Close deletes the namespace, which destroys the interfaces inside it (and so both ends of
// every veth pair with one end inside). Closing Root does nothing.
func (n *Namespace) Close() error {
	if n == nil || n.Name == "" {
		return nil
	}
	return ip("netns", "del", n.Name)
}

// String names the namespace for messages.
func (n *Namespace) String() string {
	if n == nil || n.Name == "" {
		return "root namespace"
	}
	return "namespace " + n.Name
}

// Path is the namespace's file, for tools that take one (empty for Root).
func (n *Namespace) Path() string {
	if n == nil || n.Name == "" {
		return ""
	}
	return filepath.Join(runDir, n.Name)
}

// Command returns a command that runs inside the namespace (`ip netns exec`).
func (n *Namespace) Command(name string, args ...string) *exec.Cmd {
	if n == nil || n.Name == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Do runs fn on an OS thread that is inside the namespace. Sockets created by fn stay in the
// namespace after Do returns, so this is how a test opens packet sockets on interfaces or dials a
// server that listens inside a namespace. fn must not start goroutines that create sockets.
func (n *Namespace) Do(fn func() error) error {
	if n == nil || n.Name == "" {
		return fn()
	}
	target, err := os.Open(n.Path())
	if err != nil {
		return fmt.Errorf("open %s: %w", n, err)
	}
	defer target.Close()

	errc := make(chan error, 1)
	// A fresh goroutine with a locked thread: if switching back fails, the thread is left
	// locked and the runtime discards it when the goroutine exits, so no other goroutine ever
	// runs in the wrong namespace.
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter %s: %w", n, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("leave %s: %w", n, err)
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Sysctl writes one value under /proc/sys inside the namespace (key like
// "net/ipv4/ip_forward"). /proc/sys/net follows the writing thread's namespace.
func (n *Namespace) Sysctl(key, value string) error {
	return n.Do(func() error {
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s in %s: %w", key, value, n, err)
		}
		return nil
	})
}

// Link names one interface in one namespace.
type Link struct {
	Name string
	NS   *Namespace // nil: the root namespace
	MAC  net.HardwareAddr
}

// AddVeth creates a veth pair with its ends in their namespaces, sets their MAC addresses when
// given, disables IPv6 on both ends and brings them up.
func AddVeth(a, b Link) error {
	args := []string{"link", "add", "name", a.Name}
	if a.NS.Path() != "" {
		args = append(args, "netns", a.NS.Name)
	}
	args = append(args, "type", "veth", "peer", "name", b.Name)
	if b.NS.Path() != "" {
		args = append(args, "netns", b.NS.Name)
	}
	if err := ip(args...); err != nil {
		return err
	}
	for _, l := range []Link{a, b} {
		if err := l.NS.setupLink(l); err != nil {
			a.NS.ip("link", "del", a.Name)
			return err
		}
	}
	return nil
}

func (n *Namespace) setupLink(l Link) error {
	if len(l.MAC) != 0 {
		if err := n.ip("link", "set", "dev", l.Name, "address", l.MAC.String()); err != nil {
			return err
		}
	}
	if err := n.Sysctl("net/ipv6/conf/"+l.Name+"/disable_ipv6", "1"); err != nil {
		return err
	}
	return n.ip("link", "set", "dev", l.Name, "up")
}

// DeleteLink removes an interface (for a veth, both ends).
func (n *Namespace) DeleteLink(name string) error { return n.ip("link", "del", "dev", name) }

// AddAddress assigns an address with prefix ("10.0.0.1/24") to an interface.
func (n *Namespace) AddAddress(iface string, prefix netip.Prefix) error {
	return n.ip("addr", "add", prefix.String(), "dev", iface)
}

// AddNeighbor adds a permanent ARP entry, so that traffic to addr leaves on iface toward mac
// without ARP (the software UPF and the tests do not answer ARP).
func (n *Namespace) AddNeighbor(iface string, addr netip.Addr, mac net.HardwareAddr) error {
	return n.ip("neigh", "replace", addr.String(), "lladdr", mac.String(), "nud", "permanent", "dev", iface)
}

// AddRoute adds a route to dst via gw (gw invalid: directly on iface).
func (n *Namespace) AddRoute(dst netip.Prefix, gw netip.Addr, iface string) error {
	args := []string{"route", "replace", dst.String()}
	if gw.IsValid() {
		args = append(args, "via", gw.String())
	}
	return n.ip(append(args, "dev", iface)...)
}

// InterfaceMAC reads an interface's MAC address.
func (n *Namespace) InterfaceMAC(iface string) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := n.Do(func() error {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		mac = ifi.HardwareAddr
		return nil
	})
	return mac, err
}

func (n *Namespace) ip(args ...string) error {
	if n != nil && n.Name != "" {
		args = append([]string{"-n", n.Name}, args...)
	}
	return ip(args...)
}

func ip(args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Require skips t when this process cannot build topologies, and fails it in CI
// (testenv.Require).
func Require(t testing.TB) {
	t.Helper()
	testenv.Require(t, "network namespaces (run as root)", Available())
}

// ForTest creates a namespace named prefix plus random digits that the test's cleanup removes.
func ForTest(t testing.TB, prefix string) *Namespace {
	t.Helper()
	ns, err := New(UniqueName(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Errorf("remove %s: %v", ns, err)
		}
	})
	return ns
}
