// JUNCTION-UPF, v1model: the end of ingress.
//
// Packet's way: a drop reason is counted in drops (packets and bytes) and the
// packet dropped; consumed control messages count as CONSUMED; a reason that
// is only counted (REORDER_OVERFLOW) does not stop the packet. A held packet
// is queued to its own ingress port only so that egress can recirculate it.
// A packet with a route leaves on the route's port. Redundant downlink gets an
// I2E clone to REDUNDANT_CLONE_SESSION that egress recirculates, carrying the
// other access and the same seq; its port is whatever the controller
// programmed, since egress never sends the clone out.
//
// A PDU session's usage is counted here, once per packet that ingress lets
// through, on its first pass only (instance type NORMAL: not a held packet back
// from the loop, not a redundant packet's second copy): a session's uplink user
// packet (Junction DATA, a single-access G-PDU) in uplink_usage, a session's
// downlink packet (sessions or downlink_tunnels hit) in downlink_usage, each at
// md.usage_idx. BMv2's counters add the packet's ingress length: the frame's
// length as it arrived on the port.
//
// The same packet then meets its session's MBR policer: uplink_mbr or downlink_mbr at
// the cell mbr_sessions gives its UE address (no entry: not policed; a cell the
// controller never configured marks every packet green). Red is dropped and counted
// in mbr_drops, after usage counted it (as on TNA, whose policer is in egress), and
// in uplink_policed / downlink_policed at its cell (the session's usage cell: usage
// after QoS enforcement is usage less these); a redundant packet that is red has no
// second copy. BMv2's meters and those counters, too, count the frame as it arrived.
//
// A packet in a QoS flow of its own (qos_flows) first meets that flow's policer,
// uplink_flow_mbr or downlink_flow_mbr at the cell its entry gives: red is dropped and
// counted in mbr_drops and in *_policed at md.usage_idx (where usage counted it), and
// meets the session's policer no more; nor does a GBR flow's packet of any colour (outside the
// Session-AMBR). The flow's cell of uplink_flow_usage /
// downlink_flow_usage counts it too, and of uplink_flow_policed / downlink_flow_policed
// what either policer dropped. A downlink G-PDU of such a flow carries the flow's QFI in
// its PDU Session Container, where it has one (the session's tunnel has a QFI), on every
// pass: the second copy of a redundant packet, encapsulated anew, too.

#ifndef JUNCTION_V1MODEL_VERDICT_P4
#define JUNCTION_V1MODEL_VERDICT_P4

