package operator

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// TestN4MessagesDecodeInWireshark: every message the N4 endpoint sent in a run of every
// procedure (node and session, accepted and refused, usage reports, UPF-initiated heartbeats,
// association update and release, a version it does not speak) goes through Wireshark's PFCP
// dissector, a decoder written apart from both the endpoint and go-pfcp; none may be malformed
// or carry an expert warning or error.
func TestN4MessagesDecodeInWireshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	testenv.Require(t, "tshark (hack/tools.sh tshark installs it; make test does, as root)", err)
	ctx := context.Background()
	r := newN4Rig(t, func(n *junctionv1.N4) { n.HeartbeatInterval, n.TrafficStopAfter = "300ms", "1s" }, nil)
	r.associate(t)
	if _, err := r.smf.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.smf.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	// A session with a URR: usage reports in a modification's and the deletion's response and in
	// the UPF's Session Report Requests.
	metered := alice()
	metered.URR = &smf.URR{Period: time.Second, VolumeThreshold: 1 << 20}
	est, err := r.smf.Establish(ctx, metered)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.smf.Modify(ctx, est, ie.NewQueryURR(ie.NewURRID(smf.URRID))); err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "a Session Report Request", func() error {
		if len(r.smf.Reports()) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	// START: the session's first packet since, one up its WiFi leg, is reported; a second
	// without another, STOPT.
	if _, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x33, 0))); err != nil {
		t.Fatal(err)
	}
	r.u.forward(t, aliceTraffic(metered, 1, 0)[0])
	usageReportWith(t, r, 0, 0, []byte{0x10, 0, 0}) // START
	usageReportWith(t, r, 0, 0, []byte{0x20, 0, 0}) // STOPT
	// A Time Quota of a second: once it has passed, the gates close and a Usage Report says TIMQU.
	if _, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x03, 0x02), ie.NewTimeQuota(time.Second))); err != nil {
		t.Fatal(err)
	}
	usageReportWith(t, r, 0, 0, []byte{0, 0x02, 0}) // TIMQU
	// A new Time Quota valid for a second: when the validity ends, a Usage Report says QUVTI.
	if _, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x03, 0x82),
		ie.NewTimeQuota(time.Minute), ie.NewQuotaValidityTime(time.Second))); err != nil {
		t.Fatal(err)
	}
	usageReportWith(t, r, 0, 0, []byte{0, 0, 0x08}) // QUVTI
	// And a quota held a second with no packet: QUHTI.
	if _, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x0b, 0x02),
		ie.NewTimeQuota(time.Minute), ie.NewQuotaHoldingTime(time.Second))); err != nil {
		t.Fatal(err)
	}
	usageReportWith(t, r, 0, 0, []byte{0x08, 0, 0}) // QUHTI
	if _, err := r.smf.Modify(ctx, est, r.smf.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.Redundant}, true)); err != nil {
		t.Fatal(err)
	}
	// Refusals: an Offending IE, a Failed Rule ID of a PDR and of a MAR.
	bad := alice()
	bad.UEAddr = bad.UE3GPP
	bad.Default = smf.Steering{Mode: smf.LoadBalancing, Weight3GPP: 50, RTTms: 0}
	ies := append(r.smf.EstablishmentIEs(bad, r.smf.NewCPSEID()), ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewMBR(1, 1)))
	if _, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, ies...); err != nil {
		t.Fatal(err)
	}
	if _, err := r.smf.Modify(ctx, est, ie.NewCreatePDR(ie.NewPDRID(30), ie.NewPrecedence(1), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess)), ie.NewFARID(77))); err != nil {
		t.Fatal(err)
	}
	if _, err := r.smf.Modify(ctx, est, r.smf.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.SmallestDelay, RTTms: 20}, true)); err != nil {
		t.Fatal(err)
	}
	// An idle UE's session (its downlink buffers) and its first downlink packet: a Session Report
	// Request with a Downlink Data Report.
	idle := netip.MustParseAddr("10.60.0.9")
	if resp, err := r.smf.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, idleEstablishment(r.smf, r.smf.NewCPSEID(), idle, 0x0c)...); err != nil || resp.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("an idle UE's session: %v (%s)", err, why(resp))
	}
	wantEntries(t, r, "downlink_tunnels ue_addr=0a3c0009 -> buffer_downlink()")
	r.u.forward(t, downlinkFrames(idle, 1)[0])
	eventually(t, programTimeout, "a downlink data report", func() error {
		if len(downlinkDataReports(r.smf)) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	// Partial failure handling: a session tagged with the SMF's FQ-CSID (the UPF answers with its
	// own), then deleted with its set, and a Session Set Deletion refused for want of an FQ-CSID.
	tagged := alice()
	tagged.UEAddr, tagged.IMSI, tagged.CSIDs = netip.MustParseAddr("10.60.0.10"), "001010000000078", []uint16{7}
	if _, err := r.smf.Establish(ctx, tagged); err != nil {
		t.Fatal(err)
	}
	for _, sets := range [][]*ie.IE{{r.smf.FQCSID(7)}, nil} {
		if _, err := r.smf.DeleteSets(ctx, sets...); err != nil {
			t.Fatal(err)
		}
	}
	// PFD Management: PFDs taken, and PFDs refused (a domain name).
	if _, err := r.smf.ProvidePFDs(ctx, map[string][]string{"video": {"permit out 17 from 198.51.100.0/24 to assigned"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.smf.Send(ctx, func(seq uint32) ([]byte, error) {
		return message.NewPFDManagementRequest(seq, ie.NewApplicationIDsPFDs(ie.NewApplicationID("web"),
			ie.NewPFDContext(ie.NewPFDContents("", "", "web.example", "", "", nil, nil, nil)))).Marshal()
	}); err != nil {
		t.Fatal(err)
	}
	// A PFCP version the endpoint does not speak: Version Not Supported Response.
	v2 := []byte{0x40, message.MsgTypeHeartbeatRequest, 0, 4, 0, 0, 9, 0}
	if _, err := r.smf.SendRaw(ctx, 9, v2); err != nil {
		t.Fatal(err)
	}
	r.delete(t, est)
	if _, err := r.smf.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r.associate(t)
	eventually(t, programTimeout, "a Heartbeat Request from the UPF", func() error {
		if r.smf.HeartbeatsAnswered() == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	if _, err := r.smf.Establish(ctx, alice()); err != nil { // a session the release ends
		t.Fatal(err)
	}
	r.awaitN4Sessions(t, 1)
	// The UPF leaves N4: it asks the SMF to release the association (SARR), and as the SMF does
	// nothing (the emulator's default), deletes the SMF's sessions and releases it itself.
	r.leaveN4(t)
	eventually(t, programTimeout, "the UPF's Association Release Request", func() error {
		for _, b := range r.smf.Received() {
			if len(b) > 1 && b[1] == message.MsgTypeAssociationReleaseRequest {
				return nil
			}
		}
		return fmt.Errorf("not received")
	})
	r.awaitN4Sessions(t, 0) // the session went with the association

	got := r.smf.Received()
	seen := map[uint8]int{}
	for _, b := range got {
		seen[b[1]]++
	}
	for _, typ := range []uint8{2, 1, 4, 6, 7, 8, 9, 10, 11, 15, 51, 53, 55, 56} {
		if seen[typ] == 0 {
			t.Errorf("no message of type %d among the endpoint's (%v): the run did not cover it", typ, seen)
		}
	}
	// The check can fail: a response cut short inside an IE is malformed to the dissector.
	cut := got[0][:len(got[0])-1]
	cut = append([]byte(nil), cut...)
	binary.BigEndian.PutUint16(cut[2:4], uint16(len(cut)-4))
	if _, problems, _ := dissect(t, tshark, [][]byte{cut}); len(problems) == 0 {
		t.Fatalf("tshark finds nothing wrong with a message cut inside its last IE: the check cannot fail")
	}
	decoded, problems, text := dissect(t, tshark, got)
	if decoded != len(got) {
		t.Errorf("tshark decoded %d of %d frames as PFCP", decoded, len(got))
	}
	// The trigger bits Junction sets where TS 29.244 puts them, as the dissector reads them.
	for _, trigger := range []string{"START (Start of Traffic)", "QUVTI (Quota Validity Time)", "QUHTI (Quota Holding Time)", "TIMQU (Time Quota)"} {
		if !strings.Contains(text, "= "+trigger+": True") {
			t.Errorf("tshark reads no Usage Report Trigger with %s set", trigger)
		}
	}
	if len(problems) > 0 {
		t.Errorf("tshark finds %d problems in the endpoint's messages:\n  %s", len(problems), strings.Join(problems, "\n  "))
		if len(text) > 20000 {
			text = text[:20000]
		}
		t.Log(text)
	}
}

// dissect runs tshark over the datagrams and returns how many it decoded as PFCP and the lines
// that report a malformed packet or an expert warning or error.
func dissect(t *testing.T, tshark string, datagrams [][]byte) (int, []string, string) {
	t.Helper()
	pcap := filepath.Join(t.TempDir(), "n4.pcap")
	if err := writePcap(pcap, datagrams); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", pcap, "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	text := string(out)
	var problems []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "Malformed") || strings.Contains(line, "Expert Info (Error") || strings.Contains(line, "Expert Info (Warning") {
			problems = append(problems, strings.TrimSpace(line))
		}
	}
	return strings.Count(text, "Packet Forwarding Control Protocol"), problems, text
}

// writePcap writes the datagrams as Ethernet/IPv4/UDP frames from port 8805 to port 8805 (the
// dissector's port) in a classic pcap file.
func writePcap(path string, datagrams [][]byte) error {
	var frames [][]byte
	for _, d := range datagrams {
		frames = append(frames, wiretest.Build(
			wire.Ethernet{Src: wiretest.MAC("02:00:00:00:00:01"), Dst: wiretest.MAC("02:00:00:00:00:02")},
			wire.IPv4{Src: wiretest.IP("192.0.2.1"), Dst: wiretest.IP("192.0.2.100")},
			wire.UDP{SrcPort: 8805, DstPort: 8805},
			d))
	}
	return writePcapFrames(path, frames)
}

// writePcapFrames writes Ethernet frames in a classic pcap file.
func writePcapFrames(path string, frames [][]byte) error {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, 0xa1b2c3d4)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 65535)
	b = binary.LittleEndian.AppendUint32(b, 1) // Ethernet
	now := time.Now()
	for i, frame := range frames {
		ts := now.Add(time.Duration(i) * time.Millisecond)
		b = binary.LittleEndian.AppendUint32(b, uint32(ts.Unix()))
		b = binary.LittleEndian.AppendUint32(b, uint32(ts.Nanosecond()/1000))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(frame)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(frame)))
		b = append(b, frame...)
	}
	return os.WriteFile(path, b, 0o644)
}

