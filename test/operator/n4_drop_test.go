package operator

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
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

// free5GCEstablishment is an ordinary PDU session's establishment as free5GC's SMF sends it
// (internal/pfcp/message/build_establishment.go) with the downlink FAR dlFAR, which cannot
// forward yet since the gNB has not given its tunnel; the uplink PDR's F-TEID is CHOOSE, its FAR
// forwards to Core; both PDRs name the two QERs free5GC gives a session's default path (its QoS
// flow's, QFI 1, and the session AMBR's, an MBR), and the two URRs of its default configuration
// (internal/context/datapath.go, addUrrToPath): one measuring before QoS enforcement (MBQE) and
// one after, each with packets (MNOP), a 10 s period and a volume threshold. more are further
// IEs.
func free5GCEstablishment(c *smf.Client, cpSEID uint64, ue netip.Addr, dlFAR *ie.IE, more ...*ie.IE) []*ie.IE {
	named := []*ie.IE{ie.NewQERID(1), ie.NewQERID(2), ie.NewURRID(1), ie.NewURRID(2)}
	return append([]*ie.IE{
		ie.NewNodeIDHeuristic(c.NodeID), c.FSEID(cpSEID), ie.NewPDNType(ie.PDNTypeIPv4),
		ie.NewCreateFAR(ie.NewFARID(idleFARUplink), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
		dlFAR,
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(idlePDRUplink), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x05, 0, nil, nil, 0), // V4 | CH
			ie.NewNetworkInstance("internet"), ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0),
			ie.NewSDFFilter("permit out ip from any to assigned", "", "", "", 0)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(idleFARUplink)}, named...)...),
		ie.NewCreatePDR(append([]*ie.IE{ie.NewPDRID(idlePDRDownlink), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewNetworkInstance("internet"), ie.NewUEIPAddress(0x06, ue.String(), "", 0, 0),
			ie.NewSDFFilter("permit out ip from any to assigned", "", "", "", 0)),
			ie.NewFARID(idleFARDownlink)}, named...)...),
		ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewQFI(1)),
		ie.NewCreateQER(ie.NewQERID(2), ie.NewGateStatus(0, 0), ie.NewMBR(1000000, 1000000), ie.NewQFI(1)),
		free5GCURR(1, 0x10|0x01), // MNOP | MBQE
		free5GCURR(2, 0x10),      // MNOP
	}, more...)
}

// free5GCAMBR is the meter cell free5GCEstablishment's session AMBR (QER 2, 1,000,000 kbit/s)
// gives each direction: 125,000,000 bytes/s, 100 ms bursts (docs/pipeline.md, "MBR policer").
var free5GCAMBR = &p4v1.MeterConfig{Cir: 125_000_000, Cburst: 12_500_000, Pir: 125_000_000, Pburst: 12_500_000}

// mbrCells reads a session's uplink_mbr and downlink_mbr cells: its gates and its MBR.
func mbrCells(t *testing.T, r n4Rig, usage int64) (up, down *p4v1.MeterConfig) {
	t.Helper()
	up, err := r.u.meter(r.sch, "uplink_mbr", usage)
	if err != nil {
		t.Fatal(err)
	}
	if down, err = r.u.meter(r.sch, "downlink_mbr", usage); err != nil {
		t.Fatal(err)
	}
	return up, down
}

// free5GCURR is a URR of free5GC's default configuration: volume, reported every 10 s and at
// 1,000 bytes up and down (Volume Threshold ULVOL | DLVOL, as newCreateURRIE builds it).
func free5GCURR(id uint32, measurementInformation uint8) *ie.IE {
	return ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x03, 0), // PERIO | VOLTH
		ie.NewMeasurementPeriod(10*time.Second), ie.NewVolumeThreshold(0x06, 0, 1000, 1000), ie.NewMeasurementInformation(measurementInformation))
}

