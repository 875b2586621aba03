// Package operator tests the Junction operator end to end: a real kube-apiserver and etcd
// (envtest), the operator's controllers in a controller-runtime manager, and the real software
// UPF (internal/softupf: P4Runtime server + data plane) listening on 127.0.0.1. Assertions read
// the API server through an uncached client and the UPF's entries back over P4Runtime.
package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/prototext"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/controllers"
	"github.com/junction-atsss/junction/internal/p4bytes"
	"github.com/junction-atsss/junction/internal/pathmon"
	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/p4"
)

// Named timeouts for Eventually-style polling.
const (
	programTimeout  = 30 * time.Second // objects created → entries on the UPF and status written
	replayTimeout   = 30 * time.Second // target or operator restart → desired state back
	takeoverTimeout = 30 * time.Second // leader stopped → the other manager programs
	settleTime      = 3 * time.Second  // time given to an operator to (wrongly) write something
)

var (
	restCfg *rest.Config
	k8s     client.Client // uncached: what the API server holds
)

func TestMain(m *testing.M) {
	var log logr.Logger = logr.Discard()
	if os.Getenv("JUNCTION_TEST_LOG") != "" {
		log = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true))
	}
	ctrl.SetLogger(log)
	cfg, stop, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restCfg = cfg
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// eventually is testenv.Eventually.
var eventually = testenv.Eventually

// ---------------------------------------------------------------------------------------------
// The software UPF
// ---------------------------------------------------------------------------------------------

// softUPF is the real software UPF (P4Runtime server and data plane) without network ports:
// tests read its entries back over P4Runtime.
type softUPF struct {
	p4rtTarget
	// now is the data plane's now_us: a manual clock, so that probe RTTs are exact.
	now    atomic.Uint32
	srv    *p4rt.Server
	dp     *dataplane.Pipeline
	pool   *dataplane.Pool // the data plane's buffers: packets fed to it come from here
	gs     *grpc.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// conns counts the TCP connections the P4Runtime server accepted (the operator's, and the
	// tests' own reads) and those still open.
	conns *countingListener
	// sent holds what the data plane sent on its own (packet-outs, released packets).
	sent *frameSink
}

// frameSink is a data plane's sink with ports 1 to 16: it keeps the last 1,024 frames it was
// given to send, with their ports, counts them all, and gives the buffers back.
type frameSink struct {
	pool   *dataplane.Pool
	mu     sync.Mutex
	frames []sentFrame
	total  int
}

type sentFrame struct {
	port  uint32
	frame []byte
}

func (s *frameSink) Transmit(pkts []*dataplane.Packet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pkts {
		s.frames = append(s.frames, sentFrame{p.OutPort, slices.Clone(p.Frame())})
		s.pool.Put(p)
	}
	s.total += len(pkts)
	if n := len(s.frames); n > 1024 {
		s.frames = slices.Delete(s.frames, 0, n-1024)
	}
}

func (s *frameSink) HasPort(port uint32) bool { return port >= 1 && port <= 16 }

// count is how many frames were sent so far.
func (s *frameSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// since returns the frames sent after the first n (as many of them as it keeps).
func (s *frameSink) since(n int) []sentFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := min(max(s.total-n, 0), len(s.frames))
	return slices.Clone(s.frames[len(s.frames)-k:])
}

// taken returns what was sent so far (the last 1,024).
func (s *frameSink) taken() []sentFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames)
}

