package operator

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// Sizes of the test's frames, from the layers they are built of: a user packet is IPv4 + UDP +
// 100 bytes; uplink it arrives inside IPv4 + UDP + the Junction header on the WiFi leg.
const (
	userPacketBytes   = wire.IPv4HeaderLen + wire.UDPHeaderLen + 100
	uplinkPacketBytes = wire.IPv4HeaderLen + wire.UDPHeaderLen + wire.HeaderLen + userPacketBytes
)

// aliceTraffic: n user packets of alice's uplink on her WiFi leg and m of her downlink.
func aliceTraffic(s smf.MASession, n, m int) [][]byte {
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	payload := make([]byte, 100)
	var out [][]byte
	for range n {
		out = append(out, wiretest.Build(eth,
			wire.IPv4{Src: s.UENon3GPP.As4(), Dst: addr4("192.0.2.2")}, wire.UDP{}, wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4},
			wire.IPv4{Src: s.UEAddr.As4(), Dst: addr4("203.0.113.200")}, wire.UDP{SrcPort: 40000, DstPort: 443}, payload))
	}
	for range m {
		out = append(out, wiretest.Build(eth,
			wire.IPv4{Src: addr4("203.0.113.200"), Dst: s.UEAddr.As4()}, wire.UDP{SrcPort: 443, DstPort: 40000}, payload))
	}
	return out
}

// TestN4ReportsUsage: a session with a URR (volume and duration, periodic) reports what its
// packets through the data plane were, as TS 29.244 §5.2.2 asks: on a query (IMMER), every
// period in a Session Report Request (PERIO), and at deletion (TERMR), each report covering the
// time since the one before, with UR-SEQNs counting up. Expected volumes are the frames' IP
// bytes as docs/n4.md defines them (downlink the user's packets, uplink with the leg's headers).
func TestN4ReportsUsage(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	s := alice()
	// Measurement Information MNOP | ISTM (TS 29.244 §8.2.68), as Open5GS sends it to a UPF
	// that advertises MNOP: both are what Junction does anyway, so accepted.
	s.URR = &smf.URR{Period: 2 * time.Second, MeasurementInformation: 0x10 | 0x08}
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(why(est.Resp), err)
	}
	obj := &r.awaitN4Sessions(t, 1)[0]
	eventually(t, programTimeout, "the session's usage index in its status", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if obj.Status.UsageIndex == nil || *obj.Status.UsageIndex == 0 {
			return fmt.Errorf("status.usageIndex is %v", obj.Status.UsageIndex)
		}
		return nil
	})
	r.u.probeAck(t, obj, contract.AccessNon3GPP, time.Millisecond) // WiFi available: downlink goes

	if out := r.u.feed(t, aliceTraffic(s, 3, 2)...); out != 5 {
		t.Fatalf("%d of 5 packets left the data plane", out)
	}
	q, err := r.smf.Modify(ctx, est, ie.NewQueryURR(ie.NewURRID(smf.URRID)))
	if err != nil || q.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Query URR: %v, cause %d (%s)", err, q.Cause(), why(q))
	}
	queried := usageReports(t, q.IEs, 1)[0]
	want := smf.UsageReport{URRID: smf.URRID, Seq: 0, Trigger: []byte{0x80, 0, 0}, // IMMER
		Uplink: 3 * uplinkPacketBytes, UplinkPackets: 3, Downlink: 2 * userPacketBytes, DLPackets: 2,
		Total: 3*uplinkPacketBytes + 2*userPacketBytes, TotalPackets: 5}
	checkReport(t, "the queried report", queried, want)

	// One more uplink packet after the query: the periodic reports and the deletion's cover it.
	if out := r.u.feed(t, aliceTraffic(s, 1, 0)...); out != 1 {
		t.Fatal("the uplink packet after the query did not leave the data plane")
	}
	eventually(t, 10*time.Second, "two periodic Session Report Requests", func() error {
		if n := len(r.smf.Reports()); n < 2 {
			return fmt.Errorf("%d Session Report Requests", n)
		}
		return nil
	})
	del, err := r.smf.Delete(ctx, est)
	if err != nil || del.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v, cause %d", err, del.Cause())
	}
	final := usageReports(t, del.IEs, 1)[0]

	var after smf.UsageReport // what the periodic and final reports add up to
	seq := queried.Seq
	last := queried.End
	for i, rep := range r.smf.Reports() {
		if rep.Header.SEID != est.CPSEID {
			t.Errorf("Session Report Request %d for SEID %#x, want the CP SEID %#x", i, rep.Header.SEID, est.CPSEID)
		}
		if x := rep.Find(ie.ReportType); x == nil || len(x.Payload) != 1 || x.Payload[0] != 0x02 {
			t.Errorf("Session Report Request %d: Report Type %v, want USAR (0x02)", i, x)
		}
		for _, u := range usageReports(t, rep.IEs, 1) {
			if u.Trigger[0] != 0x01 {
				t.Errorf("periodic report %d: trigger %x, want PERIO", i, u.Trigger)
			}
			if seq++; u.Seq != seq {
				t.Errorf("periodic report %d: UR-SEQN %d, want %d", i, u.Seq, seq)
			}
			if !u.Start.Equal(last) || u.End.Sub(u.Start) < 2*time.Second {
				t.Errorf("periodic report %d covers %s to %s, want from the last report's end %s for at least the 2 s period", i, u.Start, u.End, last)
			}
			last = u.End
			after.Uplink, after.UplinkPackets, after.Downlink, after.DLPackets = after.Uplink+u.Uplink, after.UplinkPackets+u.UplinkPackets, after.Downlink+u.Downlink, after.DLPackets+u.DLPackets
		}
	}
	if final.Trigger[1] != 0x08 || final.Seq != seq+1 || !final.Start.Equal(last) {
		t.Errorf("the deletion's report: trigger %x, UR-SEQN %d, start %s; want TERMR (second octet 0x08), %d, %s", final.Trigger, final.Seq, final.Start, seq+1, last)
	}
	after.Uplink, after.UplinkPackets, after.Downlink, after.DLPackets = after.Uplink+final.Uplink, after.UplinkPackets+final.UplinkPackets, after.Downlink+final.Downlink, after.DLPackets+final.DLPackets
	if after.Uplink != uplinkPacketBytes || after.UplinkPackets != 1 || after.Downlink != 0 || after.DLPackets != 0 {
		t.Errorf("the reports after the query add up to %d B / %d packets up and %d B / %d down; want the one uplink packet (%d B) only",
			after.Uplink, after.UplinkPackets, after.Downlink, after.DLPackets, uplinkPacketBytes)
	}
}

