package operator

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/wmnsk/go-pfcp/ie"
	"google.golang.org/protobuf/proto"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
)

// TestN4VolumeQuotaClosesTheGates: an SMF doing online charging gives a URR a Volume Quota
// (TS 29.244 §5.2.2.2.1) by an Update URR, with VOLQU. Once the session's downlink has carried the
// quota (read within a second), the UPF closes the gates of both directions the URR measures (the
// session's meter cells at rate zero: nothing more leaves, and mbr_drops counts it) and sends a
// Session Report Request whose Usage Report says VOLQU with the volume measured. An Update URR
// with a new quota opens them again: the AMBR's cell is back and the downlink goes.
func TestN4VolumeQuotaClosesTheGates(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.13")
	r, est, _, usage := forwardingRig(t, ue, 0x91)
	quota := func(bytes uint64) {
		t.Helper()
		m, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(1), ie.NewReportingTriggers(0x03, 0x01), // PERIO | VOLTH, VOLQU
			ie.NewVolumeQuota(0x01, bytes, 0, 0)))
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("Update URR with a Volume Quota of %d bytes: %v, cause %d (%s)", bytes, err, m.Cause(), why(m))
		}
	}
	quota(300)

	// Four downlink packets of 92 IP bytes each (20 + 8 + 64): 368 >= 300.
	frame := downlinkFrames(ue, 1)[0]
	for i := range 4 {
		if out := r.u.forward(t, frame); len(out) != 1 {
			t.Fatalf("downlink packet %d within the quota: %d frames left, want 1", i, len(out))
		}
	}
	closed := &p4v1.MeterConfig{}
	eventually(t, programTimeout, "both gates closed", func() error {
		if up, down := mbrCells(t, r, usage); !proto.Equal(up, closed) || !proto.Equal(down, closed) || up == nil || down == nil {
			return fmt.Errorf("uplink_mbr %v, downlink_mbr %v", up, down)
		}
		return nil
	})
	// URR 1's reports up to its VOLQU one (a periodic one may come first, on a slow machine)
	// add up to the four packets.
	var measured smf.UsageReport
	eventually(t, programTimeout, "a VOLQU usage report", func() error {
		measured = smf.UsageReport{}
		for _, rep := range r.smf.Reports() {
			if rep.Header.SEID != est.CPSEID {
				continue
			}
			us, err := smf.UsageReports(rep.IEs)
			if err != nil {
				return err
			}
			for _, u := range us {
				if u.URRID != 1 {
					continue
				}
				measured.Uplink, measured.Downlink, measured.DLPackets = measured.Uplink+u.Uplink, measured.Downlink+u.Downlink, measured.DLPackets+u.DLPackets
				if string(u.Trigger) == string([]byte{0, 0x01, 0}) {
					return nil
				}
			}
		}
		return fmt.Errorf("none among %d Session Report Requests", len(r.smf.Reports()))
	})
	if measured.Downlink != 4*92 || measured.DLPackets != 4 || measured.Uplink != 0 {
		t.Fatalf("URR 1's reports up to VOLQU: %s; want the 4 downlink packets, 368 bytes, and nothing up", measured)
	}
	before := packets(t, r, "mbr_drops", 1)
	if out := r.u.forward(t, frame); len(out) != 0 {
		t.Fatalf("a downlink packet past the quota left on port %d", out[0].port)
	}
	if after := packets(t, r, "mbr_drops", 1); after != before+1 {
		t.Fatalf("mbr_drops[1] went from %d to %d for the packet past the quota", before, after)
	}
	eventually(t, programTimeout, "the object's gates", func() error {
		if g := r.awaitN4Sessions(t, 1)[0].Spec.Gates; g == nil || g.Uplink != junctionv1.GateClosed || g.Downlink != junctionv1.GateClosed {
			return fmt.Errorf("spec.gates %+v, want both closed", g)
		}
		return nil
	})

	quota(1_000_000)
	if up, down := mbrCells(t, r, usage); !proto.Equal(up, free5GCAMBR) || !proto.Equal(down, free5GCAMBR) {
		t.Fatalf("with a new quota: uplink_mbr %v, downlink_mbr %v; want the AMBR's %v", up, down, free5GCAMBR)
	}
	if out := r.u.forward(t, frame); len(out) != 1 {
		t.Fatalf("a downlink packet with a new quota: %d frames left, want 1", len(out))
	}
}

