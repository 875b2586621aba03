// JUNCTION-UPF, TNA build: pausable reorder queues with Tofino 2 advanced flow
// control, the reorder timer and queue recycling (paper section V-G).
//
// Packet's way:
//   START (first held packet of a user): claim a queue of the upstream port in
//     way A (hash A of the user) or else way B (registers reorder_queues_a/b hold
//     user+1 per queue, 0 = free); queue the packet there and pause the queue
//     (adv_flow_ctl XOFF); mirror a timer to the recirculation port. No free queue:
//     forward, REORDER_OVERFLOW.
//   HOLD: find the user's queue and queue the packet there (none: forward,
//     REORDER_OVERFLOW).
//   Timer: KEEP -> recirculate again; ENDED -> resume the queue
//     (adv_flow_ctl XON) and end the timer; STALE -> end the timer.
//   Queue-free notice (egress saw the resumed queue run empty): free the queue
//     unless its user holds again.

#ifndef JUNCTION_TNA_REORDER_QUEUE_P4
#define JUNCTION_TNA_REORDER_QUEUE_P4

control ReorderQueue(inout headers_t hdr,
                     inout tna_ingress_metadata_t md,
                     inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                     inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    @name(".reorder_queues_a") @id(0x16000010)
    Register<user_idx_t, bit<6>>(REORDER_QUEUES_A, 0) reorder_queues_a;

    @name(".reorder_queues_b") @id(0x16000011)
    Register<user_idx_t, bit<5>>(REORDER_QUEUES_B, 0) reorder_queues_b;

    Hash<bit<6>>(HashAlgorithm_t.CRC16) hash_a;
    Hash<bit<5>>(HashAlgorithm_t.CRC32) hash_b;
    // The AFC messages, assembled by the hash unit (an identity hash concatenates
    // fields wherever they sit in the PHV; an ALU could not): the pause of a queue of
    // way A or B, and the resume.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) afc_pause_a;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) afc_pause_b;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) afc_resume;

    RegisterAction<user_idx_t, bit<6>, bool>(reorder_queues_a) claim_a = {
        void apply(inout user_idx_t owner, out bool ok) {
            ok = false;
            if (owner == 0 || owner == md.queue_owner) {
                owner = md.queue_owner;
                ok = true;
            }
        }
    };
    RegisterAction<user_idx_t, bit<6>, bool>(reorder_queues_a) find_a = {
        void apply(inout user_idx_t owner, out bool ok) {
            ok = owner == md.queue_owner;
        }
    };
    RegisterAction<user_idx_t, bit<6>, void>(reorder_queues_a) free_a = {
        void apply(inout user_idx_t owner) {
            if (owner == md.queue_owner) {
                owner = 0;
            }
        }
    };
    RegisterAction<user_idx_t, bit<5>, bool>(reorder_queues_b) claim_b = {
        void apply(inout user_idx_t owner, out bool ok) {
            ok = false;
            if (owner == 0 || owner == md.queue_owner) {
                owner = md.queue_owner;
                ok = true;
            }
        }
    };
    RegisterAction<user_idx_t, bit<5>, bool>(reorder_queues_b) find_b = {
        void apply(inout user_idx_t owner, out bool ok) {
            ok = owner == md.queue_owner;
        }
    };
    RegisterAction<user_idx_t, bit<5>, void>(reorder_queues_b) free_b = {
        void apply(inout user_idx_t owner) {
            if (owner == md.queue_owner) {
                owner = 0;
            }
        }
    };

    // p4c warns that hdr.internal may be invalid where md.lmd.path == PATH_INTERNAL
    // is tested below: safe, the top level sets PATH_INTERNAL only for a packet whose
    // internal header was parsed.
    apply {
        if (md.lmd.path == PATH_INTERNAL) {
            md.queue_owner = hdr.internal.user_idx + 1;
        } else {
            md.queue_owner = md.lmd.user_idx + 1;
        }

        if (md.lmd.path == PATH_INTERNAL) {
            if (hdr.internal.kind == INTERNAL_TIMER) {
                if (md.timer_result == TIMER_KEEP) {
                    // Once more round the loop; the internal header goes with it.
                    ig_tm_md.ucast_egress_port = TNA_RECIRC_PORT;
                } else {
                    if (md.timer_result != TIMER_STALE && hdr.internal.qid != 0) {
                        ig_dprsr_md.adv_flow_ctl = afc_resume.get({AFC_QFC, hdr.internal.port,
                                                                   hdr.internal.qid, AFC_CREDIT_RESUME});
                    }
                    // Dropped in egress, so that the XON message surely leaves the deparser.
                    hdr.internal.setInvalid();
                    md.bridged.drop = 1;
                    ig_tm_md.ucast_egress_port = TNA_RECIRC_PORT;
                }
            } else if (hdr.internal.kind == INTERNAL_QUEUE_FREE) {
                if (md.timer_result == TIMER_ENDED) {  // the user holds no more
                    if (hdr.internal.qid >= REORDER_QID_BASE_A) {
                        free_a.execute(hdr.internal.qid[5:0]);
                    } else {
                        free_b.execute(hdr.internal.qid[4:0]);
                    }
                }
                ig_dprsr_md.drop_ctl = 1;
            } else {
                ig_dprsr_md.drop_ctl = 1;
            }
        } else if (md.reorder_decision == REORDER_START || md.reorder_decision == REORDER_HOLD) {
            // Way A's queues are REORDER_QID_BASE_A + idx_a, way B's REORDER_QID_BASE_B +
            // idx_b, each computed once: the branches below only copy them. What a queue found means is written in the
            // branch that found it (not tested again from a field: a stage more).
            bit<6> idx_a = hash_a.get({md.lmd.user_idx});
            bit<5> idx_b = hash_b.get({md.lmd.user_idx});
            bit<7> qid_a = REORDER_QID_BASE_A | (bit<7>)idx_a;
            bit<7> qid_b = REORDER_QID_BASE_B | (bit<7>)idx_b;
            md.reorder_target[15:7] = md.lmd.egress_port;
            md.bridged.user_idx = md.lmd.user_idx;
            if (md.reorder_decision == REORDER_START) {
                if (claim_a.execute(idx_a)) {
                    md.reorder_target[6:0] = qid_a;
                    ig_tm_md.qid = qid_a;
                    md.bridged.qid = qid_a;
                    ig_dprsr_md.adv_flow_ctl = afc_pause_a.get({AFC_QFC, md.lmd.egress_port,
                                                                qid_a, AFC_CREDIT_PAUSE});
                } else if (claim_b.execute(idx_b)) {
                    md.reorder_target[6:0] = qid_b;
                    ig_tm_md.qid = qid_b;
                    md.bridged.qid = qid_b;
                    ig_dprsr_md.adv_flow_ctl = afc_pause_b.get({AFC_QFC, md.lmd.egress_port,
                                                                qid_b, AFC_CREDIT_PAUSE});
                } else {
                    md.lmd.count_reason = DROP_REORDER_OVERFLOW;
                }
                // Every hold gets a timer, even when its first packet is dropped or finds
                // no queue, so that the deadline always ends it.
                ig_dprsr_md.mirror_type = MIRROR_TYPE_TIMER;
                md.mirror_session = REORDER_TIMER_SESSION;
                md.mirror_bmd_type = BMD_MIRROR_TIMER;
            } else if (find_a.execute(idx_a)) {
                ig_tm_md.qid = qid_a;
                md.bridged.qid = qid_a;
            } else if (find_b.execute(idx_b)) {
                ig_tm_md.qid = qid_b;
                md.bridged.qid = qid_b;
            } else {
                md.lmd.count_reason = DROP_REORDER_OVERFLOW;
            }
        }
    }
}

#endif  // JUNCTION_TNA_REORDER_QUEUE_P4
