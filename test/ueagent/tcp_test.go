//go:build linux

package ueagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"k8s.io/apimachinery/pkg/types"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/ueagent"
	"github.com/junction-atsss/junction/test/netns"
)

// iperfTimeout bounds one iperf3 run, server and client.
const iperfTimeout = 60 * time.Second

// iperfResult is the part of iperf3 -J's report the tests read.
type iperfResult struct {
	End struct {
		SumReceived struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		SumSent struct {
			Retransmits int `json:"retransmits"`
		} `json:"sum_sent"`
	} `json:"end"`
	Error string `json:"error"`
}

// iperf runs one iperf3 test: the server in server (one test, bound to addr), the client in
// client with args (e.g. -n 20M, -t 5, -R), and returns the client's report.
func iperf(t testing.TB, server, client *netns.Namespace, addr string, args ...string) iperfResult {
	t.Helper()
	defer logStolen(t, "iperf3 to "+addr, args)()
	res, err := runIperf(server, client, addr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// logStolen returns what logs the share of the CPU time the hypervisor stole since it was
// called: next to a rate, what a missed bound needs to be read (testenv.WaitForQuietCPU).
func logStolen(t testing.TB, what string, args []string) func() {
	stolen := testenv.StealMeter()
	return func() {
		if s, err := stolen(); err == nil {
			t.Logf("%s %s: %.0f%% of the CPU time stolen by the hypervisor", what, strings.Join(args, " "), 100*s)
		}
	}
}

// iperfMPTCP is iperf with both ends on Linux MPTCP sockets (mptcpize).
func iperfMPTCP(t testing.TB, server, client *netns.Namespace, addr string, args ...string) iperfResult {
	t.Helper()
	defer logStolen(t, "iperf3 over MPTCP to "+addr, args)()
	res, err := runIperfWith([]string{"mptcpize", "run"}, server, client, addr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// runIperf is iperf for any goroutine: it returns the error instead of failing the test.
func runIperf(server, client *netns.Namespace, addr string, args ...string) (iperfResult, error) {
	return runIperfWith(nil, server, client, addr, args...)
}

// runIperfWith runs both iperf3 ends under the command wrap (empty: none).
func runIperfWith(wrap []string, server, client *netns.Namespace, addr string, args ...string) (iperfResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), iperfTimeout)
	defer cancel()
	in := func(ns *netns.Namespace, cmd ...string) []string {
		return append(append([]string{"netns", "exec", ns.Name}, wrap...), cmd...)
	}
	srv := exec.CommandContext(ctx, "ip", in(server, "iperf3", "-s", "-1", "-B", addr)...)
	if err := srv.Start(); err != nil {
		return iperfResult{}, err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var out []byte
	var res iperfResult
	// The server needs a moment to listen; the client retries while it is refused.
	for try := 0; try < 20; try++ {
		c := exec.CommandContext(ctx, "ip", in(client, append([]string{"iperf3", "-J", "-c", addr}, args...)...)...)
		out, _ = c.Output()
		res = iperfResult{}
		if err := json.Unmarshal(out, &res); err == nil && res.Error == "" {
			return res, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return res, fmt.Errorf("iperf3 %v to %s: %s", args, addr, out)
}

// transfer sends size bytes over one TCP connection from namespace from (bound to src) to a
// listener on dst in namespace to, and returns how many arrived and whether they are the bytes
// sent; a failed send or receive fails the test.
func transfer(t testing.TB, from *netns.Namespace, src string, to *netns.Namespace, dst string, size int) (int64, bool) {
	t.Helper()
	n, same, err := sendTCP(from, src, to, dst, size, 0, iperfTimeout)
	if err != nil {
		t.Fatalf("%v after %d bytes received", err, n)
	}
	return n, same
}

// sendTCP sends size bytes over one TCP connection from namespace from (bound to src) to a
// listener on dst:5301 in namespace to, within d, the sender's MSS set to mss (0: the kernel's
// choice). It returns how many bytes arrived, whether they are the bytes sent (a SHA-256 of each
// side) and the first error of either side.
func sendTCP(from *netns.Namespace, src string, to *netns.Namespace, dst string, size, mss int, d time.Duration) (int64, bool, error) {
	addr := net.JoinHostPort(dst, "5301")
	var ln net.Listener
	if err := to.Do(func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		return 0, false, err
	}
	defer ln.Close()
	deadline := time.Now().Add(d)
	type result struct {
		n   int64
		sum []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(deadline)
		h := sha256.New()
		n, err := io.Copy(h, c)
		got <- result{n, h.Sum(nil), err}
	}()
	dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Deadline: deadline}
	if mss > 0 {
		dl.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss) }); err != nil {
				return err
			}
			return serr
		}
	}
	var c net.Conn
	if err := from.Do(func() (err error) { c, err = dl.Dial("tcp4", addr); return err }); err != nil {
		ln.Close()
		r := <-got
		return r.n, false, fmt.Errorf("connecting: %w", err)
	}
	c.SetDeadline(deadline)
	h := sha256.New()
	data := make([]byte, 64<<10)
	var serr error
	for sent := 0; sent < size && serr == nil; sent += len(data) {
		for i := range data {
			data[i] = byte((sent + i) * 7 >> 3)
		}
		h.Write(data)
		if _, err := c.Write(data); err != nil {
			serr = fmt.Errorf("sending at byte %d: %w", sent, err)
		}
	}
	c.Close()
	r := <-got
	if serr == nil && r.err != nil {
		serr = fmt.Errorf("receiving: %w", r.err)
	}
	return r.n, bytes.Equal(r.sum, h.Sum(nil)), serr
}

