package n4

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"github.com/junction-atsss/junction/internal/smf"
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
	if c := r.closes(); c[scopeSession] != [2]bool{true, true} || len(c) != 1 {
		t.Fatalf("a used-up URR named by every PDR closes %v, want both directions of the whole session", c)
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

// TestQuotaValidityAndHoldingTimes: a Quota Validity Time is seconds (TS 29.244 §8.2.132) or, as
// free5GC's SMF sends it, the NTP time it ends; once it has ended, or once the
// URR's directions have carried no packet for its Quota Holding Time (§8.2.48), the remaining
// quota is discarded (§5.2.2.2.1): QUVTI or QUHTI, and the gates of a URR that holds a quota
// close (a URR without one has none to discard); without its trigger, a time arms nothing. A
// new quota gives it quota again.
func TestQuotaValidityAndHoldingTimes(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	r := &Rules{PDRs: map[uint16]*PDR{1: {ID: 1, Source: ifaceAccess, URRIDs: []uint32{1}}, 2: {ID: 2, Source: ifaceCore, URRIDs: []uint32{1}}}}
	create := func(ies ...*ie.IE) (*URR, error) {
		u, err := decodeURR(ie.NewCreateURR(append([]*ie.IE{ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0)}, ies...)...), nil)
		if err == nil {
			u.started(t0, Usage{}, true)
			r.URRs = map[uint32]*URR{1: u}
		}
		return u, err
	}
	quota := ie.NewVolumeQuota(0x01, 1000, 0, 0)

	for _, tc := range []struct {
		name string
		qvt  *ie.IE
	}{
		{"seconds", ie.New(ie.QuotaValidityTime, []byte{0, 0, 0, 20})},
		{"seconds, go-pfcp", ie.NewQuotaValidityTime(20 * time.Second)},
		// free5GC's SMF (internal/pfcp/message/build.go): the seconds from 1900 to the end.
		{"free5GC's NTP time", ie.New(ie.QuotaValidityTime, binary.BigEndian.AppendUint32(nil, uint32(t0.Unix()+20+2_208_988_800)))},
	} {
		u, err := create(ie.NewReportingTriggers(0, triggerVOLQU|triggerQUVTI), quota, tc.qvt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !u.QuotaValidUntil.Equal(t0.Add(20 * time.Second)) {
			t.Fatalf("%s: valid until %s, want 20 s after the URR came (%s)", tc.name, u.QuotaValidUntil, t0.Add(20*time.Second))
		}
		if trig, ok := u.exhausts(r, t0.Add(19*time.Second), Usage{}); ok {
			t.Fatalf("%s: at 19 s of 20: %x", tc.name, trig)
		}
		if trig, ok := u.exhausts(r, t0.Add(20*time.Second), Usage{}); !ok || trig != reportQUVTI {
			t.Fatalf("%s: at 20 s of 20: %x %v, want QUVTI", tc.name, trig, ok)
		}
	}
	// free5GC's re-grant: a validity time without QUVTI, which the IE is conditional on, arms nothing.
	u, err := create(ie.NewReportingTriggers(0, triggerVOLQU), quota, ie.New(ie.QuotaValidityTime, []byte{0, 0, 0, 20}))
	if err != nil {
		t.Fatal(err)
	}
	if trig, ok := u.exhausts(r, t0.Add(time.Hour), Usage{}); ok {
		t.Fatalf("a validity time without QUVTI: %x once it ended; want nothing (the SMF would never hear of the discard)", trig)
	}
	u, _ = create(ie.NewReportingTriggers(0, triggerQUVTI), ie.New(ie.QuotaValidityTime, []byte{0, 0, 0, 20}))
	if !r.polled() {
		t.Fatal("a URR whose validity time is armed is not read")
	}
	u.Exhausted, u.QuotaValidUntil = reportQUVTI, time.Time{} // as observeUsage leaves it
	if c := r.closes(); len(c) != 0 {
		t.Fatalf("a URR without a quota closes %v at the end of its validity; it has nothing to discard", c)
	}
	if !r.polled() {
		t.Fatal("a URR that owes its QUVTI report is not read (an unanswered report would never go again)")
	}
	u.ExhaustedReported = true // the SMF accepted it
	if r.polled() {
		t.Fatal("a URR whose validity ended, reported, with nothing else to watch, is still read every second")
	}

	// Holding time 10 s: a downlink packet at 5 s; none after.
	if _, err := create(ie.NewReportingTriggers(triggerQUHTI, triggerVOLQU), quota, ie.NewQuotaHoldingTime(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	u = r.URRs[1]
	for _, step := range []struct {
		at    time.Duration
		usage Usage
		want  bool
	}{{0, Usage{}, false}, {5 * time.Second, Usage{DLPackets: 1, DLBytes: 100}, false}, {14 * time.Second, Usage{DLPackets: 1, DLBytes: 100}, false}, {15 * time.Second, Usage{DLPackets: 1, DLBytes: 100}, true}} {
		now := t0.Add(step.at)
		u.sawPackets(r, now, step.usage)
		trig, ok := u.exhausts(r, now, step.usage)
		if ok != step.want || (ok && trig != reportQUHTI) {
			t.Fatalf("at %v (last packet at 5 s, holding 10 s): %x %v, want QUHTI %v", step.at, trig, ok, step.want)
		}
	}
	u.Exhausted = reportQUHTI
	if c := r.closes(); c[scopeSession] != [2]bool{true, true} {
		t.Fatalf("a discarded quota closes %v; want both directions of the session", c)
	}
	next, err := decodeURR(ie.NewUpdateURR(ie.NewURRID(1), ie.NewVolumeQuota(0x01, 5000, 0, 0)), u)
	if err != nil || next.Exhausted != ([3]byte{}) {
		t.Fatalf("an Update URR with a new quota after QUHTI: %v, exhausted %x; want quota again", err, next.Exhausted)
	}

	// A trigger without its time, an IE of the wrong length: refused, naming it.
	for _, tc := range []struct {
		ies       []*ie.IE
		cause     uint8
		offending uint16
	}{
		{[]*ie.IE{ie.NewReportingTriggers(0, triggerQUVTI)}, CauseConditionalIEMissing, ie.QuotaValidityTime},
		{[]*ie.IE{ie.NewReportingTriggers(triggerQUHTI, 0)}, CauseConditionalIEMissing, ie.QuotaHoldingTime},
		{[]*ie.IE{ie.NewReportingTriggers(0, triggerQUVTI), ie.New(ie.QuotaValidityTime, []byte{0, 20})}, CauseInvalidLength, ie.QuotaValidityTime},
	} {
		_, err := create(tc.ies...)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Cause != tc.cause || ref.OffendingIE != tc.offending {
			t.Errorf("URR with %v: %v, want cause %d with Offending IE %d", tc.ies, err, tc.cause, tc.offending)
		}
	}
}

// TestStartOfTraffic: a URR with START owes a report once the directions it measures carry a
// packet after it asked (TS 29.244 §8.2.41: START), and only then; an Update URR that sends START
// again does not ask anew, one that drops it owes nothing.
func TestStartOfTraffic(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	r := &Rules{PDRs: map[uint16]*PDR{1: {ID: 1, Source: ifaceAccess, URRIDs: []uint32{1}}, 2: {ID: 2, Source: ifaceCore}}}
	u, err := decodeURR(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(triggerSTART, 0)), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.URRs = map[uint32]*URR{1: u}
	before := Usage{ULPackets: 5, ULBytes: 500, DLPackets: 7, DLBytes: 700}
	u.started(t0, before, true)
	if !r.polled() {
		t.Fatal("a URR waiting for its first packet is not read")
	}
	downlinkOnly := before
	downlinkOnly.DLPackets, downlinkOnly.DLBytes = 8, 800
	if u.sawStart(r, before) || u.sawStart(r, downlinkOnly) {
		t.Fatal("START seen with no uplink packet since it was asked for (the URR measures the uplink only)")
	}
	if trig, ok := u.due(r, t0.Add(time.Second), downlinkOnly); ok {
		t.Fatalf("a report due before the first packet: %x", trig)
	}
	first := downlinkOnly
	first.ULPackets, first.ULBytes = 6, 600
	if !u.sawStart(r, first) {
		t.Fatal("the first uplink packet is not the start of traffic")
	}
	if trig, ok := u.due(r, t0.Add(2*time.Second), first); !ok || trig != reportSTART {
		t.Fatalf("after the first packet: %x %v, want START", trig, ok)
	}
	again, err := decodeURR(ie.NewUpdateURR(ie.NewURRID(1), ie.NewReportingTriggers(triggerSTART, 0)), u)
	if err != nil || again.startGiven || !again.StartOwed {
		t.Fatalf("an Update URR that sends START again: %v, asked anew %v, owed %v; want the report still owed, nothing asked anew", err, again.startGiven, again.StartOwed)
	}
	dropped, err := decodeURR(ie.NewUpdateURR(ie.NewURRID(1), ie.NewReportingTriggers(triggerPERIO, 0), ie.NewMeasurementPeriod(time.Minute)), u)
	if err != nil || dropped.StartOwed || dropped.StartBase != nil {
		t.Fatalf("an Update URR without START: %v, owed %v; want nothing owed", err, dropped.StartOwed)
	}
}

// TestStopOfTraffic: a URR with START and STOPT reports the first packet its directions carry,
// then, once they have carried none for the stop time (10 s here), the stop of traffic, once;
// the stop arms START again, so the next packet is a new start (TS 29.244 §5.11: application
// detection reports each start and stop). A pause shorter than the stop time is no stop, a URR
// that never carried traffic never stops, and one with STOPT alone arms no START.
func TestStopOfTraffic(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	const stopAfter = 10 * time.Second
	r := &Rules{PDRs: map[uint16]*PDR{1: {ID: 1, Source: ifaceAccess, URRIDs: []uint32{1}}, 2: {ID: 2, Source: ifaceCore, URRIDs: []uint32{1}}}}
	u, err := decodeURR(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(triggerSTART|triggerSTOPT, 0)), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.URRs = map[uint32]*URR{1: u}
	before := Usage{DLPackets: 3, DLBytes: 300} // what the session carried before the URR came
	u.started(t0, before, true)
	if !r.polled() {
		t.Fatal("a URR with STOPT is not read")
	}
	dl := func(packets uint64) Usage { return Usage{DLPackets: packets, DLBytes: 100 * packets} }
	accept := func(at time.Duration, cur Usage) { // the SMF accepted the report due
		trig, _ := u.due(r, t0.Add(at), cur)
		u.accepted(trig, t0.Add(at), cur)
	}
	for _, step := range []struct {
		at   time.Duration
		cur  Usage
		want [3]byte // the report due after this reading; zero: none
		then bool    // the SMF accepts it
	}{
		{1 * time.Second, before, [3]byte{}, false},  // nothing since the URR came
		{15 * time.Second, before, [3]byte{}, false}, // no traffic yet: nothing to stop
		{16 * time.Second, dl(4), reportSTART, true}, // the first packet
		{20 * time.Second, dl(9), [3]byte{}, false},
		{29 * time.Second, dl(9), [3]byte{}, false}, // 9 s without a packet: a pause
		{30 * time.Second, dl(12), [3]byte{}, false},
		{39 * time.Second, dl(12), [3]byte{}, false},
		{40 * time.Second, dl(12), reportSTOPT, false}, // 10 s since the last packet
		{45 * time.Second, dl(12), reportSTOPT, true},  // still owed, and once only
		{60 * time.Second, dl(12), [3]byte{}, false},   // stopped: no second stop
		{61 * time.Second, dl(13), reportSTART, true},  // a new start
		{75 * time.Second, dl(13), reportSTOPT, true},
	} {
		u.observe(r, t0.Add(step.at), step.cur, stopAfter)
		trig, ok := u.due(r, t0.Add(step.at), step.cur)
		if trig != step.want || ok != (step.want != [3]byte{}) {
			t.Fatalf("at %v with %d downlink packets: due %x %v, want %x", step.at, step.cur.DLPackets, trig, ok, step.want)
		}
		if step.then {
			accept(step.at, step.cur)
		}
	}

	// STOPT alone: a stop, and no START armed by it.
	alone, err := decodeURR(ie.NewUpdateURR(ie.NewURRID(1), ie.NewReportingTriggers(triggerSTOPT, 0)), u)
	if err != nil || alone.StartReport || alone.StartBase != nil || !alone.StopReport {
		t.Fatalf("an Update URR with STOPT alone: %v, START %v (base %v), STOPT %v", err, alone.StartReport, alone.StartBase, alone.StopReport)
	}
	r.URRs[1], u = alone, alone
	for _, step := range []struct {
		at   time.Duration
		cur  Usage
		want [3]byte
	}{{80 * time.Second, dl(14), [3]byte{}}, {90 * time.Second, dl(14), reportSTOPT}} {
		u.observe(r, t0.Add(step.at), step.cur, stopAfter)
		if trig, _ := u.due(r, t0.Add(step.at), step.cur); trig != step.want {
			t.Fatalf("STOPT alone, at %v: due %x, want %x", step.at, trig, step.want)
		}
	}
	if u.StartBase != nil {
		t.Fatal("a stop armed START on a URR without it")
	}
	// Detecting an application (its PDRs name the same Application ID): the start and the stop
	// say which, in Application Detection Information; a periodic report does not.
	for _, id := range []uint16{1, 2} {
		r.PDRs[id].ApplicationID = "video"
	}
	for _, tc := range []struct {
		trigger [3]byte
		app     string
	}{{reportSTART, "video"}, {reportSTOPT, "video"}, {reportPERIO, ""}} {
		got := ""
		rep := u.report(ie.UsageReportWithinSessionReportRequest, r, tc.trigger, t0.Add(95*time.Second), dl(14))
		for _, x := range rep.ChildIEs {
			if x.Type == ie.ApplicationDetectionInformation {
				if got, err = x.ApplicationID(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got != tc.app {
			t.Errorf("a report with trigger %x of an application's URR: Application ID %q, want %q", tc.trigger, got, tc.app)
		}
	}
	dropped, err := decodeURR(ie.NewUpdateURR(ie.NewURRID(1), ie.NewReportingTriggers(triggerPERIO, 0), ie.NewMeasurementPeriod(time.Minute)), u)
	if err != nil || dropped.StopOwed || dropped.Flowing || dropped.StopReport {
		t.Fatalf("an Update URR without STOPT: %v, owed %v, flowing %v; want nothing owed", err, dropped.StopOwed, dropped.Flowing)
	}
}

// TestMeasurementBeforeAndAfterQoSEnforcement: a URR without MBQE measures what went on past the
// session's MBR policer (TS 29.244 §5.2.2.2.1), one with MBQE what arrived: in its reports and
// against its quota. A reading whose counters went back (a device restart) counts from zero.
func TestMeasurementBeforeAndAfterQoSEnforcement(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	r := &Rules{PDRs: map[uint16]*PDR{1: {ID: 1, Source: ifaceAccess, URRIDs: []uint32{1, 2}}, 2: {ID: 2, Source: ifaceCore, URRIDs: []uint32{1, 2}}}}
	urr := func(id uint32, measurementInformation uint8) *URR {
		u, err := decodeURR(ie.NewCreateURR(ie.NewURRID(id), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x01, 0x01),
			ie.NewMeasurementPeriod(10*time.Second), ie.NewVolumeQuota(0x01, 10_000, 0, 0), ie.NewMeasurementInformation(measurementInformation)), nil)
		if err != nil {
			t.Fatal(err)
		}
		u.started(t0, Usage{}, true)
		return u
	}
	before, after := urr(1, 0x11), urr(2, 0x10) // MBQE | MNOP; MNOP
	r.URRs = map[uint32]*URR{1: before, 2: after}
	if !before.BeforeQoS || after.BeforeQoS {
		t.Fatalf("BeforeQoS %v with MBQE, %v without", before.BeforeQoS, after.BeforeQoS)
	}

	// 100 packets of 100 bytes each way arrived; the policer dropped 30 up and 60 down.
	cur := Usage{ULPackets: 100, ULBytes: 10_000, DLPackets: 100, DLBytes: 10_000,
		Policed: Policed{ULPackets: 30, ULBytes: 3_000, DLPackets: 60, DLBytes: 6_000}}
	for _, c := range []struct {
		u                  *URR
		up, down, upP, dnP uint64
	}{{before, 10_000, 10_000, 100, 100}, {after, 7_000, 4_000, 70, 40}} {
		reps, err := smf.UsageReports([]*ie.IE{c.u.report(ie.UsageReportWithinSessionReportRequest, r, reportPERIO, t0.Add(10*time.Second), cur)})
		if err != nil || len(reps) != 1 {
			t.Fatalf("URR %d's report: %v, %d decoded", c.u.ID, err, len(reps))
		}
		if g := reps[0]; g.Total != c.up+c.down || g.Uplink != c.up || g.Downlink != c.down || g.TotalPackets != c.upP+c.dnP || g.UplinkPackets != c.upP || g.DLPackets != c.dnP {
			t.Errorf("URR %d reports %s (total %d B, %d packets); want %d B in %d packets up, %d B in %d down",
				c.u.ID, g, g.Total, g.TotalPackets, c.up, c.upP, c.down, c.dnP)
		}
	}
	// 20,000 bytes arrived, 11,000 went on: the 10,000-byte quota is used up either way; at
	// 9,000 bytes gone on (1,000 more policed), only the one measured before QoS enforcement is.
	if _, ok := after.exhausts(r, t0.Add(time.Second), cur); !ok {
		t.Error("11,000 bytes after QoS enforcement did not use up a 10,000-byte quota")
	}
	cur.Policed.DLBytes += 2_000
	if _, ok := after.exhausts(r, t0.Add(time.Second), cur); ok {
		t.Error("9,000 bytes after QoS enforcement used up a 10,000-byte quota")
	}
	if _, ok := before.exhausts(r, t0.Add(time.Second), cur); !ok {
		t.Error("20,000 bytes before QoS enforcement did not use up a 10,000-byte quota")
	}

	// A device restart: the counters start again from zero, the policed ones too.
	after.reported(t0.Add(10*time.Second), cur)
	restarted := Usage{ULPackets: 5, ULBytes: 500, Policed: Policed{ULPackets: 2, ULBytes: 200}}
	if v := after.measured(r, after.Base, restarted); v.ULPackets != 3 || v.ULBytes != 300 {
		t.Errorf("after a restart, %d packets and %d bytes up after QoS enforcement; want 3 and 300", v.ULPackets, v.ULBytes)
	}
}

// TestUsageAcrossAUPFRestart: a session's usage as its URRs measure it goes on across a UPF
// restart, whose replay starts its cells from zero: a reading lower than the last carries what
// the last held, so a URR measures on without a loss or a jump (an idle period's carry is
// test/operator's TestN4UsageAcrossAnIdlePeriod).
func TestUsageAcrossAUPFRestart(t *testing.T) {
	up := func(packets uint64) Usage { return Usage{ULPackets: packets, ULBytes: 100 * packets} }
	s := &State{}
	for _, c := range []struct {
		raw, want uint64
	}{{10, 10}, {15, 15}, {4, 19} /* restarted after 15 */, {6, 21}, {6, 21}, {1, 22} /* again */} {
		if got := s.counted(up(c.raw)); got != up(c.want) {
			t.Errorf("cells at %d packets: %d packets, %d bytes counted; want %d, %d", c.raw, got.ULPackets, got.ULBytes, c.want, 100*c.want)
		}
	}
	u := &URR{BeforeQoS: true}
	if v := u.measured(&Rules{}, up(19), s.counted(up(3))); v != up(5) {
		t.Errorf("since a report at 19 packets: %d packets, want 5", v.ULPackets)
	}
}
