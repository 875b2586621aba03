//go:build linux

// Package ueagent tests the UE agent end to end with every real part: a real kube-apiserver and
// etcd (envtest), the operator's controllers, the software UPF binary, the gNB emulator binary
// and the UE agent binary, moving real packets through TUN devices and veths in network
// namespaces this test creates and removes (test/topology draws the network).
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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/p4"
	"github.com/junction-atsss/junction/test/netns"
	"github.com/junction-atsss/junction/test/topology"
)

// Named timeouts.
const (
	readyTimeout    = 60 * time.Second // objects applied → Programmed and AgentReady
	probeTimeout    = 20 * time.Second // probes answered → RTTs in registers and status
	failoverTimeout = 10 * time.Second // a leg lost → traffic on the other leg
)

// The testbed's addresses are test/topology's.
var (
	dnHost      = topology.DNHost
	upfJunction = topology.UPFJunction
)

var (
	env        *envtest.Environment
	restCfg    *rest.Config
	k8s        client.Client // uncached
	kubeconfig string        // an administrator's
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
	env = &envtest.Environment{
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
	return startWrapped(t, nil, name, args...)
}

// startWrapped is start with bin/name run by the command wrap (which must exec it, keeping its
// PID for the interrupt).
func startWrapped(t testing.TB, wrap []string, name string, args ...string) *proc {
	t.Helper()
	argv := slices.Concat(wrap, []string{filepath.Join(binDir, name)}, args)
	p := &proc{name: name, cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
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
// Topology (test/topology builds the network; the testbed adds the processes and objects)
// ---------------------------------------------------------------------------------------------

// ueNode is one UE namespace, the node its agent serves.
type ueNode struct {
	*topology.UE
	agent *proc
}

// testbed is the network, the processes and the Kubernetes namespace of one test.
type testbed struct {
	t testing.TB
	*topology.Topology
	ues     []*ueNode
	ns      string // Kubernetes namespace
	upfGRPC string
	softupf *proc
	status  statusCadence
}

// statusCadence is how often the operator and the agents write a session's status while only
// its RTTs change.
type statusCadence struct {
	operator time.Duration // controllers.Options.StatusInterval; 0: the operator's default
	agent    []string      // the agents' flags; none: their defaults
}

var (
	// scenarioStatus: the scenarios watch the path state through the sessions' status, so
	// their operator and agents write it 20 and 10 times as often as the shipped defaults.
	scenarioStatus = statusCadence{operator: 500 * time.Millisecond, agent: []string{"--status-interval", "1s", "--min-status-interval", "200ms"}}
	// shippedStatus: what a user runs (10 s each, cmd/manager --path-status-interval and
	// cmd/ue-agent --status-interval). Benchmarks of the data path run it: on these two cores
	// each status write costs the API server, and the agent's informer, CPU the packets wait for.
	shippedStatus = statusCadence{}
)

// noOffload is topology.NoOffload for a test.
func noOffload(t testing.TB, ns *netns.Namespace, iface string) {
	t.Helper()
	must(t, topology.NoOffload(ns, iface))
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

// newTestbed builds the topology with nUEs plain-veth UEs, starts the software UPF, the operator
// and the gNB emulator, and creates the UPF object and pipeline in a fresh Kubernetes namespace.
func newTestbed(t testing.TB, nUEs int) *testbed {
	return newEmulatedTestbed(t, nUEs, nil)
}

// newEmulatedTestbed is newTestbed with the UEs' links emulated by em (nil: plain veths).
func newEmulatedTestbed(t testing.TB, nUEs int, em *topology.Emulation) *testbed {
	t.Helper()
	return newTestbedWith(t, nUEs, em, scenarioStatus)
}

// newTestbedWith is newEmulatedTestbed with the status written at cadence.
func newTestbedWith(t testing.TB, nUEs int, em *topology.Emulation, cadence statusCadence) *testbed {
	t.Helper()
	if em != nil {
		// The emulated links measure the CPUs they get (testenv.WaitForQuietCPU).
		testenv.WaitForQuietCPU(t, 2*time.Minute)
		testenv.LogStolenCPU(t)
	}
	topo, err := topology.New(topology.Config{Emulation: em})
	must(t, err)
	t.Cleanup(topo.Close)
	tb := &testbed{t: t, Topology: topo, status: cadence}
	for i := range nUEs {
		u, err := topo.AddUE(topology.DefaultUE(i))
		must(t, err)
		tb.ues = append(tb.ues, &ueNode{UE: u})
	}

	// The software UPF: ports in the UPF namespace, P4Runtime on loopback.
	tb.upfGRPC = testenv.FreeAddr(t)
	tb.softupf = start(t, "softupf", append([]string{"--grpc-addr", tb.upfGRPC, "--device-id", "1", "--cpu-port", "255"}, topo.SoftUPFArgs()...)...)

	tb.ns = newK8sNamespace(t)
	create(t, topology.AddressPool(tb.ns))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), topology.AddressPool(tb.ns)) })
	tb.createUPF()
	startOperator(t, tb.ns, cadence.operator)

	// The gNB emulator serves every UE's radio link.
	start(t, "gnb-emulator", append([]string{"--kubeconfig", kubeconfig, "--namespace", tb.ns, "--metrics-addr", "0"}, topo.GNBArgs()...)...)
	return tb
}

