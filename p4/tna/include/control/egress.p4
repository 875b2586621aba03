// JUNCTION-UPF, TNA build: the egress pipe.
//
// Packet's way:
//   bridged, drop set          -> dropped (an ended reorder timer)
//   bridged, user IPv4         -> the MBR policer (mbr_sessions by the UE address,
//                                 uplink_mbr / downlink_mbr): red is dropped
//                                 and counted in mbr_drops
//   bridged                    -> Encap adds what ingress decided (bridged_md_t);
//                                 held in reorder queue q and q now empty
//                                 (deq_qdepth 0): an E2E mirror tells ingress the
//                                 queue can be recycled
//   redundant mirror copy      -> the internal header goes in front (the copy is the
//                                 packet as ingress left it, not encapsulated yet);
//                                 the mirror session's port recirculates it
//   timer / queue-free mirror  -> becomes an internal packet, truncated

#ifndef JUNCTION_TNA_EGRESS_P4
#define JUNCTION_TNA_EGRESS_P4

control JunctionTnaEgressPipe(inout egress_headers_t hdr,
                              inout tna_egress_metadata_t eg_md,
                              in egress_intrinsic_metadata_t eg_intr_md,
                              inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Encap() encap;
    MBRSessions() mbr_sessions;
    QoSFlows() qos_flows;

    // The MBR policer (../../../include/control/mbr.p4), here rather than in Verdict:
    // the ingress has no stage left. A packet meets it as it leaves (each copy of a
    // redundant one: docs/tofino.md); bytes are the frame's as egress received it
    // (before Encap).
    @name(".uplink_mbr") @id(0x14000001)
    Meter<usage_idx_t>(MAX_USAGE_RECORDS, MeterType_t.BYTES) uplink_mbr;
    @name(".downlink_mbr") @id(0x14000002)
    Meter<usage_idx_t>(MAX_USAGE_RECORDS, MeterType_t.BYTES) downlink_mbr;
    @name(".mbr_drops") @id(0x12000004)
    Counter<bit<64>, bit<1>>(2, CounterType_t.PACKETS_AND_BYTES) mbr_drops;

    // QoS flows of a session's own (../../../include/control/qos_flows.p4): the flow's
    // policer, met before the session's, and its usage.
    @name(".uplink_flow_mbr") @id(0x14000003)
    Meter<qos_flow_idx_t>(MAX_QOS_FLOWS, MeterType_t.BYTES) uplink_flow_mbr;
    @name(".downlink_flow_mbr") @id(0x14000004)
    Meter<qos_flow_idx_t>(MAX_QOS_FLOWS, MeterType_t.BYTES) downlink_flow_mbr;
    @name(".uplink_flow_usage") @id(0x12000007)
    Counter<bit<64>, qos_flow_idx_t>(MAX_QOS_FLOWS, CounterType_t.PACKETS_AND_BYTES) uplink_flow_usage;
    @name(".downlink_flow_usage") @id(0x12000008)
    Counter<bit<64>, qos_flow_idx_t>(MAX_QOS_FLOWS, CounterType_t.PACKETS_AND_BYTES) downlink_flow_usage;

    apply {
        if (eg_md.bridged.isValid()) {
            if (eg_md.bridged.drop == 1) {
                eg_dprsr_md.drop_ctl = 1;
            } else {
                eg_md.lmd.encap_kind = eg_md.bridged.encap_kind;
                eg_md.lmd.reply = (bool)eg_md.bridged.reply;
                eg_md.lmd.seq = eg_md.bridged.seq;
                eg_md.lmd.teid = eg_md.bridged.teid;
                eg_md.lmd.n3_addr = eg_md.bridged.n3_addr;
                eg_md.lmd.junction_addr = eg_md.bridged.junction_addr;
                eg_md.lmd.peer_addr = eg_md.bridged.peer_addr;
                eg_md.lmd.junction_dst = eg_md.bridged.junction_dst;
                // A packet-in (to the CPU port) is no user packet, whatever its bytes say.
                bool user = eg_md.has_user_ipv4 && eg_intr_md.egress_port != TNA_CPU_PORT;
                bool in_flow = false;
                qos_flow_idx_t flow_cell = 0;
                bool gbr_flow = false;
                eg_md.flow_qfi = 0;
                if (user) {
                    qos_flows.apply(eg_md.ue_addr, eg_md.flow_uplink, eg_md.remote_addr, eg_md.proto,
                                    eg_md.remote_port, eg_md.local_port,
                                    in_flow, eg_md.flow_qfi, flow_cell, gbr_flow);
                }
                encap.apply(hdr.frame, eg_md.lmd, eg_md.bridged.user_len, eg_md.flow_qfi);
                if (user) {
                    bool uplink = eg_md.bridged.encap_kind == 0;  // no encapsulation
                    bool policed;
                    usage_idx_t mbr_cell;
                    mbr_sessions.apply(eg_md.ue_addr, policed, mbr_cell);
                    bit<8> colour = 0;
                    if (in_flow) {
                        if (uplink) {
                            uplink_flow_usage.count(flow_cell);
                            colour = uplink_flow_mbr.execute(flow_cell);
                        } else {
                            downlink_flow_usage.count(flow_cell);
                            colour = downlink_flow_mbr.execute(flow_cell);
                        }
                    }
                    if (policed && !gbr_flow && colour != (bit<8>)MeterColor_t.RED) {
                        if (uplink) {
                            colour = uplink_mbr.execute(mbr_cell);
                        } else {
                            colour = downlink_mbr.execute(mbr_cell);
                        }
                    }
                    if (colour == (bit<8>)MeterColor_t.RED) {
                        eg_dprsr_md.drop_ctl = 1;
                        if (uplink) {
                            mbr_drops.count(MBR_UPLINK);
                        } else {
                            mbr_drops.count(MBR_DOWNLINK);
                        }
                    }
                }
                if (eg_md.bridged.qid != 0 && eg_intr_md.deq_qdepth == 0) {
                    eg_dprsr_md.mirror_type = MIRROR_TYPE_QUEUE_FREE;
                    eg_md.mirror_session = REORDER_TIMER_SESSION;
                    eg_md.mirror_bmd_type = BMD_MIRROR_QUEUE_FREE;
                    eg_md.qid = eg_md.bridged.qid;
                    eg_md.user_idx = eg_md.bridged.user_idx;
                }
            }
        } else if (hdr.redundant_md.isValid()) {
            hdr.frame.internal.setValid();
            hdr.frame.internal.kind = INTERNAL_REDUNDANT;
            hdr.frame.internal.access = hdr.redundant_md.access;
            hdr.frame.internal._pad0 = 0;
            hdr.frame.internal.port = 0;
            hdr.frame.internal.epoch = 0;
            hdr.frame.internal.qid = 0;
            hdr.frame.internal.user_idx = 0;
            hdr.frame.internal.value = hdr.redundant_md.seq;
            hdr.redundant_md.setInvalid();
        } else if (hdr.timer_md.isValid()) {
            hdr.frame.internal.setValid();
            hdr.frame.internal.kind = INTERNAL_TIMER;
            hdr.frame.internal.access = ACCESS_NONE;
            hdr.frame.internal._pad0 = 0;
            hdr.frame.internal.port = hdr.timer_md.port;
            hdr.frame.internal.epoch = hdr.timer_md.epoch;
            hdr.frame.internal.qid = hdr.timer_md.qid;
            hdr.frame.internal.user_idx = hdr.timer_md.user_idx;
            hdr.frame.internal.value = hdr.timer_md.deadline;
            hdr.timer_md.setInvalid();
            eg_dprsr_md.mtu_trunc_len = INTERNAL_TRUNC_BYTES;
        } else if (hdr.queue_free_md.isValid()) {
            hdr.frame.internal.setValid();
            hdr.frame.internal.kind = INTERNAL_QUEUE_FREE;
            hdr.frame.internal.access = ACCESS_NONE;
            hdr.frame.internal._pad0 = 0;
            hdr.frame.internal.port = 0;
            hdr.frame.internal.epoch = 0;
            hdr.frame.internal.qid = hdr.queue_free_md.qid;
            hdr.frame.internal.user_idx = hdr.queue_free_md.user_idx;
            hdr.frame.internal.value = 0;
            hdr.queue_free_md.setInvalid();
            eg_dprsr_md.mtu_trunc_len = INTERNAL_TRUNC_BYTES;
        }
    }
}

#endif  // JUNCTION_TNA_EGRESS_P4
