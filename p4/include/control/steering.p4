// JUNCTION-UPF: the downlink steering decision (docs/pipeline.md, "Steering
// decision"; the paper's unified traffic steering, section V-C2).
//
// Packet's way (downlink with a session): inputs are the session's legs (a leg
// is present when its UE address is non-zero), the user's path state
// (md.rtt_3gpp / md.rtt_non3gpp, 0 = unavailable; md.loss_3gpp /
// md.loss_non3gpp, percent; md.autonomous_share), the steering parameters
// from applications or session_overrides and the session's seq. Output: the
// access this copy leaves on, and whether a second (redundant) copy goes on the
// other access. No available access drops NO_PATH. The second copy of a
// redundant packet comes back with its access forced.

#ifndef JUNCTION_CONTROL_STEERING_P4
#define JUNCTION_CONTROL_STEERING_P4

control Steering(inout local_metadata_t md) {
    apply {
        if (!md.done && md.path == PATH_DOWNLINK && md.session_hit) {
            bool leg_3gpp = md.ue_addr_3gpp != 0;
            bool leg_non3gpp = md.ue_addr_non3gpp != 0;
            bool avail_3gpp = leg_3gpp && md.rtt_3gpp != 0;
            bool avail_non3gpp = leg_non3gpp && md.rtt_non3gpp != 0;
            bool ok_3gpp = avail_3gpp &&
                (md.rtt_threshold_us == 0 || md.rtt_3gpp <= md.rtt_threshold_us) &&
                (md.loss_limit_pct == 0 || md.loss_3gpp < md.loss_limit_pct);
            bool ok_non3gpp = avail_non3gpp &&
                (md.rtt_threshold_us == 0 || md.rtt_non3gpp <= md.rtt_threshold_us) &&
                (md.loss_limit_pct == 0 || md.loss_non3gpp < md.loss_limit_pct);
            // The faster access; a tie goes to 3GPP.
            access_t faster = ACCESS_NON3GPP;
            if (md.rtt_3gpp <= md.rtt_non3gpp) {
                faster = ACCESS_3GPP;
            }
            // Smallest delay over the available accesses, and over the ok ones.
            access_t best_avail = ACCESS_NONE;
            if (avail_3gpp && avail_non3gpp) {
                best_avail = faster;
            } else if (avail_3gpp) {
                best_avail = ACCESS_3GPP;
            } else if (avail_non3gpp) {
                best_avail = ACCESS_NON3GPP;
            }
            access_t best_ok = ACCESS_NONE;
            if (ok_3gpp && ok_non3gpp) {
                best_ok = faster;
            } else if (ok_3gpp) {
                best_ok = ACCESS_3GPP;
            } else if (ok_non3gpp) {
                best_ok = ACCESS_NON3GPP;
            }
            // A = the parameter access, B = the other one.
            access_t a = ACCESS_3GPP;
            access_t b = ACCESS_NON3GPP;
            bool avail_a = avail_3gpp;
            bool avail_b = avail_non3gpp;
            bool ok_a = ok_3gpp;
            bool ok_b = ok_non3gpp;
            if (md.param_access == ACCESS_NON3GPP) {
                a = ACCESS_NON3GPP;
                b = ACCESS_3GPP;
                avail_a = avail_non3gpp;
                avail_b = avail_3gpp;
                ok_a = ok_non3gpp;
                ok_b = ok_3gpp;
            }

            access_t chosen = ACCESS_NONE;
            md.redundant = false;
            if (md.redundant_copy) {
                // Second copy of a redundant packet: the access was decided.
                if ((md.forced_access == ACCESS_3GPP && leg_3gpp) ||
                        (md.forced_access == ACCESS_NON3GPP && leg_non3gpp)) {
                    chosen = md.forced_access;
                }
            } else if (md.mode == MODE_SMALLEST_DELAY) {
                chosen = best_avail;
            } else if (md.mode == MODE_LOAD_BALANCE ||
                       md.mode == MODE_AUTONOMOUS_LOAD_BALANCE) {
                if (ok_3gpp && ok_non3gpp) {
                    // seq % 128 < the ratio: the policy's, or the user's
                    // autonomous share that its RTT reports move.
                    ratio_t ratio = md.ratio_3gpp;
                    if (md.mode == MODE_AUTONOMOUS_LOAD_BALANCE) {
                        ratio = md.autonomous_share;
                    }
                    if ((ratio_t)md.seq[6:0] < ratio) {
                        chosen = ACCESS_3GPP;
                    } else {
                        chosen = ACCESS_NON3GPP;
                    }
                } else if (best_ok != ACCESS_NONE) {
                    chosen = best_ok;
                } else {
                    chosen = best_avail;
                }
            } else if (md.mode == MODE_PRIORITY_BASED) {
                if (ok_a) {
                    chosen = a;
                } else if (avail_b) {
                    chosen = b;  // overflow
                } else if (avail_a) {
                    chosen = a;
                }
            } else if (md.mode == MODE_REDUNDANT) {
                if (avail_3gpp && avail_non3gpp) {
                    chosen = ACCESS_3GPP;
                    md.redundant = true;
                } else {
                    chosen = best_avail;
                }
            } else {
                // Active-standby (and any mode this program does not know).
                if (ok_a) {
                    chosen = a;
                } else if (ok_b) {
                    chosen = b;
                } else if (avail_a) {
                    chosen = a;
                } else if (avail_b) {
                    chosen = b;
                }
            }

            md.access = chosen;
            if (chosen == ACCESS_NONE) {
                md.drop_reason = DROP_NO_PATH;
                md.done = true;
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_STEERING_P4