// TestN4QuotaValidityAndHoldingTimes: free5GC's SMF, charging online, gives a URR a Volume Quota
// with a Quota Validity Time, which it encodes as the NTP time the validity ends (TS 29.244
// §8.2.132 says seconds; docs/n4.md). When it ends, the remaining quota is discarded (§5.2.2.2.1):
// a Usage Report says QUVTI, no earlier than that time, and the gates close; a new quota with a
// validity in seconds opens them. Then a Quota Holding Time of 2 s with QUHTI: a downlink packet
// every 400 ms for 3 s keeps the quota; once they stop, QUHTI comes and the gates close.
func TestN4QuotaValidityAndHoldingTimes(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.14")
	r, est, _, usage := forwardingRig(t, ue, 0x92)
	frame := downlinkFrames(ue, 1)[0]
	closed := &p4v1.MeterConfig{}
	awaitGates := func(want *p4v1.MeterConfig, what string) {
		t.Helper()
		eventually(t, programTimeout, what, func() error {
			if up, down := mbrCells(t, r, usage); !proto.Equal(up, want) || !proto.Equal(down, want) || up == nil || down == nil {
				return fmt.Errorf("uplink_mbr %v, downlink_mbr %v", up, down)
			}
			return nil
		})
	}
	modify := func(what string, ies ...*ie.IE) {
		t.Helper()
		m, err := r.smf.Modify(ctx, est, ie.NewUpdateURR(append([]*ie.IE{ie.NewURRID(1)}, ies...)...))
		if err != nil || m.Cause() != ie.CauseRequestAccepted {
			t.Fatalf("Update URR with %s: %v, cause %d (%s)", what, err, m.Cause(), why(m))
		}
	}
	validUntil := time.Now().Add(2 * time.Second).Truncate(time.Second)
	modify("a quota valid for 2 s, as free5GC encodes it", ie.NewReportingTriggers(0x03, 0x81), // PERIO | VOLTH, VOLQU | QUVTI
		ie.NewVolumeQuota(0x01, 1_000_000, 0, 0), free5GCValidity(validUntil))
	if out := r.u.forward(t, frame); len(out) != 1 {
		t.Fatalf("a downlink packet within the quota's validity: %d frames left, want 1", len(out))
	}
	rep := usageReportWith(t, r, est.CPSEID, 1, []byte{0, 0, 0x08}) // QUVTI
	if rep.End.Before(validUntil) {
		t.Fatalf("QUVTI reported at %s, before the validity ended at %s", rep.End, validUntil)
	}
	awaitGates(closed, "both gates closed when the validity ended")
	if out := r.u.forward(t, frame); len(out) != 0 {
		t.Fatalf("a downlink packet after the validity ended left on port %d", out[0].port)
	}
	modify("a new quota valid for 60 s", ie.NewVolumeQuota(0x01, 1_000_000, 0, 0), ie.NewQuotaValidityTime(time.Minute))
	awaitGates(free5GCAMBR, "the gates open with a new quota")

	modify("a holding time of 2 s", ie.NewReportingTriggers(0x0b, 0x81), ie.NewQuotaHoldingTime(2*time.Second)) // PERIO | VOLTH | QUHTI
	var last time.Time
	for range 8 {
		if out := r.u.forward(t, frame); len(out) != 1 {
			t.Fatalf("a downlink packet within the holding time: %d frames left, want 1", len(out))
		}
		last = time.Now()
		time.Sleep(400 * time.Millisecond)
	}
	if early := reportsWith(t, r, est.CPSEID, 1, []byte{0x08, 0, 0}); len(early) > 0 {
		t.Fatalf("QUHTI while a packet came every 400 ms against a 2 s holding time: %s", early[0])
	}
	rep = usageReportWith(t, r, est.CPSEID, 1, []byte{0x08, 0, 0}) // QUHTI
	// End Time is in whole seconds (an NTP timestamp): the report went within the second after it.
	if sent := rep.End.Add(time.Second); sent.Sub(last) < 2*time.Second {
		t.Fatalf("QUHTI by %s, %v after the last packet; want the 2 s holding time", sent, sent.Sub(last))
	}
	awaitGates(closed, "both gates closed when the holding time passed")
}

