//go:build linux

// Package ueagent tests the UE agent end to end with every real part: a real kube-apiserver and
// etcd (envtest), the operator's controllers, the software UPF binary, the gNB emulator binary
// and the UE agent binary, moving real packets through TUN devices and veths in network
// namespaces this test creates and removes:
//
//	ns ue-*   (node ue-node-a)      ns gnb-*                ns upf-* (softupf ports)   ns dn-*
//	 app ─ TUN jx… ─ agent ─ ran0 ══ ran-g ─ gnb-emulator ─ n3g ══ u-n3   port 1 ┐
//	                        └ wlan0 ═══════════════════════════════ u-wifi port 2 ├ UPF
//	                                                              u-n6   port 3 ┘ ══ dn0  server
//
// The processes run in the root namespace, where the API server and the UPF's P4Runtime listen
// on loopback; the agent (--netns), the emulator (--netns) and the UPF (--ports-netns) open their
// interfaces, sockets and TUNs in the testbed namespaces. Nothing is configured in the root
// namespace; deleting the namespaces removes everything.
package ueagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/prototext"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/controllers"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/p4"
	"github.com/junction-atsss/junction/test/netns"
)

// Named timeouts.
const (
	readyTimeout    = 60 * time.Second // objects applied → Programmed and AgentReady
	probeTimeout    = 20 * time.Second // probes answered → RTTs in registers and status
	failoverTimeout = 10 * time.Second // a leg lost → traffic on the other leg
)

// Addresses of the testbed (documentation and test ranges; they exist only inside its namespaces).
var (
	upfN3       = netip.MustParseAddr("192.0.2.1")
	upfJunction = netip.MustParseAddr("192.0.2.2")
	gnbN3       = netip.MustParseAddr("198.51.100.10")
	gnbRadio    = netip.MustParseAddr("10.45.0.254")
	dnHost      = netip.MustParseAddr("198.18.0.10")
	dnGateway   = netip.MustParseAddr("198.18.0.1")
	upfPortMAC  = map[string]net.HardwareAddr{
		"n3": {0x02, 0, 0, 0, 0x01, 0x01}, "wifi": {0x02, 0, 0, 0, 0x01, 0x02}, "n6": {0x02, 0, 0, 0, 0x01, 0x03},
	}
	upfPortNumber = map[string]int32{"n3": 1, "wifi": 2, "n6": 3}
)

