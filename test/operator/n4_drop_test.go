package operator

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/internal/wire"
)

// free5GCEstablishment is an ordinary PDU session's establishment as free5GC's SMF sends it
// (internal/pfcp/message/build_establishment.go, newCreateFARIE): the downlink FAR has no
// Forwarding Parameters, so its Apply Action is DROP, until the gNB's tunnel arrives in a
// Session Modification; the uplink PDR's F-TEID is CHOOSE, its FAR forwards to Core; and both
// PDRs name the two URRs free5GC's default configuration gives every session
// (internal/context/datapath.go, addUrrToPath): one measuring before QoS enforcement (MBQE) and
// one after, each with packets (MNOP), a 10 s period and a volume threshold. more are further
// IEs.
func free5GCEstablishment(c *smf.Client, cpSEID uint64, ue netip.Addr, more ...*ie.IE) []*ie.IE {
	return append([]*ie.IE{
		ie.NewNodeIDHeuristic(c.NodeID), c.FSEID(cpSEID), ie.NewPDNType(ie.PDNTypeIPv4),
		ie.NewCreateFAR(ie.NewFARID(idleFARUplink), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
		ie.NewCreateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x01)), // DROP
		ie.NewCreatePDR(ie.NewPDRID(idlePDRUplink), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x05, 0, nil, nil, 0), // V4 | CH
			ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(idleFARUplink), ie.NewURRID(1), ie.NewURRID(2)),
		ie.NewCreatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, ue.String(), "", 0, 0)),
			ie.NewFARID(idleFARDownlink), ie.NewURRID(1), ie.NewURRID(2)),
		free5GCURR(1, 0x10|0x01), // MNOP | MBQE
		free5GCURR(2, 0x10),      // MNOP
	}, more...)
}

// free5GCURR is a URR of free5GC's default configuration: volume, reported every 10 s and at
// 1,000 bytes up and down (Volume Threshold ULVOL | DLVOL, as newCreateURRIE builds it).
func free5GCURR(id uint32, measurementInformation uint8) *ie.IE {
	return ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x03, 0), // PERIO | VOLTH
		ie.NewMeasurementPeriod(10*time.Second), ie.NewVolumeThreshold(0x06, 0, 1000, 1000), ie.NewMeasurementInformation(measurementInformation))
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