// TestEndMarkerDecodesInWireshark: the End Marker the operator sends on SNDEM (docs/n4.md, "End
// Markers"), built for the test UPF's spec, is what Wireshark's GTP dissector calls a GTP-U End
// Marker with the old TEID, from the UPF's N3 address to the gNB, with nothing malformed.
func TestEndMarkerDecodesInWireshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	testenv.Require(t, "tshark (hack/tools.sh tshark installs it; make test does, as root)", err)
	spec := newUPF("ns", "upf", "127.0.0.1:9559", "pipeline").Spec
	frame, _, err := desired.EndMarker(spec, 0, netip.MustParseAddr("198.51.100.10"), 0x100)
	if err != nil {
		t.Fatal(err)
	}
	pcap := filepath.Join(t.TempDir(), "end-marker.pcap")
	if err := writePcapFrames(pcap, [][]byte{frame}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", pcap, "-V", "-d", "udp.port==2152,gtp").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"Src: 192.0.2.1, Dst: 198.51.100.10", "Message Type: End Marker (0xfe)", "TEID: 0x00000100"} {
		if !strings.Contains(text, want) {
			t.Errorf("tshark does not say %q of the End Marker:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Malformed") || strings.Contains(text, "Expert Info (Error") || strings.Contains(text, "Expert Info (Warning") {
		t.Errorf("tshark finds the End Marker malformed:\n%s", text)
	}
}