// reportsWith is the Usage Reports with the trigger octets among the Session Report Requests
// the rig's SMF got, of the session cpSEID and its URR urr (0: any).
func reportsWith(t *testing.T, r n4Rig, cpSEID uint64, urr uint32, trigger []byte) []smf.UsageReport {
	t.Helper()
	var out []smf.UsageReport
	for _, req := range r.smf.Reports() {
		us, err := smf.UsageReports(req.IEs)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if (cpSEID == 0 || req.Header.SEID == cpSEID) && (urr == 0 || u.URRID == urr) && string(u.Trigger) == string(trigger) {
				out = append(out, u)
			}
		}
	}
	return out
}

// usageReportWith waits for the first of reportsWith and returns it.
func usageReportWith(t *testing.T, r n4Rig, cpSEID uint64, urr uint32, trigger []byte) smf.UsageReport {
	t.Helper()
	var found []smf.UsageReport
	eventually(t, programTimeout, fmt.Sprintf("a Usage Report with trigger %x", trigger), func() error {
		if found = reportsWith(t, r, cpSEID, urr, trigger); len(found) == 0 {
			return fmt.Errorf("none among %d Session Report Requests", len(r.smf.Reports()))
		}
		return nil
	})
	return found[0]
}

// free5GCValidity is a Quota Validity Time as free5GC's SMF encodes it: the NTP seconds (from
// 1900) of its end, not the seconds TS 29.244 §8.2.132 asks for.
func free5GCValidity(end time.Time) *ie.IE {
	return ie.New(ie.QuotaValidityTime, binary.BigEndian.AppendUint32(nil, uint32(end.Unix()+2_208_988_800)))
}

// TestN4OnlineChargingAsFree5GCDoesIt: free5GC's SMF, charging online, gives a session a URR with
// only the START trigger (internal/context: SetStartOfSDFTrigger) before its CHF grants anything:
// the first packet on the URR's PDRs is reported with START (TS 29.244 §8.2.41) and the volume
// measured so far, and no second one follows. The CHF's grant then comes as an Update URR with a
// Volume Quota, VOLQU and a Quota Validity Time without QUVTI (updateGrantedQuota sets QUVTI and
// then writes the triggers over it), which is taken: the packets go on.
func TestN4OnlineChargingAsFree5GCDoesIt(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.15")
	r, est, _, _ := forwardingRig(t, ue, 0x93)
	frame := downlinkFrames(ue, 1)[0]
	named := []*ie.IE{ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(3)}
	m, err := r.smf.Modify(ctx, est,
		ie.NewCreateURR(ie.NewURRID(3), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x10, 0), ie.NewMeasurementInformation(0)), // START
		ie.NewUpdatePDR(append([]*ie.IE{ie.NewPDRID(idlePDRUplink)}, named...)...),
		ie.NewUpdatePDR(append([]*ie.IE{ie.NewPDRID(idlePDRDownlink)}, named...)...))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a URR with START on both PDRs: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	startReports := func() int { return len(reportsWith(t, r, est.CPSEID, 3, []byte{0x10, 0, 0})) }
	time.Sleep(2 * time.Second) // two readings of the counters with no packet
	if n := startReports(); n != 0 {
		t.Fatalf("%d START reports before any packet", n)
	}
	if out := r.u.forward(t, frame); len(out) != 1 {
		t.Fatalf("the first downlink packet: %d frames left, want 1", len(out))
	}
	rep := usageReportWith(t, r, est.CPSEID, 3, []byte{0x10, 0, 0}) // START
	if rep.Downlink != 92 || rep.DLPackets != 1 || rep.Uplink != 0 {
		t.Fatalf("the START report: %s; want the one downlink packet of 92 bytes", rep)
	}

	m, err = r.smf.Modify(ctx, est, ie.NewUpdateURR(ie.NewURRID(3), ie.NewReportingTriggers(0, 0x01), // VOLQU
		ie.NewVolumeQuota(0x01, 1_000_000, 0, 0), free5GCValidity(time.Now().Add(time.Second))))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("the CHF's grant: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	time.Sleep(2 * time.Second) // past the validity time, which arms nothing without QUVTI
	for i := range 3 {
		if out := r.u.forward(t, frame); len(out) != 1 {
			t.Fatalf("downlink packet %d after the grant: %d frames left, want 1", i, len(out))
		}
	}
	time.Sleep(1500 * time.Millisecond) // a reading of them
	if n := startReports(); n != 1 {
		t.Fatalf("%d START reports; want the one of the first packet", n)
	}
}

