// JUNCTION-UPF, TNA build: the unified per-user path state (paper section
// V-C2) and the probe_reports digest.
//
// Packet's way:
//   downlink with a session  -> reads rtt_<access>[user] (0 = access
//                               unavailable), loss_<access>[user] and
//                               autonomous_share[user] for Steering.
//   PROBE_ACK / LINK_DOWN / LINK_UP (reports from Probes) -> reads
//                               path_updates_suspended[user]; unless set, writes
//                               the report into rtt_<access>[user] and
//                               loss_<access>[user]; always writes it into
//                               live_rtt_<access>[user], moves
//                               autonomous_share[user] a step toward the
//                               faster live RTT (PROBE_ACK only) and asks the
//                               deparser for the probe_reports digest.

#ifndef JUNCTION_TNA_PATH_STATE_P4
#define JUNCTION_TNA_PATH_STATE_P4

control PathState(inout local_metadata_t md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {

    @name(".rtt_3gpp") @id(0x16000001)
    Register<rtt_us_t, user_idx_t>(MAX_USERS, 0) rtt_3gpp;

    @name(".rtt_non3gpp") @id(0x16000002)
    Register<rtt_us_t, user_idx_t>(MAX_USERS, 0) rtt_non3gpp;

    @name(".path_updates_suspended") @id(0x16000003)
    Register<suspended_t, user_idx_t>(MAX_USERS, 0) path_updates_suspended;

    @name(".loss_3gpp") @id(0x16000008)
    Register<loss_pct_t, user_idx_t>(MAX_USERS, 0) loss_3gpp;

    @name(".loss_non3gpp") @id(0x16000009)
    Register<loss_pct_t, user_idx_t>(MAX_USERS, 0) loss_non3gpp;

    // Autonomous load balance's state, which a suspension does not freeze:
    // the RTTs as last reported, and the share they move.
    @name(".live_rtt_3gpp") @id(0x1600000A)
    Register<rtt_us_t, user_idx_t>(MAX_USERS, 0) live_rtt_3gpp;

    @name(".live_rtt_non3gpp") @id(0x1600000B)
    Register<rtt_us_t, user_idx_t>(MAX_USERS, 0) live_rtt_non3gpp;

    @name(".autonomous_share") @id(0x1600000C)
    Register<ratio_t, user_idx_t>(MAX_USERS, 0) autonomous_share;

    RegisterAction<rtt_us_t, user_idx_t, rtt_us_t>(rtt_3gpp) read_rtt_3gpp = {
        void apply(inout rtt_us_t value, out rtt_us_t result) {
            result = value;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, void>(rtt_3gpp) write_rtt_3gpp = {
        void apply(inout rtt_us_t value) {
            value = md.report_rtt;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, rtt_us_t>(rtt_non3gpp) read_rtt_non3gpp = {
        void apply(inout rtt_us_t value, out rtt_us_t result) {
            result = value;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, void>(rtt_non3gpp) write_rtt_non3gpp = {
        void apply(inout rtt_us_t value) {
            value = md.report_rtt;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, loss_pct_t>(loss_3gpp) read_loss_3gpp = {
        void apply(inout loss_pct_t value, out loss_pct_t result) {
            result = value;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, void>(loss_3gpp) write_loss_3gpp = {
        void apply(inout loss_pct_t value) {
            value = md.report_loss;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, loss_pct_t>(loss_non3gpp) read_loss_non3gpp = {
        void apply(inout loss_pct_t value, out loss_pct_t result) {
            result = value;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, void>(loss_non3gpp) write_loss_non3gpp = {
        void apply(inout loss_pct_t value) {
            value = md.report_loss;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, rtt_us_t>(live_rtt_3gpp) read_live_rtt_3gpp = {
        void apply(inout rtt_us_t value, out rtt_us_t result) {
            result = value;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, void>(live_rtt_3gpp) write_live_rtt_3gpp = {
        void apply(inout rtt_us_t value) {
            value = md.report_rtt;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, rtt_us_t>(live_rtt_non3gpp) read_live_rtt_non3gpp = {
        void apply(inout rtt_us_t value, out rtt_us_t result) {
            result = value;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, void>(live_rtt_non3gpp) write_live_rtt_non3gpp = {
        void apply(inout rtt_us_t value) {
            value = md.report_rtt;
        }
    };
    // 0 (never moved) reads as even.
    RegisterAction<ratio_t, user_idx_t, ratio_t>(autonomous_share) read_share = {
        void apply(inout ratio_t value, out ratio_t result) {
            if (value == 0) {
                result = AUTONOMOUS_SHARE_EVEN;
            } else {
                result = value;
            }
        }
    };
    RegisterAction<ratio_t, user_idx_t, void>(autonomous_share) share_to_3gpp = {
        void apply(inout ratio_t value) {
            if (value == 0) {
                value = AUTONOMOUS_SHARE_EVEN + AUTONOMOUS_SHARE_STEP;
            } else if (value < 128 - AUTONOMOUS_SHARE_STEP) {
                value = value + AUTONOMOUS_SHARE_STEP;
            }
        }
    };
    RegisterAction<ratio_t, user_idx_t, void>(autonomous_share) share_to_non3gpp = {
        void apply(inout ratio_t value) {
            if (value == 0) {
                value = AUTONOMOUS_SHARE_EVEN - AUTONOMOUS_SHARE_STEP;
            } else if (value > AUTONOMOUS_SHARE_STEP) {
                value = value - AUTONOMOUS_SHARE_STEP;
            }
        }
    };
    RegisterAction<suspended_t, user_idx_t, suspended_t>(path_updates_suspended) read_suspended = {
        void apply(inout suspended_t value, out suspended_t result) {
            result = value;
        }
    };

    apply {
        if (!md.done && md.path == PATH_DOWNLINK && md.session_hit) {
            md.rtt_3gpp = read_rtt_3gpp.execute(md.user_idx);
            md.rtt_non3gpp = read_rtt_non3gpp.execute(md.user_idx);
            md.loss_3gpp = read_loss_3gpp.execute(md.user_idx);
            md.loss_non3gpp = read_loss_non3gpp.execute(md.user_idx);
            md.autonomous_share = read_share.execute(md.user_idx);
        } else if (md.report_kind != 0 && md.drop_reason == DROP_NONE) {
            suspended_t suspended = read_suspended.execute(md.user_idx);
            md.report_suspended = 0;
            if (suspended != 0) {
                md.report_suspended = 1;
            } else if (md.report_access == ACCESS_3GPP) {
                write_rtt_3gpp.execute(md.user_idx);
                write_loss_3gpp.execute(md.user_idx);
            } else {
                write_rtt_non3gpp.execute(md.user_idx);
                write_loss_non3gpp.execute(md.user_idx);
            }
            // The live RTT of the access reported on (0 when down), compared
            // with the other access's to step the share.
            rtt_us_t other;
            if (md.report_access == ACCESS_3GPP) {
                write_live_rtt_3gpp.execute(md.user_idx);
                other = read_live_rtt_non3gpp.execute(md.user_idx);
            } else {
                write_live_rtt_non3gpp.execute(md.user_idx);
                other = read_live_rtt_3gpp.execute(md.user_idx);
            }
            if (md.report_kind == REPORT_RTT && other != 0 && md.report_rtt != other) {
                // toward 3GPP when the report's access is 3GPP and the faster
                bool to_3gpp = md.report_rtt < other;
                if (md.report_access != ACCESS_3GPP) {
                    to_3gpp = !to_3gpp;
                }
                if (to_3gpp) {
                    share_to_3gpp.execute(md.user_idx);
                } else {
                    share_to_non3gpp.execute(md.user_idx);
                }
            }
            ig_dprsr_md.digest_type = DIGEST_TYPE_PROBE_REPORT;
        }
    }
}

#endif  // JUNCTION_TNA_PATH_STATE_P4
