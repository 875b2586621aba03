package n4

// Usage Reporting Rules (TS 29.244 §5.2.2): Junction measures a session's volume and duration
// and reports it at deletion, when a URR is removed, when the SMF queries it, and on the
// periodic, volume threshold and time threshold triggers (Session Report Request). What it
// measures is the pipeline's per-session usage counters (docs/pipeline.md, "Usage counters"):
// one uplink and one downlink count per session and per QoS flow of its own, so a URR measures
// in each direction all the session's PDRs, its default flow's or one flow's (urrScope), or
// none. A volume or time quota used up closes the gates of the URR's directions, of the flows
// it measures (spec.gates, spec.qosFlows[].gates), until the SMF gives a new one, and is
// reported on VOLQU and TIMQU; so
// is a quota whose validity time ends or whose directions carry nothing for its holding time
// (QUVTI, QUHTI: the remaining quota is discarded). The first packet after a URR with START
// came is reported (free5GC's online charging asks for it before it has a quota to give), and
// with STOPT the first spell of Config.TrafficStop without one after traffic (application
// detection's start and stop, §5.11: with both, each stop arms START again). Linked usage and
// event reporting are detection the pipeline does not do: refused, never ignored (docs/n4.md).

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Usage is what a session carried: IP packets and their bytes, per direction, as they arrived,
// and how many of those its MBR policer dropped (a gate closed is a policer at rate zero).
type Usage struct {
	ULPackets uint64  `json:"ulPackets"`
	ULBytes   uint64  `json:"ulBytes"`
	DLPackets uint64  `json:"dlPackets"`
	DLBytes   uint64  `json:"dlBytes"`
	Policed   Policed `json:"policed,omitzero"`
	// Flows are the session's QoS flows of their own (spec.qosFlows, by position): what each
	// carried of the above, where the pipeline counts them apart (docs/pipeline.md, "QoS flows").
	Flows [junctionv1.MaxQoSFlows]FlowUsage `json:"flows,omitzero"`
	// Retired is what flows the session no longer has carried (movedFlows): not its default
	// flow's either.
	Retired FlowUsage `json:"retired,omitzero"`
}

// FlowUsage is what one QoS flow of a session's own carried, counted as Usage is.
type FlowUsage struct {
	ULPackets uint64  `json:"ulPackets,omitempty"`
	ULBytes   uint64  `json:"ulBytes,omitempty"`
	DLPackets uint64  `json:"dlPackets,omitempty"`
	DLBytes   uint64  `json:"dlBytes,omitempty"`
	Policed   Policed `json:"policed,omitzero"`
}

// usage is f as a session's Usage, without flows.
func (f FlowUsage) usage() Usage {
	return Usage{ULPackets: f.ULPackets, ULBytes: f.ULBytes, DLPackets: f.DLPackets, DLBytes: f.DLBytes, Policed: f.Policed}
}

// FlowOf is u's own counts (its flows left out) as a FlowUsage: a flow's cells read as a session's are.
func FlowOf(u Usage) FlowUsage {
	return FlowUsage{ULPackets: u.ULPackets, ULBytes: u.ULBytes, DLPackets: u.DLPackets, DLBytes: u.DLBytes, Policed: u.Policed}
}

// URR scopes: what a URR measures (Rules.urrScope), besides one QoS flow of the session's own
// (its position, 0 on).
const (
	scopeSession = -2 // all the session's traffic
	scopeDefault = -1 // its default QoS flow's: the session's less its flows of their own
)

// in is what u says of a URR's scope.
func (u Usage) in(scope int) Usage {
	switch scope {
	case scopeSession:
		u.Flows, u.Retired = [junctionv1.MaxQoSFlows]FlowUsage{}, FlowUsage{}
		return u
	case scopeDefault:
		out := u.in(scopeSession).each(u.Retired.usage(), floorSub)
		for _, f := range u.Flows {
			out = out.each(f.usage(), floorSub)
		}
		return out
	}
	return u.Flows[scope].usage()
}

// Policed is what a session's MBR policer dropped, per direction: packets and their bytes as the
// policer saw them (docs/n4.md, "Volume").
type Policed struct {
	ULPackets uint64 `json:"ulPackets,omitempty"`
	ULBytes   uint64 `json:"ulBytes,omitempty"`
	DLPackets uint64 `json:"dlPackets,omitempty"`
	DLBytes   uint64 `json:"dlBytes,omitempty"`
}

// since is u less an earlier reading base. A reading below base counts from zero: cells that
// started again without the endpoint reading them between (State.counted carries what it saw),
// such as a UPF restart while the operator was down.
func (u Usage) since(base Usage) Usage {
	if u.wentBack(base) {
		return u
	}
	return u.each(base, func(a, b uint64) uint64 {
		if a < b {
			return a // this flow's cell started again
		}
		return a - b
	})
}

// plus is u and v together.
func (u Usage) plus(v Usage) Usage {
	return u.each(v, add)
}

// each is op of every count of u and the same of v: the session's, each flow's and the retired.
func (u Usage) each(v Usage, op func(a, b uint64) uint64) Usage {
	out := FlowOf(u).each(FlowOf(v), op).usage()
	for i := range u.Flows {
		out.Flows[i] = u.Flows[i].each(v.Flows[i], op)
	}
	out.Retired = u.Retired.each(v.Retired, op)
	return out
}

// each is op of every count of f and the same of g.
func (f FlowUsage) each(g FlowUsage, op func(a, b uint64) uint64) FlowUsage {
	p, q := f.Policed, g.Policed
	return FlowUsage{op(f.ULPackets, g.ULPackets), op(f.ULBytes, g.ULBytes), op(f.DLPackets, g.DLPackets), op(f.DLBytes, g.DLBytes),
		Policed{op(p.ULPackets, q.ULPackets), op(p.ULBytes, q.ULBytes), op(p.DLPackets, q.DLPackets), op(p.DLBytes, q.DLBytes)}}
}

// flowMoves says where each QoS flow of a session's new rules r was under its rules cur, by QFI:
// from[j] is the position under cur of the flow at j under r, -1 for a new flow (or none). moved:
// a flow changes position, comes where another was, or goes. A flow's position is its cell
// (docs/pipeline.md, "QoS flows"): one that moves starts again from zero there.
func flowMoves(cur, r *Rules) (from [junctionv1.MaxQoSFlows]int, moved bool) {
	before, err1 := qosOf(cur)
	after, err2 := qosOf(r)
	for j := range from {
		from[j] = j
	}
	if err1 != nil || err2 != nil { // r is refused (makePlan), cur was not
		return from, false
	}
	for j := range from {
		from[j] = -1
		if j < len(after.flows) {
			from[j] = slices.IndexFunc(before.flows, func(f junctionv1.QoSFlow) bool { return f.QFI == after.flows[j].QFI })
		}
		moved = moved || (from[j] != j && (j < len(after.flows) || j < len(before.flows)))
	}
	return from, moved
}

