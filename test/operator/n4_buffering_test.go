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

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// The rules of an idle UE's ordinary PDU session, as Open5GS's SMF establishes every session
// (src/smf/context.c; the same rules eUPF logs from it): the uplink PDR forwards to Core and
// names its QoS flow's QFI in its PDI (lib/pfcp/build.c), the downlink PDR's FAR buffers and
// notifies (BUFF|NOCP) with a BAR and no Outer Header Creation, since no gNB tunnel exists yet;
// both name a URR of the session's volume (a 100 MB threshold). And the pair for IPv6 router solicitations and advertisements (smf_sess_create_cp_up_data_
// forwarding): a PDR from the CP function into the downlink FAR, and one on the uplink TEID
// (its CHOOSE ID) for ICMPv6 from ff02::2 into a FAR toward the SMF. Their precedence here is
// below the downlink PDR's, so that a UPF that took the first for a downlink PDR would name it
// in its Downlink Data Report.
const (
	idlePDRUplink, idlePDRDownlink = 1, 2
	idlePDRFromCP, idlePDRToCP     = 3, 4
	idleFARUplink, idleFARDownlink = 1, 2
	idleFARToCP                    = 3
	idleBAR, idleURR               = 1, 1
	idleChooseID                   = 5
)

func idleEstablishment(c *smf.Client, cpSEID uint64, ue netip.Addr, applyAction uint8) []*ie.IE {
	return []*ie.IE{
		ie.NewNodeIDHeuristic(c.NodeID), c.FSEID(cpSEID), ie.NewPDNType(ie.PDNTypeIPv4),
		ie.NewCreateFAR(ie.NewFARID(idleFARUplink), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
		ie.NewCreateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(applyAction), ie.NewBARID(idleBAR),
			ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess))),
		ie.NewCreateFAR(ie.NewFARID(idleFARToCP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceCPFunction), ie.NewNetworkInstance("internet"),
			ie.NewOuterHeaderCreation(0x0100, 1, "127.0.0.1", "", 0, 0, 0))),
		ie.NewCreateBAR(ie.NewBARID(idleBAR)),
		ie.NewCreateURR(ie.NewURRID(idleURR), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x02, 0), // VOLUM, VOLTH
			ie.NewVolumeThreshold(0x01, 100<<20, 0, 0)),
		ie.NewCreatePDR(ie.NewPDRID(idlePDRUplink), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x0d, 0, nil, nil, idleChooseID), // V4 | CH | CHID
			ie.NewUEIPAddress(0x02, ue.String(), "", 0, 0), ie.NewQFI(1)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(idleFARUplink), ie.NewURRID(idleURR)),
		ie.NewCreatePDR(ie.NewPDRID(idlePDRDownlink), ie.NewPrecedence(255), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, ue.String(), "", 0, 0)),
			ie.NewFARID(idleFARDownlink), ie.NewURRID(idleURR)),
		ie.NewCreatePDR(ie.NewPDRID(idlePDRFromCP), ie.NewPrecedence(100), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCPFunction), ie.NewFTEID(0x05, 0, nil, nil, 0)), // V4 | CH
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(idleFARDownlink)),
		ie.NewCreatePDR(ie.NewPDRID(idlePDRToCP), ie.NewPrecedence(100), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x0d, 0, nil, nil, idleChooseID),
			ie.NewSDFFilter("permit out 58 from ff02::2/128 to assigned", "", "", "", 0), ie.NewTGPPInterfaceType(11)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(idleFARToCP)),
	}
}

// idleUE starts a UPF with an N4 endpoint, associates the SMF and establishes ue's session as
// Open5GS does for an idle UE (BUFF|NOCP).
func idleUE(t testing.TB, ue netip.Addr) (n4Rig, *smf.Established) {
	t.Helper()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	return r, establishIdle(t, r, ue)
}

