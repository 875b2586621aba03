package operator

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	"google.golang.org/protobuf/proto"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// oaiEstablishment is an ordinary PDU session's establishment as OAI's SMF sends it with its
// default configuration (src/smf_app/smf_procedure.cpp, session_create_sm_context_procedure: no
// QER, no URR): the uplink only, its PDR with a CHOOSE F-TEID (Choose ID 42), the UE's address
// as source, the QFI and 3GPP Interface Type N3 3GPP access in its PDI, GTP-U removed, its FAR
// forwarding to Core; no downlink PDR or FAR, and no PDN Type.
func oaiEstablishment(c *smf.Client, cpSEID uint64, ue netip.Addr, pdrIEs ...*ie.IE) []*ie.IE {
	return append([]*ie.IE{ie.NewNodeIDHeuristic(c.NodeID), c.FSEID(cpSEID)}, oaiUplink(ue, 1, pdrIEs...)...)
}

// oaiUplink are the uplink FAR and PDR OAI's SMF creates, both with ID id: at establishment, and
// anew when an idle UE comes back (a Service Request). pdrIEs go into the PDR as well.
func oaiUplink(ue netip.Addr, id uint16, pdrIEs ...*ie.IE) []*ie.IE {
	return []*ie.IE{
		ie.NewCreateFAR(ie.NewFARID(uint32(id)), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceCore), ie.NewNetworkInstance("oai.ipv4"))),
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(id), ie.NewPrecedence(0), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewNetworkInstance("oai.ipv4"),
			ie.NewFTEID(0x0d, 0, nil, nil, 42), // V4 | CH | CHID
			ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0), ie.NewQFI(1), ie.NewTGPPInterfaceType(ie.TGPPInterfaceTypeN33GPPAccess)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(uint32(id))}, pdrIEs...)...),
	}
}

// oaiDownlink is OAI's modification once the gNB has answered (send_n4_session_modification_request):
// a Create FAR into the gNB's tunnel and a Create PDR for the UE's address, whose PDI carries
// 3GPP Interface Type 0 (the field's default in OAI's code); both with ID id. pdrIEs go into the
// PDR as well.
func oaiDownlink(ue, gnb netip.Addr, teid uint32, id uint16, pdrIEs ...*ie.IE) []*ie.IE {
	return []*ie.IE{
		ie.NewCreateFAR(ie.NewFARID(uint32(id)), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewNetworkInstance("oai.ipv4"),
			ie.NewOuterHeaderCreation(0x0100, teid, gnb.String(), "", 0, 0, 0))),
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(id), ie.NewPrecedence(0), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewNetworkInstance("oai.ipv4"),
			ie.NewUEIPAddress(0x06, ue.String(), "", 0, 0), ie.NewTGPPInterfaceType(0)), ie.NewFARID(uint32(id))}, pdrIEs...)...),
	}
}

// oaiGPDU is a G-PDU from gnb on the uplink TEID teid: ue's 64-byte UDP packet to a server.
func oaiGPDU(ue, gnb netip.Addr, teid uint32) []byte {
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	return wiretest.Build(eth, wire.IPv4{Src: gnb.As4(), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: teid},
		wire.IPv4{Src: ue.As4(), Dst: addr4("203.0.113.200")}, wire.UDP{SrcPort: 40000, DstPort: 443}, make([]byte, 64))
}

// createdTEID is the TEID the UPF chose for the uplink PDR of a response's Created PDR.
func createdTEID(t *testing.T, resp *smf.Response) uint32 {
	t.Helper()
	for _, x := range resp.IEs {
		if x.Type == ie.CreatedPDR {
			if f, err := x.FTEID(); err == nil && f.TEID != 0 {
				return f.TEID
			}
		}
	}
	t.Fatalf("no Created PDR with the F-TEID the UPF chose in %v", resp.IEs)
	return 0
}