// movedFlows is u with its flows where flowMoves puts them; what flows that go counted is retired.
func (u Usage) movedFlows(from [junctionv1.MaxQoSFlows]int) Usage {
	out := u
	var kept [junctionv1.MaxQoSFlows]bool
	for j, i := range from {
		out.Flows[j] = FlowUsage{}
		if i >= 0 {
			out.Flows[j], kept[i] = u.Flows[i], true
		}
	}
	for i, f := range u.Flows {
		if !kept[i] {
			out.Retired = out.Retired.each(f, add)
		}
	}
	return out
}

// wentBack: u counts fewer packets than an earlier reading, so its cells started again from zero.
func (u Usage) wentBack(earlier Usage) bool {
	return u.ULPackets < earlier.ULPackets || u.DLPackets < earlier.DLPackets
}

// usage reads the session's usage as its URRs measure it (State.counted); while it has no PDR,
// what it had when its rules left it.
func (e *Endpoint) usage(ctx context.Context, s *State) (Usage, error) {
	if s.Parked {
		return s.Carried, nil
	}
	raw, err := e.store.Usage(ctx, s)
	if err != nil {
		return Usage{}, err
	}
	return s.counted(raw), nil
}

// counted is the session's usage from raw, a reading of its cells: Carried and raw. Cells that
// went back since the last reading were zeroed by a UPF restart (and the replay after it):
// what they held then is carried first. What came between that reading and the restart is
// lost; the counters are read once a second while a URR's triggers or quotas need them.
func (s *State) counted(raw Usage) Usage {
	if raw.wentBack(s.lastRaw) {
		s.Carried = s.Carried.plus(s.lastRaw)
	}
	s.lastRaw = raw
	return s.Carried.plus(raw)
}

// carryMovedFlows follows the session's QoS flows to the cells its new rules give them
// (flowMoves), once they are on the device: the programmer zeroed each cell a flow moved into
// (a cell another flow left), so what the flow counted up to the last reading, taken just
// before, is carried, and what it counts from there is the cell's.
func (s *State) carryMovedFlows(from [junctionv1.MaxQoSFlows]int) {
	s.Carried, s.lastRaw = s.Carried.movedFlows(from), s.lastRaw.movedFlows(from)
	for j, i := range from {
		if i != j {
			s.Carried.Flows[j] = s.Carried.Flows[j].each(s.lastRaw.Flows[j], add)
			s.lastRaw.Flows[j] = FlowUsage{}
		}
	}
	s.Carried.Retired = s.Carried.Retired.each(s.lastRaw.Retired, add)
	s.lastRaw.Retired = FlowUsage{}
}

// afterQoS is u without what the policers dropped: the packets that went on.
func (u Usage) afterQoS() Usage {
	out := FlowOf(u).afterQoS().usage()
	for i := range u.Flows {
		out.Flows[i] = u.Flows[i].afterQoS()
	}
	return out
}

func (f FlowUsage) afterQoS() FlowUsage {
	p := f.Policed
	return FlowUsage{ULPackets: floorSub(f.ULPackets, p.ULPackets), ULBytes: floorSub(f.ULBytes, p.ULBytes),
		DLPackets: floorSub(f.DLPackets, p.DLPackets), DLBytes: floorSub(f.DLBytes, p.DLBytes)}
}

// floorSub is a less b, or 0 where b is more.
func floorSub(a, b uint64) uint64 { return a - min(a, b) }

// add is a and b together.
func add(a, b uint64) uint64 { return a + b }

// Measurement Method (§8.2.40) and Reporting Triggers (§8.2.19) bits Junction implements.
const (
	methodDURAT = 0x01
	methodVOLUM = 0x02
	methodEVENT = 0x04

	triggerPERIO = 0x01 // octet 5
	triggerVOLTH = 0x02
	triggerTIMTH = 0x04
	triggerQUHTI = 0x08
	triggerSTART = 0x10
	triggerSTOPT = 0x20
	triggerVOLQU = 0x01 // octet 6
	triggerTIMQU = 0x02
	triggerQUVTI = 0x80

	// Measurement Information (§8.2.68): MNOP, measure packets, which Junction always does;
	// ISTM, start time metering when the URR arrives rather than at its first packet, which is
	// when Junction always starts it (Open5GS asks for it with every time threshold); MBQE,
	// measure before QoS enforcement (URR.BeforeQoS; free5GC asks for one URR with it and one
	// without on every session, and charges the one without).
	measInfoMBQE = 0x01
	measInfoISTM = 0x08
	measInfoMNOP = 0x10
)

// Usage Report Trigger (§8.2.41) octets.
var (
	reportPERIO = [3]byte{0x01, 0, 0}
	reportVOLTH = [3]byte{0x02, 0, 0}
	reportTIMTH = [3]byte{0x04, 0, 0}
	reportQUHTI = [3]byte{0x08, 0, 0}
	reportSTART = [3]byte{0x10, 0, 0}
	reportSTOPT = [3]byte{0x20, 0, 0}
	reportIMMER = [3]byte{0x80, 0, 0}
	reportVOLQU = [3]byte{0, 0x01, 0}
	reportTIMQU = [3]byte{0, 0x02, 0}
	reportTERMR = [3]byte{0, 0x08, 0}
	reportQUVTI = [3]byte{0, 0, 0x08}
)

// ntpUnixOffset is the seconds from the NTP epoch (1900) to the Unix one: a Quota Validity
// Time of 1<<31 or more is an NTP time, not a duration (validUntil).
const ntpUnixOffset = 2_208_988_800