// usageReports decodes the Usage Reports of a message and checks there are n.
func usageReports(t *testing.T, ies []*ie.IE, n int) []smf.UsageReport {
	t.Helper()
	reps, err := smf.UsageReports(ies)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != n {
		t.Fatalf("%d usage reports, want %d", len(reps), n)
	}
	return reps
}

func checkReport(t *testing.T, what string, got, want smf.UsageReport) {
	t.Helper()
	if got.URRID != want.URRID || got.Seq != want.Seq || string(got.Trigger) != string(want.Trigger) ||
		got.Uplink != want.Uplink || got.UplinkPackets != want.UplinkPackets || got.Downlink != want.Downlink ||
		got.DLPackets != want.DLPackets || got.Total != want.Total || got.TotalPackets != want.TotalPackets {
		t.Errorf("%s: %s (total %d B, %d packets); want %s (total %d B, %d packets)", what, got, got.Total, got.TotalPackets, want, want.Total, want.TotalPackets)
	}
	if got.End.Before(got.Start) || got.Duration > got.End.Sub(got.Start)+time.Second {
		t.Errorf("%s: from %s to %s lasting %s", what, got.Start, got.End, got.Duration)
	}
}

// TestN4UsageAfterQoSEnforcement: free5GC gives every session a URR that measures before QoS
// enforcement (MBQE) and one that measures after it, the one it charges (TS 29.244 §5.2.2.2.1: a
// URR without MBQE counts what the QERs let through). With the session AMBR lowered to 80 kbit/s
// both ways (10,000 bytes/s, a burst of the 3,000-byte least: docs/pipeline.md, "MBR policer"), 40
// frames each way back to back overrun it; what leaves the data plane is the oracle. Over the
// session's life (its Session Report Requests and the deletion's reports), URR 1 (MBQE) measures
// all 80 packets, URR 2 only those that left, to the byte (docs/n4.md, "Volume").
func TestN4UsageAfterQoSEnforcement(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.14")
	r, est, ulTEID, _ := forwardingRig(t, ue, 0x92)
	m, err := r.smf.Modify(ctx, est, ie.NewUpdateQER(ie.NewQERID(2), ie.NewMBR(80, 80)))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Update QER with an MBR of 80 kbit/s: %v, cause %d (%s)", err, m.Cause(), why(m))
	}

	const n = 40
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	uplink := wiretest.Build(eth, wire.IPv4{Src: forwardingGNB.As4(), Dst: addr4("192.0.2.1")}, wire.UDP{}, wire.GTPU{TEID: ulTEID},
		wire.IPv4{Src: ue.As4(), Dst: addr4("203.0.113.200")}, wire.UDP{SrcPort: 40000, DstPort: 443}, make([]byte, 64))
	const ulBytes = 2*(wire.IPv4HeaderLen+wire.UDPHeaderLen) + wire.GTPUHeaderLen + 64 // as it arrived
	const dlBytes = wire.IPv4HeaderLen + wire.UDPHeaderLen + 64
	var ulOut, dlOut uint64
	for range n {
		ulOut += uint64(len(r.u.forward(t, uplink)))
	}
	for _, f := range downlinkFrames(ue, n) {
		dlOut += uint64(len(r.u.forward(t, f)))
	}
	if ulOut == 0 || ulOut == n || dlOut == 0 || dlOut == n {
		t.Fatalf("%d of %d uplink and %d of %d downlink frames left: the policer should have passed some and dropped some", ulOut, n, dlOut, n)
	}

	del, err := r.smf.Delete(ctx, est)
	if err != nil || del.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v, cause %d", err, del.Cause())
	}
	sum := map[uint32]*smf.UsageReport{1: {}, 2: {}}
	add := func(ies []*ie.IE) {
		t.Helper()
		us, err := smf.UsageReports(ies)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			s := sum[u.URRID]
			if s == nil {
				t.Fatalf("a Usage Report of URR %d, which the session does not have", u.URRID)
			}
			s.Uplink, s.UplinkPackets, s.Downlink, s.DLPackets = s.Uplink+u.Uplink, s.UplinkPackets+u.UplinkPackets, s.Downlink+u.Downlink, s.DLPackets+u.DLPackets
		}
	}
	for _, rep := range r.smf.Reports() {
		if rep.Header.SEID == est.CPSEID {
			add(rep.IEs)
		}
	}
	add(del.IEs)
	for _, c := range []struct {
		urr      uint32
		what     string
		ulP, dlP uint64
	}{{1, "before QoS enforcement (MBQE)", n, n}, {2, "after QoS enforcement", ulOut, dlOut}} {
		s := sum[c.urr]
		if s.UplinkPackets != c.ulP || s.Uplink != c.ulP*ulBytes || s.DLPackets != c.dlP || s.Downlink != c.dlP*dlBytes {
			t.Errorf("URR %d, %s, measured %d B in %d packets up and %d B in %d down; want %d packets up (%d B) and %d down (%d B)",
				c.urr, c.what, s.Uplink, s.UplinkPackets, s.Downlink, s.DLPackets, c.ulP, c.ulP*ulBytes, c.dlP, c.dlP*dlBytes)
		}
	}
}