// TestN4DropsTheDownlinkUntilTheGNBAnswers: free5GC's SMF establishes every ordinary PDU session
// with a downlink FAR that drops (no gNB tunnel yet). The UPF takes it: the session's downlink
// is denied in the filters table (counted FILTERED, nothing leaves; without the entry it would be
// routed like any packet), its uplink TEID is decapsulated as for any session, and the object says
// dropDownlink with no gNB. The modification that gives the FAR FORW and the gNB's tunnel (with
// the PFCPSMReq-Flags free5GC always puts in Update Forwarding Parameters, SNDEM clear) removes
// the filter and tunnels the downlink. A session whose downlink FARs drop for one PDR and forward
// for another is refused with 73, as one held for one and forwarded for another is.
func TestN4DropsTheDownlinkUntilTheGNBAnswers(t *testing.T) {
	ctx := context.Background()
	ue, gnb := netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("198.51.100.10")
	r := newN4Rig(t, nil, nil)
	r.associate(t)

	cp := r.smf.NewCPSEID()
	resp, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, free5GCEstablishment(r.smf, cp, ue)...)
	if err != nil || resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("establishment with a downlink FAR that drops: %v, cause %d (%s)", err, resp.Cause(), why(resp))
	}
	fseid, err := resp.Find(ie.FSEID).FSEID()
	if err != nil {
		t.Fatal(err)
	}
	est := &smf.Established{CPSEID: cp, UPSEID: fseid.SEID}
	// docs/n4.md: the filters entry denies the UE's address as destination, priority 1.
	filter := "filters dst_addr=0a3c0008&ffffffff prio=1 -> deny()"
	wantEntries(t, r, filter)
	entries, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(entries, func(e string) bool { return strings.HasPrefix(e, "downlink_tunnels ue_addr=0a3c0008") }); i >= 0 {
		t.Fatalf("a session whose downlink drops has a downlink_tunnels entry: %s", entries[i])
	}
	obj := r.awaitN4Sessions(t, 1)[0]
	if leg := obj.Spec.AccessLegs.ThreeGPP; leg == nil || !leg.DropDownlink || leg.BufferDownlink || leg.GNBAddress != "" || leg.DownlinkTEID != 0 {
		t.Fatalf("the session's 3GPP leg %+v, want dropDownlink and no gNB", leg)
	}

	filtered := func() int64 {
		t.Helper()
		n, err := r.u.counterPackets(r.sch, "drops", int64(contract.DropFiltered))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := filtered()
	frames := downlinkFrames(ue, 3)
	for i, f := range frames {
		if out := r.u.forward(t, f); len(out) != 0 {
			t.Fatalf("downlink packet %d of a session whose downlink drops left the UPF on port %d", i, out[0].port)
		}
	}
	if got := filtered() - before; got != 3 {
		t.Fatalf("drops[FILTERED] counted %d of the 3 downlink packets", got)
	}

	m, err := r.smf.Modify(ctx, est, ie.NewUpdateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02),
		ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x77, gnb.String(), "", 0, 0, 0), ie.NewPFCPSMReqFlags(0))))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("modification to FORW with the gNB's tunnel: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	eventually(t, programTimeout, "the downlink tunnelled and the filter gone", func() error {
		entries, err := r.u.entries(r.sch)
		switch {
		case err != nil:
			return err
		case slices.Contains(entries, filter):
			return fmt.Errorf("the filters entry stays")
		case !slices.ContainsFunc(entries, func(e string) bool {
			return strings.HasPrefix(e, "downlink_tunnels ue_addr=0a3c0008 -> encap_gtpu(") && strings.Contains(e, ",teid=77,")
		}):
			return fmt.Errorf("no downlink_tunnels entry into TEID 0x77 in\n%s", strings.Join(entries, "\n"))
		}
		return nil
	})
	out := r.u.forward(t, frames[0])
	if len(out) != 1 {
		t.Fatalf("a downlink packet after the modification: %d frames left, want 1", len(out))
	}
	// G-PDU (flags 0x30, type 0xff), length = the 84-byte inner packet, TEID 0x77.
	if !bytes.Contains(out[0].frame, []byte{0x30, 0xff, 0, byte(wire.IPv4HeaderLen + wire.UDPHeaderLen + 64), 0, 0, 0, 0x77}) {
		t.Fatalf("the downlink packet after the modification is not G-PDU TEID 0x77: %x", out[0].frame)
	}
	if got := filtered() - before; got != 3 {
		t.Fatalf("drops[FILTERED] moved to %d after the FAR forwards", got)
	}

	// Two downlink PDRs, one dropping and one forwarding: refused, nothing kept.
	mixed := free5GCEstablishment(r.smf, r.smf.NewCPSEID(), netip.MustParseAddr("10.60.0.9"),
		ie.NewCreateFAR(ie.NewFARID(3), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x78, gnb.String(), "", 0, 0, 0))),
		ie.NewCreatePDR(ie.NewPDRID(3), ie.NewPrecedence(100), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, "10.60.0.9", "", 0, 0),
			ie.NewSDFFilter("permit out 17 from any to assigned", "", "", "", 0)), ie.NewFARID(3), ie.NewURRID(1), ie.NewURRID(2)))
	resp, err = r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, mixed...)
	if err == nil && resp.Cause() == ie.CauseRequestAccepted {
		t.Fatal("a session whose downlink FARs drop for one PDR and forward for another was accepted")
	}
	if resp == nil || resp.Cause() != 73 || !strings.Contains(why(resp), "failed rule type 1") {
		t.Fatalf("mixed downlink FARs: %v, cause %d (%s), want 73 naming a FAR", err, resp.Cause(), why(resp))
	}
	if n := len(r.n4Sessions(t)); n != 1 {
		t.Fatalf("%d session objects after the refusal, want the first session's only", n)
	}
}
