//go:build linux

package operator

// The operator against BMv2 simple_switch_grpc, p4lang's reference target, running the program
// p4c compiled from p4/v1model: the UPF object gets the pipeline pushed, a session is
// programmed, the entries read back are exactly the desired ones, and a downlink packet crosses
// the session. BMv2's P4Runtime server refuses register writes, which the pipeline does not need
// for a new user on a pipeline the operator pushed; where the operator must reset an index it
// cannot know is clean (after adopting a running pipeline), the refusal shows on the session
// and the UPF.
//
//	namespace jobsw-* (BMv2)                 namespace jobts-* (test side)
//	port 1 u-n3 ══ veth ══ t-n3 198.51.100.10 (the gNB: a UDP socket on :2152)
//	port 3 u-n6 ══ veth ══ t-n6 203.0.113.100 (the data network: sends to the session)
//	gRPC 127.0.0.1:9559 <── relay on a loopback port of this process <── operator

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
	"github.com/junction-atsss/junction/test/bmv2"
	"github.com/junction-atsss/junction/test/netns"
)

func TestOperatorProgramsBMv2(t *testing.T) {
	root := testenv.RepoRoot()
	deviceConfig := bmv2.ForTest(t, root)
	swNS, tester := netns.ForTest(t, "jobsw"), netns.ForTest(t, "jobts")
	n3MAC, _ := net.ParseMAC("02:00:00:00:02:01") // newUPF's next hops
	n6MAC, _ := net.ParseMAC("02:00:00:00:02:03")
	for _, l := range []struct {
		name string
		mac  net.HardwareAddr
	}{{"n3", n3MAC}, {"n6", n6MAC}} {
		if err := netns.AddVeth(netns.Link{Name: "u-" + l.name, NS: swNS}, netns.Link{Name: "t-" + l.name, NS: tester, MAC: l.mac}); err != nil {
			t.Fatal(err)
		}
	}
	sw := bmv2.StartForTest(t, root, swNS, bmv2.Options{DeviceID: 1, CPUPort: 255, Ports: map[uint32]string{1: "u-n3", 3: "u-n6"}})
	addr, err := sw.Forward()
	if err != nil {
		t.Fatal(err)
	}

	ns := newNamespace(t)
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil) // p4c's P4Info (hack/p4-build.sh checks)
	cm.BinaryData = map[string][]byte{"device_config": deviceConfig}
	upf := newUPF(ns, "upf", addr, "pipeline")
	grantDevice(t, upf)
	create(t, cm, upf)
	op := startOperator(t, ns, operatorOptions{leaseName: "junction"})
	waitCondition(t, programTimeout, upf, junctionv1.ConditionPipelineReady, metav1.ConditionTrue, "PipelineInstalled")
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	a1 := session(ns, "a1", "imsi-001010000000001", "10.60.0.1", "upf", "3", "198.51.100.10")
	create(t, a1)
	waitCondition(t, programTimeout, a1, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	waitCondition(t, programTimeout, a1, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	target := &p4rtTarget{addr: addr}
	eventually(t, programTimeout, "BMv2 holds exactly the desired entries", func() error { return sameEntries(target, sch, ns, "upf") })

	// A new user on a pipeline the operator pushed: nothing was written to its path state, which
	// is 0 (unavailable until the UE reports the access), read through BMv2's Thrift runtime.
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(a1), a1); err != nil {
		t.Fatal(err)
	}
	th, err := sw.Thrift(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	for _, reg := range pathStateRegisters {
		if v, err := th.RegisterRead(reg, uint32(*a1.Status.UserIndex)); err != nil || v != 0 {
			t.Errorf("%s[%d] = %d (%v), want 0", reg, *a1.Status.UserIndex, v, err)
		}
	}

	// The UE reports its 3GPP leg up (LINK_UP inside GTP-U, from the gNB's side, as the UE agent
	// does when a leg comes up): the data plane writes the path state itself.
	gnb := downlinkThroughBMv2(t, tester)
	linkUp := gnb3GPPLinkUp(uint32(a1.Spec.AccessLegs.ThreeGPP.UplinkTEID), 5000)
	eventually(t, 10*time.Second, "the LINK_UP sets rtt_3gpp", func() error {
		if _, err := gnb.WriteToUDP(linkUp, &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: wire.GTPUPort}); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		if v, err := th.RegisterRead("rtt_3gpp", uint32(*a1.Status.UserIndex)); err != nil || v != 5000 {
			return fmt.Errorf("rtt_3gpp = %d (%v), want 5000", v, err)
		}
		return nil
	})

	// Downlink through the session: data network -> BMv2 port 3 -> GTP-U to the gNB on port 1.
	payload := []byte("downlink through BMv2")
	var got []byte
	eventually(t, 10*time.Second, "a downlink packet crosses the session", func() error {
		if err := tester.Do(func() error {
			c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(203, 0, 113, 100), Port: 40000}, &net.UDPAddr{IP: net.IPv4(10, 60, 0, 1), Port: 5000})
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write(payload)
			return err
		}); err != nil {
			return err
		}
		var err error
		got, err = readWithin(gnb, 500*time.Millisecond)
		return err
	})
	checkDownlink(t, got, payload, uint32(a1.Spec.AccessLegs.ThreeGPP.DownlinkTEID))

	// An N2 handover's indirect forwarding tunnel on the session (docs/n4.md, "Indirect data
	// forwarding"): a G-PDU the gNB forwards on it goes up BMv2's CPU port to the operator and
	// back through BMv2 to the target gNB (here the same one) on the target's TEID, its GTP-U
	// message otherwise as it was.
	relayThroughBMv2(t, a1, gnb)
	setForwarding(t, a1, nil)
	eventually(t, programTimeout, "BMv2 holds exactly the desired entries again", func() error { return sameEntries(target, sch, ns, "upf") })

	// An operator that finds the pipeline running cannot know which user indexes are clean, so
	// it resets a new user's path state; BMv2 refuses register writes, and the session and the
	// UPF say so instead of calling themselves Ready.
	op.stop()
	startOperator(t, ns, operatorOptions{leaseName: "junction"})
	b1 := session(ns, "b1", "imsi-001010000000002", "10.60.0.2", "upf", "3", "198.51.100.10")
	create(t, b1)
	waitCondition(t, programTimeout, b1, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "RegisterWriteRefused")
	waitCondition(t, programTimeout, b1, junctionv1.ConditionReady, metav1.ConditionFalse, "RegisterWriteRefused")
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionFalse, "RegisterWriteRefused")
	eventually(t, programTimeout, "a RegisterWriteRefused event on the session", func() error {
		return findEvent(ns, "b1", "Warning", "RegisterWriteRefused")
	})
	eventually(t, programTimeout, "a RegisterWriteRefused event on the UPF", func() error {
		return findEvent(ns, "upf", "Warning", "RegisterWriteRefused")
	})
	// The session whose state needed nothing stays Ready.
	waitCondition(t, programTimeout, a1, junctionv1.ConditionReady, metav1.ConditionTrue, "")
}