// sentUsage counts what left the data plane as a URR measures it (docs/n4.md, "Volume"): IP
// packets and their bytes, the frame less its Ethernet header, per direction.
type sentUsage struct{ smf.UsageReport }

// forward sends frame through u and counts it if it left, as one frame.
func (c *sentUsage) forward(t *testing.T, u *softUPF, frame []byte, up bool) error {
	t.Helper()
	if out := u.forward(t, frame); len(out) != 1 {
		return fmt.Errorf("%d frames left", len(out))
	}
	if n := uint64(len(frame) - wire.EthernetHeaderLen); up {
		c.Uplink, c.UplinkPackets = c.Uplink+n, c.UplinkPackets+1
	} else {
		c.Downlink, c.DLPackets = c.Downlink+n, c.DLPackets+1
	}
	return nil
}

// uplinkAndDownlink sends ue's G-PDUs from gnb on ulTEID and its downlink, n each way, through u.
func (c *sentUsage) uplinkAndDownlink(t *testing.T, u *softUPF, ue, gnb netip.Addr, ulTEID uint32, n int) {
	t.Helper()
	for range n {
		if err := c.forward(t, u, oaiGPDU(ue, gnb, ulTEID), true); err != nil {
			t.Fatalf("uplink: %v", err)
		}
		if err := c.forward(t, u, downlinkFrames(ue, 1)[0], false); err != nil {
			t.Fatalf("downlink: %v", err)
		}
	}
}