// countingListener counts the connections it accepts and those not closed yet.
type countingListener struct {
	net.Listener
	accepted, open atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// startSoftUPF listens on addr ("127.0.0.1:0" for a new one, an old address to restart it).
func startSoftUPF(t testing.TB, addr string) *softUPF {
	t.Helper()
	return startSoftUPFTLS(t, addr, nil, nil)
}

// startSoftUPFTLS serves P4Runtime over TLS with serverTLS (nil: plaintext); tests read it back
// with clientTLS. extra server options can make it refuse what a target cannot do.
func startSoftUPFTLS(t testing.TB, addr string, serverTLS, clientTLS *tls.Config, extra ...grpc.ServerOption) *softUPF {
	t.Helper()
	var lis net.Listener
	var err error
	for i := 0; i < 50; i++ { // a restarted UPF may wait for its old port to be free
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("software UPF: %v", err)
	}
	u := &softUPF{p4rtTarget: p4rtTarget{addr: lis.Addr().String(), clientTLS: clientTLS}, conns: &countingListener{Listener: lis}}
	u.now.Store(1_000_000)
	u.pool = dataplane.NewPool(64)
	u.sent = &frameSink{pool: u.pool}
	dp, err := dataplane.New(dataplane.Config{Pool: u.pool, Sink: u.sent, MaxHeld: 16, CPUPort: 255, Now: u.now.Load})
	if err != nil {
		t.Fatal(err)
	}
	u.dp, u.srv = dp, p4rt.New(dp, p4rt.Options{DeviceID: 1})
	opts := append([]grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20), grpc.MaxSendMsgSize(64 << 20)}, extra...)
	if serverTLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(serverTLS)))
	}
	u.gs = grpc.NewServer(opts...)
	p4v1.RegisterP4RuntimeServer(u.gs, u.srv)
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	u.wg.Add(2)
	go func() { defer u.wg.Done(); _ = u.gs.Serve(u.conns) }()
	go func() { defer u.wg.Done(); _ = dp.Run(ctx) }()
	t.Cleanup(u.stop)
	return u
}

func (u *softUPF) stop() {
	u.cancel()
	u.gs.Stop()
	u.wg.Wait()
}

// writes is the number of Write RPCs the UPF has served.
func (u *softUPF) writes() uint64 { return u.srv.Stats().WriteRequests }

// p4rtTarget is a P4Runtime server the tests read back: the software UPF or BMv2.
type p4rtTarget struct {
	addr string
	// clientTLS is how tests reach a UPF that serves TLS.
	clientTLS *tls.Config
}

// read reads the UPF without arbitration (P4Runtime allows reads from any client).
func (u *p4rtTarget) read(ctx context.Context, entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	creds := insecure.NewCredentials()
	if u.clientTLS != nil {
		creds = credentials.NewTLS(u.clientTLS)
	}
	conn, err := grpc.NewClient(u.addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := p4v1.NewP4RuntimeClient(conn).Read(ctx, &p4v1.ReadRequest{DeviceId: 1, Entities: entities})
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetEntities()...)
	}
}

// entries reads every table entry of the UPF, decoded by names, in a stable order.
func (u *p4rtTarget) entries(sch *upfclient.Schema) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for _, t := range sch.P4Info().GetTables() {
		got, err := u.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: t.GetPreamble().GetId()}}})
		if err != nil {
			return nil, err
		}
		for _, e := range got {
			out = append(out, describe(sch, e.GetTableEntry()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// meter reads one meter cell's configuration (nil: none, every packet green).
func (u *p4rtTarget) meter(sch *upfclient.Schema, name string, index int64) (*p4v1.MeterConfig, error) {
	var id uint32
	for _, m := range sch.P4Info().GetMeters() {
		if m.GetPreamble().GetName() == name {
			id = m.GetPreamble().GetId()
		}
	}
	if id == 0 {
		return nil, fmt.Errorf("no meter %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := u.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: index}}}})
	if err != nil {
		return nil, err
	}
	if len(got) != 1 {
		return nil, fmt.Errorf("%s[%d]: %d entities", name, index, len(got))
	}
	return got[0].GetMeterEntry().GetConfig(), nil
}

// register reads one register cell.
func (u *p4rtTarget) register(sch *upfclient.Schema, name string, index int64) (uint64, error) {
	id, err := sch.RegisterID(name)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := u.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id, Index: &p4v1.Index{Index: index}}}})
	if err != nil {
		return 0, err
	}
	if len(got) != 1 {
		return 0, fmt.Errorf("register %s[%d]: %d cells read", name, index, len(got))
	}
	return upfclient.DecodeUint(got[0].GetRegisterEntry().GetData().GetBitstring())
}

// counterPackets reads the packets of one cell of an indirect counter.
func (u *p4rtTarget) counterPackets(sch *upfclient.Schema, name string, index int64) (int64, error) {
	id, err := sch.CounterID(name)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := u.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: &p4v1.Index{Index: index}}}})
	if err != nil {
		return 0, err
	}
	if len(got) != 1 {
		return 0, fmt.Errorf("counter %s[%d]: %d cells read", name, index, len(got))
	}
	return got[0].GetCounterEntry().GetData().GetPacketCount(), nil
}

