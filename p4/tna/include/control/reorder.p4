// JUNCTION-UPF, TNA build: the per-user reorder state machine
// (docs/pipeline.md, "Uplink reorder contract"; paper section V-D).
//
// On Tofino 2 a held packet is not looped: it is queued in a reorder queue of
// the upstream port that advanced flow control keeps paused (ReorderQueue). This
// control only keeps the per-user state, one stateful ALU step per packet on
// reorder_state (bit 0 holding, bit 1 held epoch, bit 2 released-valid, bit 3
// released epoch):
//   CURRENT_PATH epoch E: released E -> FORWARD; not holding -> hold E, START;
//                         holding -> HOLD
//   EX-PATH marker E:     holding E, or not holding -> released E; consumed
//   reorder timer (internal packet of one hold, epoch E, deadline D):
//                         not holding -> ENDED (the marker came);
//                         holding another epoch -> STALE;
//                         now >= D -> released E, RELEASED; else KEEP
//   queue-free notice:    reports whether the user holds again
// The timer carries the deadline, so the data path never has to read
// reorder_deadline before reorder_state; START still records it there for the
// controller.

#ifndef JUNCTION_TNA_REORDER_P4
#define JUNCTION_TNA_REORDER_P4

control Reorder(in headers_t hdr, inout tna_ingress_metadata_t md) {

    @name(".reorder_state") @id(0x16000005)
    Register<reorder_state_t, user_idx_t>(MAX_USERS, 0) reorder_state;

    @name(".reorder_deadline") @id(0x16000006)
    Register<time_us_t, user_idx_t>(MAX_USERS, 0) reorder_deadline;

    RegisterAction<reorder_state_t, user_idx_t, bit<8>>(reorder_state) on_current_path = {
        void apply(inout reorder_state_t value, out bit<8> decision) {
            if ((value & REORDER_RELEASE_MASK) == md.released_e) {
                decision = REORDER_FORWARD;
            } else if ((value & REORDER_HOLDING) == 0) {
                value = (value & REORDER_RELEASE_MASK) | md.holding_e;
                decision = REORDER_START;
            } else {
                decision = REORDER_HOLD;
            }
        }
    };

    RegisterAction<reorder_state_t, user_idx_t, void>(reorder_state) on_marker = {
        void apply(inout reorder_state_t value) {
            if ((value & REORDER_HOLDING) == 0 || (value & REORDER_HOLD_MASK) == md.holding_e) {
                value = md.released_e;
            }
        }
    };

    RegisterAction<reorder_state_t, user_idx_t, bit<8>>(reorder_state) on_timer = {
        void apply(inout reorder_state_t value, out bit<8> result) {
            if ((value & REORDER_HOLDING) == 0) {
                result = TIMER_ENDED;
            } else if ((value & REORDER_HOLD_MASK) != md.holding_e) {
                result = TIMER_STALE;
            } else if (md.timer_expired) {
                value = md.released_e;
                result = TIMER_RELEASED;
            } else {
                result = TIMER_KEEP;
            }
        }
    };

    RegisterAction<reorder_state_t, user_idx_t, bool>(reorder_state) is_holding = {
        void apply(inout reorder_state_t value, out bool holding) {
            holding = (value & REORDER_HOLDING) != 0;
        }
    };

    RegisterAction<time_us_t, user_idx_t, void>(reorder_deadline) arm_deadline = {
        void apply(inout time_us_t deadline) {
            deadline = md.reorder_deadline;
        }
    };

    // p4c warns that hdr.internal may be invalid where md.lmd.path == PATH_INTERNAL
    // is tested below: safe, the top level sets PATH_INTERNAL only for a packet whose
    // internal header was parsed.
    apply {
        md.reorder_decision = REORDER_FORWARD;
        md.timer_result = TIMER_STALE;
        md.timer_expired = false;
        md.queue_user_holding = false;
        md.reorder_deadline = 0;

        bit<1> epoch = md.lmd.epoch;
        if (md.lmd.path == PATH_INTERNAL) {
            md.lmd.user_idx = hdr.internal.user_idx;
            epoch = hdr.internal.epoch;
        }
        md.holding_e = REORDER_HOLDING;
        md.released_e = REORDER_RELEASED_VALID;
        if (epoch == 1) {
            md.holding_e = REORDER_HOLDING | REORDER_HELD_EPOCH;
            md.released_e = REORDER_RELEASED_VALID | REORDER_RELEASED_EPOCH;
        }

        if (md.lmd.path == PATH_INTERNAL) {
            if (hdr.internal.kind == INTERNAL_TIMER) {
                time_us_t age = md.lmd.now_us - hdr.internal.value;
                md.timer_expired = age[31:31] == 0;  // now >= deadline, modulo 2^32
                md.timer_result = on_timer.execute(md.lmd.user_idx);
            } else if (hdr.internal.kind == INTERNAL_QUEUE_FREE) {
                md.queue_user_holding = is_holding.execute(md.lmd.user_idx);
            }
        } else if (!md.lmd.done && md.lmd.path == PATH_JUNCTION) {
            // A packet routed to the controller is not held: it leaves as a packet-in.
            if (md.lmd.junction_kind == JK_DATA && md.lmd.current_path &&
                    md.lmd.egress_port != TNA_CPU_PORT) {
                md.reorder_decision = on_current_path.execute(md.lmd.user_idx);
                if (md.reorder_decision == REORDER_START) {
                    md.reorder_deadline = md.lmd.now_us + md.lmd.reorder_timeout;
                    arm_deadline.execute(md.lmd.user_idx);
                }
            } else if (md.lmd.junction_kind == JK_MARKER) {
                on_marker.execute(md.lmd.user_idx);
                md.lmd.consume = true;
                md.lmd.done = true;
            }
        }
    }
}

#endif  // JUNCTION_TNA_REORDER_P4