// establishIdle establishes ue's session as Open5GS does for an idle UE (BUFF|NOCP).
func establishIdle(t testing.TB, r n4Rig, ue netip.Addr) *smf.Established {
	t.Helper()
	cp := r.smf.NewCPSEID()
	resp, err := r.smf.Session(context.Background(), message.MsgTypeSessionEstablishmentRequest, 0, idleEstablishment(r.smf, cp, ue, 0x0c)...)
	if err != nil || resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("establishment of an idle UE's session: %v, cause %d (%s)", err, resp.Cause(), why(resp))
	}
	fseid, err := resp.Find(ie.FSEID).FSEID()
	if err != nil {
		t.Fatal(err)
	}
	// TS 29.244 §5.2.3.1: PDRs with one CHOOSE ID share the TEID the UPF chose; the PDR from the
	// CP function, without one, gets its own.
	teids := map[uint16]uint32{}
	for _, x := range resp.IEs {
		if x.Type != ie.CreatedPDR {
			continue
		}
		id, err := x.PDRID()
		f, err2 := x.FTEID()
		if err != nil || err2 != nil {
			t.Fatalf("Created PDR %v: %v %v", x, err, err2)
		}
		teids[id] = f.TEID
	}
	if len(teids) != 3 || teids[idlePDRUplink] == 0 || teids[idlePDRToCP] != teids[idlePDRUplink] || teids[idlePDRFromCP] == teids[idlePDRUplink] || teids[idlePDRFromCP] == 0 {
		t.Fatalf("Created PDRs' TEIDs %v: want PDRs %d and %d sharing one, PDR %d another", teids, idlePDRUplink, idlePDRToCP, idlePDRFromCP)
	}
	return &smf.Established{CPSEID: cp, UPSEID: fseid.SEID}
}

// downlinkFrames are n user packets from N6 to ue, each with its number in the payload.
func downlinkFrames(ue netip.Addr, n int) [][]byte {
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	var out [][]byte
	for i := range n {
		payload := bytes.Repeat([]byte{byte(i)}, 64)
		out = append(out, wiretest.Build(eth, wire.IPv4{Src: addr4("203.0.113.200"), Dst: ue.As4()},
			wire.UDP{SrcPort: 443, DstPort: 40000}, payload))
	}
	return out
}

// bufferedFrames is junction_downlink_buffered_frames_total of upf and result.
func bufferedFrames(t *testing.T, upf, result string) float64 {
	return resultCounter(t, "junction_downlink_buffered_frames_total", upf, result)
}