// relayThroughBMv2 gives session s an indirect forwarding tunnel toward the gNB of gnb, sends a
// G-PDU on it from that gNB, and checks what comes back: the same GTP-U message on the target's
// TEID.
func relayThroughBMv2(t *testing.T, s *junctionv1.ATSSSSession, gnb *net.UDPConn) {
	t.Helper()
	setForwarding(t, s, &junctionv1.IndirectForwarding{TEID: 0x4242, GNBAddress: "198.51.100.10", GNBTEID: 0x777})
	forwarded := wiretest.Build(wire.DownlinkGTPU(0x4242, 9), wire.IPv4{Src: [4]byte{203, 0, 113, 100}, Dst: [4]byte{10, 60, 0, 1}, TTL: 63},
		wire.UDP{SrcPort: 40000, DstPort: 5000}, []byte("forwarded by the source gNB"))
	var got []byte
	eventually(t, 10*time.Second, "a forwarded G-PDU relayed to the target gNB", func() error {
		if _, err := gnb.WriteToUDP(forwarded, &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: wire.GTPUPort}); err != nil {
			return err
		}
		var err error
		got, err = readWithin(gnb, 500*time.Millisecond)
		return err
	})
	if g, err := wire.ParseGTPU(got); err != nil || g.TEID != 0x777 || !bytes.Equal(got[:4], forwarded[:4]) || !bytes.Equal(got[8:], forwarded[8:]) {
		t.Fatalf("relayed %x (%v), want the forwarded G-PDU on TEID 0x777:\n%x", got, err, forwarded)
	}
}

// setForwarding writes f as session s's forwarding tunnel, on the session as it is now (the
// operator writes its status meanwhile).
func setForwarding(t *testing.T, s *junctionv1.ATSSSSession, f *junctionv1.IndirectForwarding) {
	t.Helper()
	eventually(t, programTimeout, "the session's forwarding tunnel written", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		s.Spec.AccessLegs.ThreeGPP.IndirectForwarding = f
		return k8s.Update(context.Background(), s)
	})
}

// readWithin reads one datagram from c, waiting at most d.
func readWithin(c *net.UDPConn, d time.Duration) ([]byte, error) {
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(d))
	n, _, err := c.ReadFromUDP(buf)
	return buf[:n], err
}