// TestN4DropsTheDownlinkUntilTheGNBAnswers: free5GC's SMF establishes every ordinary PDU session
// with a downlink FAR that cannot forward, since the gNB has not given its tunnel yet: DROP
// without Forwarding Parameters (its newer builds), or FORW to Access without Outer Header
// Creation (v4.0.1, as eUPF logs it). The UPF takes both: the session's downlink is denied in the
// filters table (counted FILTERED, nothing leaves; without the entry it would be routed like any
// packet), its uplink TEID is decapsulated as for any session, and the object says dropDownlink
// with no gNB. The modification that gives the FAR FORW and the gNB's tunnel (with an Update PDR
// as v4.0.1 sends, or the PFCPSMReq-Flags the newer builds put in Update Forwarding Parameters)
// removes the filter and tunnels the downlink. A session whose downlink FARs drop for one PDR and
// forward for another is refused with 73, as one held for one and forwarded for another is.
func TestN4DropsTheDownlinkUntilTheGNBAnswers(t *testing.T) {
	ctx := context.Background()
	gnb := netip.MustParseAddr("198.51.100.10")
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	filtered := func() int64 { return packets(t, r, "drops", int64(contract.DropFiltered)) }

	for i, tc := range []struct {
		name   string
		ue     netip.Addr
		dlFAR  *ie.IE
		update []*ie.IE // the modification's IEs beside its Update FAR
		flags  []*ie.IE // in Update Forwarding Parameters
	}{
		{"DROP without Forwarding Parameters", netip.MustParseAddr("10.60.0.8"),
			ie.NewCreateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x01)), nil, []*ie.IE{ie.NewPFCPSMReqFlags(0)}},
		{"FORW to Access without Outer Header Creation", netip.MustParseAddr("10.60.0.9"),
			ie.NewCreateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewNetworkInstance("internet"))),
			[]*ie.IE{ie.NewUpdatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.9", "", 0, 0), ie.NewSDFFilter("permit out ip from any to assigned", "", "", "", 0)),
				ie.NewFARID(idleFARDownlink), ie.NewURRID(1))}, nil},
	} {
		ue, teid := tc.ue, uint32(0x77+i)
		hexUE := fmt.Sprintf("%x", ue.AsSlice())
		cp := r.smf.NewCPSEID()
		resp, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, free5GCEstablishment(r.smf, cp, ue, tc.dlFAR)...)
		if err != nil || resp.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("%s: establishment: %v, cause %d (%s)", tc.name, err, resp.Cause(), why(resp))
		}
		fseid, err := resp.Find(ie.FSEID).FSEID()
		if err != nil {
			t.Fatal(err)
		}
		est := &smf.Established{CPSEID: cp, UPSEID: fseid.SEID}
		// docs/n4.md: the filters entry denies the UE's address as destination, priority 1.
		filter := "filters dst_addr=" + hexUE + "&ffffffff prio=1 -> deny()"
		wantEntries(t, r, filter)
		entries, err := r.u.entries(r.sch)
		if err != nil {
			t.Fatal(err)
		}
		if j := slices.IndexFunc(entries, func(e string) bool { return strings.HasPrefix(e, "downlink_tunnels ue_addr="+hexUE) }); j >= 0 {
			t.Fatalf("%s: a session whose downlink drops has a downlink_tunnels entry: %s", tc.name, entries[j])
		}
		objs := r.awaitN4Sessions(t, i+1)
		j := slices.IndexFunc(objs, func(o junctionv1.ATSSSSession) bool { return string(o.Spec.SessionAddress) == ue.String() })
		if j < 0 {
			t.Fatalf("%s: no session object for %s", tc.name, ue)
		}
		if leg := objs[j].Spec.AccessLegs.ThreeGPP; leg == nil || !leg.DropDownlink || leg.BufferDownlink || leg.GNBAddress != "" || leg.DownlinkTEID != 0 {
			t.Fatalf("%s: the session's 3GPP leg %+v, want dropDownlink and no gNB", tc.name, leg)
		}

		before := filtered()
		frames := downlinkFrames(ue, 3)
		for k, f := range frames {
			if out := r.u.forward(t, f); len(out) != 0 {
				t.Fatalf("%s: downlink packet %d of a session whose downlink drops left the UPF on port %d", tc.name, k, out[0].port)
			}
		}
		if got := filtered() - before; got != 3 {
			t.Fatalf("%s: drops[FILTERED] counted %d of the 3 downlink packets", tc.name, got)
		}

		fp := append([]*ie.IE{ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewNetworkInstance("internet"),
			ie.NewOuterHeaderCreation(0x0100, teid, gnb.String(), "", 0, 0, 0)}, tc.flags...)
		m, err := r.smf.Modify(ctx, est, append(tc.update, ie.NewUpdateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02),
			ie.NewUpdateForwardingParameters(fp...)))...)
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("%s: modification to FORW with the gNB's tunnel: %v, cause %d (%s)", tc.name, err, m.Cause(), why(m))
		}
		eventually(t, programTimeout, "the downlink tunnelled and the filter gone", func() error {
			entries, err := r.u.entries(r.sch)
			switch {
			case err != nil:
				return err
			case slices.Contains(entries, filter):
				return fmt.Errorf("the filters entry stays")
			case !slices.ContainsFunc(entries, func(e string) bool {
				return strings.HasPrefix(e, "downlink_tunnels ue_addr="+hexUE+" -> encap_gtpu(") && strings.Contains(e, fmt.Sprintf(",teid=%x,", teid))
			}):
				return fmt.Errorf("no downlink_tunnels entry into TEID %#x in\n%s", teid, strings.Join(entries, "\n"))
			}
			return nil
		})
		out := r.u.forward(t, frames[0])
		if len(out) != 1 {
			t.Fatalf("%s: a downlink packet after the modification: %d frames left, want 1", tc.name, len(out))
		}
		// G-PDU with a PDU Session Container (flags 0x34, type 0xff): length = the 84-byte inner
		// packet and the 4 bytes of options and the 4 of the container, then the TEID.
		if !bytes.Contains(out[0].frame, binary.BigEndian.AppendUint32([]byte{0x34, 0xff, 0, byte(wire.IPv4HeaderLen + wire.UDPHeaderLen + 64 + 8)}, teid)) {
			t.Fatalf("%s: the downlink packet after the modification is not a G-PDU into TEID %#x: %x", tc.name, teid, out[0].frame)
		}
		if got := filtered() - before; got != 3 {
			t.Fatalf("%s: drops[FILTERED] moved to %d after the FAR forwards", tc.name, got)
		}
	}

	// Two downlink PDRs, one dropping and one forwarding: refused, nothing kept.
	third := netip.MustParseAddr("10.60.0.11")
	mixed := free5GCEstablishment(r.smf, r.smf.NewCPSEID(), third, ie.NewCreateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x01)),
		ie.NewCreateFAR(ie.NewFARID(3), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x78, gnb.String(), "", 0, 0, 0))),
		ie.NewCreatePDR(ie.NewPDRID(3), ie.NewPrecedence(100), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, third.String(), "", 0, 0),
			ie.NewSDFFilter("permit out 17 from any to assigned", "", "", "", 0)), ie.NewFARID(3),
			ie.NewQERID(1), ie.NewQERID(2), ie.NewURRID(1), ie.NewURRID(2)))
	resp, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, mixed...)
	if err == nil && resp.Cause() == ie.CauseRequestAccepted {
		t.Fatal("a session whose downlink FARs drop for one PDR and forward for another was accepted")
	}
	if resp == nil || resp.Cause() != 73 || !strings.Contains(why(resp), "failed rule type 1") {
		t.Fatalf("mixed downlink FARs: %v, cause %d (%s), want 73 naming a FAR", err, resp.Cause(), why(resp))
	}
	if n := len(r.n4Sessions(t)); n != 2 {
		t.Fatalf("%d session objects after the refusal, want the first two sessions'", n)
	}
}