// TestTCPTransferThroughSession moves 20 MiB each way through the session over TCP: downlink
// from the data network to an application on the session address over the 3GPP leg (through
// the gNB emulator), then, after the policy switches to WiFi in place, uplink over WiFi. Every
// byte must arrive, and the leg's interface must have carried it.
func TestTCPTransferThroughSession(t *testing.T) {
	const size = 20 << 20
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	tb.startAgent(u)
	pol := tb.policy("as", activeStandby(junctionv1.Access3GPP))
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "as"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	ran0 := rxBytes(t, u.NS, "ran0")
	if n, same := transfer(t, tb.DN, dnHost.String(), u.NS, sessionAddr, size); n != size || !same {
		t.Fatalf("downlink over 3GPP: %d bytes received (intact: %v), want %d", n, same, size)
	}
	if d := rxBytes(t, u.NS, "ran0") - ran0; d < size {
		t.Fatalf("ran0 received %d bytes during a 20 MiB downlink transfer; want it on 3GPP", d)
	}

	// The policy switches the session to WiFi; the agent updates the tunnel in place.
	p := &junctionv1.SteeringPolicy{}
	must(t, k8s.Get(context.Background(), clientKey(pol), p))
	p.Spec.Steering = activeStandby(junctionv1.AccessNon3GPP)
	must(t, k8s.Update(context.Background(), p))
	wlan0 := txBytes(t, u.NS, "wlan0")
	eventually(t, readyTimeout, "uplink on WiFi after the policy change", func() error {
		if n, same := transfer(t, u.NS, sessionAddr, tb.DN, dnHost.String(), size); n != size || !same {
			return fmt.Errorf("uplink: %d bytes received (intact: %v), want %d", n, same, size)
		}
		if d := txBytes(t, u.NS, "wlan0") - wlan0; d < size {
			return fmt.Errorf("wlan0 sent %d bytes during a 20 MiB uplink transfer", d)
		}
		return nil
	})
}

// TestDownlinkRunsReachTheAgentWhole: the software UPF sends a run of one leg's datagrams as one
// UDP GSO frame, the access gateway forwards it whole (its interface toward the UE keeps
// tx-udp-segmentation, as a veth does by default), and the agent's leg socket reads it whole
// (UDP_GRO) and takes it apart. A 20 MiB download over WiFi arrives intact, in fewer frames on
// the UE's interface than the datagrams it took.
func TestDownlinkRunsReachTheAgentWhole(t *testing.T) {
	tb := wifiSession(t)
	u := tb.ues[0]
	runsArriveWhole(t, tb.DN, dnHost.String(), u.NS, sessionAddr, "wlan0")
}

// TestUplinkRunsReachTheDNWhole: after decapsulation the software UPF sends a run of one TCP
// flow's segments as one frame on its N6 port, whose interface has TSO on (the topology's, as a
// veth's and most NICs' by default), and the data network's TCP takes it whole. A 20 MiB upload
// over WiFi arrives intact, in fewer frames on the data network's interface than the segments
// it took.
func TestUplinkRunsReachTheDNWhole(t *testing.T) {
	tb := wifiSession(t)
	u := tb.ues[0]
	runsArriveWhole(t, u.NS, sessionAddr, tb.DN, dnHost.String(), "dn0")
}

