package desired

// QoS flows of a session's own (spec.qosFlows; docs/pipeline.md, "QoS flows"): their qos_flows
// entries and their policers' cells, in the session's block of cells (status.qosFlowIndex), and
// the default flow's: an entry under theirs that every other packet of the session hits, whose
// cell is its gates' (spec.gates), so that they close without closing the flows.

import (
	"fmt"
	"net/netip"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Their table, and their policers' meters.
const (
	TableQoSFlows        = "qos_flows"
	MeterUplinkFlowMBR   = "uplink_flow_mbr"
	MeterDownlinkFlowMBR = "downlink_flow_mbr"
)

// QoSFlowCell is flow i's cell of the flow policers in the session's block (status.qosFlowIndex);
// i = MaxQoSFlows is the default flow's (DefaultFlowCell).
func QoSFlowCell(block uint32, i int) uint32 { return block*junctionv1.QoSFlowBlock + uint32(i) }

// DefaultFlowCell is the cell of the session's default flow in its block: its gates' only.
func DefaultFlowCell(block uint32) uint32 { return QoSFlowCell(block, junctionv1.MaxQoSFlows) }

// defaultFlowPriority is the default flow's entries' priority, under every flow's (precedence
// at most 65533).
const defaultFlowPriority = 1

// flowFilters are a QoS flow's filters: its filters, or its trafficDescriptor both ways.
func flowFilters(f junctionv1.QoSFlow) []junctionv1.QoSFlowFilter {
	if len(f.Filters) > 0 {
		return f.Filters
	}
	return []junctionv1.QoSFlowFilter{{Direction: junctionv1.FlowBidirectional, TrafficDescriptor: f.TrafficDescriptor}}
}

// filterDirections are the qos_flows `uplink` values of a filter's direction.
var filterDirections = map[junctionv1.FlowDirection][]uint8{
	junctionv1.FlowBidirectional: {0, 1}, junctionv1.FlowDownlink: {0}, junctionv1.FlowUplink: {1},
}

// qosFlowMeters are the policer cells of a session with QoS flows: each flow's with an MBR or a
// closed gate, and the default flow's with a closed gate (spec.gates), as mbrMeters writes the
// session's.
func qosFlowMeters(s Session) []MeterCell {
	if s.QoSFlowIndex == nil || len(s.Spec.QoSFlows) == 0 {
		return nil
	}
	out := policerCells(MeterUplinkFlowMBR, MeterDownlinkFlowMBR, DefaultFlowCell(*s.QoSFlowIndex), nil, s.Spec.Gates)
	for i, f := range s.Spec.QoSFlows {
		out = append(out, policerCells(MeterUplinkFlowMBR, MeterDownlinkFlowMBR, QoSFlowCell(*s.QoSFlowIndex, i), f.MaxBitRate, f.Gates)...)
	}
	return out
}

// qosFlowEntries are the qos_flows entries of the session's QoS flows (spec.qosFlows), keyed by
// its address sa (a downlink packet's destination, an uplink one's source): for each flow, filter
// (flowFilters) and direction of the filter, one per combination of its server prefixes and port
// ranges, at the flow's precedence, gbr 1 for a GBR flow; and the default flow's, one per
// direction matching the rest, with the tunnel's QFI (flow_qfi 0).
func qosFlowEntries(s Session, sa netip.Addr) ([]Entry, error) {
	if len(s.Spec.QoSFlows) == 0 {
		return nil, nil
	}
	if s.QoSFlowIndex == nil {
		return nil, fmt.Errorf("session %s has qosFlows but no QoS flow index", s.Name)
	}
	var out []Entry
	for _, up := range []uint8{0, 1} {
		out = append(out, Entry{Table: TableQoSFlows, Match: []Match{{Field: "ue_addr", Kind: Exact, Value: addr(sa)}, {Field: "uplink", Kind: Exact, Value: u8(up)}},
			Action: "set_qos_flow", Params: []Param{{"flow_qfi", u8(0)}, {"flow_idx", u32(DefaultFlowCell(*s.QoSFlowIndex))}, {"gbr", u8(0)}}, Priority: defaultFlowPriority})
	}
	for i, f := range s.Spec.QoSFlows {
		gbr := uint8(0) // a GBR flow is outside the session's MBR (the Session-AMBR)
		if f.GuaranteedBitRate != nil {
			gbr = 1
		}
		params := []Param{{"flow_qfi", u8(uint8(f.QFI))}, {"flow_idx", u32(QoSFlowCell(*s.QoSFlowIndex, i))}, {"gbr", u8(gbr)}}
		for j, fl := range flowFilters(f) {
			td := fl.TrafficDescriptor
			remote, err := ternaryPrefixes("remote_addr", td.DestinationPrefixes)
			if err != nil {
				field := fmt.Sprintf("qosFlows[%d].filters[%d]", i, j)
				if len(f.Filters) == 0 {
					field = fmt.Sprintf("qosFlows[%d]", i)
				}
				return nil, fmt.Errorf("%s.trafficDescriptor.destinationPrefixes: %w", field, err)
			}
			var proto *Match
			if td.Protocol != "" {
				proto = &Match{Field: "proto", Kind: Ternary, Value: u8(protocolNumbers[td.Protocol]), Mask: u8(0xff)}
			}
			for _, up := range filterDirections[fl.Direction] {
				for _, r := range remote {
					for _, rp := range portRanges("remote_port", td.DestinationPorts) {
						for _, lp := range portRanges("local_port", td.SourcePorts) {
							ms := []Match{{Field: "ue_addr", Kind: Exact, Value: addr(sa)}, {Field: "uplink", Kind: Exact, Value: u8(up)}}
							for _, m := range []*Match{r, proto, rp, lp} {
								if m != nil {
									ms = append(ms, *m)
								}
							}
							out = append(out, Entry{Table: TableQoSFlows, Match: ms, Action: "set_qos_flow", Params: params,
								Priority: maxPriority - f.Precedence})
						}
					}
				}
			}
		}
	}
	return out, nil
}