var (
	restCfg    *rest.Config
	k8s        client.Client // uncached
	kubeconfig string
	binDir     string
	schema     *upfclient.Schema
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var log logr.Logger = logr.Discard()
	if os.Getenv("JUNCTION_TEST_LOG") != "" {
		log = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true))
	}
	ctrl.SetLogger(log)
	if err := netns.Available(); err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "FAIL: the UE agent tests need network namespaces and CI must run them:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "skipping the UE agent tests:", err)
		return 0
	}
	if _, err := exec.LookPath("ethtool"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: ethtool is missing (hack/tools.sh dataplane installs it):", err)
		return 1
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := junctionv1.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if restCfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		return 1
	}
	defer env.Stop()
	if k8s, err = client.New(restCfg, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "junction-ueagent-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	admin, err := env.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var kc []byte
		if kc, err = admin.KubeConfig(); err == nil {
			kubeconfig = filepath.Join(tmp, "kubeconfig")
			err = os.WriteFile(kubeconfig, kc, 0o600)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		return 1
	}
	binDir = filepath.Join(tmp, "bin")
	args := []string{"build", "-o", binDir + "/"}
	if os.Getenv("JUNCTION_TEST_RACE") != "" { // the processes under the race detector (slower)
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/softupf", "./cmd/ue-agent", "./cmd/gnb-emulator")...)
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	info, err := p4.P4Info()
	if err == nil {
		schema, err = upfclient.NewSchema(info)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

// proc is a binary the test started; its output is shown when the test fails.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs lockedBuffer
	done chan struct{}
}

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

// start runs bin/name with args; Cleanup interrupts it (then kills it) and dumps its output on
// failure.
func start(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(filepath.Join(binDir, name), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(os.Interrupt)
		if strings.Contains(p.logs.String(), "WARNING: DATA RACE") { // built with JUNCTION_TEST_RACE
			t.Errorf("%s: the race detector found a data race", name)
		}
		if t.Failed() || os.Getenv("JUNCTION_TEST_LOG") != "" {
			t.Logf("%s output:\n%s", name, p.logs.String())
		}
	})
	return p
}

// stop signals the process and waits for it (a kill after 10 s).
func (p *proc) stop(sig os.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// ---------------------------------------------------------------------------------------------
// Topology
// ---------------------------------------------------------------------------------------------

// ueNode is one UE namespace, the node its agent serves.
type ueNode struct {
	ns       *netns.Namespace
	name     string // Kubernetes node name
	addr3GPP netip.Addr
	addrWiFi netip.Addr
	wifiMAC  net.HardwareAddr
	agent    *proc
}

// testbed is the namespaces, the processes and the Kubernetes namespace of one test.
type testbed struct {
	t       testing.TB
	gnb     *netns.Namespace
	upf     *netns.Namespace
	dn      *netns.Namespace
	ues     []*ueNode
	ns      string // Kubernetes namespace
	upfGRPC string
	softupf *proc
	n3gMAC  net.HardwareAddr
	dnMAC   net.HardwareAddr
	radios  []string
	em      *emulation // nil: the UEs' links are plain veths
}

// emulation puts a link emulator (internal/linkem) on the UEs' links: each UE's radio gets its
// own shapers with ran's parameters, in a namespace of its own between the UE and the gNB; the
// UEs' WiFi links share one cell (shapers [0] uplink, [1] downlink), bridged by an access point
// namespace to the UPF's WiFi port, so that one UE's load queues the others' packets.
type emulation struct {
	ran    linkem.Params
	cell   [2]*linkem.Shaper
	ap     *netns.Namespace
	wires  []*wire             // by UE: radio, then WiFi
	radios [][2]*linkem.Shaper // by UE
}

// wire is one emulated link: its namespace and the end that faces the UE (down: carrier lost).
type wire struct {
	ns     *netns.Namespace
	ueSide string
}

func newNS(t testing.TB, prefix string) *netns.Namespace {
	t.Helper()
	ns, err := netns.New(netns.UniqueName(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run runs a command in a namespace and fails the test on error.
func run(t testing.TB, ns *netns.Namespace, name string, args ...string) string {
	t.Helper()
	out, err := ns.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), ns, err, out)
	}
	return string(out)
}

// noOffload turns off the offloads an AF_PACKET port cannot take (unsegmented, partially
// checksummed skbs), as BMv2 needs too.
func noOffload(t testing.TB, ns *netns.Namespace, iface string) {
	t.Helper()
	run(t, ns, "ethtool", "-K", iface, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off")
}

// newTestbed builds the gNB, UPF and data-network namespaces, starts the software UPF, the
// operator and the gNB emulator, and creates the UPF object and pipeline in a fresh Kubernetes
// namespace. UEs are added with addUE.
func newTestbed(t testing.TB, nUEs int) *testbed {
	return newEmulatedTestbed(t, nUEs, nil)
}

// newEmulatedTestbed is newTestbed with the UEs' links emulated by em (nil: plain veths).
func newEmulatedTestbed(t testing.TB, nUEs int, em *emulation) *testbed {
	t.Helper()
	tb := &testbed{t: t, gnb: newNS(t, "jgnb"), upf: newNS(t, "jupf"), dn: newNS(t, "jdn"), em: em}
	for _, ns := range []*netns.Namespace{tb.gnb} {
		must(t, ns.Sysctl("net/ipv4/ip_forward", "1"))
		must(t, ns.Sysctl("net/ipv4/conf/all/rp_filter", "0"))
		must(t, ns.Sysctl("net/ipv4/conf/default/rp_filter", "0"))
	}
	// gNB ── N3 ── UPF port 1
	must(t, netns.AddVeth(netns.Link{Name: "n3g", NS: tb.gnb}, netns.Link{Name: "u-n3", NS: tb.upf, MAC: upfPortMAC["n3"]}))
	must(t, tb.gnb.AddAddress("n3g", netip.PrefixFrom(gnbN3, 24)))
	must(t, tb.gnb.AddRoute(netip.PrefixFrom(upfN3, 32), netip.Addr{}, "n3g"))
	must(t, tb.gnb.AddNeighbor("n3g", upfN3, upfPortMAC["n3"]))
	// UPF port 3 ── N6 ── data network
	must(t, netns.AddVeth(netns.Link{Name: "u-n6", NS: tb.upf, MAC: upfPortMAC["n6"]}, netns.Link{Name: "dn0", NS: tb.dn}))
	must(t, tb.dn.AddAddress("dn0", netip.PrefixFrom(dnHost, 24)))
	must(t, tb.dn.AddNeighbor("dn0", dnGateway, upfPortMAC["n6"]))
	must(t, tb.dn.AddRoute(netip.MustParsePrefix("10.60.0.0/16"), dnGateway, "dn0"))
	var err error
	tb.n3gMAC, err = tb.gnb.InterfaceMAC("n3g")
	must(t, err)
	tb.dnMAC, err = tb.dn.InterfaceMAC("dn0")
	must(t, err)
	noOffload(t, tb.gnb, "n3g")
	noOffload(t, tb.dn, "dn0")
	for _, i := range []string{"u-n3", "u-n6"} {
		noOffload(t, tb.upf, i)
	}
	for i := range nUEs {
		tb.addUE(i)
	}

	// The software UPF: ports in the UPF namespace, P4Runtime on loopback.
	port := freePort(t)
	tb.upfGRPC = fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"--grpc-addr", tb.upfGRPC, "--device-id", "1", "--cpu-port", "255", "--ports-netns", tb.upf.Name}
	for _, p := range []string{"n3", "wifi", "n6"} {
		args = append(args, "-i", fmt.Sprintf("%d@u-%s", upfPortNumber[p], p))
	}
	tb.softupf = start(t, "softupf", args...)

	tb.ns = newK8sNamespace(t)
	tb.createUPF()
	startOperator(t, tb.ns)

	// The gNB emulator serves every UE's radio link.
	gargs := []string{"--kubeconfig", kubeconfig, "--netns", tb.gnb.Name, "--n3-address", gnbN3.String(),
		"--namespace", tb.ns, "--metrics-addr", "0"}
	for _, r := range tb.radios {
		gargs = append(gargs, "--radio-interface", r)
	}
	start(t, "gnb-emulator", gargs...)
	return tb
}

// addUE creates UE namespace i with its 3GPP link to the gNB and its WiFi link to the UPF.
func (tb *testbed) addUE(i int) {
	t := tb.t
	u := &ueNode{
		ns:       newNS(t, "jue"),
		name:     fmt.Sprintf("ue-node-%c", 'a'+i),
		addr3GPP: netip.AddrFrom4([4]byte{10, 45, byte(i), 1}),
		addrWiFi: netip.AddrFrom4([4]byte{203, 0, 113, byte(11 + i)}),
	}
	must(t, u.ns.Sysctl("net/ipv4/conf/all/rp_filter", "0"))
	must(t, u.ns.Sysctl("net/ipv4/conf/default/rp_filter", "0"))
	// The radio link: UE ran0 ══ gNB ran<i>.
	radio := fmt.Sprintf("ran%d", i)
	gw := netip.AddrFrom4([4]byte{10, 45, byte(i), 254})
	tb.connectRadio(netns.Link{Name: "ran0", NS: u.ns}, netns.Link{Name: radio, NS: tb.gnb}, i)
	must(t, u.ns.AddAddress("ran0", netip.PrefixFrom(u.addr3GPP, 24)))
	must(t, tb.gnb.AddAddress(radio, netip.PrefixFrom(gw, 24)))
	must(t, tb.gnb.Sysctl("net/ipv4/conf/"+radio+"/rp_filter", "0"))
	tb.radios = append(tb.radios, radio)
	// WiFi: UE wlan0 ══ UPF port 2, a wire; with emulation, through the shared cell.
	wifiPort := "u-wifi"
	if tb.em != nil {
		tb.connectWiFi(netns.Link{Name: "wlan0", NS: u.ns}, i)
	} else {
		if i > 0 {
			t.Fatalf("one WiFi port per UPF: UE %d needs the emulated cell (newEmulatedTestbed)", i)
		}
		must(t, netns.AddVeth(netns.Link{Name: "wlan0", NS: u.ns}, netns.Link{Name: wifiPort, NS: tb.upf, MAC: upfPortMAC["wifi"]}))
	}
	must(t, u.ns.AddAddress("wlan0", netip.PrefixFrom(u.addrWiFi, 24)))
	// Both legs reach the UPF's Junction address: through the gNB (preferred by metric, as a
	// UE's cellular default) and directly on WiFi; each leg socket is bound to its interface.
	run(t, u.ns, "ip", "route", "add", upfJunction.String()+"/32", "via", gw.String(), "dev", "ran0", "metric", "10")
	run(t, u.ns, "ip", "route", "add", upfJunction.String()+"/32", "dev", "wlan0", "metric", "20")
	must(t, u.ns.AddNeighbor("wlan0", upfJunction, upfPortMAC["wifi"]))
	var err error
	u.wifiMAC, err = u.ns.InterfaceMAC("wlan0")
	must(t, err)
	noOffload(t, u.ns, "wlan0")
	noOffload(t, u.ns, "ran0")
	noOffload(t, tb.gnb, radio)
	noOffload(t, tb.upf, wifiPort)
	tb.ues = append(tb.ues, u)
}

// connectRadio joins UE i's radio interface ue to the gNB's end gnb: a veth pair, or with
// emulation two, bridged by a linkem.Link with the UE's own shapers in a namespace of their own.
func (tb *testbed) connectRadio(ue, gnb netns.Link, i int) {
	t := tb.t
	if tb.em == nil {
		must(t, netns.AddVeth(ue, gnb))
		return
	}
	w := &wire{ns: newNS(t, "jwire"), ueSide: "w-ue"}
	must(t, netns.AddVeth(ue, netns.Link{Name: "w-ue", NS: w.ns}))
	must(t, netns.AddVeth(netns.Link{Name: "w-net", NS: w.ns}, gnb))
	up, down := linkem.NewShaper(tb.em.ran, uint64(10+2*i)), linkem.NewShaper(tb.em.ran, uint64(11+2*i))
	tb.em.radios = append(tb.em.radios, [2]*linkem.Shaper{up, down})
	tb.bridge(w, "w-net", up, down)
}

// radioDown is UE i's radio downlink shaper.
func (tb *testbed) radioDown(i int) *linkem.Shaper { return tb.em.radios[i][1] }

// connectWiFi joins UE i's WiFi interface ue to the emulated cell: the access point namespace
// holds a bridge to the UPF's WiFi port and, per UE, a linkem.Link through the cell's shapers.
func (tb *testbed) connectWiFi(ue netns.Link, i int) {
	t := tb.t
	em := tb.em
	if em.ap == nil {
		em.ap = newNS(t, "jap")
		run(t, em.ap, "ip", "link", "add", "br0", "type", "bridge")
		run(t, em.ap, "ip", "link", "set", "br0", "up")
		must(t, netns.AddVeth(netns.Link{Name: "ap-up", NS: em.ap}, netns.Link{Name: "u-wifi", NS: tb.upf, MAC: upfPortMAC["wifi"]}))
		run(t, em.ap, "ip", "link", "set", "ap-up", "master", "br0")
		noOffload(t, em.ap, "ap-up")
	}
	w := &wire{ns: em.ap, ueSide: fmt.Sprintf("w-ue%d", i)}
	net, port := fmt.Sprintf("w-net%d", i), fmt.Sprintf("br-p%d", i)
	must(t, netns.AddVeth(ue, netns.Link{Name: w.ueSide, NS: em.ap}))
	must(t, netns.AddVeth(netns.Link{Name: net, NS: em.ap}, netns.Link{Name: port, NS: em.ap}))
	run(t, em.ap, "ip", "link", "set", port, "master", "br0")
	noOffload(t, em.ap, port)
	tb.bridge(w, net, em.cell[0], em.cell[1])
}

// bridge runs a linkem.Link between the wire's UE side and its network side net.
func (tb *testbed) bridge(w *wire, net string, up, down *linkem.Shaper) {
	t := tb.t
	noOffload(t, w.ns, w.ueSide)
	noOffload(t, w.ns, net)
	l, err := linkem.Open(w.ns.Name, w.ueSide, net, up, down)
	must(t, err)
	t.Cleanup(func() { l.Close() })
	tb.em.wires = append(tb.em.wires, w)
}

// startAgent runs the UE agent for node u, with extra flags.
func (tb *testbed) startAgent(u *ueNode, extra ...string) {
	u.agent = start(tb.t, "ue-agent", append([]string{"--kubeconfig", kubeconfig, "--node-name", u.name, "--netns", u.ns.Name,
		"--namespace", tb.ns, "--metrics-addr", "0", "--health-addr", "0", "--status-interval", "1s", "--min-status-interval", "200ms"}, extra...)...)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ---------------------------------------------------------------------------------------------
// Kubernetes objects and the operator
// ---------------------------------------------------------------------------------------------

func newK8sNamespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	must(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func startOperator(t testing.TB, ns string) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := controllers.SetupWithManager(ctx, mgr, controllers.Options{
		ElectionLow:    controllers.StartTimeElectionLow(time.Now()),
		WriteWindow:    2 * time.Millisecond,
		StatusInterval: 500 * time.Millisecond,
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	})
}

// createUPF applies the pipeline ConfigMap and the UserPlaneFunction of the testbed.
func (tb *testbed) createUPF() {
	t := tb.t
	info, err := p4.P4Info()
	must(t, err)
	text, err := prototext.MarshalOptions{Multiline: true}.Marshal(info)
	must(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tb.ns, Name: "pipeline"}, Data: map[string]string{"p4info.txtpb": string(text)}}
	ports := []junctionv1.Port{
		{Name: "n3", Number: upfPortNumber["n3"], Role: junctionv1.PortN3, MAC: junctionv1.MACAddress(upfPortMAC["n3"].String())},
		{Name: "wifi", Number: upfPortNumber["wifi"], Role: junctionv1.PortNon3GPP, MAC: junctionv1.MACAddress(upfPortMAC["wifi"].String())},
		{Name: "n6", Number: upfPortNumber["n6"], Role: junctionv1.PortN6, MAC: junctionv1.MACAddress(upfPortMAC["n6"].String())},
	}
	routes := []junctionv1.Route{
		{Destination: "198.51.100.0/24", Port: "n3", NextHopMAC: junctionv1.MACAddress(tb.n3gMAC.String())},
		{Destination: "0.0.0.0/0", Port: "n6", NextHopMAC: junctionv1.MACAddress(tb.dnMAC.String())},
	}
	for _, u := range tb.ues {
		routes = append(routes, junctionv1.Route{Destination: junctionv1.IPv4Prefix(u.addrWiFi.String() + "/32"), Port: "wifi", NextHopMAC: junctionv1.MACAddress(u.wifiMAC.String())})
	}
	upf := &junctionv1.UserPlaneFunction{
		ObjectMeta: metav1.ObjectMeta{Namespace: tb.ns, Name: "upf"},
		Spec: junctionv1.UserPlaneFunctionSpec{
			P4Runtime:       junctionv1.P4RuntimeEndpoint{Address: tb.upfGRPC, DeviceID: 1},
			Pipeline:        junctionv1.Pipeline{ConfigMapRef: junctionv1.LocalObjectReference{Name: "pipeline"}},
			TunnelEndpoints: []junctionv1.TunnelEndpoint{{Name: "core", N3Address: junctionv1.IPv4Address(upfN3.String()), JunctionAddress: junctionv1.IPv4Address(upfJunction.String())}},
			Ports:           ports,
			Routes:          routes,
		},
	}
	create(t, cm, upf)
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// session is the ATSSSSession of UE u with address addr and both legs.
func (tb *testbed) session(name string, u *ueNode, addr string, teid int64, policies ...string) *junctionv1.ATSSSSession {
	s := &junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: tb.ns, Name: name},
		Spec: junctionv1.ATSSSSessionSpec{
			UE:             junctionv1.UE{SUPI: fmt.Sprintf("imsi-00101000000%04d", teid), NodeName: u.name},
			SessionAddress: junctionv1.IPv4Address(addr),
			UPFRef:         junctionv1.LocalObjectReference{Name: "upf"},
			AccessLegs: junctionv1.AccessLegs{
				ThreeGPP:    &junctionv1.ThreeGPPLeg{UEAddress: junctionv1.IPv4Address(u.addr3GPP.String()), GNBAddress: junctionv1.IPv4Address(gnbN3.String()), UplinkTEID: teid, DownlinkTEID: teid + 4096},
				NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: junctionv1.IPv4Address(u.addrWiFi.String())},
			},
		},
	}
	for _, p := range policies {
		s.Spec.PolicyRefs = append(s.Spec.PolicyRefs, junctionv1.LocalObjectReference{Name: p})
	}
	return s
}