// URR is a Usage Reporting Rule and where its measurement stands.
type URR struct {
	ID       uint32 `json:"id"`
	Volume   bool   `json:"volume,omitempty"`   // VOLUM
	Duration bool   `json:"duration,omitempty"` // DURAT
	// BeforeQoS (MBQE): the URR counts the packets its session's MBR policer (or a closed gate)
	// dropped; without it, what went on (TS 29.244 §5.2.2.2.1: after QoS enforcement).
	BeforeQoS bool `json:"beforeQoS,omitempty"`
	// Period (PERIO), TimeThreshold (TIMTH): seconds, 0 when not asked for.
	Period          uint32           `json:"period,omitempty"`
	TimeThreshold   uint32           `json:"timeThreshold,omitempty"`
	VolumeThreshold *VolumeThreshold `json:"volumeThreshold,omitempty"`
	// VolumeQuota (bytes, the Volume Quota IE's volumes) and TimeQuota (seconds): what the
	// measurement may reach before the URR's directions are gated (§5.2.2.2.1); reported when
	// used up if VolumeQuotaReport / TimeQuotaReport (VOLQU, TIMQU) ask for it.
	VolumeQuota       *VolumeThreshold `json:"volumeQuota,omitempty"`
	TimeQuota         uint32           `json:"timeQuota,omitempty"`
	VolumeQuotaReport bool             `json:"volumeQuotaReport,omitempty"`
	TimeQuotaReport   bool             `json:"timeQuotaReport,omitempty"`
	// QuotaValidUntil (Quota Validity Time) and QuotaHoldingTime (seconds): the URR's quota is
	// discarded, and the SMF told, when it stops being valid, or once its directions have carried
	// no packet for the holding time (§5.2.2.2.1), where ValidityReport / HoldingReport (QUVTI,
	// QUHTI) ask. Without its trigger, either time arms nothing: Table 7.5.2.4-1 makes the IE
	// conditional on it, and free5GC's SMF sends a validity time without QUVTI when its CHF
	// grants a quota again (a discard the SMF never heard of would cut the user off for good).
	QuotaValidUntil  time.Time `json:"quotaValidUntil,omitzero"`
	QuotaHoldingTime uint32    `json:"quotaHoldingTime,omitempty"`
	ValidityReport   bool      `json:"validityReport,omitempty"`
	HoldingReport    bool      `json:"holdingReport,omitempty"`
	// StartReport (START): report the URR's first packet. StartBase is the session's usage when
	// START was asked for, while no packet has come since; StartOwed: one came, its report is
	// not yet accepted.
	StartReport bool   `json:"startReport,omitempty"`
	StartBase   *Usage `json:"startBase,omitempty"`
	StartOwed   bool   `json:"startOwed,omitempty"`
	// startGiven: this request asked for START anew (started sets StartBase).
	startGiven bool
	// StopReport (STOPT): report when the URR's directions, having carried traffic (Flowing),
	// carry none for Config.TrafficStop; StopOwed: that came, its report is not yet accepted.
	StopReport bool `json:"stopReport,omitempty"`
	Flowing    bool `json:"flowing,omitempty"`
	StopOwed   bool `json:"stopOwed,omitempty"`
	// stopGiven: this request asked for STOPT anew (started sets where its traffic is read from).
	stopGiven bool
	// validity: the Quota Validity Time this request gave, as sent (started resolves it);
	// lastPacket, lastPacketUsage: the counters' reading at which the URR's directions last had
	// a packet (in memory only: after a restart, the holding time and a stop count from the
	// first reading).
	validity        *uint32
	lastPacket      time.Time
	lastPacketUsage Usage
	// Exhausted is the trigger of the quota the URR used up or lost (reportVOLQU, reportTIMQU,
	// reportQUVTI, reportQUHTI), zero while it has quota left: it holds the gates of the URR's
	// directions closed, if it has a quota (holdsQuota), until an Update URR gives a new quota,
	// validity or holding time. ExhaustedReported: the SMF accepted that report, or none was asked.
	Exhausted         [3]byte `json:"exhausted,omitzero"`
	ExhaustedReported bool    `json:"exhaustedReported,omitempty"`
	// QuotaSince and QuotaBase are when the quotas were given and the session's usage then: a
	// quota counts from there, whatever reports come between (a threshold's report moves Since,
	// not this). quotaGiven: this request gave one (QuotaSince and QuotaBase to be set).
	QuotaSince time.Time `json:"quotaSince,omitzero"`
	QuotaBase  Usage     `json:"quotaBase"`
	quotaGiven bool
	// Since is when the measurement the next report covers began, Base the session's usage
	// then, Seq the next report's UR-SEQN. A report the SMF accepted moves them on.
	Since time.Time `json:"since"`
	Base  Usage     `json:"base"`
	Seq   uint32    `json:"seq"`
}

// VolumeThreshold is the VOLTH trigger's thresholds in bytes (nil: not set).
type VolumeThreshold struct {
	Total    *uint64 `json:"total,omitempty"`
	Uplink   *uint64 `json:"uplink,omitempty"`
	Downlink *uint64 `json:"downlink,omitempty"`
}

