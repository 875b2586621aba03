// JUNCTION-UPF: the downlink steering decision (docs/pipeline.md, "Steering
// decision"; the paper's unified traffic steering, section V-C2).
//
// Packet's way (downlink with a session): inputs are the session's legs (a leg
// is present when its UE address is non-zero), the user's path state
// (md.rtt_3gpp / md.rtt_non3gpp, 0 = unavailable; md.loss_3gpp /
// md.loss_non3gpp, percent; md.auto_3gpp, autonomous load balance's split by
// the user's share, PathState's), the steering parameters
// from applications or session_overrides and the session's seq. Output: the
// access this copy leaves on, and whether a second (redundant) copy goes on the
// other access. No available access drops NO_PATH. The second copy of a
// redundant packet comes back with its access forced.
//
// Two steps, as a switch pipeline takes them: every comparison becomes one bit
// (each a single test of one field, or of one field against another through
// min_u32), then the steering_decisions table, whose constant entries are the
// contract's table row by row, picks the access from the bits. Its entries are
// ordered: the first that matches wins, so each row lists only what must hold
// on top of the rows above it not matching.

#ifndef JUNCTION_CONTROL_STEERING_P4
#define JUNCTION_CONTROL_STEERING_P4

control Steering(inout local_metadata_t md) {
    // The decision's inputs, one bit each (1 = holds).
    bit<1> leg_3gpp;      // the session has a 3GPP leg
    bit<1> leg_non3gpp;
    bit<1> up_3gpp;       // rtt_3gpp != 0: avail(3GPP) = leg_3gpp & up_3gpp
    bit<1> up_non3gpp;
    bit<1> rtt_ok_3gpp;   // no RTT threshold, or rtt_3gpp <= it
    bit<1> rtt_ok_non3gpp;
    bit<1> loss_ok_3gpp;  // no loss limit, or loss_3gpp < it: ok(a) = avail & rtt_ok & loss_ok
    bit<1> loss_ok_non3gpp;
    bit<1> faster_3gpp;   // rtt_3gpp <= rtt_non3gpp (a tie goes to 3GPP)
    bit<1> split_3gpp;    // load-balance: seq % 128 < ratio_3gpp

    // a <= b is min(a, b) == a; seq % 128 < ratio is min(ratio, seq % 128) != ratio.
    // One action for all six: bf-p4c gives each min outside an action a table of its
    // own, and a Tofino stage holds 16.
    rtt_us_t threshold;      // the RTT threshold, none (0) as the largest value
    loss_pct_t highest_ok;   // the highest loss below the limit, none (0) as 255
    rtt_us_t lower_3gpp;
    rtt_us_t lower_non3gpp;
    rtt_us_t lower_both;
    loss_pct_t lower_loss_3gpp;
    loss_pct_t lower_loss_non3gpp;
    ratio_t lower_split;
    @hidden action lower_bounds() {
        lower_3gpp = min_u32(md.rtt_3gpp, threshold);
        lower_non3gpp = min_u32(md.rtt_non3gpp, threshold);
        lower_both = min_u32(md.rtt_3gpp, md.rtt_non3gpp);
        lower_loss_3gpp = min_u8(md.loss_3gpp, highest_ok);
        lower_loss_non3gpp = min_u8(md.loss_non3gpp, highest_ok);
        lower_split = min_u8(md.ratio_3gpp, md.seq_mod_128);
    }

    @hidden @name("steering_choose")
    action choose(access_t access, bit<1> redundant) {
        md.access = access;
        md.redundant = (bool)redundant;
    }

    @hidden @name("steering_no_path")
    action no_path() {
        md.access = ACCESS_NONE;
        md.redundant = false;
        md.checks.no_path = true;
    }

    // Abbreviations of the entries below (keys in this order):
    //   C  redundant_copy, F forced_access, M mode, P param_access,
    //   L3 Ln legs, U3 Un up, R3 Rn rtt_ok, S3 Sn loss_ok, Fa faster_3gpp,
    //   Sp split_3gpp, Au auto_3gpp.
#define ANY_BITS _, _, _, _, _, _, _, _, _, _, _
#define AVAIL_3GPP 1, _, 1, _, _, _, _, _
#define AVAIL_NON3GPP _, 1, _, 1, _, _, _, _
#define AVAIL_BOTH 1, 1, 1, 1, _, _, _, _
#define OK_3GPP 1, _, 1, _, 1, _, 1, _
#define OK_NON3GPP _, 1, _, 1, _, 1, _, 1
#define OK_BOTH 1, 1, 1, 1, 1, 1, 1, 1
    @hidden @name("steering_decisions")
    table steering_decisions {
        key = {
            md.redundant_copy : ternary;
            md.forced_access  : ternary;
            md.mode           : ternary;
            md.param_access   : ternary;
            leg_3gpp          : ternary;
            leg_non3gpp       : ternary;
            up_3gpp           : ternary;
            up_non3gpp        : ternary;
            rtt_ok_3gpp       : ternary;
            rtt_ok_non3gpp    : ternary;
            loss_ok_3gpp      : ternary;
            loss_ok_non3gpp   : ternary;
            faster_3gpp       : ternary;
            split_3gpp        : ternary;
            md.auto_3gpp      : ternary;
        }
        actions = {
            choose;
            no_path;
        }
        const default_action = no_path();
        const entries = {
            // The second copy of a redundant packet: the access was decided, if the leg is there.
            (true, ACCESS_3GPP, _, _, 1, _, _, _, _, _, _, _, _, _, _) : choose(ACCESS_3GPP, 0);
            (true, ACCESS_NON3GPP, _, _, _, 1, _, _, _, _, _, _, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (true, _, _, _, ANY_BITS) : no_path();

            // Smallest delay: the available access with the smaller RTT.
            (false, _, MODE_SMALLEST_DELAY, _, AVAIL_BOTH, 1, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_SMALLEST_DELAY, _, AVAIL_BOTH, 0, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_SMALLEST_DELAY, _, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_SMALLEST_DELAY, _, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_SMALLEST_DELAY, _, ANY_BITS) : no_path();

            // Load balance: both ok, split by the ratio; else smallest delay over the
            // ok accesses (one at most is left), then over the available ones.
            (false, _, MODE_LOAD_BALANCE, _, OK_BOTH, _, 1, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, OK_BOTH, _, 0, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, OK_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, OK_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, AVAIL_BOTH, 1, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, AVAIL_BOTH, 0, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_LOAD_BALANCE, _, ANY_BITS) : no_path();

            // Autonomous load balance: the same, split by the user's share.
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, OK_BOTH, _, _, 1) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, OK_BOTH, _, _, 0) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, OK_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, OK_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, AVAIL_BOTH, 1, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, AVAIL_BOTH, 0, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_AUTONOMOUS_LOAD_BALANCE, _, ANY_BITS) : no_path();

            // Priority-based, A = non-3GPP: ok(A) -> A; avail(B) -> B (overflow); avail(A) -> A.
            (false, _, MODE_PRIORITY_BASED, ACCESS_NON3GPP, OK_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_PRIORITY_BASED, ACCESS_NON3GPP, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_PRIORITY_BASED, ACCESS_NON3GPP, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            // ... any other access parameter is A = 3GPP.
            (false, _, MODE_PRIORITY_BASED, _, OK_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_PRIORITY_BASED, _, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_PRIORITY_BASED, _, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_PRIORITY_BASED, _, ANY_BITS) : no_path();

            // Redundant: both available, 3GPP first and a copy for non-3GPP; else smallest delay.
            (false, _, MODE_REDUNDANT, _, AVAIL_BOTH, _, _, _) : choose(ACCESS_3GPP, 1);
            (false, _, MODE_REDUNDANT, _, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, MODE_REDUNDANT, _, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, MODE_REDUNDANT, _, ANY_BITS) : no_path();

            // Active-standby, and any mode this program does not know: ok(A), ok(B),
            // avail(A), avail(B); A = non-3GPP ...
            (false, _, _, ACCESS_NON3GPP, OK_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, _, ACCESS_NON3GPP, OK_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, _, ACCESS_NON3GPP, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, _, ACCESS_NON3GPP, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            // ... or A = 3GPP for any other access parameter.
            (false, _, _, _, OK_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, _, _, OK_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
            (false, _, _, _, AVAIL_3GPP, _, _, _) : choose(ACCESS_3GPP, 0);
            (false, _, _, _, AVAIL_NON3GPP, _, _, _) : choose(ACCESS_NON3GPP, 0);
        }
    }
#undef ANY_BITS
#undef AVAIL_3GPP
#undef AVAIL_NON3GPP
#undef AVAIL_BOTH
#undef OK_3GPP
#undef OK_NON3GPP
#undef OK_BOTH

    apply {
        if (md.path == PATH_DOWNLINK && md.session_hit) {
            // Every bit starts at 0 in one action, and each if below only sets it: on
            // Tofino each branch is a table, and a stage holds 16 (ingress and egress).
            leg_3gpp = 0;
            leg_non3gpp = 0;
            up_3gpp = 0;
            up_non3gpp = 0;
            rtt_ok_3gpp = 0;
            rtt_ok_non3gpp = 0;
            faster_3gpp = 0;
            loss_ok_3gpp = 0;
            loss_ok_non3gpp = 0;
            split_3gpp = 0;
            if (md.ue_addr_3gpp != 0) {
                leg_3gpp = 1;
            }
            if (md.ue_addr_non3gpp != 0) {
                leg_non3gpp = 1;
            }
            if (md.rtt_3gpp != 0) {
                up_3gpp = 1;
            }
            if (md.rtt_non3gpp != 0) {
                up_non3gpp = 1;
            }

            // r <= threshold, with threshold 0 (none) as the largest value; l < limit
            // is l <= limit - 1, with limit 0 (none) as 255, above every loss. (Each
            // chosen by an if and its else, one stage: a value computed straight from a
            // field would be folded into the min that reads it, an action that uses
            // what it computes.)
            if (md.rtt_threshold_us != 0) {
                threshold = md.rtt_threshold_us;
            } else {
                threshold = 0xFFFFFFFF;
            }
            if (md.loss_limit_pct != 0) {
                highest_ok = md.loss_limit_pct - 1;
            } else {
                highest_ok = 255;
            }

            lower_bounds();
            if (lower_3gpp == md.rtt_3gpp) {
                rtt_ok_3gpp = 1;
            }
            if (lower_non3gpp == md.rtt_non3gpp) {
                rtt_ok_non3gpp = 1;
            }
            if (lower_both == md.rtt_3gpp) {
                faster_3gpp = 1;
            }
            if (lower_loss_3gpp == md.loss_3gpp) {
                loss_ok_3gpp = 1;
            }
            if (lower_loss_non3gpp == md.loss_non3gpp) {
                loss_ok_non3gpp = 1;
            }
            if (lower_split != md.ratio_3gpp) {
                split_3gpp = 1;
            }

            steering_decisions.apply();
        }
    }
}

#endif  // JUNCTION_CONTROL_STEERING_P4