control Verdict(inout headers_t hdr, inout local_metadata_t md, inout standard_metadata_t standard_metadata) {

    @name(".drops") @id(0x12000001)
    counter<drop_reason_t>(DROP_REASON_COUNT, CounterType.packets_and_bytes) drops;

    @name(".uplink_usage") @id(0x12000002)
    counter<usage_idx_t>(MAX_USAGE_RECORDS, CounterType.packets_and_bytes) uplink_usage;

    @name(".downlink_usage") @id(0x12000003)
    counter<usage_idx_t>(MAX_USAGE_RECORDS, CounterType.packets_and_bytes) downlink_usage;

    @name(".uplink_mbr") @id(0x14000001)
    meter<usage_idx_t>(MAX_USAGE_RECORDS, MeterType.bytes) uplink_mbr;

    @name(".downlink_mbr") @id(0x14000002)
    meter<usage_idx_t>(MAX_USAGE_RECORDS, MeterType.bytes) downlink_mbr;

    @name(".mbr_drops") @id(0x12000004)
    counter<bit<1>>(2, CounterType.packets_and_bytes) mbr_drops;

    @name(".uplink_policed") @id(0x12000005)
    counter<usage_idx_t>(MAX_USAGE_RECORDS, CounterType.packets_and_bytes) uplink_policed;

    @name(".downlink_policed") @id(0x12000006)
    counter<usage_idx_t>(MAX_USAGE_RECORDS, CounterType.packets_and_bytes) downlink_policed;

    @name(".uplink_flow_mbr") @id(0x14000003)
    meter<qos_flow_idx_t>(MAX_QOS_FLOWS, MeterType.bytes) uplink_flow_mbr;

    @name(".downlink_flow_mbr") @id(0x14000004)
    meter<qos_flow_idx_t>(MAX_QOS_FLOWS, MeterType.bytes) downlink_flow_mbr;

    // A QoS flow's own usage (qos_flows), counted where usage counts its packets, and what the
    // policers (the flow's or its session's) dropped of it.
    @name(".uplink_flow_usage") @id(0x12000007)
    counter<qos_flow_idx_t>(MAX_QOS_FLOWS, CounterType.packets_and_bytes) uplink_flow_usage;

    @name(".downlink_flow_usage") @id(0x12000008)
    counter<qos_flow_idx_t>(MAX_QOS_FLOWS, CounterType.packets_and_bytes) downlink_flow_usage;

    @name(".uplink_flow_policed") @id(0x12000009)
    counter<qos_flow_idx_t>(MAX_QOS_FLOWS, CounterType.packets_and_bytes) uplink_flow_policed;

    @name(".downlink_flow_policed") @id(0x1200000A)
    counter<qos_flow_idx_t>(MAX_QOS_FLOWS, CounterType.packets_and_bytes) downlink_flow_policed;

    MBRSessions() mbr_sessions;
    QoSFlows() qos_flows;
    bool policed = false;
    usage_idx_t mbr_cell = 0;
    bool in_flow = false;
    qfi_t flow_qfi = 0;
    qos_flow_idx_t flow_cell = 0;
    bool gbr_flow = false;

    apply {
        if (md.consume && md.drop_reason == DROP_NONE) {
            md.drop_reason = DROP_CONSUMED;
        }
        if (md.drop_reason != DROP_NONE) {
            drops.count(md.drop_reason);
            mark_to_drop(standard_metadata);
        } else {
            if (md.count_reason != DROP_NONE) {
                drops.count(md.count_reason);
            }
            bit<2> colour = 0;
            bool uplink = (md.path == PATH_JUNCTION && md.junction_kind == JK_DATA) ||
                    md.path == PATH_GTPU_UPLINK;
            bool downlink = md.path == PATH_DOWNLINK && (md.session_hit || md.downlink_tunnel_hit);
            // One application of each table (BMv2 takes a table applied once).
            if (uplink || downlink) {
                // The user packet as seen from the UE (qos_flows.p4).
                ipv4_addr_t ue_addr = md.user_dst;
                ipv4_addr_t remote_addr = md.user_src;
                l4_port_t remote_port = md.user_sport;
                l4_port_t local_port = md.user_dport;
                if (uplink) {
                    ue_addr = md.user_src;
                    remote_addr = md.user_dst;
                    remote_port = md.user_dport;
                    local_port = md.user_sport;
                }
                mbr_sessions.apply(ue_addr, policed, mbr_cell);
                qos_flows.apply(ue_addr, (bit<1>)uplink, remote_addr, md.user_proto, remote_port, local_port,
                                in_flow, flow_qfi, flow_cell, gbr_flow);
            }
            if (downlink && in_flow && flow_qfi != 0 && hdr.enc_gtpu_psc.isValid()) {
                hdr.enc_gtpu_psc.content = (bit<16>)flow_qfi;  // PDU type 0, no PPP/RQI, the QFI
            }
            if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
                if (uplink) {
                    uplink_usage.count(md.usage_idx);
                    if (in_flow) {
                        uplink_flow_usage.count(flow_cell);
                        uplink_flow_mbr.execute_meter(flow_cell, colour);
                        if (colour == METER_RED) {
                            mbr_drops.count(MBR_UPLINK);
                            uplink_policed.count(md.usage_idx);
                        }
                    }
                    if (colour != METER_RED && policed && !gbr_flow) {
                        uplink_mbr.execute_meter(mbr_cell, colour);
                        if (colour == METER_RED) {
                            mbr_drops.count(MBR_UPLINK);
                            uplink_policed.count(mbr_cell);
                        }
                    }
                    if (in_flow && colour == METER_RED) {
                        uplink_flow_policed.count(flow_cell);
                    }
                } else if (downlink) {
                    downlink_usage.count(md.usage_idx);
                    if (in_flow) {
                        downlink_flow_usage.count(flow_cell);
                        downlink_flow_mbr.execute_meter(flow_cell, colour);
                        if (colour == METER_RED) {
                            mbr_drops.count(MBR_DOWNLINK);
                            downlink_policed.count(md.usage_idx);
                        }
                    }
                    if (colour != METER_RED && policed && !gbr_flow) {
                        downlink_mbr.execute_meter(mbr_cell, colour);
                        if (colour == METER_RED) {
                            mbr_drops.count(MBR_DOWNLINK);
                            downlink_policed.count(mbr_cell);
                        }
                    }
                    if (in_flow && colour == METER_RED) {
                        downlink_flow_policed.count(flow_cell);
                    }
                }
            }
            if (colour == METER_RED) {
                mark_to_drop(standard_metadata);
            } else if (md.reorder_hold) {
                standard_metadata.egress_spec = standard_metadata.ingress_port;
            } else if (!md.done && !md.punt) {
                standard_metadata.egress_spec = md.egress_port;
                if (md.redundant) {
                    md.redundant_copy = true;
                    md.forced_seq = md.seq;
                    md.forced_access = ACCESS_NON3GPP;
                    if (md.access == ACCESS_NON3GPP) {
                        md.forced_access = ACCESS_3GPP;
                    }
                    clone_preserving_field_list(CloneType.I2E, REDUNDANT_CLONE_SESSION,
                                                FIELD_LIST_REDUNDANT);
                }
            }
        }
    }
}

#endif  // JUNCTION_V1MODEL_VERDICT_P4