// decodeURR decodes a Create URR, or an Update URR over old (the measurement state is kept).
func decodeURR(g *ie.IE, old *URR) (*URR, error) {
	c, err := childrenOf(g)
	if err != nil {
		return nil, err
	}
	if err := c.only(ie.URRID, ie.MeasurementMethod, ie.ReportingTriggers, ie.MeasurementPeriod, ie.VolumeThreshold,
		ie.TimeThreshold, ie.VolumeQuota, ie.TimeQuota, ie.QuotaValidityTime, ie.QuotaHoldingTime, ie.MeasurementInformation); err != nil {
		return nil, err
	}
	u := &URR{}
	if old != nil {
		cp := *old
		u = &cp
	}
	x, err := c.need(ie.URRID)
	if err != nil {
		return nil, err
	}
	if u.ID, err = x.URRID(); err != nil {
		return nil, bad(x, err)
	}
	create := g.Type == ie.CreateURR
	if x = c.one(ie.MeasurementMethod); x != nil {
		m, err := x.MeasurementMethod()
		if err != nil {
			return nil, bad(x, err)
		}
		if m&methodEVENT != 0 {
			return nil, refuse(CauseServiceNotSupported, ie.MeasurementMethod, "URR %d: event measurement is not supported", u.ID)
		}
		u.Volume, u.Duration = m&methodVOLUM != 0, m&methodDURAT != 0
	} else if create {
		return nil, refuse(CauseMandatoryIEMissing, ie.MeasurementMethod, "URR %d has no Measurement Method", u.ID)
	}
	// The triggers say which values count: a Create URR's with theirs; an Update URR's, or the
	// URR's own when it sends none, with its values where it sends them, else the URR's.
	perio, volth, timth := u.Period > 0, u.VolumeThreshold != nil, u.TimeThreshold > 0
	if x = c.one(ie.ReportingTriggers); x != nil {
		b, err := x.ReportingTriggers()
		if err != nil || len(b) < 2 {
			return nil, bad(x, fmt.Errorf("%d octets", len(b)))
		}
		unsupported := b[0]&^(triggerPERIO|triggerVOLTH|triggerTIMTH|triggerQUHTI|triggerSTART|triggerSTOPT) | b[1]&^(triggerVOLQU|triggerTIMQU|triggerQUVTI)
		for _, o := range b[2:] {
			unsupported |= o
		}
		if unsupported != 0 {
			return nil, refuse(CauseServiceNotSupported, ie.ReportingTriggers,
				"URR %d: reporting triggers %x; Junction reports on PERIO, VOLTH, TIMTH, QUHTI, START, STOPT, VOLQU, TIMQU and QUVTI (and at deletion, removal and query)", u.ID, b)
		}
		perio, volth, timth = b[0]&triggerPERIO != 0, b[0]&triggerVOLTH != 0, b[0]&triggerTIMTH != 0
		u.VolumeQuotaReport, u.TimeQuotaReport = b[1]&triggerVOLQU != 0, b[1]&triggerTIMQU != 0
		u.ValidityReport, u.HoldingReport = b[1]&triggerQUVTI != 0, b[0]&triggerQUHTI != 0
		start := b[0]&triggerSTART != 0
		if !start {
			u.StartBase, u.StartOwed = nil, false
		}
		u.startGiven, u.StartReport = start && !u.StartReport, start
		stop := b[0]&triggerSTOPT != 0
		if !stop {
			u.Flowing, u.StopOwed = false, false
		}
		u.stopGiven, u.StopReport = stop && !u.StopReport, stop
	} else if create {
		return nil, refuse(CauseMandatoryIEMissing, ie.ReportingTriggers, "URR %d has no Reporting Triggers", u.ID)
	}
	if !perio {
		u.Period = 0
	} else if x = c.one(ie.MeasurementPeriod); x != nil || u.Period == 0 {
		if u.Period, err = seconds(c, ie.MeasurementPeriod, u.ID); err != nil {
			return nil, err
		}
	}
	if !timth {
		u.TimeThreshold = 0
	} else if x = c.one(ie.TimeThreshold); x != nil || u.TimeThreshold == 0 {
		if u.TimeThreshold, err = seconds(c, ie.TimeThreshold, u.ID); err != nil {
			return nil, err
		}
	}
	if !volth {
		u.VolumeThreshold = nil
	} else if x = c.one(ie.VolumeThreshold); x != nil || u.VolumeThreshold == nil {
		if u.VolumeThreshold, err = volumeThreshold(c, u.ID); err != nil {
			return nil, err
		}
	}
	if err := u.decodeQuotas(c, create); err != nil {
		return nil, err
	}
	if x = c.one(ie.MeasurementInformation); x != nil {
		v, err := x.MeasurementInformation()
		if err != nil {
			return nil, bad(x, err)
		}
		if v&^(measInfoMBQE|measInfoISTM|measInfoMNOP) != 0 {
			return nil, refuse(CauseServiceNotSupported, ie.MeasurementInformation, "URR %d: Measurement Information %#02x; only MBQE, ISTM and MNOP are supported", u.ID, v)
		}
		u.BeforeQoS = v&measInfoMBQE != 0
	}
	return u, nil
}

// decodeQuotas reads a Volume Quota, a Time Quota (§8.2.50, §8.2.51), a Quota Validity Time and a
// Quota Holding Time (§8.2.132, §8.2.48); one that arrives, in a Create or an Update URR, replaces
// the URR's and gives it quota again: its gates open (a quota used up opens with a new one of its
// kind; one discarded, with any). A zero validity or holding time disarms it.
func (u *URR) decodeQuotas(c children, create bool) error {
	regranted := func(kind [3]byte) {
		if u.Exhausted == kind || u.Exhausted == reportQUVTI || u.Exhausted == reportQUHTI {
			u.Exhausted, u.ExhaustedReported = [3]byte{}, false
		}
	}
	if x := c.one(ie.VolumeQuota); x != nil {
		v, err := readVolumes(x, u.ID)
		if err != nil {
			return err
		}
		u.VolumeQuota, u.quotaGiven = v, true
		regranted(reportVOLQU)
	}
	if x := c.one(ie.TimeQuota); x != nil {
		d, err := x.TimeQuota()
		if err != nil || d <= 0 {
			return refuse(CauseMandatoryIEIncorrect, ie.TimeQuota, "URR %d: a Time Quota must be at least a second", u.ID)
		}
		u.TimeQuota, u.quotaGiven = uint32(d/time.Second), true
		regranted(reportTIMQU)
	}
	if x := c.one(ie.QuotaValidityTime); x != nil {
		v, err := uint32IE(x)
		if err != nil {
			return err
		}
		u.validity = &v
		regranted(reportQUVTI)
	}
	if x := c.one(ie.QuotaHoldingTime); x != nil {
		v, err := uint32IE(x)
		if err != nil {
			return err
		}
		u.QuotaHoldingTime, u.lastPacket = v, time.Time{} // counts from the next reading
		regranted(reportQUHTI)
	}
	if (u.VolumeQuotaReport && u.VolumeQuota == nil) || (u.TimeQuotaReport && u.TimeQuota == 0) {
		return refuse(CauseConditionalIEMissing, ie.VolumeQuota, "URR %d: VOLQU needs a Volume Quota, TIMQU a Time Quota", u.ID)
	}
	// A validity time that has ended is disarmed (observeUsage), so only a new URR must bring one.
	if create && u.ValidityReport && u.validity == nil {
		return refuse(CauseConditionalIEMissing, ie.QuotaValidityTime, "URR %d: QUVTI needs a Quota Validity Time", u.ID)
	}
	if create && u.HoldingReport && u.QuotaHoldingTime == 0 {
		return refuse(CauseConditionalIEMissing, ie.QuotaHoldingTime, "URR %d: QUHTI needs a Quota Holding Time", u.ID)
	}
	return nil
}

// uint32IE is the value of an IE that holds one Unsigned32.
func uint32IE(x *ie.IE) (uint32, error) {
	if len(x.Payload) != 4 {
		return 0, refuse(CauseInvalidLength, x.Type, "%s: %d octets, want 4", ieName(x.Type), len(x.Payload))
	}
	return binary.BigEndian.Uint32(x.Payload), nil
}