// describe renders a table entry by names, canonically: "table key... -> action(params)".
func describe(sch *upfclient.Schema, te *p4v1.TableEntry) string {
	e, err := sch.Decode(te)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	var b strings.Builder
	b.WriteString(e.Table)
	ms := append([]upfclient.Match(nil), e.Match...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Field < ms[j].Field })
	for _, m := range ms {
		switch m.Kind {
		case p4configv1.MatchField_EXACT:
			fmt.Fprintf(&b, " %s=%x", m.Field, p4bytes.Canonical(m.Value))
		case p4configv1.MatchField_LPM:
			fmt.Fprintf(&b, " %s=%x/%d", m.Field, p4bytes.Canonical(m.Value), m.PrefixLen)
		case p4configv1.MatchField_TERNARY:
			fmt.Fprintf(&b, " %s=%x&%x", m.Field, p4bytes.Canonical(m.Value), p4bytes.Canonical(m.Mask))
		case p4configv1.MatchField_RANGE:
			fmt.Fprintf(&b, " %s=%x..%x", m.Field, p4bytes.Canonical(m.Low), p4bytes.Canonical(m.High))
		}
	}
	if e.Priority != 0 {
		fmt.Fprintf(&b, " prio=%d", e.Priority)
	}
	names := make([]string, 0, len(e.Params))
	for n := range e.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, " -> %s(", e.Action)
	for i, n := range names {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s=%x", n, p4bytes.Canonical(e.Params[n]))
	}
	b.WriteString(")")
	return b.String()
}

// ---------------------------------------------------------------------------------------------
// The operator
// ---------------------------------------------------------------------------------------------

type operator struct {
	mgr    ctrl.Manager
	fleet  *controllers.Fleet
	n4     *controllers.N4Endpoints
	cancel context.CancelFunc
	done   chan error
}

type operatorOptions struct {
	leaseName string // "" disables leader election
	path      pathmon.Config
	// who the operator acts as (zero: the envtest admin), e.g. the chart's ServiceAccount, so
	// that only its RBAC applies.
	impersonate rest.ImpersonationConfig
	// slowFirstRestore delays the operator's first uncached list of ATSSSSessions (a UPF
	// runtime's restore) by this much, as 100k sessions would.
	slowFirstRestore time.Duration
	// epoch, when set, is the leadership epoch of the election IDs instead of the start time or
	// the lease's; onDeposed is controllers.Options.OnDeposed.
	epoch     uint64
	onDeposed func(types.NamespacedName)
	// electionHigh is controllers.Options.ElectionIDHigh (the administrator's flag).
	electionHigh uint64
	// alsoWatch are namespaces the operator's cache watches beside its own.
	alsoWatch []string
	// secretNamespaces are where the operator reads Secrets (cmd/manager's --secret-namespaces;
	// nil: every namespace, whatever the namespace the rest of the cache watches).
	secretNamespaces []string
}

// ownConnection is cfg for a client with its own connection to the API server, as another
// process would have: client-go shares one HTTP/2 connection among the clients of one config,
// and the operator's watch events, sharing it with 32 creating goroutines, arrived seconds late.
func ownConnection(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = (&net.Dialer{}).DialContext // a Dial makes client-go build a transport of its own
	return cfg
}

