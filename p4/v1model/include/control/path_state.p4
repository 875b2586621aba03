// JUNCTION-UPF, v1model: the unified per-user path state (paper section V-C2)
// and the probe_reports digest.
//
// Packet's way:
//   downlink with a session  -> reads rtt_<access>[user] (0 = access
//                               unavailable), loss_<access>[user] and
//                               whether seq % 128 is below autonomous_share[user]
//                               (auto_3gpp; 0, a share never set, reads as
//                               even) for Steering.
//   PROBE_ACK / LINK_DOWN / LINK_UP (reports from Probes) -> unless
//                               path_updates_suspended[user] != 0, writes the
//                               report into rtt_<access>[user] and
//                               loss_<access>[user]; always (PROBE_ACK with a
//                               share only) writes the UE's share into
//                               autonomous_share[user], and sends
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

    // Autonomous load balance's split, the UE's (a suspension does not freeze it).
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
                share = AUTONOMOUS_SHARE_EVEN;  // never set
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
            // A PROBE_ACK's share comes in seq_mod_128 (Probes; 0: none).
            if (md.report_kind == REPORT_RTT && md.seq_mod_128 != 0) {
                autonomous_share.write(md.user_idx, md.seq_mod_128);
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