// policy is a catch-all SteeringPolicy with the given mode.
func (tb *testbed) policy(name string, mode junctionv1.SteeringMode) *junctionv1.SteeringPolicy {
	return &junctionv1.SteeringPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: tb.ns, Name: name},
		Spec:       junctionv1.SteeringPolicySpec{Precedence: 10, Steering: mode},
	}
}

func activeStandby(active junctionv1.Access) junctionv1.SteeringMode {
	return junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby, ActiveStandby: &junctionv1.ActiveStandby{Active: active}}
}

// eventually is testenv.Eventually.
var eventually = testenv.Eventually

func getSession(name, ns string) (*junctionv1.ATSSSSession, error) {
	s := &junctionv1.ATSSSSession{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s)
	return s, err
}

// waitReady waits until the session is Programmed by the operator and AgentReady by the agent.
func (tb *testbed) waitReady(name string) *junctionv1.ATSSSSession {
	var s *junctionv1.ATSSSSession
	eventually(tb.t, readyTimeout, "session "+name+" Programmed and AgentReady", func() (err error) {
		if s, err = getSession(name, tb.ns); err != nil {
			return err
		}
		for _, c := range []string{junctionv1.ConditionProgrammed, junctionv1.ConditionAgentReady} {
			if !meta.IsStatusConditionTrue(s.Status.Conditions, c) {
				return fmt.Errorf("%s not True: %+v", c, s.Status.Conditions)
			}
		}
		return nil
	})
	return s
}

// register reads one register cell of the UPF over P4Runtime (reads need no arbitration).
func (tb *testbed) register(name string, index int64) (uint64, error) {
	id, err := schema.RegisterID(name)
	if err != nil {
		return 0, err
	}
	conn, err := grpc.NewClient(tb.upfGRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := p4v1.NewP4RuntimeClient(conn).Read(ctx, &p4v1.ReadRequest{DeviceId: 1, Entities: []*p4v1.Entity{
		{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id, Index: &p4v1.Index{Index: index}}}},
	}})
	if err != nil {
		return 0, err
	}
	var got []*p4v1.Entity
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		got = append(got, resp.GetEntities()...)
	}
	if len(got) != 1 {
		return 0, fmt.Errorf("register %s[%d]: %d cells read", name, index, len(got))
	}
	return upfclient.DecodeUint(got[0].GetRegisterEntry().GetData().GetBitstring())
}

// syscallKill ends a process as a crash would: no cleanup.
var syscallKill os.Signal = syscall.SIGKILL

func errorOf(err error, out []byte) error {
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}