// startOperator runs the operator's controllers in a manager watching namespace ns.
func startOperator(t testing.TB, ns string, o operatorOptions) *operator {
	t.Helper()
	skip := true
	lease, renew, retry := 3*time.Second, 2*time.Second, 200*time.Millisecond
	cfg := ownConnection(restCfg)
	cfg.Impersonate = o.impersonate
	if d := o.slowFirstRestore; d > 0 {
		var slowed atomic.Bool
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				// An uncached list: no resourceVersion (an informer's list sends one) and no watch.
				if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/atssssessions") &&
					!req.URL.Query().Has("resourceVersion") && !req.URL.Query().Has("watch") && slowed.CompareAndSwap(false, true) {
					time.Sleep(d)
				}
				return rt.RoundTrip(req)
			})
		})
	}
	opts, err := controllers.ManagerOptions(cfg, o.secretNamespaces)
	if err != nil {
		t.Fatal(err)
	}
	opts.Scheme = scheme.Scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.LeaderElection, opts.LeaderElectionID, opts.LeaderElectionNamespace = o.leaseName != "", o.leaseName, ns
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease, &renew, &retry
	opts.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	for _, other := range o.alsoWatch {
		opts.Cache.DefaultNamespaces[other] = cache.Config{}
	}
	opts.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	low := controllers.StartTimeElectionLow(time.Now())
	if o.leaseName != "" {
		low = controllers.LeaseElectionLow(mgr.GetAPIReader(), ns, o.leaseName)
	}
	if o.epoch != 0 {
		low = func(context.Context) (uint64, error) { return o.epoch, nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	fleet, n4s, err := controllers.SetupWithManager(ctx, mgr, controllers.Options{
		ElectionLow:      low,
		ElectionIDHigh:   o.electionHigh,
		WriteWindow:      2 * time.Millisecond,
		StatusInterval:   time.Second,
		PathConfig:       o.path,
		ReconnectBackoff: upfclient.Backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond},
		OnDeposed:        o.onDeposed,
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	op := &operator{mgr: mgr, fleet: fleet, n4: n4s, cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(op.stop)
	return op
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stop ends the manager and waits for it (its P4Runtime streams are closed on return).
func (o *operator) stop() {
	if o.cancel == nil {
		return
	}
	o.cancel()
	o.cancel = nil
	select {
	case <-o.done:
	case <-time.After(30 * time.Second):
	}
}

// ---------------------------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------------------------

// testPool grants a test's namespace the addresses the tests use (docs/address-pools.md): session
// addresses in 10/8 and 100.64/10 (envtest's service range 10.0.0.0/24 stays refused), UE
// addresses in the ranges the legs use.
func testPool(ns string) *junctionv1.AddressPool {
	return &junctionv1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: junctionv1.AddressPoolSpec{Namespace: ns,
		SessionAddresses: []junctionv1.IPv4Prefix{"10.0.0.0/8", "100.64.0.0/10"},
		UEAddresses:      []junctionv1.IPv4Prefix{"10.0.0.0/8", "100.0.0.0/8", "172.0.0.0/8", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"}}}
}

// newNamespace creates a namespace of its own for a test, and the AddressPool that grants it
// the test addresses.
func newNamespace(t testing.TB) string {
	t.Helper()
	// A DNS label: what else a test name holds ("_", "/", "=", the "#01" of a repeated
	// subtest) becomes "-".
	name := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), testPool(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), testPool(name)) })
	return name
}

// pathStateRegisters are the per-user path-state registers (docs/pipeline.md), which a new
// user's index starts with at 0.
var pathStateRegisters = []string{"rtt_3gpp", "rtt_non3gpp", "loss_3gpp", "loss_non3gpp", "path_updates_suspended",
	"autonomous_share"}

// tableSize is a pipelineConfigMap edit that gives table name room for size entries.
func tableSize(name string, size int64) func(*p4configv1.P4Info) {
	return func(info *p4configv1.P4Info) {
		for _, tb := range info.GetTables() {
			if tb.GetPreamble().GetName() == name {
				tb.Size = size
			}
		}
	}
}

// pipelineConfigMap holds the checked-in P4Info, changed by edit (e.g. a smaller table).
func pipelineConfigMap(t testing.TB, ns, name string, edit func(*p4configv1.P4Info)) (*corev1.ConfigMap, *upfclient.Schema) {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(info)
	}
	return pipelineConfigMapOf(t, ns, name, info)
}

// pipelineConfigMapOf is a pipeline ConfigMap holding info, and the schema the tests resolve
// names with.
func pipelineConfigMapOf(t testing.TB, ns, name string, info *p4configv1.P4Info) (*corev1.ConfigMap, *upfclient.Schema) {
	t.Helper()
	text, err := prototext.MarshalOptions{Multiline: true}.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := upfclient.NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"p4info.txtpb": string(text)}}, sch
}