// downlinkThroughBMv2 sets up the test side: t-n6 is the data network (203.0.113.100, the
// session's addresses behind BMv2's n6 MAC), t-n3 the gNB (198.51.100.10, the UPF's N3 address
// behind BMv2's n3 MAC), whose GTP-U socket it returns.
func downlinkThroughBMv2(t *testing.T, tester *netns.Namespace) *net.UDPConn {
	t.Helper()
	bmv2N6, _ := net.ParseMAC("02:00:00:00:01:03") // newUPF's n6 and n3 ports
	bmv2N3, _ := net.ParseMAC("02:00:00:00:01:01")
	steps := []error{
		tester.AddAddress("t-n6", netip.MustParsePrefix("203.0.113.100/24")),
		tester.AddAddress("t-n3", netip.MustParsePrefix("198.51.100.10/24")),
		tester.AddRoute(netip.MustParsePrefix("10.60.0.0/16"), netip.Addr{}, "t-n6"),
		tester.AddNeighbor("t-n6", netip.MustParseAddr("10.60.0.1"), bmv2N6),
		tester.AddNeighbor("t-n3", netip.MustParseAddr("192.0.2.1"), bmv2N3),
		tester.AddRoute(netip.MustParsePrefix("192.0.2.0/24"), netip.Addr{}, "t-n3"),
		tester.Sysctl("net/ipv4/conf/all/rp_filter", "0"),
		tester.Sysctl("net/ipv4/conf/t-n3/rp_filter", "0"),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	var c *net.UDPConn
	if err := tester.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(198, 51, 100, 10), Port: wire.GTPUPort})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// gnb3GPPLinkUp is the GTP-U payload a gNB forwards for the session a1's UE: LINK_UP about its
// 3GPP leg with the UE's RTT estimate (docs/junction-header.md), to the UPF's Junction address.
func gnb3GPPLinkUp(teid, rttUS uint32) []byte {
	b := make([]byte, 128)
	off := len(b) - wire.ControlLen
	wire.Control{Session: [4]byte{10, 60, 0, 1}, Access: contract.Access3GPP, UETime: rttUS}.Put(b[off:])
	off = wire.Header{Type: wire.TypeLinkUp}.Prepend(b, off)
	off = wire.TunnelUDP(wire.JunctionPort).Prepend(b, off)
	off = wire.TunnelIPv4([4]byte{10, 45, 0, 1}, [4]byte{192, 0, 2, 2}).Prepend(b, off)
	off = wire.TunnelGTPU(teid).Prepend(b, off)
	return b[off:]
}

// checkDownlink checks a GTP-U payload against docs/pipeline.md's downlink on the 3GPP leg:
// the session's downlink TEID, IPv4 from the Junction address (192.0.2.2) to the UE's 3GPP
// address, UDP 2153, Junction DATA carrying the user packet with its TTL decremented.
func checkDownlink(t *testing.T, b, payload []byte, teid uint32) {
	t.Helper()
	g, err := wire.ParseGTPU(b)
	if err != nil {
		t.Fatalf("GTP-U: %v", err)
	}
	if g.TEID != teid {
		t.Errorf("TEID %#x, want the session's downlink TEID %#x", g.TEID, teid)
	}
	var f wire.Frame
	if err := f.ParseIP(b[g.HeaderLen():]); err != nil {
		t.Fatalf("inside GTP-U: %v", err)
	}
	if f.Has&wire.HasJunction == 0 || f.Junction.Type != wire.TypeData {
		t.Fatalf("inside GTP-U: no Junction DATA header (layers %v)", f.Has)
	}
	want := fmt.Sprintf("%v>%v udp %d", netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("10.45.0.1"), wire.JunctionPort)
	if got := fmt.Sprintf("%v>%v udp %d", netip.AddrFrom4(f.IPv4.Src), netip.AddrFrom4(f.IPv4.Dst), f.UDP.DstPort); got != want {
		t.Errorf("tunnel %s, want %s", got, want)
	}
	u := f.User
	if netip.AddrFrom4(u.Src) != netip.MustParseAddr("203.0.113.100") || netip.AddrFrom4(u.Dst) != netip.MustParseAddr("10.60.0.1") || u.TTL != 63 {
		t.Errorf("user packet %v>%v ttl %d, want 203.0.113.100>10.60.0.1 ttl 63", netip.AddrFrom4(u.Src), netip.AddrFrom4(u.Dst), u.TTL)
	}
	inner := b[g.HeaderLen():]
	if !bytes.HasSuffix(inner[:f.UserEnd], payload) {
		t.Errorf("user payload %q, want %q", inner[f.UserOff+28:f.UserEnd], payload)
	}
}