// validUntil is when a Quota Validity Time v, received at now, ends. TS 29.244 §8.2.132 makes it
// a duration in seconds; free5GC's SMF sends the NTP time it ends at (as go-pfcp did before
// v0.0.24), which is 1<<31 or more until 2036, where a duration that long (68 years) means nothing.
// Zero: no validity time.
func validUntil(v uint32, now time.Time) time.Time {
	switch {
	case v == 0:
		return time.Time{}
	case v >= 1<<31:
		return time.Unix(int64(v)-ntpUnixOffset, 0)
	}
	return now.Add(time.Duration(v) * time.Second)
}

// seconds reads the Measurement Period or Time Threshold a trigger needs.
func seconds(c children, t uint16, urr uint32) (uint32, error) {
	x := c.one(t)
	if x == nil {
		return 0, refuse(CauseConditionalIEMissing, t, "URR %d: its trigger needs %s", urr, ieName(t))
	}
	var d time.Duration
	var err error
	if t == ie.MeasurementPeriod {
		d, err = x.MeasurementPeriod()
	} else {
		d, err = x.TimeThreshold()
	}
	if err != nil || d <= 0 {
		return 0, refuse(CauseMandatoryIEIncorrect, t, "URR %d: %s must be at least a second", urr, ieName(t))
	}
	return uint32(d / time.Second), nil
}

func volumeThreshold(c children, urr uint32) (*VolumeThreshold, error) {
	x := c.one(ie.VolumeThreshold)
	if x == nil {
		return nil, refuse(CauseConditionalIEMissing, ie.VolumeThreshold, "URR %d: VOLTH needs a Volume Threshold", urr)
	}
	return readVolumes(x, urr)
}

// readVolumes reads a Volume Threshold or a Volume Quota (§8.2.13, §8.2.50, alike: TOVOL, ULVOL,
// DLVOL and the volumes they flag); one that flags no volume is refused.
func readVolumes(x *ie.IE, urr uint32) (*VolumeThreshold, error) {
	var f *ie.VolumeThresholdFields
	var err error
	if x.Type == ie.VolumeQuota {
		var q *ie.VolumeQuotaFields
		if q, err = x.VolumeQuota(); err == nil {
			f = (*ie.VolumeThresholdFields)(q)
		}
	} else {
		f, err = x.VolumeThreshold()
	}
	if err != nil {
		return nil, bad(x, err)
	}
	v := &VolumeThreshold{}
	if f.HasTOVOL() {
		v.Total = &f.TotalVolume
	}
	if f.HasULVOL() {
		v.Uplink = &f.UplinkVolume
	}
	if f.HasDLVOL() {
		v.Downlink = &f.DownlinkVolume
	}
	if v.Total == nil && v.Uplink == nil && v.Downlink == nil {
		return nil, refuse(CauseMandatoryIEIncorrect, x.Type, "URR %d: a %s with no volume", urr, ieName(x.Type))
	}
	return v, nil
}

// directions says which directions a URR measures: those of the PDRs that name it. A URR that
// some but not all PDRs of a direction name measures what the pipeline cannot count apart.
func (r *Rules) directions(u *URR) (ul, dl bool, err error) {
	ul, dl, _, err = r.urrScope(u)
	return ul, dl, err
}

// urrScope is what a URR measures, by the PDRs that name it: in each direction, all the
// session's PDRs (scopeSession), those of its default QoS flow (scopeDefault) or those of one
// QoS flow of its own (its position), or none; the directions it names agree on one scope. The
// pipeline counts a session's usage and each of its flows' apart, so any other part of a
// direction is refused.
func (r *Rules) urrScope(u *URR) (ul, dl bool, scope int, err error) {
	names := func(p *PDR) bool { return slices.Contains(p.URRIDs, u.ID) }
	up, down, _ := r.byDirection()
	dirs := [2][]*PDR{up, down}
	var named [2]int
	for d, pdrs := range dirs {
		for _, p := range pdrs {
			if names(p) {
				named[d]++
			}
		}
	}
	ul, dl = named[0] > 0, named[1] > 0
	if (named[0] == 0 || named[0] == len(up)) && (named[1] == 0 || named[1] == len(down)) {
		return ul, dl, scopeSession, nil
	}
	// A part of a direction: the PDRs of one flow, the flow of any of them (every PDR of a
	// mapped session has one).
	member := r.flowMembers()
	scope = scopeSession
	for d, pdrs := range dirs {
		if named[d] == 0 {
			continue
		}
		i := slices.IndexFunc(pdrs, names)
		m, ok := member[pdrs[i].ID]
		fits := ok && (scope == scopeSession || scope == m) &&
			!slices.ContainsFunc(pdrs, func(p *PDR) bool { return names(p) != (member[p.ID] == m) })
		if !fits {
			return false, false, scopeSession, ruleFailure(ie.RuleIDTypeURR, u.ID,
				"URR %d is named by %d of the session's %d %s PDRs, not all of them nor those of one QoS flow (docs/n4.md)",
				u.ID, named[d], len(pdrs), [2]string{"uplink", "downlink"}[d])
		}
		scope = m
	}
	return ul, dl, scope, nil
}

// flowMembers are the QoS flow each PDR is in (qosOf): scopeDefault for the session's default,
// else the position of a flow of its own. Nil where the rules' QoS does not map.
func (r *Rules) flowMembers() map[uint16]int {
	q, err := qosOf(r)
	if err != nil {
		return nil
	}
	return q.member
}

// sameDefinition reports whether u and v are one URR as the SMF defines it: the same IEs, none of
// what the endpoint measured or derived since. A URR with a Quota Validity Time is never the same
// (the time resolves once the URR starts).
func (u *URR) sameDefinition(v *URR) bool {
	def := func(x *URR) URR {
		return URR{ID: x.ID, Volume: x.Volume, Duration: x.Duration, BeforeQoS: x.BeforeQoS, Period: x.Period,
			TimeThreshold: x.TimeThreshold, VolumeThreshold: x.VolumeThreshold, VolumeQuota: x.VolumeQuota, TimeQuota: x.TimeQuota,
			VolumeQuotaReport: x.VolumeQuotaReport, TimeQuotaReport: x.TimeQuotaReport, QuotaHoldingTime: x.QuotaHoldingTime,
			ValidityReport: x.ValidityReport, HoldingReport: x.HoldingReport, StartReport: x.StartReport, StopReport: x.StopReport}
	}
	validity := func(x *URR) bool { return x.validity != nil || !x.QuotaValidUntil.IsZero() }
	return !validity(u) && !validity(v) && reflect.DeepEqual(def(u), def(v))
}