// resultCounter is the operator's counter name of upf and result.
func resultCounter(t *testing.T, name, upf, result string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["upf"] == upf && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// downlinkDataReports are the Session Report Requests with Report Type DLDR the SMF got, by the
// PDR ID their Downlink Data Report names (TS 29.244 §7.5.8.2).
func downlinkDataReports(c *smf.Client) []uint16 {
	var out []uint16
	for _, r := range c.Reports() {
		if x := r.Find(ie.ReportType); x == nil || len(x.Payload) == 0 || x.Payload[0]&0x01 == 0 {
			continue
		}
		if x := r.Find(ie.DownlinkDataReport); x != nil {
			if id, err := x.PDRID(); err == nil {
				out = append(out, id)
			}
		}
	}
	return out
}

// TestN4BuffersTheDownlinkOfAnIdleUE: an SMF establishes a session the way Open5GS does for an
// idle UE (downlink FAR BUFF|NOCP, no tunnel); the UPF holds the UE's downlink, reports the first
// packet once with a Downlink Data Report naming the downlink PDR, and, once the SMF's
// modification gives the FAR its tunnel and FORW, sends what it held to the gNB in arrival order,
// each packet as the pipeline tunnels one that arrives after (docs/n4.md, "Buffering").
func TestN4BuffersTheDownlinkOfAnIdleUE(t *testing.T) {
	ctx := context.Background()
	ue, gnb := netip.MustParseAddr("10.60.0.7"), netip.MustParseAddr("198.51.100.10")
	r, est := idleUE(t, ue)
	wantEntries(t, r, "downlink_tunnels ue_addr=0a3c0007 -> buffer_downlink()")
	// The router advertisement pair installs nothing: one uplink TEID, the uplink PDR's, which the
	// ICMPv6 PDR shares by its CHOOSE ID (docs/n4.md).
	entries, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	var tunnels []string
	for _, e := range entries {
		if strings.HasPrefix(e, "uplink_tunnels") || strings.HasPrefix(e, "filters") {
			tunnels = append(tunnels, e)
		}
	}
	if len(tunnels) != 1 || !strings.HasPrefix(tunnels[0], "uplink_tunnels") {
		t.Fatalf("uplink_tunnels and filters entries %v, want the uplink PDR's TEID only", tunnels)
	}

	// kubectl shows the session as one whose downlink buffers, with no gNB yet.
	obj := r.awaitN4Sessions(t, 1)[0]
	if leg := obj.Spec.AccessLegs.ThreeGPP; leg == nil || !leg.BufferDownlink || leg.GNBAddress != "" || leg.DownlinkTEID != 0 {
		t.Fatalf("the session's 3GPP leg %+v, want bufferDownlink and no gNB", leg)
	}

	frames := downlinkFrames(ue, 5)
	for i, f := range frames {
		if out := r.u.forward(t, f); len(out) != 0 {
			t.Fatalf("downlink packet %d of an idle UE left the UPF on port %d", i, out[0].port)
		}
	}
	upf := r.upf.Name
	eventually(t, programTimeout, "5 frames held", func() error {
		if n := bufferedFrames(t, upf, "held"); n != 5 {
			return fmt.Errorf("%v held", n)
		}
		return nil
	})
	eventually(t, programTimeout, "a downlink data report", func() error {
		if got := downlinkDataReports(r.smf); len(got) == 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
	time.Sleep(time.Second) // a second report would come at once
	if got := downlinkDataReports(r.smf); !slices.Equal(got, []uint16{idlePDRDownlink}) {
		t.Fatalf("downlink data reports for PDRs %v, want one for PDR %d (the first packet only)", got, idlePDRDownlink)
	}
	if n := len(r.u.sent.taken()); n != 0 {
		t.Fatalf("%d frames sent while the UE is idle", n)
	}

	// The UE is paged and its gNB known: FORW with the tunnel.
	m, err := r.smf.Modify(ctx, est, ie.NewUpdateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02),
		ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x4321, gnb.String(), "", 0, 0, 0))))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("modification to FORW: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	var released []sentFrame
	eventually(t, programTimeout, "the 5 held frames sent", func() error {
		if released = r.u.sent.taken(); len(released) < 5 {
			return fmt.Errorf("%d sent", len(released))
		}
		return nil
	})
	if len(released) != 5 || bufferedFrames(t, upf, "released") != 5 {
		t.Fatalf("%d frames sent, %v counted released; want the 5 held", len(released), bufferedFrames(t, upf, "released"))
	}
	// Each as the pipeline now tunnels the same packet: GTP-U toward the gNB with TEID 0x4321.
	for i, f := range frames {
		want := r.u.forward(t, f)
		if len(want) != 1 {
			t.Fatalf("packet %d after the modification: %d frames left, want 1", i, len(want))
		}
		if !bytes.Contains(want[0].frame, append([]byte{0x30, 0xff}, 0, byte(wire.UDPHeaderLen+wire.IPv4HeaderLen+64), 0, 0, 0x43, 0x21)) {
			t.Fatalf("packet %d after the modification is not G-PDU TEID 0x4321: %x", i, want[0].frame)
		}
		if released[i].port != want[0].port || !bytes.Equal(released[i].frame, want[0].frame) {
			t.Errorf("held packet %d left on port %d as\n%x\nwant port %d\n%x", i, released[i].port, released[i].frame, want[0].port, want[0].frame)
		}
	}
	eventually(t, programTimeout, "the object's downlink forwarding to the gNB", func() error {
		if leg := r.awaitN4Sessions(t, 1)[0].Spec.AccessLegs.ThreeGPP; leg.BufferDownlink || leg.GNBAddress != "198.51.100.10" || leg.DownlinkTEID != 0x4321 {
			return fmt.Errorf("3GPP leg %+v", leg)
		}
		return nil
	})
}

