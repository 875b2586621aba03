package desired

import (
	"net/netip"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// MeterCell is one cell of an indirect meter by P4Info name, and its configuration (P4Runtime
// MeterConfig: rates in bytes per second and bursts in bytes, for the byte meters here).
type MeterCell struct {
	Meter  string
	Index  uint32
	Config MeterConfig
}

// MeterConfig is a two-rate three-colour marker's configuration; the pipeline drops red only,
// so the peak rate and burst are what police.
type MeterConfig struct {
	CIR, CBurst, PIR, PBurst int64
}

// The MBR policer's meters, one per direction, at the cell its table (mbr_sessions) gives the
// session's address (its usage cell: mbrSessionEntry).
const (
	MeterUplinkMBR   = "uplink_mbr"
	MeterDownlinkMBR = "downlink_mbr"
	TableMBRSessions = "mbr_sessions"
)

// MBRBurstMillis is the policer's bucket, in time at the session's rate: TCP through a policer whose
// bucket holds less than about a round trip's worth of data backs off below the rate; 100 ms
// covers the round trips of a mobile network. MBRMinBurst keeps two full-size packets in the
// bucket of a slow session.
const (
	MBRBurstMillis = 100
	MBRMinBurst    = 3000
)

// SessionMeters are the policer cells a session configures: its MBR policer's (mbrMeters) and
// its QoS flows' (qosFlowMeters). The programmer resets the cells a session stops naming, and
// the cells it starts to use.
func SessionMeters(s Session) []MeterCell {
	return append(mbrMeters(s), qosFlowMeters(s)...)
}

// mbrMeters are the MBR policer cells of a session with spec.maxBitRate or a closed gate:
// uplink_mbr and downlink_mbr at its usage cell (policerCells). With QoS flows, spec.gates are
// the default flow's, closed at its own cell (qosFlowMeters): the session's cell closing would
// stop the flows too.
func mbrMeters(s Session) []MeterCell {
	g := s.Spec.Gates
	if len(s.Spec.QoSFlows) > 0 {
		g = nil
	}
	return policerCells(MeterUplinkMBR, MeterDownlinkMBR, s.UsageIndex, s.Spec.MaxBitRate, g)
}

// policerCells are the cells of one policer, a meter per direction at one index: committed rate
// = peak rate = the MBR (no yellow), bursts of MBRBurstMillis at that rate (MBRConfig); a closed
// gate's direction every rate and burst zero (closedGate), whatever its MBR. A direction with
// neither has no cell.
func policerCells(upMeter, downMeter string, index uint32, r *junctionv1.BitRate, g *junctionv1.Gates) []MeterCell {
	if r == nil {
		r = &junctionv1.BitRate{}
	}
	var out []MeterCell
	for _, d := range []struct {
		meter  string
		kbps   *int64
		closed bool
	}{{upMeter, r.UplinkKbps, g.Closed(true)}, {downMeter, r.DownlinkKbps, g.Closed(false)}} {
		switch {
		case d.closed:
			out = append(out, MeterCell{Meter: d.meter, Index: index, Config: closedGate})
		case d.kbps != nil:
			out = append(out, MeterCell{Meter: d.meter, Index: index, Config: MBRConfig(*d.kbps)})
		}
	}
	return out
}

// closedGate is the meter configuration of a closed gate: no token ever, so every packet is
// red and dropped (a bucket of zero bytes holds no packet; BMv2 and the software UPF agree,
// test/vectors/cases/mbr-policer.yaml).
var closedGate = MeterConfig{}

// mbrSessionEntry is the mbr_sessions entry of a session with MBR policer cells (mbrMeters): its
// address (the user packets' source up, destination down) names the cells at its usage index.
// None without one: a packet that misses mbr_sessions is not policed.
func mbrSessionEntry(s Session, sa netip.Addr) []Entry {
	if len(mbrMeters(s)) == 0 {
		return nil
	}
	return []Entry{{Table: TableMBRSessions, Match: []Match{{Field: "ue_addr", Kind: Exact, Value: addr(sa)}},
		Action: "police", Params: []Param{{"usage_idx", u32(s.UsageIndex)}}}}
}

// MBRConfig is the meter configuration of a maximum bit rate in kbit/s.
func MBRConfig(kbps int64) MeterConfig {
	rate := kbps * 1000 / 8 // bytes per second
	burst := max(rate*MBRBurstMillis/1000, MBRMinBurst)
	return MeterConfig{CIR: rate, CBurst: burst, PIR: rate, PBurst: burst}
}
