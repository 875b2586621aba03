package operator

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

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
	ue, gnb := netip.MustParseAddr("10.60.0.13"), netip.MustParseAddr("198.51.100.10")
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	est, _, usage := forwardingSession(t, r, ue, gnb, 0x91)
	meters := func() (up, down *p4v1.MeterConfig) {
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
	ambr := &p4v1.MeterConfig{Cir: 125_000_000, Cburst: 12_500_000, Pir: 125_000_000, Pburst: 12_500_000} // 1,000,000 kbit/s
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
		if up, down := meters(); !proto.Equal(up, closed) || !proto.Equal(down, closed) || up == nil || down == nil {
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
	before, _ := r.u.counterPackets(r.sch, "mbr_drops", 1)
	if out := r.u.forward(t, frame); len(out) != 0 {
		t.Fatalf("a downlink packet past the quota left on port %d", out[0].port)
	}
	if after, _ := r.u.counterPackets(r.sch, "mbr_drops", 1); after != before+1 {
		t.Fatalf("mbr_drops[1] went from %d to %d for the packet past the quota", before, after)
	}
	eventually(t, programTimeout, "the object's gates", func() error {
		if g := r.awaitN4Sessions(t, 1)[0].Spec.Gates; g == nil || g.Uplink != junctionv1.GateClosed || g.Downlink != junctionv1.GateClosed {
			return fmt.Errorf("spec.gates %+v, want both closed", g)
		}
		return nil
	})

	quota(1_000_000)
	if up, down := meters(); !proto.Equal(up, ambr) || !proto.Equal(down, ambr) {
		t.Fatalf("with a new quota: uplink_mbr %v, downlink_mbr %v; want the AMBR's %v", up, down, ambr)
	}
	if out := r.u.forward(t, frame); len(out) != 1 {
		t.Fatalf("a downlink packet with a new quota: %d frames left, want 1", len(out))
	}
}