// wifiSession is a testbed with one UE whose session goes over WiFi, its leg up.
func wifiSession(t *testing.T) *testbed {
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	tb.startAgent(u)
	create(t, tb.policy("wifi", activeStandby(junctionv1.AccessNon3GPP)), tb.session("s1", u, sessionAddr, 100, "wifi"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	return tb
}

// runsArriveWhole sends 20 MiB over TCP from src to dst and fails unless they arrive intact,
// in fewer frames on the receiver's interface iface than packets of 1,500 bytes or less would
// take (frame by frame there would be at least one per packet).
func runsArriveWhole(t *testing.T, from *netns.Namespace, src string, to *netns.Namespace, dst, iface string) {
	const size = 20 << 20
	before := linkStats(t, to, iface).RX
	if n, same := transfer(t, from, src, to, dst, size); n != size || !same {
		t.Fatalf("%d bytes received (intact: %v), want %d", n, same, size)
	}
	after := linkStats(t, to, iface).RX
	bytes, frames := after.Bytes-before.Bytes, after.Packets-before.Packets
	if bytes < size {
		t.Fatalf("%s received %d bytes during a %d-byte transfer", iface, bytes, size)
	}
	if packets := bytes / 1500; frames >= packets {
		t.Errorf("%s received %d bytes in %d frames: at least one frame per packet (%d of 1,500 bytes or less), so no run reached it whole", iface, bytes, frames, packets)
	} else {
		t.Logf("%s received %d bytes in %d frames (%.1f packets of 1,500 bytes or less a frame)", iface, bytes, frames, float64(packets)/float64(frames))
	}
}

func clientKey(o interface {
	GetNamespace() string
	GetName() string
}) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// TestUplinkSmallMSS sends uplink TCP with the smallest MSS Linux allows (88 bytes), whose
// super-packets the kernel would build with up to 745 segments, more than the agent reads at
// once. The agent caps its TUN's GSO segments (gso_max_segs) so the transfer arrives whole; with
// the cap lifted by hand, the super-packets it cannot take apart are dropped and counted
// (junction_ue_drops_total{reason="TUNBadPacket"}) and the session goes on carrying traffic.
func TestUplinkSmallMSS(t *testing.T) {
	const size = 4 << 20
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	metrics := testenv.FreeAddr(t)
	tb.startAgent(u, "--metrics-addr", metrics, "--metrics-secure=false") // read below over plain HTTP
	pol := tb.policy("as", activeStandby(junctionv1.AccessNon3GPP))
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "as"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	if n, _, err := sendTCP(u.NS, sessionAddr, tb.DN, dnHost.String(), size, 88, iperfTimeout); err != nil || n != size {
		t.Fatalf("uplink with an 88-byte MSS: %d of %d bytes arrived (%v)", n, size, err)
	}

	tun := ueagent.TUNName(netip.MustParseAddr(sessionAddr))
	must(t, exec.Command("ip", "-n", u.NS.Name, "link", "set", "dev", tun, "gso_max_segs", "65535").Run())
	sendTCP(u.NS, sessionAddr, tb.DN, dnHost.String(), size, 88, 5*time.Second) // some of it is dropped
	if d := scrapeCounter(t, metrics, "junction_ue_drops_total", `reason="TUNBadPacket"`); d == 0 {
		t.Fatal("no super-packet dropped as TUNBadPacket with gso_max_segs 65535 and an 88-byte MSS; the test did not reach the case")
	}
	if n, same := transfer(t, u.NS, sessionAddr, tb.DN, dnHost.String(), 1<<20); n != 1<<20 || !same {
		t.Fatalf("uplink after dropped super-packets: %d bytes received (intact: %v), want %d", n, same, 1<<20)
	}
}

// scrapeCounter is the sum of the samples of metric name at http://addr/metrics whose labels
// contain label (name="value"). Any answer but 200 fails the test: an HTTPS endpoint (an agent
// started without --metrics-secure=false) answers plain HTTP with 400 and a line of text, which
// holds no sample and would read as 0.
func scrapeCounter(t testing.TB, addr, name, label string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET http://%s/metrics: %s: %s", addr, resp.Status, bytes.TrimSpace(body))
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			must(t, err)
			sum += v
		}
	}
	return sum
}