// TestN4SessionsAsOAIsSMFSendsThem: OAI's SMF establishes a session with its uplink alone and
// adds the downlink PDR when the gNB answers; removes every rule while the UE is idle and creates
// them anew when it comes back; and stamps its Heartbeat Requests with the time they are sent
// (smf_n4::send_heartbeat_request), anew each time. On a UPF with spec.n4.smfRestartDetection
// Association, the session is taken (the downlink dropped, counted FILTERED, until its PDR comes;
// the uplink decapsulated from the start), the downlink then goes into the gNB's tunnel, nothing
// goes while the session has no rule, both ways go again with the new ones, and heartbeats with
// new stamps leave it alone. On a UPF with the default (Heartbeat, TS 29.244 §19A), one such
// heartbeat releases the SMF's sessions.
func TestN4SessionsAsOAIsSMFSendsThem(t *testing.T) {
	ctx := context.Background()
	ue, gnb, teid := netip.MustParseAddr("10.60.0.16"), netip.MustParseAddr("198.51.100.20"), uint32(0x5a)
	establish := func(t *testing.T, r n4Rig) (*smf.Established, uint32) {
		t.Helper()
		cp := r.smf.NewCPSEID()
		est, resp := establishAs(t, r, "OAI", cp, oaiEstablishment(r.smf, cp, ue))
		return est, createdTEID(t, resp)
	}
	// OAI stamps each Heartbeat Request with the time it sends it.
	heartbeat := func(t *testing.T, r n4Rig, at time.Time) {
		t.Helper()
		if _, err := r.smf.Send(ctx, func(seq uint32) ([]byte, error) {
			return message.NewHeartbeatRequest(seq, ie.NewRecoveryTimeStamp(at), nil).Marshal()
		}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("smfRestartDetection Association", func(t *testing.T) {
		r := newN4Rig(t, func(n *junctionv1.N4) { n.SMFRestartDetection = junctionv1.SMFRestartOnAssociation }, nil)
		r.associate(t)
		est, ulTEID := establish(t, r)
		if leg := r.awaitN4Sessions(t, 1)[0].Spec.AccessLegs.ThreeGPP; leg == nil || leg.UEAddress != junctionv1.IPv4Address(ue.String()) ||
			!leg.DropDownlink || leg.GNBAddress != "" || leg.UplinkTEID != int64(ulTEID) {
			t.Fatalf("the session's 3GPP leg %+v, want %s's, its downlink dropped, uplink TEID %#x", leg, ue, ulTEID)
		}
		uplink := func(teid uint32) []byte { return oaiGPDU(ue, gnb, teid) }
		eventually(t, programTimeout, "the uplink decapsulated", func() error {
			if out := r.u.forward(t, uplink(ulTEID)); len(out) != 1 {
				return fmt.Errorf("%d frames left", len(out))
			}
			return nil
		})
		downlink := downlinkFrames(ue, 1)[0]
		filtered := func() int64 { return packets(t, r, "drops", int64(contract.DropFiltered)) }
		before := filtered()
		if out := r.u.forward(t, downlink); len(out) != 0 {
			t.Fatalf("a downlink packet before the downlink PDR left on port %d", out[0].port)
		}
		if got := filtered() - before; got != 1 {
			t.Fatalf("drops[FILTERED] counted %d of the downlink packet before the downlink PDR, want 1", got)
		}

		// A G-PDU without a PDU Session Container (no QER gives a QFI): flags 0x30, type 0xff, the
		// 92-byte user packet's length, the gNB's TEID.
		gpdu := binary.BigEndian.AppendUint32([]byte{0x30, 0xff, 0, wire.IPv4HeaderLen + wire.UDPHeaderLen + 64}, teid)
		tunnelled := func() {
			t.Helper()
			eventually(t, programTimeout, "the downlink into the gNB's tunnel", func() error {
				out := r.u.forward(t, downlink)
				if len(out) != 1 || !bytes.Contains(out[0].frame, gpdu) {
					return fmt.Errorf("%d frames left (%x), want one G-PDU into TEID %#x", len(out), out, teid)
				}
				return nil
			})
		}
		if m, err := r.smf.Modify(ctx, est, oaiDownlink(ue, gnb, teid, 2)...); err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("OAI's modification with the gNB's tunnel: %v, cause %d (%s)", err, m.Cause(), why(m))
		}
		tunnelled()

		// The UE goes idle: OAI removes every PDR and FAR. Nothing matches: the downlink is dropped
		// (FILTERED), the uplink's TEID is unknown.
		m, err := r.smf.Modify(ctx, est, ie.NewRemovePDR(ie.NewPDRID(1)), ie.NewRemovePDR(ie.NewPDRID(2)),
			ie.NewRemoveFAR(ie.NewFARID(1)), ie.NewRemoveFAR(ie.NewFARID(2)))
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("OAI's removal of every rule of an idle UE's session: %v, cause %d (%s)", err, m.Cause(), why(m))
		}
		eventually(t, programTimeout, "the idle session's object", func() error {
			if leg := r.awaitN4Sessions(t, 1)[0].Spec.AccessLegs.ThreeGPP; leg == nil || !leg.DropDownlink || leg.UplinkTEID != 0 || leg.UEAddress != junctionv1.IPv4Address(ue.String()) {
				return fmt.Errorf("3GPP leg %+v, want %s's with its downlink dropped and no uplink TEID", leg, ue)
			}
			return nil
		})
		unknown := packets(t, r, "drops", int64(contract.DropUnknownTEID))
		before = filtered()
		eventually(t, programTimeout, "the idle session's packets dropped", func() error {
			if out := r.u.forward(t, uplink(ulTEID)); len(out) != 0 {
				return fmt.Errorf("an uplink packet on the removed TEID left on port %d", out[0].port)
			}
			if out := r.u.forward(t, downlink); len(out) != 0 {
				return fmt.Errorf("a downlink packet left on port %d", out[0].port)
			}
			return nil
		})
		if got := packets(t, r, "drops", int64(contract.DropUnknownTEID)); got <= unknown {
			t.Errorf("drops[UNKNOWN_TEID] %d -> %d for the uplink on the removed TEID", unknown, got)
		}
		if got := filtered() - before; got < 1 {
			t.Errorf("drops[FILTERED] counted none of the idle session's downlink")
		}

		// The UE comes back (a Service Request): OAI creates the uplink anew (a new CHOOSE), then
		// the downlink.
		m, err = r.smf.Modify(ctx, est, oaiUplink(ue, 3)...)
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("OAI's new uplink after a Service Request: %v, cause %d (%s)", err, m.Cause(), why(m))
		}
		ulTEID = createdTEID(t, m)
		eventually(t, programTimeout, "the uplink on the new TEID", func() error {
			if out := r.u.forward(t, uplink(ulTEID)); len(out) != 1 {
				return fmt.Errorf("%d frames left", len(out))
			}
			return nil
		})
		if m, err := r.smf.Modify(ctx, est, oaiDownlink(ue, gnb, teid, 4)...); err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("OAI's downlink after a Service Request: %v, cause %d (%s)", err, m.Cause(), why(m))
		}
		tunnelled()

		for i := range 3 {
			heartbeat(t, r, time.Now().Add(time.Duration(i+1)*time.Second))
		}
		if m, err := r.smf.Modify(ctx, est); err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("the session after three heartbeats with new stamps: %v, cause %d (%s); want it kept", err, m.Cause(), why(m))
		}
		if n := len(r.n4Sessions(t)); n != 1 {
			t.Fatalf("%d session objects after the heartbeats, want 1", n)
		}
		if d, err := r.smf.Delete(ctx, est); err != nil || d.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("OAI's deletion: %v, cause %d", err, d.Cause())
		}
	})

	t.Run("smfRestartDetection Heartbeat (the default)", func(t *testing.T) {
		r := newN4Rig(t, nil, nil)
		r.associate(t)
		est, _ := establish(t, r)
		r.awaitN4Sessions(t, 1)
		heartbeat(t, r, time.Now().Add(time.Second))
		eventually(t, programTimeout, "an SMFRestarted event", func() error { return findEvent(r.ns, "upf", "Warning", "SMFRestarted") })
		r.awaitN4Sessions(t, 0)
		if m, err := r.smf.Modify(ctx, est); err != nil || m.Cause() != CauseSessionContextNotFound {
			t.Fatalf("the session after a heartbeat with a new stamp: %v, cause %d; want 65 (released)", err, m.Cause())
		}
	})
}