// and is what c and d counted together.
func (c sentUsage) and(d sentUsage) sentUsage {
	c.Uplink, c.UplinkPackets = c.Uplink+d.Uplink, c.UplinkPackets+d.UplinkPackets
	c.Downlink, c.DLPackets = c.Downlink+d.Downlink, c.DLPackets+d.DLPackets
	return c
}

// report is the Usage Report of URR id at deletion (TERMR) for what c counted.
func (c sentUsage) report(id uint32) smf.UsageReport {
	r := c.UsageReport
	r.URRID, r.Trigger = id, []byte{0, 0x08, 0}
	r.Total, r.TotalPackets = r.Uplink+r.Downlink, r.UplinkPackets+r.DLPackets
	return r
}

// oaiSessionWithURR establishes ue's session as OAI's SMF does (oaiEstablishment), with URR 1
// (volume; with the triggers given) named by its PDRs, completes it with the downlink PDR into
// gnb's TEID teid, and waits until both directions go; what went meanwhile is counted in c.
// It returns the session and its uplink TEID.
func oaiSessionWithURR(t *testing.T, r n4Rig, c *sentUsage, ue, gnb netip.Addr, teid uint32, urrIEs ...*ie.IE) (*smf.Established, uint32) {
	t.Helper()
	cp := r.smf.NewCPSEID()
	est, resp := establishAs(t, r, "the SMF", cp, append(oaiEstablishment(r.smf, cp, ue, ie.NewURRID(1)),
		ie.NewCreateURR(append([]*ie.IE{ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0)}, urrIEs...)...)))
	ulTEID := createdTEID(t, resp)
	completeOAISession(t, r, c, est, ue, gnb, ulTEID, teid, 2)
	return est, ulTEID
}

// completeOAISession waits until the uplink on ulTEID goes, adds the downlink PDR and FAR with
// ID id (naming URR 1) into gnb's TEID teid, and waits until the downlink goes; c counts them.
func completeOAISession(t *testing.T, r n4Rig, c *sentUsage, est *smf.Established, ue, gnb netip.Addr, ulTEID, teid uint32, id uint16) {
	t.Helper()
	eventually(t, programTimeout, "the uplink", func() error { return c.forward(t, r.u, oaiGPDU(ue, gnb, ulTEID), true) })
	if m, err := r.smf.Modify(context.Background(), est, oaiDownlink(ue, gnb, teid, id, ie.NewURRID(1))...); err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the downlink PDR: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	eventually(t, programTimeout, "the downlink", func() error { return c.forward(t, r.u, downlinkFrames(ue, 1)[0], false) })
}

