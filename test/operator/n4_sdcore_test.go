package operator

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"

	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/wire"
)

// sdcoreEstablishment is an ordinary PDU session's establishment as SD-Core's SMF (omec-project/smf,
// context/datapath.go ActivateTunnelAndPDR, pfcp/message/build.go) sends it with its slice's
// default rule (the webconsole's "permit out ip from any to assigned", 5QI 9): PDN Type IPv4; both
// PDRs at precedence 255 with the rule's SDF filter, the uplink's F-TEID CHOOSE without the V4
// flag, the downlink's UE IP Address without the S/D flag; the uplink FAR to N6-LAN, the downlink
// FAR DROP until the gNB answers; each PDR names the session's QER (the AMBR) and a QER of its own
// for the rule (QFI 1, the AMBR again, the rule giving no MBR).
func sdcoreEstablishment(c *smf.Client, cpSEID uint64, ue netip.Addr) []*ie.IE {
	rule := ie.NewSDFFilter("permit out ip from any to assigned", "", "", "", 0)
	ambr := func(id uint32) *ie.IE {
		return ie.NewCreateQER(ie.NewQERID(id), ie.NewGateStatus(0, 0), ie.NewMBR(200000, 100000), ie.NewQFI(1))
	}
	return []*ie.IE{
		ie.NewNodeIDHeuristic(c.NodeID), c.FSEID(cpSEID), ie.NewPDNType(ie.PDNTypeIPv4),
		ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x04, 0, nil, nil, 0), // CH alone
			ie.NewNetworkInstance("internet"), ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0), rule),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(1), ie.NewQERID(1), ie.NewQERID(2)),
		sdcoreDownlinkPDR(ue, ie.NewCreatePDR),
		ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceSGiLANN6LAN), ie.NewNetworkInstance("internet"))),
		ie.NewCreateFAR(ie.NewFARID(2), ie.NewApplyAction(0x01)),
		ambr(1), ambr(2), ambr(3),
	}
}

// sdcoreDownlinkPDR is SD-Core's downlink PDR, created at establishment and sent whole again in
// an Update PDR with every FAR update.
func sdcoreDownlinkPDR(ue netip.Addr, as func(...*ie.IE) *ie.IE) *ie.IE {
	return as(ie.NewPDRID(2), ie.NewPrecedence(255), ie.NewPDI(
		ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewNetworkInstance("internet"),
		ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0), ie.NewSDFFilter("permit out ip from any to assigned", "", "", "", 0)),
		ie.NewFARID(2), ie.NewQERID(1), ie.NewQERID(3))
}

// TestN4SessionsAsSDCoresSMFSendsThem: SD-Core's SMF establishes a session with its downlink
// dropped, forwards it into the gNB's tunnel when the gNB answers (an Update PDR and an Update FAR
// with the tunnel), buffers it while the UE is idle (BUFF|NOCP, without a BAR), and, when the AMF
// cannot reach the UE, answers the UPF's Downlink Data Report with cause 64 and PFCPSRRsp-Flags
// DROBU (handler.go HandlePfcpSessionReportRequest): the UPF drops what it held (TS 29.244
// §8.2.59) and buffers again what comes next; the UE back, the next packet goes to the gNB and
// none of the dropped ones do.
func TestN4SessionsAsSDCoresSMFSendsThem(t *testing.T) {
	ctx := context.Background()
	ue, gnb, teid := netip.MustParseAddr("10.60.0.17"), netip.MustParseAddr("198.51.100.21"), uint32(0x5b)
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	cp := r.smf.NewCPSEID()
	est, _ := establishAs(t, r, "SD-Core", cp, sdcoreEstablishment(r.smf, cp, ue))
	if leg := r.awaitN4Sessions(t, 1)[0].Spec.AccessLegs.ThreeGPP; leg == nil || !leg.DropDownlink {
		t.Fatalf("the session's 3GPP leg %+v, want its downlink dropped", leg)
	}

	far := func(action uint8, fp ...*ie.IE) {
		t.Helper()
		m, err := r.smf.Modify(ctx, est, sdcoreDownlinkPDR(ue, ie.NewUpdatePDR), ie.NewUpdateFAR(ie.NewFARID(2), ie.NewApplyAction(action),
			ie.NewUpdateForwardingParameters(append([]*ie.IE{ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewNetworkInstance("internet")}, fp...)...)))
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("SD-Core's Update FAR %#02x: %v, cause %d (%s)", action, err, m.Cause(), why(m))
		}
	}
	// A G-PDU with a PDU Session Container (QFI 1): flags 0x34, type 0xff, the 92-byte user packet
	// and the 8 bytes of options and container, the gNB's TEID.
	gpdu := binary.BigEndian.AppendUint32([]byte{0x34, 0xff, 0, wire.IPv4HeaderLen + wire.UDPHeaderLen + 64 + 8}, teid)
	tunnelled := func(what string) {
		t.Helper()
		eventually(t, programTimeout, what, func() error {
			out := r.u.forward(t, downlinkFrames(ue, 1)[0])
			if len(out) != 1 || !bytes.Contains(out[0].frame, gpdu) {
				return fmt.Errorf("%d frames left, want one G-PDU into TEID %#x", len(out), teid)
			}
			return nil
		})
	}
	far(0x02, ie.NewOuterHeaderCreation(0x0100, teid, gnb.String(), "", 0, 0, 0))
	tunnelled("the downlink into the gNB's tunnel")

	// Idle; the AMF cannot reach the UE.
	upf := r.upf.Name
	count := func(result string) float64 { return bufferedFrames(t, upf, result) }
	held0, dropped0, released0 := count("held"), count("dropped"), count("released")
	r.smf.AnswerReports(ie.NewCause(ie.CauseRequestRejected), ie.NewPFCPSRRspFlags(0x01)) // DROBU
	far(0x0c)                                                                             // BUFF | NOCP, the tunnel left out
	wantEntries(t, r, "downlink_tunnels ue_addr=0a3c0011 -> buffer_downlink()")
	for _, f := range downlinkFrames(ue, 3) {
		if out := r.u.forward(t, f); len(out) != 0 {
			t.Fatalf("a downlink packet of an idle UE left on port %d", out[0].port)
		}
	}
	eventually(t, programTimeout, "a Downlink Data Report answered with DROBU, and the 3 held frames dropped", func() error {
		if n := len(downlinkDataReports(r.smf)); n == 0 {
			return fmt.Errorf("no Downlink Data Report")
		}
		if held, dropped := count("held")-held0, count("dropped")-dropped0; held != 3 || dropped != 3 {
			return fmt.Errorf("%v held, %v dropped", held, dropped)
		}
		return nil
	})

	r.smf.AnswerReports()
	far(0x02, ie.NewOuterHeaderCreation(0x0100, teid, gnb.String(), "", 0, 0, 0))
	tunnelled("the downlink into the gNB's tunnel again")
	if sent := r.u.sent.taken(); len(sent) != 0 || count("released") != released0 {
		t.Fatalf("%d frames sent from the buffer (%v counted released) after the SMF said DROBU, want none", len(sent), count("released")-released0)
	}
}
