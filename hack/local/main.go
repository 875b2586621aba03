// Command local runs Junction on one machine, for a first look and for demos: a local API server
// and etcd (the envtest control plane hack/tools.sh builds), the software UPF, and the operator,
// each its own process. It installs the CRDs, loads the pipeline ConfigMap, applies
// config/samples, waits for the sessions to be Programmed, and prints them with the table entries
// read back from the UPF over P4Runtime. As root it also builds the samples' UE nodes in
// network namespaces over emulated 5G and WiFi links (dataplane.go), runs the gNB emulator and a
// UE agent per node, sends application traffic through the sessions, and shows it live while a
// scripted story plays.
//
//	go run ./hack/local            # what `make run` does (built first); Ctrl-C stops everything
//	go run ./hack/local --once     # exit after the story (or, without root, after printing)
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/p4bytes"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/p4"
	"github.com/junction-atsss/junction/test/netns"
	"github.com/junction-atsss/junction/test/topology"
)

func main() {
	once := flag.Bool("once", false, "exit after the story (without root: after the sessions are shown) instead of running until interrupted")
	upfAddr := flag.String("upf-address", "127.0.0.1:9559", "P4Runtime address of the software UPF, on 127.0.0.1, which its certificate names (config/samples/upf.yaml is pointed at it)")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long to wait for the sessions to be Programmed")
	flag.Parse()
	// The API clients and envtest log through controller-runtime; this program prints its own
	// view, and the operator, a process of its own, logs to its file.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *upfAddr, *timeout, *once); err != nil {
		slog.Error("local run failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, upfAddr string, timeout time.Duration, once bool) error {
	root := testenv.RepoRoot()
	work := filepath.Join(root, "bin", "local")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}

	// The data path needs root (network namespaces, TUNs); without it the run shows the
	// control path only.
	var dp *dataplane
	if err := netns.Available(); err != nil {
		fmt.Printf("==> data path skipped (%v): sessions are programmed, no packet crosses them\n", err)
	} else if dp, err = newDataplane(); err != nil {
		return fmt.Errorf("building the data path's namespaces: %w", err)
	}
	if dp != nil {
		defer dp.close()
	}

	step("building the software UPF, the operator, the UE agent, the gNB emulator and the SMF emulator")
	for _, name := range []string{"softupf", "manager", "ue-agent", "gnb-emulator", "smf-emulator"} {
		if err := command(ctx, root, os.Stdout, "go", "build", "-o", filepath.Join(work, name), "./cmd/"+name).Run(); err != nil {
			return fmt.Errorf("build %s: %w", name, err)
		}
	}

	step("starting the local API server and etcd")
	assets, err := testenv.AssetsDir()
	if err != nil {
		return err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start API server: %w", err)
	}
	defer env.Stop() //nolint:errcheck // best effort on the way out
	admin, err := env.AddUser(envtest.User{Name: "junction-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(work, "kubeconfig")
	kc, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return err
	}
	fmt.Printf("   kubeconfig: %s  (try: KUBECONFIG=%s bin/kubectl get junction)\n", kubeconfig, kubeconfig)

	// P4Runtime in mutual TLS, the default a UserPlaneFunction asks for: a CA of this run's own
	// signs the UPF's certificate and the operator's (the Secret config/samples/upf.yaml names).
	pki, err := testenv.GeneratePKI(30 * 24 * time.Hour)
	if err != nil {
		return fmt.Errorf("P4Runtime certificates: %w", err)
	}
	tlsDir := filepath.Join(work, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return err
	}
	var tlsFiles []string
	for _, f := range []struct {
		flag, name string
		pem        []byte
	}{{"--tls-cert", "tls.crt", pki.ServerCert}, {"--tls-key", "tls.key", pki.ServerKey}, {"--tls-client-ca", "ca.crt", pki.CA}} {
		path := filepath.Join(tlsDir, f.name)
		if err := os.WriteFile(path, f.pem, 0o600); err != nil {
			return err
		}
		tlsFiles = append(tlsFiles, f.flag, path)
	}

	step("starting the software UPF on " + upfAddr + " (P4Runtime in mutual TLS)")
	upfLog, _ := os.Create(filepath.Join(work, "softupf.log"))
	upfArgs := append([]string{"--grpc-addr", upfAddr}, tlsFiles...)
	if dp != nil {
		upfArgs = append(upfArgs, dp.topo.SoftUPFArgs()...)
	}
	upf := command(ctx, root, upfLog, filepath.Join(work, "softupf"), upfArgs...)
	if err := upf.Start(); err != nil {
		return err
	}
	defer terminate(upf)

	step("starting the operator")
	opLog, _ := os.Create(filepath.Join(work, "manager.log"))
	op := command(ctx, root, opLog, filepath.Join(work, "manager"), "--kubeconfig", kubeconfig,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--path-status-interval", "1s") // a demo shows the UPF's RTTs soon; 10 s by default

	if err := op.Start(); err != nil {
		return err
	}
	defer terminate(op)
	fmt.Printf("   logs: %s, %s\n", upfLog.Name(), opLog.Name())

	if err := junctionv1.AddToScheme(scheme.Scheme); err != nil {
		return err
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	step("creating the pipeline ConfigMap and applying config/samples")
	if err := applySamples(ctx, k8s, upfAddr, pki); err != nil {
		return err
	}

	step("waiting for every session to be Programmed")
	sessions, err := waitProgrammed(ctx, k8s, timeout, 0)
	if err != nil {
		printSessions(sessions)
		return err
	}
	step(fmt.Sprintf("an SMF establishes bob's second MA PDU session over N4 (%s; log: %s)", n4Address, filepath.Join(work, "smf-emulator.log")))
	smfLog, _ := os.Create(filepath.Join(work, "smf-emulator.log"))
	smfProc := command(ctx, root, smfLog, filepath.Join(work, "smf-emulator"), append(n4Session.args(), "--kubeconfig", kubeconfig)...)
	if err := smfProc.Start(); err != nil {
		return err
	}
	defer terminate(smfProc)
	sessions, err = waitProgrammed(ctx, k8s, timeout, len(sessions)+1)
	printSessions(sessions)
	if err != nil {
		return err
	}
	if kubectl := filepath.Join(root, "bin", "kubectl"); fileExists(kubectl) {
		step("kubectl get junction")
		_ = command(ctx, root, os.Stdout, kubectl, "--kubeconfig", kubeconfig, "get", "junction", "-n", "default").Run()
	}
	step("table entries read back from the software UPF over P4Runtime")
	if err := printEntries(ctx, upfAddr, pki); err != nil {
		return err
	}
	if dp != nil {
		defer dp.stop()
		dp.smf = smfProc
		return dp.show(ctx, k8s, work, kubeconfig, once)
	}
	if once {
		return nil
	}
	fmt.Println("\nRunning; Ctrl-C stops everything (and removes the namespaces).")
	<-ctx.Done()
	return nil
}

func step(msg string) { fmt.Printf("==> %s\n", msg) }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func command(ctx context.Context, dir string, out io.Writer, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func terminate(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
}

// n4Address is where the demo's UPF listens for PFCP.
var n4Address = netip.MustParseAddrPort("127.0.0.1:8805")

// n4Session is the session the demo's SMF establishes: bob's second MA PDU session (his SUPI and
// node; its own session and leg addresses, as the UE agent wants) in QoS flow 9 (a QER, as the
// samples' spec.qfi, with a session AMBR of 50 Mbit/s up and 200 down, more than the demo's
// traffic takes), smallest delay by its default MAR, the
// UDP traffic of 198.18.30.0/24 load-balanced 50/50 by a second MAR (MAR 2); the story's
// modification (SIGUSR1) puts MAR 2 on active-standby on 5G. (Its default MAR steers what no
// policy of the UPF describes: the samples' catch-all default-internet takes the rest, docs/n4.md.)
var n4Session = smfSession{
	imsi: "001010000000002", ue: "10.60.0.22", ue3GPP: "10.45.0.22", ueNon3GPP: "203.0.113.22",
	gnb: "198.51.100.10", dlTEID: 8202, node: "ue-node-b", steering: "smallest-delay",
	apps:   []string{"100|load-balance:50|permit out 17 from 198.18.30.0/24 to assigned"},
	modify: "active-standby:3gpp",
}

type smfSession struct {
	imsi, ue, ue3GPP, ueNon3GPP, gnb, node, steering, modify string
	dlTEID                                                   int
	apps                                                     []string
}

func (s smfSession) args() []string {
	out := []string{"--upf", n4Address.String(), "--imsi", s.imsi, "--ue", s.ue, "--ue-3gpp", s.ue3GPP, "--ue-non3gpp", s.ueNon3GPP,
		"--gnb", s.gnb, "--dl-teid", fmt.Sprint(s.dlTEID), "--steering", s.steering, "--modify-mar", "2", "--modify-steering", s.modify,
		"--namespace", "default", "--upf-name", "edge-upf-1", "--node-name", s.node, "--usage-period", "10s", "--qfi", "9",
		"--mbr-ul", "50000", "--mbr-dl", "200000"}
	for _, a := range s.apps {
		out = append(out, "--app", a)
	}
	return out
}

// applySamples creates the pipeline ConfigMap, the P4Runtime TLS Secret and config/samples in
// namespace default, the UPF pointed at the software UPF's upfAddr and given an N4 endpoint on
// n4Address.
func applySamples(ctx context.Context, k8s client.Client, upfAddr string, pki testenv.PKI) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "junction-p4runtime-tls"}, Data: pki.ClientSecretData()}
	if err := k8s.Create(ctx, sec); err != nil {
		return fmt.Errorf("create Secret: %w", err)
	}
	p4info := p4.P4InfoText()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "junction-upf-pipeline"},
		// The software UPF needs no device config; a Tofino or BMv2 build puts p4c's output here.
		Data: map[string]string{"p4info.txtpb": string(p4info), "device_config": ""},
	}
	if err := k8s.Create(ctx, cm); err != nil {
		return fmt.Errorf("create ConfigMap: %w", err)
	}
	objs, err := testenv.Samples(k8s.Scheme(), "default", upfAddr)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if u, ok := o.(*junctionv1.UserPlaneFunction); ok {
			// The demo's SMF reaches the UPF's N4 endpoint on loopback; a leg an SMF sets up
			// through the testbed's W-AGF is a fixed line.
			u.Spec.N4 = &junctionv1.N4{NodeID: n4Address.Addr().String(), Listen: n4Address.String(),
				AccessGateways: []junctionv1.N4AccessGateway{{Address: junctionv1.IPv4Address(topology.WAGFN3.String()), Type: junctionv1.NonThreeGPPWireline}}}
		}
		gvk, err := apiutil.GVKForObject(o, k8s.Scheme())
		if err != nil {
			return err
		}
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
		}
		fmt.Printf("   %s/%s created\n", strings.ToLower(gvk.Kind), o.GetName())
	}
	return nil
}

