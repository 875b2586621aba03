// JUNCTION-UPF, TNA build: the end of ingress.
//
// Packet's way: a drop reason is counted in drops (packets and bytes) and the
// packet dropped; consumed control messages count as CONSUMED; a reason that is
// only counted (REORDER_OVERFLOW) does not stop the packet. A packet with a
// route leaves on the route's port. Redundant downlink is mirrored (I2E) to
// REDUNDANT_CLONE_SESSION, whose port must be the recirculation port: egress
// strips the first copy's encapsulation and the copy comes back with the other
// access and the same seq. Internal packets were dealt with by ReorderQueue.
//
// A PDU session's usage is counted here, once per packet that ingress lets
// through (a held packet passes ingress once, into its paused queue; a
// redundant packet's second copy and internal packets are not counted): a
// session's uplink user packet (Junction DATA, a single-access G-PDU) in
// uplink_usage, a session's downlink packet (sessions or downlink_tunnels hit)
// in downlink_usage, each at md.lmd.usage_idx, with the bytes Tofino's ingress
// counters count for the frame.

#ifndef JUNCTION_TNA_VERDICT_P4
#define JUNCTION_TNA_VERDICT_P4

control Verdict(inout tna_ingress_metadata_t md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    @name(".drops") @id(0x12000001)
    Counter<bit<64>, drop_reason_t>(DROP_REASON_COUNT, CounterType_t.PACKETS_AND_BYTES) drops;

    @name(".uplink_usage") @id(0x12000002)
    Counter<bit<64>, usage_idx_t>(MAX_USAGE_RECORDS, CounterType_t.PACKETS_AND_BYTES) uplink_usage;

    @name(".downlink_usage") @id(0x12000003)
    Counter<bit<64>, usage_idx_t>(MAX_USAGE_RECORDS, CounterType_t.PACKETS_AND_BYTES) downlink_usage;

    apply {
        // The other access, for a redundant packet's second copy: chosen before the
        // verdict, so that it costs no stage after it.
        if (md.lmd.access == ACCESS_NON3GPP) {
            md.lmd.forced_access = ACCESS_3GPP;
        } else {
            md.lmd.forced_access = ACCESS_NON3GPP;
        }
        if (md.lmd.consume && md.lmd.drop_reason == DROP_NONE) {
            md.lmd.drop_reason = DROP_CONSUMED;
        }
        if (md.lmd.path == PATH_INTERNAL) {
            // Reorder timers and queue-free notices are not traffic.
        } else if (md.lmd.drop_reason != DROP_NONE) {
            drops.count(md.lmd.drop_reason);
            ig_dprsr_md.drop_ctl = 1;
        } else {
            if (md.lmd.count_reason != DROP_NONE) {
                drops.count(md.lmd.count_reason);
            }
            if (!md.lmd.redundant_copy) {
                if ((md.lmd.path == PATH_JUNCTION && md.lmd.junction_kind == JK_DATA) ||
                        md.lmd.path == PATH_GTPU_UPLINK) {
                    uplink_usage.count(md.lmd.usage_idx);
                } else if (md.lmd.path == PATH_DOWNLINK &&
                           (md.lmd.session_hit || md.lmd.downlink_tunnel_hit)) {
                    downlink_usage.count(md.lmd.usage_idx);
                }
            }
            if (!md.lmd.done && !md.lmd.punt) {
                ig_tm_md.ucast_egress_port = md.lmd.egress_port;
                if (md.lmd.redundant) {
                    ig_dprsr_md.mirror_type = MIRROR_TYPE_REDUNDANT;
                    md.mirror_session = (MirrorId_t)REDUNDANT_CLONE_SESSION;
                    md.mirror_bmd_type = BMD_MIRROR_REDUNDANT;
                }
            }
        }
    }
}

#endif  // JUNCTION_TNA_VERDICT_P4