// dropUnsetURRIDs takes URR ID 0 out of the PDRs that name it while the session has no URR 0.
// OAI's SMF with enable_usage_reporting names its unset URR ID, 0, in every PDR it made no URR
// for (smf_procedure.cpp, pfcp_create_pdr and pfcp_update_pdr): the gNB's downlink PDR, the
// Service Request's. Any other URR the session lacks is refused (checkURRs). The PDRs are
// copied: r may share them with the rules it was cloned from.
func (r *Rules) dropUnsetURRIDs() {
	if r.URRs[0] != nil {
		return
	}
	for id, p := range r.PDRs {
		if slices.Contains(p.URRIDs, 0) {
			c := *p
			c.URRIDs = slices.DeleteFunc(slices.Clone(p.URRIDs), func(u uint32) bool { return u == 0 })
			r.PDRs[id] = &c
		}
	}
}

// checkURRs refuses PDRs naming URRs the session does not have, and URRs that measure a part of
// a direction other than a QoS flow's (urrScope).
func (r *Rules) checkURRs() error {
	for _, id := range sortedKeys(r.PDRs) {
		for _, u := range r.PDRs[id].URRIDs {
			if r.URRs[u] == nil {
				return ruleFailure(ie.RuleIDTypePDR, uint32(id), "PDR %d names URR %d, which the session does not have", id, u)
			}
		}
	}
	for _, id := range sortedKeys(r.URRs) {
		if _, _, _, err := r.urrScope(r.URRs[id]); err != nil {
			return err
		}
	}
	return nil
}

// measured is what the URR measured of its scope (urrScope) from the session's usage base to
// cur: before QoS enforcement with MBQE, after it without.
func (u *URR) measured(r *Rules, base, cur Usage) Usage {
	_, _, scope, _ := r.urrScope(u)
	v := cur.in(scope).since(base.in(scope))
	if !u.BeforeQoS {
		v = v.afterQoS()
	}
	return v
}

// volumes are the bytes of the directions a URR measures, up and down, from the usage base to cur.
func (u *URR) volumes(r *Rules, base, cur Usage) (up, down uint64) {
	ul, dl, _ := r.directions(u)
	v := u.measured(r, base, cur)
	if ul {
		up = v.ULBytes
	}
	if dl {
		down = v.DLBytes
	}
	return up, down
}

// reached reports whether a volume measured up and down reaches a threshold or quota t.
func (t *VolumeThreshold) reached(up, down uint64) bool {
	return (t.Total != nil && up+down >= *t.Total) || (t.Uplink != nil && up >= *t.Uplink) || (t.Downlink != nil && down >= *t.Downlink)
}

// exhausts returns the trigger of the quota a URR with quota left has used up, or lost, at now
// with the session at cur, if any.
func (u *URR) exhausts(r *Rules, now time.Time, cur Usage) ([3]byte, bool) {
	switch {
	case u.Exhausted != [3]byte{}:
	case u.TimeQuota > 0 && now.Sub(u.QuotaSince) >= time.Duration(u.TimeQuota)*time.Second:
		return reportTIMQU, true
	case u.VolumeQuota != nil && u.VolumeQuota.reached(u.volumes(r, u.QuotaBase, cur)):
		return reportVOLQU, true
	case u.ValidityReport && !u.QuotaValidUntil.IsZero() && !now.Before(u.QuotaValidUntil):
		return reportQUVTI, true
	case u.HoldingReport && u.QuotaHoldingTime > 0 && !u.lastPacket.IsZero() && now.Sub(u.lastPacket) >= time.Duration(u.QuotaHoldingTime)*time.Second:
		return reportQUHTI, true
	}
	return [3]byte{}, false
}

// sawPackets moves the URR's last packet to now if its directions carried one since the last
// reading (the holding time and a stop count from there), or if nothing has been read yet, and
// says whether they carried one.
func (u *URR) sawPackets(r *Rules, now time.Time, cur Usage) bool {
	if (!u.HoldingReport || u.QuotaHoldingTime == 0) && !u.StopReport {
		return false
	}
	ul, dl, _ := r.directions(u)
	v := u.measured(r, u.lastPacketUsage, cur)
	first, seen := u.lastPacket.IsZero(), (ul && v.ULPackets > 0) || (dl && v.DLPackets > 0)
	if first || seen {
		u.lastPacket, u.lastPacketUsage = now, cur
	}
	return seen && !first
}

// sawStop follows the URR's traffic for STOPT (seen: the reading at now found a packet; the
// session at cur): it flows from a packet on, and stops, owing the report, once stopAfter has
// passed without one. A stop arms START again where the URR has it, so that the next packet is
// a start (TS 29.244 §5.11). It says whether the URR changed.
func (u *URR) sawStop(seen bool, now time.Time, cur Usage, stopAfter time.Duration) bool {
	switch {
	case !u.StopReport:
		return false
	case seen:
		changed := !u.Flowing
		u.Flowing = true
		return changed
	case !u.Flowing || now.Sub(u.lastPacket) < stopAfter:
		return false
	}
	u.Flowing, u.StopOwed = false, true
	if u.StartReport && u.StartBase == nil && !u.StartOwed {
		u.StartBase = &cur
	}
	return true
}

// sawStart reports whether the URR's directions carried their first packet since START was
// asked for (it owes the report from then on).
func (u *URR) sawStart(r *Rules, cur Usage) bool {
	if u.StartBase == nil {
		return false
	}
	ul, dl, _ := r.directions(u)
	v := u.measured(r, *u.StartBase, cur)
	if (ul && v.ULPackets > 0) || (dl && v.DLPackets > 0) {
		u.StartBase, u.StartOwed = nil, true
		return true
	}
	return false
}

// holdsQuota: the URR has a volume or a time quota, which its gates stand for.
func (u *URR) holdsQuota() bool { return u.VolumeQuota != nil || u.TimeQuota > 0 }

// closes reports which directions used-up or discarded quotas gate, by the scope of their URRs
// (urrScope: the whole session, its default flow or a flow of its own): those the URRs measure.
func (r *Rules) closes() map[int][2]bool {
	out := map[int][2]bool{}
	for _, u := range r.URRs {
		if u.Exhausted != [3]byte{} && u.holdsQuota() {
			ul, dl, scope, _ := r.urrScope(u)
			d := out[scope]
			out[scope] = [2]bool{d[0] || ul, d[1] || dl}
		}
	}
	return out
}