// TestN4OAIsQERs: with enable_qers, OAI's SMF gives each direction a QER of its own
// (smf_procedure.cpp, pfcp_create_qer: the QFI, both gates open, the PCC rule's MBR in kbit/s in
// that direction only), named by that direction's PDRs: the uplink's at establishment, the
// downlink's with the downlink PDR. The session's MBR is each direction's (docs/n4.md), its
// cells configured as docs/pipeline.md says of an MBR, and its G-PDUs carry the QFI.
func TestN4OAIsQERs(t *testing.T) {
	ctx := context.Background()
	ue, gnb, teid := netip.MustParseAddr("10.60.0.19"), netip.MustParseAddr("198.51.100.23"), uint32(0x5d)
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	cp := r.smf.NewCPSEID()
	est, _ := establishAs(t, r, "OAI", cp, append(oaiEstablishment(r.smf, cp, ue, ie.NewQERID(1)),
		ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewMBR(20000, 0), ie.NewQFI(1))))
	m, err := r.smf.Modify(ctx, est, append(oaiDownlink(ue, gnb, teid, 2, ie.NewQERID(2)),
		ie.NewCreateQER(ie.NewQERID(2), ie.NewGateStatus(0, 0), ie.NewMBR(0, 40000), ie.NewQFI(1)))...)
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("OAI's downlink with its QER: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	var usage int64
	eventually(t, programTimeout, "the session's MBR and usage cell", func() error {
		o := r.awaitN4Sessions(t, 1)[0]
		b := o.Spec.MaxBitRate
		if b == nil || b.UplinkKbps == nil || *b.UplinkKbps != 20000 || b.DownlinkKbps == nil || *b.DownlinkKbps != 40000 || o.Spec.QFI != 1 || o.Status.UsageIndex == nil {
			return fmt.Errorf("maxBitRate %+v, qfi %d, usage index %v; want 20,000 up, 40,000 down, QFI 1", b, o.Spec.QFI, o.Status.UsageIndex)
		}
		usage = int64(*o.Status.UsageIndex)
		return nil
	})
	eventually(t, programTimeout, "the MBR cells", func() error {
		up, down := mbrCells(t, r, usage)
		for _, c := range []struct {
			got  *p4v1.MeterConfig
			kbps int64
		}{{up, 20000}, {down, 40000}} {
			rate := c.kbps * 125
			if want := (&p4v1.MeterConfig{Cir: rate, Cburst: rate / 10, Pir: rate, Pburst: rate / 10}); !proto.Equal(c.got, want) {
				return fmt.Errorf("cell %v, want %v", c.got, want)
			}
		}
		return nil
	})
	out := r.u.forward(t, downlinkFrames(ue, 1)[0])
	var f wire.Frame
	if len(out) != 1 || f.Parse(out[0].frame) != nil || f.GTPU.TEID != teid || f.GTPU.PSC[1]&0x3f != 1 {
		t.Errorf("the downlink left as %x, want a G-PDU into TEID %#x with QFI 1", out, teid)
	}
}