// waitProgrammed waits until there are at least n sessions (one, for n 0) and all are Programmed.
func waitProgrammed(ctx context.Context, k8s client.Client, timeout time.Duration, n int) ([]junctionv1.ATSSSSession, error) {
	deadline := time.Now().Add(timeout)
	for {
		var list junctionv1.ATSSSSessionList
		if err := k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
			return nil, err
		}
		done := len(list.Items) > 0 && len(list.Items) >= n
		for _, s := range list.Items {
			if !apimeta.IsStatusConditionTrue(s.Status.Conditions, junctionv1.ConditionProgrammed) {
				done = false
			}
		}
		if done {
			return list.Items, nil
		}
		if time.Now().After(deadline) {
			return list.Items, fmt.Errorf("sessions not Programmed after %s (see bin/local/manager.log)", timeout)
		}
		select {
		case <-ctx.Done():
			return list.Items, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func printSessions(sessions []junctionv1.ATSSSSession) {
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "   NAME\tADDRESS\tUSER\tLOOKUP\tMODE\tPROGRAMMED\tREADY\tREASON")
	for _, s := range sessions {
		user := "-"
		if s.Status.UserIndex != nil {
			user = fmt.Sprint(*s.Status.UserIndex)
		}
		prog, ready := condition(s, junctionv1.ConditionProgrammed), condition(s, junctionv1.ConditionReady)
		fmt.Fprintf(w, "   %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Spec.SessionAddress, user, s.Status.Lookup,
			s.Status.Steering, prog.Status, ready.Status, prog.Reason)
	}
	w.Flush()
}

func condition(s junctionv1.ATSSSSession, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Status: "Unknown"}
}

