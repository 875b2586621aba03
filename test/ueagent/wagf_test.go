//go:build linux

package ueagent

import (
	"fmt"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// TestSessionOverWirelineThroughWAGF: hybrid access as a 5G core builds it. The UE is a 5G-RG
// whose fixed line ends at a W-AGF (the gNB emulator in its W-AGF role, in the access gateway's
// namespace), so the session's non-3GPP leg runs over N3 (docs/pipeline.md "The non-3GPP leg
// over N3"): the agent's Junction packets reach the UPF inside the W-AGF's GTP-U. Both legs come
// up, the UPF measures the fixed line's RTT through the tunnel, traffic steered onto the line
// crosses the W-AGF both ways, and when the line loses its carrier the traffic moves to 5G.
func TestSessionOverWirelineThroughWAGF(t *testing.T) {
	tb := newTestbed(t, 1)
	u := tb.ues[0]
	start(t, "gnb-emulator", append([]string{"--kubeconfig", kubeconfig, "--namespace", tb.ns, "--metrics-addr", "0"}, tb.WAGFArgs(u.UE)...)...)
	tb.startAgent(u)
	create(t, tb.policy("on-the-line", activeStandby(junctionv1.AccessNon3GPP)), tb.overN3(tb.session("rg", u, sessionAddr, 100, "on-the-line")))
	s := tb.waitReady("rg")
	tb.legState("rg", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("rg", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	user := userIndex(t, s)
	eventually(t, probeTimeout, "rtt_non3gpp measured through the W-AGF", func() error {
		v, err := tb.register("rtt_non3gpp", user)
		if err == nil && v == 0 {
			err = fmt.Errorf("rtt_non3gpp[%d] = 0", user)
		}
		return err
	})

	// Active-standby on the line: each ping goes into the W-AGF's TUN on its way up (the kernel
	// sends it there: tx) and comes out of it on its way down (rx), wrapped in GTP-U between.
	ping(t, u, 1)
	tx, rx := txBytes(t, tb.AP, "gtp0"), rxBytes(t, tb.AP, "gtp0")
	if got := ping(t, u, 10); got != 10 {
		t.Fatalf("over the fixed line: %d of 10 pings answered", got)
	}
	if dt, dr := txBytes(t, tb.AP, "gtp0")-tx, rxBytes(t, tb.AP, "gtp0")-rx; dt < 10*pingSize || dr < 10*pingSize {
		t.Fatalf("the W-AGF's tunnel carried %d bytes up and %d down during 10 pings of %d bytes; want them all, both ways", dt, dr, pingSize)
	}

	// The fixed line loses its carrier: the leg is Down, the agent's LINK_DOWN (over 5G) clears
	// the UPF's rtt_non3gpp, and the pings take 5G both ways.
	must(t, u.WiFi.SetCarrier(false))
	if l := tb.legState("rg", junctionv1.AccessNon3GPP, junctionv1.LegDown, failoverTimeout); l.Reason != "LinkDown" {
		t.Errorf("the line's leg is down with reason %q, want LinkDown", l.Reason)
	}
	eventually(t, failoverTimeout, "rtt_non3gpp cleared by LINK_DOWN", func() error {
		if v, err := tb.register("rtt_non3gpp", user); err != nil || v != 0 {
			return fmt.Errorf("rtt_non3gpp[%d] = %d, %v", user, v, err)
		}
		return nil
	})
	ran := txBytes(t, u.NS, "ran0")
	if got := ping(t, u, 5); got != 5 {
		t.Fatalf("line down: %d of 5 pings answered over 5G", got)
	}
	if d := txBytes(t, u.NS, "ran0") - ran; d < 5*pingSize {
		t.Fatalf("line down: ran0 sent %d bytes during 5 pings of %d bytes", d, pingSize)
	}
}
