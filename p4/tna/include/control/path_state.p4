// JUNCTION-UPF, TNA build: the unified per-user path state (paper section
// V-C2) and the probe_reports digest.
//
// Packet's way:
//   downlink with a session  -> reads rtt_<access>[user] (0 = access
//                               unavailable), loss_<access>[user] and
//                               path_updates_suspended[user] for Steering.
//   PROBE_ACK / LINK_DOWN / LINK_UP (reports from Probes) -> reads
//                               path_updates_suspended[user]; unless set, writes
//                               the report into rtt_<access>[user] and
//                               loss_<access>[user]; always asks the deparser
//                               for the probe_reports digest.

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
            md.paths_suspended = read_suspended.execute(md.user_idx) != 0;
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
            ig_dprsr_md.digest_type = DIGEST_TYPE_PROBE_REPORT;
        }
    }
}

#endif  // JUNCTION_TNA_PATH_STATE_P4