// oaiURR is OAI's URR with enable_usage_reporting (smf_procedure.cpp, pfcp_create_urr): volume
// and duration, a measurement period of 10 s, PERIO, VOLTH and TIMTH, 1,000 bytes downlink, 5 s.
func oaiURR(id uint32) *ie.IE {
	return ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 1), ie.NewMeasurementPeriod(10*time.Second),
		ie.NewReportingTriggers(0x07, 0x00), ie.NewTimeThreshold(5*time.Second), ie.NewVolumeThreshold(0x04, 0, 0, 1000))
}

// TestN4OAIsUsageReporting: with enable_usage_reporting, OAI's SMF names its URR from the
// establishment's uplink PDR only; the gNB's downlink PDR and the Service Request's name URR 0,
// an ID it never created (its unset one); it keeps the URR while the UE is idle and creates it
// again, unchanged, on the Service Request. Every request is accepted, both ways go before and
// after the idle period, and the URR's reports (its own triggers' and the deletion's) add up to
// the uplink that left the data plane, to the byte, and no downlink: only the uplink PDR names it
// (TS 29.244 §5.2.2: a URR measures the traffic of the PDRs that name it).
func TestN4OAIsUsageReporting(t *testing.T) {
	ctx := context.Background()
	ue, gnb, teid := netip.MustParseAddr("10.60.0.19"), netip.MustParseAddr("198.51.100.23"), uint32(0x5d)
	r := newN4Rig(t, func(n *junctionv1.N4) { n.SMFRestartDetection = junctionv1.SMFRestartOnAssociation }, nil)
	r.associate(t)
	var sent sentUsage // what left the data plane, both ways; the URR measures the uplink of it
	accepted := func(what string, m *smf.Response, err error) *smf.Response {
		t.Helper()
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("%s: %v, cause %d (%s)", what, err, m.Cause(), why(m))
		}
		return m
	}

	cp := r.smf.NewCPSEID()
	est, resp := establishAs(t, r, "OAI", cp, append(oaiEstablishment(r.smf, cp, ue, ie.NewURRID(1)), oaiURR(1)))
	// connected waits until the uplink on ulTEID goes, gives the session the gNB's downlink PDR
	// with ID id naming URR 0, waits until the downlink goes, and sends three packets each way;
	// sent counts what left.
	connected := func(what string, ulTEID uint32, id uint16) {
		t.Helper()
		eventually(t, programTimeout, what+": the uplink", func() error { return sent.forward(t, r.u, oaiGPDU(ue, gnb, ulTEID), true) })
		m, err := r.smf.Modify(ctx, est, oaiDownlink(ue, gnb, teid, id, ie.NewURRID(0))...)
		accepted(what+": the gNB's downlink PDR naming URR 0", m, err)
		eventually(t, programTimeout, what+": the downlink", func() error { return sent.forward(t, r.u, downlinkFrames(ue, 1)[0], false) })
		sent.uplinkAndDownlink(t, r.u, ue, gnb, ulTEID, 3)
	}
	connected("at establishment", createdTEID(t, resp), 2)
	m, err := r.smf.Modify(ctx, est, ie.NewRemovePDR(ie.NewPDRID(1)), ie.NewRemovePDR(ie.NewPDRID(2)),
		ie.NewRemoveFAR(ie.NewFARID(1)), ie.NewRemoveFAR(ie.NewFARID(2)))
	accepted("the idle UE's PDRs and FARs removed, the URR kept", m, err)
	m, err = r.smf.Modify(ctx, est, append(oaiUplink(ue, 3, ie.NewURRID(1)), oaiURR(1))...)
	connected("after the Service Request", createdTEID(t, accepted("the Service Request's uplink, URR 1 created again", m, err)), 4)

	d, err := r.smf.Delete(ctx, est)
	if err != nil || d.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v, cause %d", err, d.Cause())
	}
	var got smf.UsageReport // every report of URR 1, added up
	reports := usageReports(t, d.IEs, 1)
	for _, rep := range r.smf.Reports() {
		reports = append(reports, usageReports(t, rep.IEs, 1)...)
	}
	for _, u := range reports {
		if u.URRID != 1 {
			t.Errorf("a report of URR %d, want URR 1's only", u.URRID)
		}
		got.Uplink, got.UplinkPackets, got.Downlink, got.DLPackets = got.Uplink+u.Uplink, got.UplinkPackets+u.UplinkPackets, got.Downlink+u.Downlink, got.DLPackets+u.DLPackets
	}
	if got.Uplink != sent.Uplink || got.UplinkPackets != sent.UplinkPackets || got.Downlink != 0 || got.DLPackets != 0 {
		t.Errorf("URR 1's %d reports add up to %d B / %d packets up and %d B / %d down; want the uplink that left, %d B / %d packets, and no downlink",
			len(reports), got.Uplink, got.UplinkPackets, got.Downlink, got.DLPackets, sent.Uplink, sent.UplinkPackets)
	}
}
