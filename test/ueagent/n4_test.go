//go:build linux

package ueagent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/ueagent"
	"github.com/junction-atsss/junction/test/topology"
)

// TestN4SessionCarriesTrafficAsItsMARSays: an SMF (the emulator) establishes an MA PDU session
// over N4 whose MAR puts all traffic on 3GPP, in the QoS flow its QER names; the emulator hands
// the session to the node's UE agent (NAS's part); pings from the session address cross the 3GPP
// leg both ways, and a download runs at the MBR of that QER, then at the one an Update QER gives (the gNB emulator takes only downlink G-PDUs whose PDU Session Container names
// the session's QFI, as a gNB with radio bearers per QoS flow does). A Session
// Modification that changes the MAR to active-standby on non-3GPP moves the downlink to WiFi
// (the agent follows the session's new steering for the uplink), one to load balancing 50/50
// splits a download over both legs, and a Session Deletion removes the session's tunnel from
// the node. Before that, the UE goes idle on 3GPP and comes
// back (the 3GPP FAR buffers, then forwards again), and the traffic follows.
func TestN4SessionCarriesTrafficAsItsMARSays(t *testing.T) {
	ctx := context.Background()
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	tb.startAgent(u)

	n4 := tb.enableN4()
	sm, err := smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), n4, "smf.test.example")
	must(t, err)
	defer sm.Close()
	eventually(t, readyTimeout, "the N4 association", func() error {
		r, err := sm.Associate(ctx)
		if err == nil && r.Cause() != ie.CauseRequestAccepted {
			err = fmt.Errorf("cause %d", r.Cause())
		}
		return err
	})
	s := smf.MASession{
		IMSI: "001010000000100", UEAddr: netip.MustParseAddr(sessionAddr), UE3GPP: u.Addr3GPP[0], UENon3GPP: u.AddrWiFi[0],
		GNB: topology.GNBN3, DownlinkTEID: 4196, Default: smf.Steering{Mode: smf.ActiveStandby, Active: smf.ThreeGPP},
		QFI: 7, // not the gNB emulator's default flow (9): the downlink must carry the session's
		// The session AMBR, the MBR of that QER: 8 Mbit/s down; up not policed.
		MBRDL: 8000,
	}
	est, err := sm.Establish(ctx, s)
	must(t, err)
	name := fmt.Sprintf("n4-upf-%016x", est.UPSEID)
	must(t, smf.HandToAgent(ctx, k8s, types.NamespacedName{Namespace: tb.ns, Name: name}, u.Node))
	tb.waitReady(name)
	tb.legState(name, junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState(name, junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)

	// pingsOn sends 10 pings and reports whether their requests left and their replies arrived
	// by the interface iface (and not by the other leg's).
	pingsOn := func(iface, other string) error {
		tx, rx, otx, orx := txBytes(t, u.NS, iface), rxBytes(t, u.NS, iface), txBytes(t, u.NS, other), rxBytes(t, u.NS, other)
		if got := ping(t, u, 10); got != 10 {
			return fmt.Errorf("%d of 10 pings answered", got)
		}
		dt, dr := txBytes(t, u.NS, iface)-tx, rxBytes(t, u.NS, iface)-rx
		odt, odr := txBytes(t, u.NS, other)-otx, rxBytes(t, u.NS, other)-orx
		if dt < 10*pingSize || dr < 10*pingSize || odt >= 10*pingSize/2 || odr >= 10*pingSize/2 {
			return fmt.Errorf("%s sent %d and received %d bytes, %s %d and %d, during 10 pings of %d bytes", iface, dt, dr, other, odt, odr, pingSize)
		}
		return nil
	}
	ping(t, u, 1) // the first echo after the legs came up (see TestSessionCarriesTrafficOnBothLegs)
	eventually(t, readyTimeout, "pings on the 3GPP leg, as MAR 1 says", func() error { return pingsOn("ran0", "wlan0") })

	// The MBR polices the download (docs/pipeline.md, "MBR policer"): iperf3 counts TCP's
	// payload, a little under the frames the policer counts; a bucket of 100 ms adds 0.2
	// Mbit/s over 4 s. An Update QER quadruples the rate, and the download follows. The upper
	// bounds are the policer's; the lower ones only that it lets a fair share through (TCP
	// against a policer on two busy cores gets about half its rate: 3.9 and 4.1 Mbit/s under 8,
	// 8.4 under 16, in CI runs) and, after the update, more than the old rate allowed.
	download := func() float64 {
		r := iperf(t, u.NS, tb.DN, sessionAddr, "-t", "4").End
		t.Logf("download: %.1f Mbit/s, %d retransmissions", r.SumReceived.BitsPerSecond/1e6, r.SumSent.Retransmits)
		return r.SumReceived.BitsPerSecond / 1e6
	}
	if got := download(); got < 2 || got > 8.4 {
		t.Errorf("download under an 8 Mbit/s MBR: %.1f Mbit/s, want 2 to 8.4", got)
	}
	if r, err := sm.Modify(ctx, est, ie.NewUpdateQER(ie.NewQERID(smf.QERID), ie.NewMBR(0, 32000))); err != nil || r.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Update QER: %v, cause %d", err, r.Cause())
	}
	if got := download(); got <= 8.4 || got > 33.6 {
		t.Errorf("download under a 32 Mbit/s MBR: %.1f Mbit/s, want above the 8 Mbit/s MBR's 8.4, up to 33.6", got)
	}

	// The UE goes idle on 3GPP while it stays on WiFi: the SMF makes the 3GPP FAR buffer
	// (BUFF|NOCP). The leg is inactive (docs/n4.md, "An access not active"): the downlink falls
	// back to WiFi though the MAR says 3GPP, the agent finds its 3GPP probes unanswered and moves
	// its uplink too. Paged, the UE is back: the FAR forwards into the gNB's tunnel again, the
	// agent's probes are answered, and the traffic returns to 3GPP.
	setFAR3GPP := func(what string, ies ...*ie.IE) {
		t.Helper()
		if r, err := sm.Modify(ctx, est, ie.NewUpdateFAR(append([]*ie.IE{ie.NewFARID(smf.FAR3GPP)}, ies...)...)); err != nil || r.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("Update FAR (%s): %v, cause %d", what, err, r.Cause())
		}
	}
	setFAR3GPP("BUFF|NOCP", ie.NewApplyAction(0x0c))
	tb.legState(name, junctionv1.Access3GPP, junctionv1.LegDown, failoverTimeout)
	eventually(t, readyTimeout, "pings on the WiFi leg while the UE is idle on 3GPP", func() error { return pingsOn("wlan0", "ran0") })
	setFAR3GPP("FORW into the gNB's tunnel", ie.NewApplyAction(0x02), ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
		ie.NewOuterHeaderCreation(0x0100, 4196, topology.GNBN3.String(), "", 0, 0, 0)))
	tb.legState(name, junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	eventually(t, readyTimeout, "pings on the 3GPP leg once the UE is back on it", func() error { return pingsOn("ran0", "wlan0") })

	r, err := sm.Modify(ctx, est, sm.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.ActiveStandby, Active: smf.NonThreeGPP}, true))
	if err != nil || r.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Session Modification: %v, cause %d", err, r.Cause())
	}
	eventually(t, readyTimeout, "pings on the WiFi leg after the modification", func() error { return pingsOn("wlan0", "ran0") })

	// Load balancing with weights 50/50: the UPF sends 3GPP the first 64 of every 128 downlink
	// packets (docs/pipeline.md, "Steering decision"), so a download arrives half on each leg.
	// The bounds leave room for what else the legs carry (probes, the uplink's ACKs go the
	// agent's way).
	if r, err := sm.Modify(ctx, est, sm.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.LoadBalancing, Weight3GPP: 50}, true)); err != nil || r.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Session Modification to load balancing: %v, cause %d", err, r.Cause())
	}
	eventually(t, readyTimeout, "the download on both legs", func() error {
		ran, wlan := rxBytes(t, u.NS, "ran0"), rxBytes(t, u.NS, "wlan0")
		download()
		dr, dw := rxBytes(t, u.NS, "ran0")-ran, rxBytes(t, u.NS, "wlan0")-wlan
		if share := float64(dr) / float64(dr+dw); share < 0.35 || share > 0.65 {
			return fmt.Errorf("%d bytes arrived on ran0 and %d on wlan0: %.0f%% on 3GPP, want 35-65%%", dr, dw, 100*share)
		}
		return nil
	})

	if r, err := sm.Delete(ctx, est); err != nil || r.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Session Deletion: %v", err)
	}
	tunName := ueagent.TUNName(netip.MustParseAddr(sessionAddr))
	eventually(t, readyTimeout, "the session's TUN removed from the node", func() error {
		if out, err := u.NS.Command("ip", "link", "show", "dev", tunName).CombinedOutput(); err == nil {
			return fmt.Errorf("TUN still there: %s", out)
		}
		return nil
	})
}

// enableN4 has the UPF open its N4 endpoint on a free loopback port, and returns it.
func (tb *testbed) enableN4() netip.AddrPort {
	t := tb.t
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	must(t, err)
	n4 := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	upf := &junctionv1.UserPlaneFunction{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: tb.ns, Name: "upf"}, upf))
	upf.Spec.N4 = &junctionv1.N4{NodeID: "127.0.0.1", Listen: n4.String()}
	must(t, k8s.Update(context.Background(), upf))
	return n4
}