// printEntries reads every table entry with one wildcard P4Runtime Read (streamed) and prints
// the number per table and the sessions table in full.
func printEntries(ctx context.Context, addr string, pki testenv.PKI) error {
	info, err := p4.P4Info()
	if err != nil {
		return err
	}
	sch, err := upfclient.NewSchema(info)
	if err != nil {
		return err
	}
	client, err := tls.X509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		return err
	}
	creds := credentials.NewTLS(&tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := p4v1.NewP4RuntimeClient(conn).Read(ctx, &p4v1.ReadRequest{
		DeviceId: 1,
		Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}},
	})
	if err != nil {
		return err
	}
	count := map[string]int{}
	var sessionLines []string
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		for _, e := range resp.GetEntities() {
			te, err := sch.Decode(e.GetTableEntry())
			if err != nil {
				return err
			}
			count[te.Table]++
			if te.Table == "sessions" {
				sessionLines = append(sessionLines, describe(sch, te))
			}
		}
	}
	tables := make([]string, 0, len(count))
	for t := range count {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		fmt.Printf("   %-20s %d entries\n", t, count[t])
	}
	sort.Strings(sessionLines)
	for _, l := range sessionLines {
		fmt.Println("   sessions:", l)
	}
	return nil
}

// describe prints a sessions entry as "10.60.0.1 -> set_session(user_idx=0, ...)".
func describe(sch *upfclient.Schema, e upfclient.Entry) string {
	var b strings.Builder
	for _, m := range e.Match {
		fmt.Fprintf(&b, "%s ", value(m.Field, m.Value))
	}
	fmt.Fprintf(&b, "-> %s(", e.Action)
	names, _ := sch.ParamNames(e.Action)
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", n, value(n, e.Params[n]))
	}
	b.WriteString(")")
	return b.String()
}

// value shows addresses as dotted quads and everything else as a number.
func value(name string, v []byte) string {
	n, _ := p4bytes.DecodeUint(v)
	if strings.Contains(name, "addr") || strings.HasPrefix(name, "gateway") {
		return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
	}
	return fmt.Sprint(n)
}