// newUPF is a UPF in plaintext (spec.p4runtime.insecure), as most tests' software UPF on
// loopback serves it; tls_test.go covers TLS, the default.
func newUPF(ns, name, addr, configMap string) *junctionv1.UserPlaneFunction {
	return &junctionv1.UserPlaneFunction{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: junctionv1.UserPlaneFunctionSpec{
			P4Runtime: junctionv1.P4RuntimeEndpoint{Address: junctionv1.P4RuntimeAddress(addr), DeviceID: 1, Insecure: true},
			Pipeline:  junctionv1.Pipeline{ConfigMapRef: junctionv1.LocalObjectReference{Name: configMap}},
			TunnelEndpoints: []junctionv1.TunnelEndpoint{
				{Name: "core", N3Address: "192.0.2.1", JunctionAddress: "192.0.2.2"},
			},
			Ports: []junctionv1.Port{
				{Name: "n3", Number: 1, Role: junctionv1.PortN3, MAC: "02:00:00:00:01:01"},
				{Name: "n6", Number: 3, Role: junctionv1.PortN6, MAC: "02:00:00:00:01:03"},
			},
			Routes: []junctionv1.Route{
				{Destination: "198.51.100.0/24", Port: "n3", NextHopMAC: "02:00:00:00:02:01"},
				// The default route: P4Runtime sends it with the LPM field omitted.
				{Destination: "0.0.0.0/0", Port: "n6", NextHopMAC: "02:00:00:00:02:03"},
			},
		},
	}
}

// grantDevice does what an administrator does for a tenant's UPFs (docs/p4runtime-targets.md):
// a P4RuntimeTarget granting each UPF's namespace the device its spec.p4runtime names, removed
// when the test ends. Without one the operator does not connect (device_grant_test.go).
func grantDevice(t testing.TB, upfs ...*junctionv1.UserPlaneFunction) {
	t.Helper()
	for _, u := range upfs {
		g := deviceGrant(u.Namespace+"-"+u.Name, u.Namespace, u.Spec.P4Runtime.Address, u.Spec.P4Runtime.DeviceID, u.Spec.P4Runtime.Role)
		create(t, g)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), g) })
	}
}

// deviceGrant is a P4RuntimeTarget granting namespace ns the device at address.
func deviceGrant(name, ns string, address junctionv1.P4RuntimeAddress, deviceID int64, role string) *junctionv1.P4RuntimeTarget {
	return &junctionv1.P4RuntimeTarget{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: junctionv1.P4RuntimeTargetSpec{Namespace: ns, Address: address, DeviceID: deviceID, Role: role}}
}

// upfRig is a namespace with a software UPF, its pipeline ConfigMap (the checked-in P4Info) and
// a UserPlaneFunction on it with its device granted, the start of most tests.
type upfRig struct {
	ns  string
	u   *softUPF
	sch *upfclient.Schema
	upf *junctionv1.UserPlaneFunction
}

// newUPFRig creates the rig with UserPlaneFunction name; opts are the software UPF's extra server
// options (refuseUpdates).
func newUPFRig(t *testing.T, name string, opts ...grpc.ServerOption) upfRig {
	t.Helper()
	return newUPFRigWith(t, name, nil, opts...)
}

// newUPFRigWith is newUPFRig with the P4Info edited by edit (e.g. tableSize) first.
func newUPFRigWith(t *testing.T, name string, edit func(*p4configv1.P4Info), opts ...grpc.ServerOption) upfRig {
	t.Helper()
	return newUPFRigOf(t, name, nil, edit, opts...)
}

// newUPFRigOf is newUPFRigWith with the UserPlaneFunction edited by editUPF before it is created.
func newUPFRigOf(t testing.TB, name string, editUPF func(*junctionv1.UserPlaneFunction), edit func(*p4configv1.P4Info), opts ...grpc.ServerOption) upfRig {
	t.Helper()
	r := newUngrantedRig(t, name, editUPF, edit, opts...)
	grantDevice(t, r.upf)
	return r
}

// newUngrantedRig is newUPFRigOf without the P4RuntimeTarget: no administrator granted the
// namespace the UPF's device.
func newUngrantedRig(t testing.TB, name string, editUPF func(*junctionv1.UserPlaneFunction), edit func(*p4configv1.P4Info), opts ...grpc.ServerOption) upfRig {
	t.Helper()
	r := upfRig{ns: newNamespace(t), u: startSoftUPFTLS(t, "127.0.0.1:0", nil, nil, opts...)}
	var cm *corev1.ConfigMap
	cm, r.sch = pipelineConfigMap(t, r.ns, "pipeline", edit)
	r.upf = newUPF(r.ns, name, r.u.addr, "pipeline")
	if editUPF != nil {
		editUPF(r.upf)
	}
	create(t, cm, r.upf)
	return r
}