// TestN4UsageAcrossAnIdlePeriod: an SMF that removes every PDR of an idle UE's session may keep
// its URR (OAI's does, with enable_usage_reporting: Remove PDR, FAR and QER, no Remove URR), and
// the rules of the Service Request name it again. Their first entry zeroes the session's usage
// cells (docs/pipeline.md, "Usage counters"), yet the URR measures what left the data plane
// before the idle period and after it, to the byte, and nothing of what the idle session dropped
// (docs/n4.md). The URR reports at deletion only (no trigger), so that report holds the whole
// session; every PDR names it (OAI's later PDRs name URR 0: TestN4OAIsUsageReporting).
func TestN4UsageAcrossAnIdlePeriod(t *testing.T) {
	ctx := context.Background()
	ue, gnb, teid := netip.MustParseAddr("10.60.0.17"), netip.MustParseAddr("198.51.100.21"), uint32(0x5b)
	r := newN4Rig(t, func(n *junctionv1.N4) { n.SMFRestartDetection = junctionv1.SMFRestartOnAssociation }, nil)
	r.associate(t)
	var sent sentUsage
	est, ulTEID := oaiSessionWithURR(t, r, &sent, ue, gnb, teid, ie.NewReportingTriggers(0, 0))
	sent.uplinkAndDownlink(t, r.u, ue, gnb, ulTEID, 3)

	m, err := r.smf.Modify(ctx, est, ie.NewRemovePDR(ie.NewPDRID(1)), ie.NewRemovePDR(ie.NewPDRID(2)),
		ie.NewRemoveFAR(ie.NewFARID(1)), ie.NewRemoveFAR(ie.NewFARID(2)))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("every PDR and FAR removed, the URR kept: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	eventually(t, programTimeout, "the idle session's packets dropped", func() error {
		if out := r.u.forward(t, oaiGPDU(ue, gnb, ulTEID)); len(out) != 0 {
			return fmt.Errorf("an uplink packet on the removed TEID left on port %d", out[0].port)
		}
		if out := r.u.forward(t, downlinkFrames(ue, 1)[0]); len(out) != 0 {
			return fmt.Errorf("a downlink packet left on port %d", out[0].port)
		}
		return nil
	})

	m, err = r.smf.Modify(ctx, est, oaiUplink(ue, 3, ie.NewURRID(1))...)
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the uplink after a Service Request: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	ulTEID = createdTEID(t, m)
	completeOAISession(t, r, &sent, est, ue, gnb, ulTEID, teid, 4)
	sent.uplinkAndDownlink(t, r.u, ue, gnb, ulTEID, 3)

	d, err := r.smf.Delete(ctx, est)
	if err != nil || d.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v, cause %d", err, d.Cause())
	}
	checkReport(t, "the deletion's report", usageReports(t, d.IEs, 1)[0], sent.report(1))
}

// TestN4UsageAcrossAUPFRestart: a UPF restart starts every usage cell from zero (the pipeline
// pushed anew, the entries replayed). What the endpoint last read of a session's cells before
// the restart is not lost: URR 1's report at deletion holds the traffic before the restart and
// after it. Both URRs report at deletion only; URR 2, created after the first traffic, makes
// the endpoint read the cells then, and measures what came after it.
func TestN4UsageAcrossAUPFRestart(t *testing.T) {
	ctx := context.Background()
	ue, gnb, teid := netip.MustParseAddr("10.60.0.18"), netip.MustParseAddr("198.51.100.22"), uint32(0x5c)
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	var before, after sentUsage
	est, ulTEID := oaiSessionWithURR(t, r, &before, ue, gnb, teid, ie.NewReportingTriggers(0, 0))
	before.uplinkAndDownlink(t, r.u, ue, gnb, ulTEID, 3)
	m, err := r.smf.Modify(ctx, est, ie.NewCreateURR(ie.NewURRID(2), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0)),
		ie.NewUpdatePDR(ie.NewPDRID(1), ie.NewURRID(1), ie.NewURRID(2)), ie.NewUpdatePDR(ie.NewPDRID(2), ie.NewURRID(1), ie.NewURRID(2)))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a second URR: %v, cause %d (%s)", err, m.Cause(), why(m))
	}

	r.u.stop()
	fresh := startSoftUPF(t, r.u.addr)
	t.Cleanup(fresh.stop)
	eventually(t, replayTimeout, "the session replayed on the restarted UPF", func() error {
		return after.forward(t, fresh, oaiGPDU(ue, gnb, ulTEID), true)
	})
	after.uplinkAndDownlink(t, fresh, ue, gnb, ulTEID, 3)

	d, err := r.smf.Delete(ctx, est)
	if err != nil || d.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion: %v, cause %d", err, d.Cause())
	}
	reps := usageReports(t, d.IEs, 2)
	checkReport(t, "URR 1's report at deletion", reps[0], before.and(after).report(1))
	checkReport(t, "URR 2's report at deletion", reps[1], after.report(2))
}