// establishAs sends an SMF's Session Establishment Request (ies, as the core named by who sends
// them, with CP SEID cp) and returns the session and the response; the test fails unless it is
// accepted.
func establishAs(t *testing.T, r n4Rig, who string, cp uint64, ies []*ie.IE) (*smf.Established, *smf.Response) {
	t.Helper()
	resp, err := r.smf.Session(context.Background(), message.MsgTypeSessionEstablishmentRequest, 0, ies...)
	if err != nil || resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("%s's establishment: %v, cause %d (%s)", who, err, resp.Cause(), why(resp))
	}
	fseid, err := resp.Find(ie.FSEID).FSEID()
	if err != nil {
		t.Fatal(err)
	}
	return &smf.Established{CPSEID: cp, UPSEID: fseid.SEID}, resp
}

// packets is the packet count of cell index of the UPF's counter.
func packets(t *testing.T, r n4Rig, counter string, index int64) int64 {
	t.Helper()
	n, err := r.u.counterPackets(r.sch, counter, index)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// forwardingGNB is the gNB of forwardingRig's sessions.
var forwardingGNB = netip.MustParseAddr("198.51.100.10")

// forwardingRig starts an N4 rig, associates its SMF, and establishes ue's ordinary PDU session
// as free5GC does once the gNB has answered, its downlink FAR forwarding into forwardingGNB's
// TEID teid; it returns the rig and the session with its uplink TEID (the UPF's choice) and its
// usage cell.
func forwardingRig(t *testing.T, ue netip.Addr, teid uint32) (r n4Rig, est *smf.Established, ulTEID uint32, usage int64) {
	t.Helper()
	return forwardingRigWith(t, ue, teid, nil)
}

// forwardingRigWith is forwardingRig with n4spec applied to the UPF's spec.n4.
func forwardingRigWith(t *testing.T, ue netip.Addr, teid uint32, n4spec func(*junctionv1.N4)) (r n4Rig, est *smf.Established, ulTEID uint32, usage int64) {
	t.Helper()
	r = newN4Rig(t, n4spec, nil)
	r.associate(t)
	cp := r.smf.NewCPSEID()
	forward := ie.NewCreateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
		ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewOuterHeaderCreation(0x0100, teid, forwardingGNB.String(), "", 0, 0, 0)))
	est, resp := establishAs(t, r, "free5GC", cp, free5GCEstablishment(r.smf, cp, ue, forward))
	for _, x := range resp.IEs {
		if id, _ := x.PDRID(); x.Type == ie.CreatedPDR && id == idlePDRUplink {
			f, err := x.FTEID()
			if err != nil {
				t.Fatal(err)
			}
			ulTEID = f.TEID
		}
	}
	eventually(t, programTimeout, "the session's usage index", func() error {
		for _, o := range r.n4Sessions(t) {
			if string(o.Spec.SessionAddress) == ue.String() && o.Status.UsageIndex != nil {
				usage = int64(*o.Status.UsageIndex)
				return nil
			}
		}
		return fmt.Errorf("no status.usageIndex")
	})
	return r, est, ulTEID, usage
}