// newMPTCP builds the MPTCP baseline over links with em's parameters.
func newMPTCP(t testing.TB, em *topology.Emulation, backup3GPP bool) *topology.MPTCP {
	t.Helper()
	m, err := topology.NewMPTCP(nil, *em, backup3GPP)
	must(t, err)
	t.Cleanup(m.Close)
	return m
}

// startAgent runs the UE agent for node u, with extra flags.
func (tb *testbed) startAgent(u *ueNode, extra ...string) {
	args := append([]string{"--kubeconfig", kubeconfig, "--node-name", u.Node, "--netns", u.NS.Name,
		"--namespace", tb.ns, "--metrics-addr", "0", "--health-addr", "0"}, tb.status.agent...)
	u.agent = start(tb.t, "ue-agent", append(args, extra...)...)
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

// startOperator runs the operator for namespace ns, refreshing a session's path status at most
// every statusInterval (0: its default).
func startOperator(t testing.TB, ns string, statusInterval time.Duration) {
	t.Helper()
	skip := true
	opts, err := controllers.ManagerOptions(restCfg, nil)
	must(t, err)
	opts.Scheme = scheme.Scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	opts.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := ctrl.NewManager(restCfg, opts)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	if _, _, err := controllers.SetupWithManager(ctx, mgr, controllers.Options{
		ElectionLow:    controllers.StartTimeElectionLow(time.Now()),
		WriteWindow:    2 * time.Millisecond,
		StatusInterval: statusInterval,
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

// createUPF applies the pipeline ConfigMap and the UserPlaneFunction of the testbed, in
// plaintext (spec.p4runtime.insecure) to the software UPF on loopback, and the P4RuntimeTarget
// that grants the testbed's namespace that device; TestKindDataplane runs it in mutual TLS, as
// the chart does.
func (tb *testbed) createUPF() {
	tb.createPipeline("pipeline")
	upf := tb.UPFObject(tb.ns, "upf", junctionv1.P4RuntimeEndpoint{Address: junctionv1.P4RuntimeAddress(tb.upfGRPC), DeviceID: 1, Insecure: true}, "pipeline")
	grant := topology.DeviceGrant(upf)
	create(tb.t, grant, upf)
	tb.t.Cleanup(func() { _ = k8s.Delete(context.Background(), grant) })
}

// createPipeline applies the pipeline ConfigMap (this program's P4Info) named name.
func (tb *testbed) createPipeline(name string) {
	info, err := p4.P4Info()
	must(tb.t, err)
	text, err := prototext.MarshalOptions{Multiline: true}.Marshal(info)
	must(tb.t, err)
	create(tb.t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tb.ns, Name: name}, Data: map[string]string{"p4info.txtpb": string(text)}})
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
			UE:             junctionv1.UE{SUPI: fmt.Sprintf("imsi-00101000000%04d", teid), NodeName: u.Node},
			SessionAddress: junctionv1.IPv4Address(addr),
			UPFRef:         junctionv1.LocalObjectReference{Name: "upf"},
			AccessLegs: junctionv1.AccessLegs{
				ThreeGPP:    &junctionv1.ThreeGPPLeg{UEAddress: junctionv1.IPv4Address(u.Addr3GPP[0].String()), GNBAddress: junctionv1.IPv4Address(topology.GNBN3.String()), UplinkTEID: teid, DownlinkTEID: teid + 4096},
				NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: junctionv1.IPv4Address(u.AddrWiFi[0].String())},
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
