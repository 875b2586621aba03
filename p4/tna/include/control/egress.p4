// JUNCTION-UPF, TNA build: the egress pipe. Ordinary packets pass unchanged
// (ingress already rewrote them).
//
// Packet's way:
//   bridged, drop set          -> dropped (an ended reorder timer)
//   bridged, held in queue q   -> if q is now empty (deq_qdepth 0), an E2E mirror
//                                 tells ingress the queue can be recycled
//   redundant mirror copy      -> the first copy's IPv4/UDP[/GTP-U/IPv4/UDP]/Junction
//                                 is stripped and the internal header added; the
//                                 mirror session's port recirculates it
//   timer / queue-free mirror  -> becomes an internal packet, truncated

#ifndef JUNCTION_TNA_EGRESS_P4
#define JUNCTION_TNA_EGRESS_P4

control JunctionTnaEgressPipe(inout egress_headers_t hdr,
                              inout tna_egress_metadata_t eg_md,
                              in egress_intrinsic_metadata_t eg_intr_md,
                              inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        if (eg_md.bridged.isValid()) {
            if (eg_md.bridged.drop == 1) {
                eg_dprsr_md.drop_ctl = 1;
            } else if (eg_md.bridged.qid != 0 && eg_intr_md.deq_qdepth == 0) {
                eg_dprsr_md.mirror_type = MIRROR_TYPE_QUEUE_FREE;
                eg_md.mirror_session = REORDER_TIMER_SESSION;
                eg_md.qid = eg_md.bridged.qid;
                eg_md.user_idx = eg_md.bridged.user_idx;
            }
        } else if (hdr.redundant_md.isValid()) {
            hdr.internal.setValid();
            hdr.internal.kind = INTERNAL_REDUNDANT;
            hdr.internal.access = hdr.redundant_md.access;
            hdr.internal._pad0 = 0;
            hdr.internal.port = 0;
            hdr.internal.epoch = 0;
            hdr.internal.qid = 0;
            hdr.internal.user_idx = 0;
            hdr.internal.value = hdr.redundant_md.seq;
            hdr.redundant_md.setInvalid();
            hdr.enc_ipv4.setInvalid();
            hdr.enc_udp.setInvalid();
            hdr.enc_gtpu.setInvalid();
            hdr.tun_ipv4.setInvalid();
            hdr.tun_udp.setInvalid();
            hdr.enc_junction.setInvalid();
        } else if (hdr.timer_md.isValid()) {
            hdr.internal.setValid();
            hdr.internal.kind = INTERNAL_TIMER;
            hdr.internal.access = ACCESS_NONE;
            hdr.internal._pad0 = 0;
            hdr.internal.port = hdr.timer_md.port;
            hdr.internal.epoch = hdr.timer_md.epoch;
            hdr.internal.qid = hdr.timer_md.qid;
            hdr.internal.user_idx = hdr.timer_md.user_idx;
            hdr.internal.value = hdr.timer_md.deadline;
            hdr.timer_md.setInvalid();
            eg_dprsr_md.mtu_trunc_len = INTERNAL_TRUNC_BYTES;
        } else if (hdr.queue_free_md.isValid()) {
            hdr.internal.setValid();
            hdr.internal.kind = INTERNAL_QUEUE_FREE;
            hdr.internal.access = ACCESS_NONE;
            hdr.internal._pad0 = 0;
            hdr.internal.port = 0;
            hdr.internal.epoch = 0;
            hdr.internal.qid = hdr.queue_free_md.qid;
            hdr.internal.user_idx = hdr.queue_free_md.user_idx;
            hdr.internal.value = 0;
            hdr.queue_free_md.setInvalid();
            eg_dprsr_md.mtu_trunc_len = INTERNAL_TRUNC_BYTES;
        }
    }
}

#endif  // JUNCTION_TNA_EGRESS_P4
