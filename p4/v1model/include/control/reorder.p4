// JUNCTION-UPF, v1model: uplink reorder around path switches
// (docs/pipeline.md, "Uplink reorder contract").
//
// BMv2 cannot pause a queue, so a held packet goes round the recirculation
// loop: this control leaves its headers untouched, marks it reorder_hold, and
// the egress control recirculates it with field list 1 kept (reorder_held,
// _since, _ticket, _rounds, _now); on every pass it looks at the user's state
// again.
//
// Release order: the loop is FIFO, but a release can fall between two held
// packets' passes, so each held packet takes a ticket and, once released,
// leaves in ticket order; a packet that comes while tickets are out joins the
// queue instead of overtaking it. reorder_tickets[user] holds bits 15..0 the
// next ticket to give, 31..16 the next one to let go. Released, every packet
// waits at most one round for its turn; one that has waited
// REORDER_DRAIN_PASSES rounds forgives the tickets before it (their packets are
// gone: the session went, the switch dropped them). A new hold starts a new
// queue. (Rounds, not time: BMv2 stamps a port packet on arrival, and it may
// wait long in BMv2's input queue behind recirculated ones.)
//
// Packet's way (Junction DATA / EX-PATH marker with a session), state per user:
// reorder_state (bit 0 holding, bit 1 held epoch, bit 2 released-valid,
// bit 3 released epoch) and reorder_deadline (now_us):
//   CURRENT_PATH, epoch E, released epoch E        -> forward (or queue behind tickets out)
//   CURRENT_PATH, not holding                      -> hold E, deadline = now + seq, held
//   CURRENT_PATH, holding, deadline passed         -> release, forward (or queue)
//   CURRENT_PATH, holding                          -> held
//   held packet back from the loop: holding, before the deadline -> round again
//                                   deadline passed -> release, then as released
//                                   released: its ticket's turn -> forward
//                                   held REORDER_MAX_HOLD_US -> forward, REORDER_OVERFLOW
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

    // The loop's own bookkeeping: no controller reads or writes it (@hidden; p4c still
    // lists it in the P4Info, with the annotation).
    @hidden @name(".reorder_tickets") @id(0x16000007)
    register<bit<32>, user_idx_t>(MAX_USERS) reorder_tickets;

    apply {
        // A packet routed to the controller is not held: it leaves as a packet-in.
        bool data = md.junction_kind == JK_DATA && (md.current_path || md.reorder_held) &&
                    md.egress_port != V1MODEL_CPU_PORT;
        bool marker = md.junction_kind == JK_MARKER;
        if (md.drop_reason == DROP_NONE && !md.done && md.path == PATH_JUNCTION && (data || marker)) {
            reorder_state_t cur;
            time_us_t deadline;
            bit<32> tickets;
            reorder_state.read(cur, md.user_idx);
            reorder_deadline.read(deadline, md.user_idx);
            reorder_tickets.read(tickets, md.user_idx);
            bit<16> next_ticket = tickets[15:0];
            bit<16> serving = tickets[31:16];

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
                time_us_t waited = md.now_us - md.reorder_since - REORDER_MAX_HOLD_US;
                bool spent = waited[31:31] == 0;  // held REORDER_MAX_HOLD_US or more
                bit<16> ahead = md.reorder_ticket - serving;
                if (holding && expired) {
                    reorder_state.write(md.user_idx, release_held);
                    holding = false;
                }
                if (!holding && ahead != 0 && ahead[15:15] == 0) {
                    md.reorder_rounds = md.reorder_rounds + 1;  // released, not its turn yet
                }
                if (!holding && (ahead == 0 || ahead[15:15] == 1 ||
                                 md.reorder_rounds >= REORDER_DRAIN_PASSES)) {
                    // Its turn, its turn passed, or the tickets before it are forgiven.
                    if (ahead[15:15] == 0) {
                        serving = md.reorder_ticket + 1;
                    }
                } else if (spent) {
                    md.count_reason = DROP_REORDER_OVERFLOW;
                    if (ahead[15:15] == 0) {
                        serving = md.reorder_ticket + 1;
                    }
                } else {
                    hold = true;
                }
            } else {
                if ((cur & REORDER_RELEASE_MASK) == released_e) {
                    // This epoch's ex-path is done: in order already.
                } else if (!holding) {
                    reorder_state.write(md.user_idx, (cur & REORDER_RELEASE_MASK) | holding_e);
                    reorder_deadline.write(md.user_idx, md.now_us + md.reorder_timeout);
                    serving = next_ticket;  // a new hold, a new queue
                    hold = true;
                } else if (expired) {
                    reorder_state.write(md.user_idx, release_held);
                } else {
                    hold = true;
                }
                // Tickets still out (packets released but not gone yet, or just released by
                // this one): queue behind them rather than overtake.
                if (hold || next_ticket != serving) {
                    hold = true;
                    md.reorder_since = md.now_us;
                    md.reorder_ticket = next_ticket;
                    md.reorder_rounds = 0;
                    next_ticket = next_ticket + 1;
                }
            }
            reorder_tickets.write(md.user_idx, serving ++ next_ticket);

            if (hold) {
                md.reorder_hold = true;
                md.reorder_held = true;
                md.done = true;
            } else if (!marker) {
                md.reorder_held = false;
            }
        }
    }
}

#endif  // JUNCTION_V1MODEL_REORDER_P4