// TestN4RefusesBufferingThePipelineCannotDo: a UPF whose P4 program has no buffer_downlink (an
// older one) refuses an idle UE's session with 76, naming the Apply Action, and keeps nothing.
func TestN4RefusesBufferingThePipelineCannotDo(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, func(info *p4configv1.P4Info) { testenv.WithoutAction(t, info, "buffer_downlink") })
	r.associate(t)
	ue := netip.MustParseAddr("10.60.0.7")
	resp, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, idleEstablishment(r.smf, r.smf.NewCPSEID(), ue, 0x0c)...)
	if err != nil || resp.Cause() != ie.CauseServiceNotSupported || why(resp) != fmt.Sprintf("offending IE %d", ie.ApplyAction) {
		t.Fatalf("an idle UE's session on a pipeline that cannot buffer: %v, cause %d (%s); want 76, offending IE %d (Apply Action)", err, resp.Cause(), why(resp), ie.ApplyAction)
	}
	eventually(t, programTimeout, "no N4 session left", func() error {
		if n := len(r.n4Sessions(t)); n != 0 {
			return fmt.Errorf("%d sessions", n)
		}
		return nil
	})
	got, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if strings.HasPrefix(e, "downlink_tunnels") || strings.HasPrefix(e, "uplink_tunnels") {
			t.Errorf("the refused session left %s", e)
		}
	}
}

// TestN4DropsWhatItBufferedOnDROBU: a Session Modification with PFCPSMReq-Flags DROBU (TS 29.244
// §8.2.57: drop the packets buffered for the session before applying the FARs) drops what an idle
// UE's session held, so a FAR that forwards after it sends none of them, while a packet that
// comes after the modification is forwarded. SNDEM in the request's own flags is refused with 76
// (it belongs in an Update FAR's Update Forwarding Parameters: TestN4SendsEndMarkersOnSNDEM).
func TestN4DropsWhatItBufferedOnDROBU(t *testing.T) {
	ctx := context.Background()
	ue, gnb := netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("198.51.100.11")
	r, est := idleUE(t, ue)
	wantEntries(t, r, "downlink_tunnels ue_addr=0a3c0008 -> buffer_downlink()")
	// The counters are the process's: what this test adds to them.
	upf := r.upf.Name
	count := func(result string) float64 { return bufferedFrames(t, upf, result) }
	held0, dropped0, released0 := count("held"), count("dropped"), count("released")
	for _, f := range downlinkFrames(ue, 3) {
		r.u.forward(t, f)
	}
	eventually(t, programTimeout, "3 frames held", func() error {
		if n := count("held") - held0; n != 3 {
			return fmt.Errorf("%v held", n)
		}
		return nil
	})

	forward := ie.NewUpdateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02),
		ie.NewUpdateForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, 0x4322, gnb.String(), "", 0, 0, 0)))
	if m, err := r.smf.Modify(ctx, est, ie.NewPFCPSMReqFlags(0x02), forward); err != nil || m.Cause() != ie.CauseServiceNotSupported || why(m) != fmt.Sprintf("offending IE %d", ie.PFCPSMReqFlags) {
		t.Fatalf("a modification with SNDEM: %v, cause %d (%s); want 76, offending IE %d", err, m.Cause(), why(m), ie.PFCPSMReqFlags)
	}
	if n := count("dropped") - dropped0; n != 0 {
		t.Fatalf("the refused modification dropped %v held frames", n)
	}

	m, err := r.smf.Modify(ctx, est, ie.NewPFCPSMReqFlags(0x01), forward)
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("modification to FORW with DROBU: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	if n := count("dropped") - dropped0; n != 3 {
		t.Errorf("%v frames counted dropped, want the 3 held", n)
	}
	time.Sleep(time.Second) // a release would be under way by now
	if sent := r.u.sent.taken(); len(sent) != 0 || count("released") != released0 {
		t.Fatalf("%d held frames sent after DROBU (%v counted released), want none", len(sent), count("released")-released0)
	}
	after := downlinkFrames(ue, 1)[0]
	if out := r.u.forward(t, after); len(out) != 1 || !bytes.Contains(out[0].frame, []byte{0x30, 0xff, 0, byte(wire.UDPHeaderLen + wire.IPv4HeaderLen + 64), 0, 0, 0x43, 0x22}) {
		t.Fatalf("a packet after the modification: %d frames out, want one G-PDU with TEID 0x4322", len(out))
	}
}