// TestN4ClosedGatesDropTheirDirection: an SMF closes a session's downlink gate (Update QER, Gate
// Status DL CLOSED, TS 29.244 §8.2.7): the session's downlink_mbr cell is written with every rate
// and burst zero, so its downlink is dropped and counted in mbr_drops[1] while its uplink still
// goes; the object says gates.downlink Closed. Opened again, the cell is the session AMBR's again
// (its other QER's MBR) and the downlink goes. PDRs of one direction that disagree on the gate
// are refused (73): the pipeline has one gate per session and direction.
func TestN4ClosedGatesDropTheirDirection(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.12")
	r, est, ulTEID, usage := forwardingRig(t, ue, 0x90)
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	uplink := wiretest.Build(eth, wire.IPv4{Src: forwardingGNB.As4(), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: ulTEID},
		wire.IPv4{Src: ue.As4(), Dst: addr4("203.0.113.200")}, wire.UDP{SrcPort: 40000, DstPort: 443}, make([]byte, 64))
	downlink := downlinkFrames(ue, 1)[0]
	policed := func() int64 { return packets(t, r, "mbr_drops", 1) } // cell 1: downlink
	meter := func() *p4v1.MeterConfig {
		t.Helper()
		_, down := mbrCells(t, r, usage)
		return down
	}
	ambr := free5GCAMBR
	if m := meter(); !proto.Equal(m, ambr) {
		t.Fatalf("downlink_mbr[%d] %v with the gate open, want the AMBR's %v", usage, m, ambr)
	}
	if out := r.u.forward(t, downlink); len(out) != 1 {
		t.Fatalf("downlink with the gate open: %d frames left, want 1", len(out))
	}

	gate := func(dl uint8) {
		t.Helper()
		m, err := r.smf.Modify(ctx, est, ie.NewUpdateQER(ie.NewQERID(1), ie.NewGateStatus(0, dl)))
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("Update QER with DL gate %d: %v, cause %d (%s)", dl, err, m.Cause(), why(m))
		}
	}
	gate(1)
	if m := meter(); !proto.Equal(m, &p4v1.MeterConfig{}) || m == nil {
		t.Fatalf("downlink_mbr[%d] %v with the gate closed, want every rate and burst 0", usage, m)
	}
	eventually(t, programTimeout, "the object's gates", func() error { // objects are written after the answer (docs/n4.md)
		if g := r.awaitN4Sessions(t, 1)[0].Spec.Gates; g == nil || g.Downlink != junctionv1.GateClosed || g.Uplink == junctionv1.GateClosed {
			return fmt.Errorf("spec.gates %+v, want the downlink closed and the uplink open", g)
		}
		return nil
	})
	before := policed()
	if out := r.u.forward(t, downlink); len(out) != 0 {
		t.Fatalf("downlink through a closed gate left on port %d", out[0].port)
	}
	if got := policed() - before; got != 1 {
		t.Fatalf("mbr_drops[1] counted %d of the downlink packet through a closed gate", got)
	}
	if out := r.u.forward(t, uplink); len(out) != 1 {
		t.Fatalf("uplink with only the downlink gate closed: %d frames left, want 1", len(out))
	}

	gate(0)
	if m := meter(); !proto.Equal(m, ambr) {
		t.Fatalf("downlink_mbr[%d] %v with the gate open again, want the AMBR's %v", usage, m, ambr)
	}
	if out := r.u.forward(t, downlink); len(out) != 1 {
		t.Fatalf("downlink with the gate open again: %d frames left, want 1", len(out))
	}

	// A second downlink PDR whose QER leaves the gate open while the first's closes it.
	m, err := r.smf.Modify(ctx, est, ie.NewCreateQER(ie.NewQERID(3), ie.NewGateStatus(0, 1)),
		ie.NewUpdatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewQERID(3)),
		ie.NewCreatePDR(ie.NewPDRID(5), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
			ie.NewUEIPAddress(0x06, ue.String(), "", 0, 0)), ie.NewFARID(idleFARDownlink), ie.NewQERID(1), ie.NewURRID(1), ie.NewURRID(2)))
	if err == nil && m.Cause() == ie.CauseRequestAccepted {
		t.Fatal("downlink PDRs that disagree on the gate were accepted")
	}
	if m == nil || m.Cause() != 73 || !strings.Contains(why(m), "failed rule type 0") {
		t.Fatalf("downlink PDRs that disagree on the gate: %v, cause %d (%s), want 73 naming a PDR", err, m.Cause(), why(m))
	}
}
