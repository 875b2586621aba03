// JUNCTION-UPF, v1model: the unified per-user path state (paper section V-C2)
// and the probe_reports digest.
//
// Packet's way:
//   downlink with a session  -> reads rtt_<access>[user] (0 = access
//                               unavailable), loss_<access>[user] and
//                               whether seq % 128 is below autonomous_share[user]
//                               (auto_3gpp; 0, a share that never moved, reads as
//                               even) for Steering.
//   PROBE_ACK / LINK_DOWN / LINK_UP (reports from Probes) -> unless
//                               path_updates_suspended[user] != 0, writes the
//                               report into rtt_<access>[user] and
//                               loss_<access>[user]; always writes it into
//                               live_rtt_<access>[user], moves
//                               autonomous_share[user] a step toward the
//                               faster live RTT (PROBE_ACK only) and sends
//                               probe_reports to the controller.

#ifndef JUNCTION_V1MODEL_PATH_STATE_P4
#define JUNCTION_V1MODEL_PATH_STATE_P4

control PathState(inout local_metadata_t md) {

    @name(".rtt_3gpp") @id(0x16000001)
    register<rtt_us_t, user_idx_t>(MAX_USERS) rtt_3gpp;

    @name(".rtt_non3gpp") @id(0x16000002)
    register<rtt_us_t, user_idx_t>(MAX_USERS) rtt_non3gpp;

    @name(".path_updates_suspended") @id(0x16000003)
    register<suspended_t, user_idx_t>(MAX_USERS) path_updates_suspended;

    @name(".loss_3gpp") @id(0x16000008)
    register<loss_pct_t, user_idx_t>(MAX_USERS) loss_3gpp;

    @name(".loss_non3gpp") @id(0x16000009)
    register<loss_pct_t, user_idx_t>(MAX_USERS) loss_non3gpp;

    // Autonomous load balance's state, which a suspension does not freeze:
    // the RTTs as last reported, and the share they move.
    @name(".live_rtt_3gpp") @id(0x1600000A)
    register<rtt_us_t, user_idx_t>(MAX_USERS) live_rtt_3gpp;

    @name(".live_rtt_non3gpp") @id(0x1600000B)
    register<rtt_us_t, user_idx_t>(MAX_USERS) live_rtt_non3gpp;

    @name(".autonomous_share") @id(0x1600000C)
    register<ratio_t, user_idx_t>(MAX_USERS) autonomous_share;

    apply {
        if (md.path == PATH_DOWNLINK && md.session_hit) {
            rtt_3gpp.read(md.rtt_3gpp, md.user_idx);
            rtt_non3gpp.read(md.rtt_non3gpp, md.user_idx);
            loss_3gpp.read(md.loss_3gpp, md.user_idx);
            loss_non3gpp.read(md.loss_non3gpp, md.user_idx);
            ratio_t share;
            autonomous_share.read(share, md.user_idx);
            if (share == 0) {
                share = AUTONOMOUS_SHARE_EVEN;  // never moved
            }
            if (md.seq_mod_128 < share) {
                md.auto_3gpp = 1;
            }
        } else if (md.report_kind != 0 && !md.checks.parser_error && !md.checks.unknown_teid &&
                   !md.checks.bad_junction && !md.checks.no_session && !md.checks.wrong_source) {
            // (A report no check before it refused: DropReasons says CONSUMED.)
            suspended_t suspended;
            path_updates_suspended.read(suspended, md.user_idx);
            md.report_suspended = 0;
            if (suspended != 0) {
                md.report_suspended = 1;
            } else if (md.report_access == ACCESS_3GPP) {
                rtt_3gpp.write(md.user_idx, md.report_rtt);
                loss_3gpp.write(md.user_idx, md.report_loss);
            } else {
                rtt_non3gpp.write(md.user_idx, md.report_rtt);
                loss_non3gpp.write(md.user_idx, md.report_loss);
            }
            // The live RTT of the access reported on (0 when down), compared
            // with the other access's to step the share.
            rtt_us_t other = 0;
            if (md.report_access == ACCESS_3GPP) {
                live_rtt_3gpp.write(md.user_idx, md.report_rtt);
                live_rtt_non3gpp.read(other, md.user_idx);
            } else {
                live_rtt_non3gpp.write(md.user_idx, md.report_rtt);
                live_rtt_3gpp.read(other, md.user_idx);
            }
            if (md.report_kind == REPORT_RTT && other != 0 && md.report_rtt != other) {
                // toward 3GPP when the report's access is 3GPP and the faster
                bool to_3gpp = md.report_rtt < other;
                if (md.report_access != ACCESS_3GPP) {
                    to_3gpp = !to_3gpp;
                }
                ratio_t share;
                autonomous_share.read(share, md.user_idx);
                if (share == 0) {
                    share = AUTONOMOUS_SHARE_EVEN;
                }
                if (to_3gpp) {
                    if (share < 128 - AUTONOMOUS_SHARE_STEP) {
                        share = share + AUTONOMOUS_SHARE_STEP;
                    }
                } else if (share > AUTONOMOUS_SHARE_STEP) {
                    share = share - AUTONOMOUS_SHARE_STEP;
                }
                autonomous_share.write(md.user_idx, share);
            }
            digest<probe_report_t>(PROBE_REPORT_RECEIVER, {
                md.session_addr,
                md.user_idx,
                md.report_access,
                md.report_kind,
                md.report_rtt,
                md.report_loss,
                md.report_suspended
            });
        }
    }
}

#endif  // JUNCTION_V1MODEL_PATH_STATE_P4
