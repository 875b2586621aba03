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
//                         now >= D -> released E, ENDED; else KEEP
//   queue-free notice:    reports whether the user holds again (ENDED: not)
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

    // A timer before and after its deadline: two actions, since a stateful ALU
    // takes two inputs besides the register (here holding_e and released_e). Each
    // returns two constants at most: a third would take an ALU the register's write
    // needs (bfas: "instruction slot used multiple times").
    RegisterAction<reorder_state_t, user_idx_t, bit<8>>(reorder_state) on_timer_pending = {
        void apply(inout reorder_state_t value, out bit<8> result) {
            if ((value & REORDER_HOLDING) == 0) {
                result = TIMER_ENDED;
            } else if ((value & REORDER_HOLD_MASK) != md.holding_e) {
                result = TIMER_STALE;
            } else {
                result = TIMER_KEEP;
            }
        }
    };

    RegisterAction<reorder_state_t, user_idx_t, bit<8>>(reorder_state) on_timer_expired = {
        void apply(inout reorder_state_t value, out bit<8> result) {
            if ((value & REORDER_HOLDING) == 0) {
                result = TIMER_ENDED;
            } else if ((value & REORDER_HOLD_MASK) != md.holding_e) {
                result = TIMER_STALE;
            } else {
                value = md.released_e;
                result = TIMER_ENDED;  // released now
            }
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
        md.reorder_deadline = 0;

        bit<1> epoch = md.lmd.epoch;
        time_us_t age = 0;  // a timer's: now - deadline, modulo 2^32
        if (md.lmd.path == PATH_INTERNAL) {
            epoch = hdr.internal.epoch;
            age = md.lmd.now_us - hdr.internal.value;
        } else {
            md.reorder_deadline = md.deadline_clock + md.lmd.reorder_timeout;
        }
        md.holding_e = REORDER_HOLDING;
        md.released_e = REORDER_RELEASED_VALID;
        if (epoch == 1) {
            md.holding_e = REORDER_HOLDING | REORDER_HELD_EPOCH;
            md.released_e = REORDER_RELEASED_VALID | REORDER_RELEASED_EPOCH;
        }

        if (md.lmd.path == PATH_INTERNAL) {
            if (hdr.internal.kind == INTERNAL_TIMER) {
                // now >= deadline, modulo 2^32: age below 2^31 (a min, not a test of
                // bit 31, which would split the clock across containers).
                time_us_t age_capped = min_u32(age, 0x7FFFFFFF);
                if (age_capped == age) {
                    md.timer_result = on_timer_expired.execute(hdr.internal.user_idx);
                } else {
                    md.timer_result = on_timer_pending.execute(hdr.internal.user_idx);
                }
            } else if (hdr.internal.kind == INTERNAL_QUEUE_FREE) {
                // TIMER_ENDED: the user holds no more (a register takes four actions
                // at most, so this reuses the pending timer's).
                md.timer_result = on_timer_pending.execute(hdr.internal.user_idx);
            }
        } else if (md.lmd.path == PATH_JUNCTION && !md.lmd.checks.parser_error &&
                   !md.lmd.checks.unknown_teid && !md.lmd.checks.bad_user_packet &&
                   !md.lmd.checks.bad_junction && !md.lmd.checks.no_session &&
                   !md.lmd.checks.wrong_source && !md.lmd.checks.filtered &&
                   !md.lmd.checks.ttl_expired && !md.lmd.checks.no_route) {
            // Uplink no check dropped (the checks that can drop it, read here rather than
            // the drop reason DropReasons makes of them: a stage sooner). A packet routed
            // to the controller is not held: it leaves as a packet-in.
            if (md.lmd.junction_kind == JK_DATA && md.lmd.current_path &&
                    md.lmd.egress_port != TNA_CPU_PORT) {
                md.reorder_decision = on_current_path.execute(md.lmd.user_idx);
                if (md.reorder_decision == REORDER_START) {
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