// due returns the trigger of the report a URR owes at now with the session at cur, if any.
func (u *URR) due(r *Rules, now time.Time, cur Usage) ([3]byte, bool) {
	switch {
	case u.Exhausted != [3]byte{} && !u.ExhaustedReported:
		return u.Exhausted, true
	case u.StartOwed:
		return reportSTART, true
	case u.StopOwed:
		return reportSTOPT, true
	case u.Period > 0 && now.Sub(u.Since) >= time.Duration(u.Period)*time.Second:
		return reportPERIO, true
	case u.TimeThreshold > 0 && now.Sub(u.Since) >= time.Duration(u.TimeThreshold)*time.Second:
		return reportTIMTH, true
	case u.VolumeThreshold != nil && u.VolumeThreshold.reached(u.volumes(r, u.Base, cur)):
		return reportVOLTH, true
	}
	return [3]byte{}, false
}

// polled: a URR has a trigger or a quota that only a reading of the counters can fire, or owes
// a report (one unanswered goes again at the next round).
func (r *Rules) polled() bool {
	for _, u := range r.URRs {
		armed := (u.ValidityReport && !u.QuotaValidUntil.IsZero()) || (u.HoldingReport && u.QuotaHoldingTime > 0) // an ended validity disarms
		owed := u.StartOwed || u.StopOwed || (u.Exhausted != [3]byte{} && !u.ExhaustedReported)
		if u.Period > 0 || u.TimeThreshold > 0 || u.VolumeThreshold != nil || u.holdsQuota() || armed || u.StartBase != nil || u.StopReport || owed {
			return true
		}
	}
	return false
}

// report is a Usage Report (grouped IE typ: within a Session Modification Response, a Session
// Deletion Response or a Session Report Request) of what the URR measured from its last report
// to now, with the session at cur.
func (u *URR) report(typ uint16, r *Rules, trigger [3]byte, now time.Time, cur Usage) *ie.IE {
	ies := []*ie.IE{
		ie.NewURRID(u.ID), ie.NewURSEQN(u.Seq), ie.NewUsageReportTrigger(trigger[:]...),
		ie.NewStartTime(u.Since), ie.NewEndTime(now),
	}
	if u.Volume {
		ul, dl, _ := r.directions(u)
		v := u.measured(r, u.Base, cur)
		var flags uint8 = 0x01 | 0x08 // TOVOL, TONOP
		var tot, up, down, totP, upP, downP uint64
		if ul {
			flags |= 0x02 | 0x10 // ULVOL, ULNOP
			up, upP = v.ULBytes, v.ULPackets
		}
		if dl {
			flags |= 0x04 | 0x20 // DLVOL, DLNOP
			down, downP = v.DLBytes, v.DLPackets
		}
		tot, totP = up+down, upP+downP
		ies = append(ies, ie.NewVolumeMeasurement(flags, tot, up, down, totP, upP, downP))
	}
	if u.Duration {
		ies = append(ies, ie.NewDurationMeasurement(now.Sub(u.Since).Truncate(time.Second)))
	}
	if app := r.application(u); app != "" && (trigger == reportSTART || trigger == reportSTOPT) {
		ies = append(ies, ie.NewApplicationDetectionInformation(ie.NewApplicationID(app)))
	}
	return ie.NewUsageReport(typ, ies...)
}

// application is the Application ID of every PDR that names u, "" if they do not share one: a
// start or stop of that application's traffic is reported with it (Application Detection
// Information, TS 29.244 Table 7.5.8.3-1).
func (r *Rules) application(u *URR) string {
	app := ""
	for _, p := range r.PDRs {
		if !slices.Contains(p.URRIDs, u.ID) {
			continue
		}
		if p.ApplicationID == "" || (app != "" && p.ApplicationID != app) {
			return ""
		}
		app = p.ApplicationID
	}
	return app
}

// started sets where a URR's measurement, and the quota, validity and holding time it was
// given, start: now with the session at usage.
func (u *URR) started(now time.Time, usage Usage, fresh bool) {
	if fresh {
		u.Since, u.Base = now, usage
	}
	if u.validity != nil {
		u.QuotaValidUntil, u.validity = validUntil(*u.validity, now), nil
	}
	if u.startGiven {
		u.StartBase, u.startGiven = &usage, false
	}
	if u.stopGiven {
		if u.lastPacket.IsZero() {
			u.lastPacket, u.lastPacketUsage = now, usage
		}
		u.stopGiven = false
	}
	if u.quotaGiven {
		u.QuotaSince, u.QuotaBase, u.quotaGiven = now, usage, false
		u.lastPacket, u.lastPacketUsage = now, usage
	}
}

// movedFlows puts the flows of the URR's readings where flowMoves puts them.
func (u *URR) movedFlows(from [junctionv1.MaxQoSFlows]int) {
	u.Base, u.QuotaBase, u.lastPacketUsage = u.Base.movedFlows(from), u.QuotaBase.movedFlows(from), u.lastPacketUsage.movedFlows(from)
	if u.StartBase != nil {
		b := u.StartBase.movedFlows(from)
		u.StartBase = &b
	}
}

// accepted records that the SMF accepted the URR's report with trigger, sent at now with the
// session at cur: the measurement moves on, and the report it owed is owed no more.
func (u *URR) accepted(trigger [3]byte, now time.Time, cur Usage) {
	u.reported(now, cur)
	u.ExhaustedReported = u.ExhaustedReported || trigger == u.Exhausted
	u.StartOwed = u.StartOwed && trigger != reportSTART
	u.StopOwed = u.StopOwed && trigger != reportSTOPT
}

// reported moves the URR's measurement past a report the SMF got.
func (u *URR) reported(now time.Time, cur Usage) {
	u.Since, u.Base, u.Seq = now, cur, u.Seq+1
}

// reportUsage sends the Session Report Requests that periodic, volume threshold and time
// threshold triggers owe (§7.5.8), one session at a time. A report moves its URR's measurement
// on only once the SMF accepted it; one unanswered is sent again at the next round, with the
// same UR-SEQN and what was measured meanwhile.
func (e *Endpoint) reportUsage(ctx context.Context) {
	if !e.reportsRunning.CompareAndSwap(false, true) {
		return // the last round is still at it
	}
	defer e.reportsRunning.Store(false)
	e.mu.Lock()
	var polled []*State
	for _, s := range e.sessions {
		if s.Rules.polled() { // reportSession skips one whose last report is unanswered
			polled = append(polled, s)
		}
	}
	e.mu.Unlock()
	for _, s := range polled {
		if ctx.Err() != nil {
			return
		}
		e.reportSession(ctx, s)
	}
}

