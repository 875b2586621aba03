package operator

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