// TestN4StopOfTraffic: a URR with START and STOPT (an SMF detecting an application for its PCF,
// TS 29.244 §5.11) on a UPF with spec.n4.trafficStopAfter 2s. The first downlink packet is
// reported with START; packets 300 ms apart are no stop; once 2 s pass without one, a report
// with STOPT counts what came since the START report, and the next packet is a new START.
func TestN4StopOfTraffic(t *testing.T) {
	ctx := context.Background()
	ue := netip.MustParseAddr("10.60.0.16")
	r, est, _, _ := forwardingRigWith(t, ue, 0x94, func(n *junctionv1.N4) { n.TrafficStopAfter = "2s" })
	frame := downlinkFrames(ue, 1)[0]
	named := []*ie.IE{ie.NewURRID(1), ie.NewURRID(2), ie.NewURRID(3)}
	m, err := r.smf.Modify(ctx, est,
		ie.NewCreateURR(ie.NewURRID(3), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x30, 0)), // START | STOPT
		ie.NewUpdatePDR(append([]*ie.IE{ie.NewPDRID(idlePDRUplink)}, named...)...),
		ie.NewUpdatePDR(append([]*ie.IE{ie.NewPDRID(idlePDRDownlink)}, named...)...))
	if err != nil || m.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("a URR with START and STOPT on both PDRs: %v, cause %d (%s)", err, m.Cause(), why(m))
	}
	start, stop := []byte{0x10, 0, 0}, []byte{0x20, 0, 0}
	time.Sleep(3 * time.Second) // longer than the stop time, with no traffic yet
	if n := len(reportsWith(t, r, est.CPSEID, 3, stop)); n != 0 {
		t.Fatalf("%d STOPT reports before any traffic", n)
	}
	send := func(what string) time.Time {
		t.Helper()
		if out := r.u.forward(t, frame); len(out) != 1 {
			t.Fatalf("%s: %d frames left, want 1", what, len(out))
		}
		return time.Now()
	}
	send("the first downlink packet")
	if rep := usageReportWith(t, r, est.CPSEID, 3, start); rep.Downlink != 92 || rep.DLPackets != 1 {
		t.Fatalf("the START report: %s; want the one downlink packet of 92 bytes", rep)
	}
	var last time.Time
	for i := range 4 {
		last = send(fmt.Sprintf("downlink packet %d", i+2))
		time.Sleep(300 * time.Millisecond)
	}
	if n := len(reportsWith(t, r, est.CPSEID, 3, stop)); n != 0 {
		t.Fatalf("%d STOPT reports while a packet came every 300 ms against a 2 s stop time", n)
	}
	rep := usageReportWith(t, r, est.CPSEID, 3, stop)
	// End Time is in whole seconds (an NTP timestamp): the report went within the second after it.
	// Under 6 s: the UPF's stop time, not the default of 10 s.
	if sent := rep.End.Add(time.Second); sent.Sub(last) < 2*time.Second || sent.Sub(last) > 6*time.Second {
		t.Fatalf("STOPT by %s, %v after the last packet; want the 2 s stop time", sent, sent.Sub(last))
	}
	if rep.Downlink != 4*92 || rep.DLPackets != 4 {
		t.Fatalf("the STOPT report: %s; want the four packets since the START report, 368 bytes", rep)
	}
	send("a packet after the stop")
	eventually(t, programTimeout, "a second START report", func() error {
		if n := len(reportsWith(t, r, est.CPSEID, 3, start)); n != 2 {
			return fmt.Errorf("%d START reports", n)
		}
		return nil
	})
	if n := len(reportsWith(t, r, est.CPSEID, 3, stop)); n != 1 {
		t.Fatalf("%d STOPT reports; want the one of the stop", n)
	}
}