// programmedSession creates a WiFi-only session on the rig's UPF and waits until it is Programmed.
func (r upfRig) programmedSession(t *testing.T, name, supi, addr string) *junctionv1.ATSSSSession {
	t.Helper()
	s := session(r.ns, name, supi, addr, r.upf.Name, "n", "")
	create(t, s)
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	return s
}

func ptr[T any](v T) *T { return &v }

// session builds an ATSSSSession; legs: "3" a 3GPP leg behind gnb, "n" a WiFi leg.
func session(ns, name, supi, addr, upf, legs, gnb string, policies ...string) *junctionv1.ATSSSSession {
	s := &junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: junctionv1.ATSSSSessionSpec{
			UE:             junctionv1.UE{SUPI: supi},
			SessionAddress: junctionv1.IPv4Address(addr),
			UPFRef:         junctionv1.LocalObjectReference{Name: upf},
		},
	}
	last := addr[strings.LastIndex(addr, ".")+1:]
	if strings.Contains(legs, "3") {
		s.Spec.AccessLegs.ThreeGPP = &junctionv1.ThreeGPPLeg{
			UEAddress: junctionv1.IPv4Address("10.45.0." + last), GNBAddress: junctionv1.IPv4Address(gnb),
			UplinkTEID: 1000 + int64(len(name))*100 + int64(atoi(last)), DownlinkTEID: 2000 + int64(atoi(last)),
		}
	}
	if strings.Contains(legs, "n") {
		s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: junctionv1.IPv4Address("203.0.113." + last)}
	}
	for _, p := range policies {
		s.Spec.PolicyRefs = append(s.Spec.PolicyRefs, junctionv1.LocalObjectReference{Name: p})
	}
	return s
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func loadBalancePolicy(ns, name string, prec, percent int32, prefix string) *junctionv1.SteeringPolicy {
	return &junctionv1.SteeringPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: junctionv1.SteeringPolicySpec{
			Precedence:        prec,
			TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(prefix)}, Protocol: junctionv1.ProtocolTCP, DestinationPorts: []junctionv1.PortRange{{From: 443}}},
			Steering:          junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptr(percent)}},
		},
	}
}

func activeStandbyPolicy(ns, name string, prec int32, prefix string) *junctionv1.SteeringPolicy {
	return &junctionv1.SteeringPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: junctionv1.SteeringPolicySpec{
			Precedence:        prec,
			TrafficDescriptor: junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(prefix)}},
			Steering:          junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby, ActiveStandby: &junctionv1.ActiveStandby{Active: junctionv1.AccessNon3GPP}},
		},
	}
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// condition returns the condition of an object read from the API server ("" status when absent).
func condition(obj client.Object, typ string) (metav1.Condition, error) {
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		return metav1.Condition{}, err
	}
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *junctionv1.ATSSSSession:
		conds = o.Status.Conditions
	case *junctionv1.SteeringPolicy:
		conds = o.Status.Conditions
	case *junctionv1.UserPlaneFunction:
		conds = o.Status.Conditions
	}
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c, nil
	}
	return metav1.Condition{Type: typ}, nil
}

// waitCondition waits until obj's condition typ has the status and reason (reason "" = any).
func waitCondition(t testing.TB, timeout time.Duration, obj client.Object, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%s %s: %s=%s %s", strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1alpha1."), obj.GetName(), typ, status, reason), func() error {
		c, err := condition(obj, typ)
		if err != nil {
			return err
		}
		if c.Status != status || (reason != "" && c.Reason != reason) {
			return fmt.Errorf("%s is %q (%s: %s)", typ, c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// event finds an event about obj with the reason, of the given type.
func findEvent(ns, name, typ, reason string) error {
	var list corev1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err
	}
	var seen []string
	if len(list.Items) == 0 {
		return fmt.Errorf("no events at all in %s", ns)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			if e.Type == typ && e.Reason == reason {
				return nil
			}
			seen = append(seen, e.Type+"/"+e.Reason)
		}
	}
	return fmt.Errorf("no %s event %s for %s (events: %v)", typ, reason, name, seen)
}