// TestN4SendsEndMarkersOnSNDEM: an Xn handover as Open5GS's SMF asks for it. The downlink FAR
// moves from the source gNB's tunnel to the target's with PFCPSMReq-Flags SNDEM in its Update
// Forwarding Parameters (TS 29.244 §7.5.4.3); the UPF sends a GTP-U End Marker (TS 29.281:
// type 254, no payload) on the old tunnel, toward the source gNB by the UPF's route, and the
// next downlink packet goes to the target (docs/n4.md, "End Markers"). SNDEM where the tunnel
// stays sends none.
func TestN4SendsEndMarkersOnSNDEM(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.9")
	r, est := idleUE(t, ue)
	toGNB := func(gnb string, teid uint32, flags ...*ie.IE) *ie.IE {
		fp := append([]*ie.IE{ie.NewDestinationInterface(ie.DstInterfaceAccess), ie.NewOuterHeaderCreation(0x0100, teid, gnb, "", 0, 0, 0)}, flags...)
		return ie.NewUpdateFAR(ie.NewFARID(idleFARDownlink), ie.NewApplyAction(0x02), ie.NewUpdateForwardingParameters(fp...))
	}
	modify := func(what string, far *ie.IE) {
		t.Helper()
		if m, err := r.smf.Modify(ctx, est, far); err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("%s: %v, cause %d (%s)", what, err, m.Cause(), why(m))
		}
	}
	modify("the UE connected at the source gNB", toGNB("198.51.100.10", 0x100))
	sentBefore := len(r.u.sent.taken())

	modify("the path switch to the target gNB with SNDEM", toGNB("198.51.100.12", 0x200, ie.NewPFCPSMReqFlags(0x02)))
	// The rig's UPF: N3 address 192.0.2.1; 198.51.100.0/24 by port 1 (MAC 02:00:00:00:01:01) to
	// next hop 02:00:00:00:02:01.
	want := sentFrame{port: 1, frame: []byte{
		0x02, 0, 0, 0, 0x02, 0x01, 0x02, 0, 0, 0, 0x01, 0x01, 0x08, 0x00,
		0x45, 0, 0, 36, 0, 0, 0, 0, 64, 17, 0x8e, 0x8a, 192, 0, 2, 1, 198, 51, 100, 10,
		0x08, 0x68, 0x08, 0x68, 0, 16, 0, 0,
		0x30, 0xfe, 0, 0, 0, 0, 0x01, 0x00,
	}}
	var sent []sentFrame
	eventually(t, programTimeout, "an End Marker", func() error {
		if sent = r.u.sent.taken()[sentBefore:]; len(sent) == 0 {
			return fmt.Errorf("nothing sent")
		}
		return nil
	})
	sentBefore += len(sent)
	if len(sent) != 1 || sent[0].port != want.port || !bytes.Equal(sent[0].frame, want.frame) {
		t.Fatalf("sent after the path switch: %v\nwant one frame on port %d:\n%x", sent, want.port, want.frame)
	}
	after := downlinkFrames(ue, 1)[0]
	if out := r.u.forward(t, after); len(out) != 1 || !bytes.Contains(out[0].frame, []byte{0x30, 0xff, 0, byte(wire.UDPHeaderLen + wire.IPv4HeaderLen + 64), 0, 0, 0x02, 0x00}) {
		t.Fatalf("a packet after the path switch: %d frames out, want one G-PDU with TEID 0x200", len(out))
	}

	modify("SNDEM with the tunnel unchanged", toGNB("198.51.100.12", 0x200, ie.NewPFCPSMReqFlags(0x02)))
	time.Sleep(time.Second) // an End Marker would have gone by now
	if sent := r.u.sent.taken()[sentBefore:]; len(sent) != 0 {
		t.Fatalf("SNDEM with the tunnel unchanged sent %d frames, want none", len(sent))
	}
	if m, err := r.smf.Modify(ctx, est, toGNB("198.51.100.10", 0x100, ie.NewPFCPSMReqFlags(0x01))); err != nil ||
		m.Cause() != ie.CauseServiceNotSupported || why(m) != fmt.Sprintf("offending IE %d", ie.PFCPSMReqFlags) {
		t.Fatalf("DROBU in Update Forwarding Parameters: %v, cause %d (%s); want 76, offending IE %d", err, m.Cause(), why(m), ie.PFCPSMReqFlags)
	}
}