// reportAddr is where a session's Session Report Requests go: the CP F-SEID's address at the
// association's port, or the association's address when the F-SEID has none.
func reportAddr(s *State, assoc *Association) netip.AddrPort {
	if !s.CPAddr.IsValid() {
		return assoc.Addr
	}
	return netip.AddrPortFrom(s.CPAddr, assoc.Addr.Port())
}

func (e *Endpoint) reportSession(ctx context.Context, s *State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.mu.Lock()
	gone := e.sessions[s.UPSEID] != s
	assoc := e.assocs[s.SMF]
	e.mu.Unlock()
	if gone {
		return
	}
	cur, err := e.usage(ctx, s)
	if err != nil {
		e.cfg.Log.V(1).Info("N4: usage not read for a report", "upSEID", s.UPSEID, "err", err.Error())
		return
	}
	r, err := s.Rules.rules()
	if err != nil {
		e.cfg.Log.Error(err, "N4: no usage report", "upSEID", s.UPSEID)
		return
	}
	now := time.Now()
	e.observeUsage(ctx, s, r, now, cur)
	if assoc == nil || s.reporting {
		return
	}
	var reports []*ie.IE
	type sentReport struct {
		seq     uint32
		trigger [3]byte
	}
	sent := map[uint32]sentReport{} // by URR
	for _, id := range sortedKeys(r.URRs) {
		u := r.URRs[id]
		if trig, ok := u.due(r, now, cur); ok {
			reports = append(reports, u.report(ie.UsageReportWithinSessionReportRequest, r, trig, now, cur))
			sent[id] = sentReport{u.Seq, trig}
		}
	}
	if len(reports) == 0 {
		return
	}
	s.reporting = true
	to, cpSEID := reportAddr(s, assoc), s.CPSEID
	e.request(to, func(seq uint32) marshaler {
		return message.NewSessionReportRequest(0, 0, cpSEID, seq, 0, append([]*ie.IE{ie.NewReportType(0, 0, 1, 0)}, reports...)...)
	}, func(h *message.Header) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reporting = false
		if cause := responseCause(h); cause != CauseAccepted {
			e.cfg.Log.Info("N4: the SMF refused a usage report", "upSEID", s.UPSEID, "cause", cause)
			return
		}
		r, err := s.Rules.rules() // a modification meanwhile may have changed them
		if err != nil {
			e.cfg.Log.Error(err, "N4: a usage report not recorded", "upSEID", s.UPSEID)
			return
		}
		for id, rep := range sent {
			if u := r.URRs[id]; u != nil && u.Seq == rep.seq {
				u.accepted(rep.trigger, now, cur)
			}
		}
		packed, err := pack(r)
		if err != nil {
			e.cfg.Log.Error(err, "N4: a usage report not recorded", "upSEID", s.UPSEID)
			return
		}
		e.setRules(s, packed)
		// The measurement's new start rides in the session's state, for the next leader.
		if p, err := makePlan(r, s.TEIDs, s.SUPI, s.Idle, e.cfg.Target); err == nil {
			if err := e.store.Apply(ctx, s, p); err != nil {
				e.cfg.Log.Error(err, "N4: saving a session after a usage report", "upSEID", s.UPSEID)
			}
		}
	}, func() {
		s.mu.Lock()
		s.reporting = false
		s.mu.Unlock()
	})
}

// observeUsage takes a reading of the session's usage cur at now (URR.observe) and saves what
// it changed. The counters are read once a second, so up to a second of traffic passes a volume
// quota (the report counts it), and a holding time and a stop are a second coarse.
func (e *Endpoint) observeUsage(ctx context.Context, s *State, r *Rules, now time.Time, cur Usage) {
	changed := false
	for _, id := range sortedKeys(r.URRs) {
		u := r.URRs[id]
		c, exhausted := u.observe(r, now, cur, e.cfg.TrafficStop)
		changed = changed || c
		if exhausted {
			e.cfg.Log.Info("N4: a URR's quota is used up or discarded", "upSEID", s.UPSEID, "urr", id, "trigger", fmt.Sprintf("%x", u.Exhausted), "gatesClosed", u.holdsQuota())
		}
	}
	if !changed {
		return
	}
	packed, err := pack(r)
	if err == nil {
		e.setRules(s, packed)
		var p *Plan
		if p, err = makePlan(r, s.TEIDs, s.SUPI, s.Idle, e.cfg.Target); err == nil {
			err = e.store.Apply(ctx, s, p)
		}
	}
	if err != nil {
		e.cfg.Log.Error(err, "N4: saving what a usage reading found", "upSEID", s.UPSEID)
	}
}

// observe takes a reading of the session at cur at now for the URR: its first packet (START),
// its last (the holding time and a stop count from there), a stop of its traffic after
// stopAfter without a packet (STOPT), and the quotas its usage or the time has used up or
// discarded, whose directions' gates close (§5.2.2.2.1: the UP function stops forwarding)
// before the report of it goes (due), which is only where the URR's triggers ask for one. It
// says whether the URR changed, and whether a quota was used up or discarded.
func (u *URR) observe(r *Rules, now time.Time, cur Usage, stopAfter time.Duration) (changed, exhausted bool) {
	seen := u.sawPackets(r, now, cur)
	changed = u.sawStart(r, cur)
	changed = u.sawStop(seen, now, cur, stopAfter) || changed
	trig, ok := u.exhausts(r, now, cur)
	if !ok {
		return changed, false
	}
	// QUVTI and QUHTI fire only where their triggers ask for the report (exhausts).
	asked := (trig == reportVOLQU && u.VolumeQuotaReport) || (trig == reportTIMQU && u.TimeQuotaReport) || trig == reportQUVTI || trig == reportQUHTI
	u.Exhausted, u.ExhaustedReported = trig, !asked
	if trig == reportQUVTI {
		u.QuotaValidUntil = time.Time{} // it has ended; a new one arms it again
	}
	return true, true
}

// responseCause is the Cause of a response (0 when it has none).
func responseCause(h *message.Header) uint8 {
	x := responseIE(h, ie.Cause)
	if x == nil {
		return 0
	}
	c, _ := x.Cause()
	return c
}

// responseIE is a response's first IE of type typ; nil when it has none or does not parse.
func responseIE(h *message.Header, typ uint16) *ie.IE {
	ies, err := ie.ParseMultiIEs(h.Payload)
	if err != nil {
		return nil
	}
	for _, x := range ies {
		if x.Type == typ {
			return x
		}
	}
	return nil
}
