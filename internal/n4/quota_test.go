package n4

import (
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
)

// TestQuotas: a quota counts from when it was given, not from the URR's last report (a
// threshold's report in between moves neither); a time quota is used up once its seconds have
// passed since then; an Update URR with a new quota gives the URR quota again; an Update URR that
// sends Reporting Triggers without the values it keeps keeps the URR's (TS 29.244 §7.5.4.4:
// an Update URR carries what changes).
func TestQuotas(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ul := uint8(ifaceAccess)
	r := &Rules{PDRs: map[uint16]*PDR{1: {ID: 1, Source: ul, URRIDs: []uint32{1}}, 2: {ID: 2, Source: ifaceCore, URRIDs: []uint32{1}}}}
	total := uint64(1000)
	u := &URR{ID: 1, Volume: true, VolumeQuota: &VolumeThreshold{Total: &total}, VolumeQuotaReport: true, TimeQuota: 60,
		Since: t0, QuotaSince: t0}
	r.URRs = map[uint32]*URR{1: u}

	// 600 bytes, reported (by a threshold, say): the report moves Base, not the quota's.
	u.reported(t0.Add(time.Second), Usage{ULBytes: 400, DLBytes: 200})
	if trig, ok := u.exhausts(r, t0.Add(2*time.Second), Usage{ULBytes: 500, DLBytes: 400}); ok {
		t.Fatalf("900 bytes of a 1,000-byte quota: used up (%x)", trig)
	}
	if trig, ok := u.exhausts(r, t0.Add(2*time.Second), Usage{ULBytes: 600, DLBytes: 400}); !ok || trig != reportVOLQU {
		t.Fatalf("1,000 bytes of a 1,000-byte quota: %x %v, want VOLQU", trig, ok)
	}
	if trig, ok := u.exhausts(r, t0.Add(60*time.Second), Usage{}); !ok || trig != reportTIMQU {
		t.Fatalf("60 s of a 60 s quota: %x %v, want TIMQU", trig, ok)
	}
	u.Exhausted = reportVOLQU
	if up, down := r.closes(); !up || !down {
		t.Fatalf("a used-up URR named by both directions closes up %v, down %v", up, down)
	}
	if _, ok := u.exhausts(r, t0.Add(90*time.Second), Usage{ULBytes: 1 << 20}); ok {
		t.Fatal("a used-up quota used up again")
	}

	// An Update URR with a new Volume Quota and the triggers alone: quota again, the period kept.
	u.Period = 10
	upd := ie.NewUpdateURR(ie.NewURRID(1), ie.NewReportingTriggers(0x01, 0x01), ie.NewVolumeQuota(0x01, 5000, 0, 0))
	next, err := decodeURR(upd, u)
	if err != nil {
		t.Fatal(err)
	}
	if next.Exhausted != ([3]byte{}) || next.ExhaustedReported || !next.quotaGiven || *next.VolumeQuota.Total != 5000 || next.Period != 10 {
		t.Fatalf("after an Update URR with a new quota: exhausted %x (reported %v), given %v, quota %d, period %d; want quota again, 5,000 bytes, the 10 s period kept",
			next.Exhausted, next.ExhaustedReported, next.quotaGiven, *next.VolumeQuota.Total, next.Period)
	}
	next.started(t0.Add(100*time.Second), Usage{ULBytes: 7000}, false)
	if next.QuotaSince != t0.Add(100*time.Second) || next.QuotaBase.ULBytes != 7000 || next.Since != u.Since {
		t.Fatalf("the new quota counts from %s and %d bytes, the measurement from %s; want now, 7,000 and the old start", next.QuotaSince, next.QuotaBase.ULBytes, next.Since)
	}
}
