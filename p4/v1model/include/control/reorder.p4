// JUNCTION-UPF, v1model: uplink reorder around path switches
// (docs/pipeline.md, "Uplink reorder contract").
//
// BMv2 cannot pause a queue, so a held packet goes round the recirculation
// loop: this control leaves its headers untouched, marks it reorder_hold, and
// the egress control recirculates it with reorder_held / reorder_loops kept;
// on every pass it looks at the user's state again.
//
// Packet's way (Junction DATA / EX-PATH marker with a session), state per user:
// reorder_state (bit 0 holding, bit 1 held epoch, bit 2 released-valid,
// bit 3 released epoch) and reorder_deadline (now_us):
//   CURRENT_PATH, epoch E, released epoch E        -> forward
//   CURRENT_PATH, not holding                      -> hold E, deadline = now + seq, held
//   CURRENT_PATH, holding, deadline passed         -> release, forward
//   CURRENT_PATH, holding                          -> held
//   held packet back from the loop: released       -> forward
//                                   deadline passed -> release, forward
//                                   loop budget spent -> forward, REORDER_OVERFLOW
//                                   otherwise      -> round again
//   EX-PATH marker E: holding E, or not holding    -> release E (consumed)
//                     holding another epoch        -> stale (consumed)
//   unmarked DATA                                  -> forward

#ifndef JUNCTION_V1MODEL_REORDER_P4
#define JUNCTION_V1MODEL_REORDER_P4

control Reorder(inout local_metadata_t md) {

    @name(".reorder_state") @id(0x16000005)
    register<reorder_state_t, user_idx_t>(MAX_USERS) reorder_state;

    @name(".reorder_deadline") @id(0x16000006)
    register<time_us_t, user_idx_t>(MAX_USERS) reorder_deadline;

    apply {
        bool data = md.junction_kind == JK_DATA && (md.current_path || md.reorder_held);
        bool marker = md.junction_kind == JK_MARKER;
        if (!md.done && md.path == PATH_JUNCTION && (data || marker)) {
            reorder_state_t cur;
            time_us_t deadline;
            reorder_state.read(cur, md.user_idx);
            reorder_deadline.read(deadline, md.user_idx);

            bool holding = (cur & REORDER_HOLDING) != 0;
            time_us_t age = md.now_us - deadline;
            bool expired = age[31:31] == 0;  // now >= deadline, modulo 2^32
            reorder_state_t held_epoch = cur & REORDER_HELD_EPOCH;
            // "Released, epoch E" and "holding, epoch E" for this packet's epoch.
            reorder_state_t released_e = REORDER_RELEASED_VALID;
            reorder_state_t holding_e = REORDER_HOLDING;
            if (md.epoch == 1) {
                released_e = REORDER_RELEASED_VALID | REORDER_RELEASED_EPOCH;
                holding_e = REORDER_HOLDING | REORDER_HELD_EPOCH;
            }
            // Releasing what is held records the held epoch as released.
            reorder_state_t release_held = REORDER_RELEASED_VALID | (held_epoch << 2);

            bool hold = false;
            if (marker) {
                if (!holding || (cur & REORDER_HOLD_MASK) == holding_e) {
                    reorder_state.write(md.user_idx, released_e);
                }
                md.consume = true;
                md.done = true;
            } else if (md.reorder_held) {
                if (!holding) {
                    // Released by the marker or by another packet's deadline.
                } else if (expired) {
                    reorder_state.write(md.user_idx, release_held);
                } else if (md.reorder_loops >= REORDER_MAX_RECIRCULATIONS) {
                    md.count_reason = DROP_REORDER_OVERFLOW;
                } else {
                    hold = true;
                }
            } else if ((cur & REORDER_RELEASE_MASK) == released_e) {
                // This epoch's ex-path is done: in order already.
            } else if (!holding) {
                reorder_state.write(md.user_idx, (cur & REORDER_RELEASE_MASK) | holding_e);
                reorder_deadline.write(md.user_idx, md.now_us + md.reorder_timeout);
                hold = true;
            } else if (expired) {
                reorder_state.write(md.user_idx, release_held);
            } else {
                hold = true;
            }

            if (hold) {
                md.reorder_hold = true;
                md.reorder_held = true;
                md.reorder_loops = md.reorder_loops + 1;
                md.done = true;
            } else if (!marker) {
                md.reorder_held = false;
            }
        }
    }
}

#endif  // JUNCTION_V1MODEL_REORDER_P4
