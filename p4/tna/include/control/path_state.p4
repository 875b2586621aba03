// JUNCTION-UPF, TNA build: the unified per-user path state (paper section
// V-C2) and the probe_reports digest.
//
// Packet's way:
//   downlink with a session  -> reads rtt_<access>[user] (0 = access
//                               unavailable) and loss_<access>[user] for
//                               Steering; autonomous_share[user] answers
//                               whether seq % 128 is below the share
//                               (auto_3gpp; 0, a share never set, reads as
//                               even).
//   PROBE_ACK / LINK_DOWN / LINK_UP (reports from Probes) -> reads
//                               path_updates_suspended[user]; unless set, writes
//                               the report into rtt_<access>[user] and
//                               loss_<access>[user]; always writes the UE's
//                               share into autonomous_share[user] (PROBE_ACK
//                               with a share only) and asks the deparser for
//                               the probe_reports digest.

#ifndef JUNCTION_TNA_PATH_STATE_P4
#define JUNCTION_TNA_PATH_STATE_P4

// seq_bit6 is bit 6 of the packet's seq (SessionSeq): 0 when seq % 128 is below the
// even share, 64.
control PathState(in headers_t hdr, inout local_metadata_t md, in bit<1> seq_bit6,
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

    // Autonomous load balance's split, the UE's (a suspension does not freeze it).
    @name(".autonomous_share") @id(0x1600000C)
    Register<ratio_t, user_idx_t>(MAX_USERS, 0) autonomous_share;

    RegisterAction<rtt_us_t, user_idx_t, rtt_us_t>(rtt_3gpp) read_rtt_3gpp = {
        void apply(inout rtt_us_t value, out rtt_us_t result) {
            result = value;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, void>(rtt_3gpp) write_rtt_3gpp = {
        void apply(inout rtt_us_t value) {
            value = md.state_rtt;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, rtt_us_t>(rtt_non3gpp) read_rtt_non3gpp = {
        void apply(inout rtt_us_t value, out rtt_us_t result) {
            result = value;
        }
    };
    RegisterAction<rtt_us_t, user_idx_t, void>(rtt_non3gpp) write_rtt_non3gpp = {
        void apply(inout rtt_us_t value) {
            value = md.state_rtt;
        }
    };

    // A report's loss comes from the control body (PROBE_ACK, LINK_UP) or is 0
    // (LINK_DOWN): written from there, not from md.report_loss, which the digest
    // reads (a field both read, bf-p4c 9.13.4 fails to place: "cannot find
    // allocation").
    RegisterAction<loss_pct_t, user_idx_t, loss_pct_t>(loss_3gpp) read_loss_3gpp = {
        void apply(inout loss_pct_t value, out loss_pct_t result) {
            result = value;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, void>(loss_3gpp) write_loss_3gpp = {
        void apply(inout loss_pct_t value) {
            value = hdr.junction_ctl.loss_pct;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, void>(loss_3gpp) clear_loss_3gpp = {
        void apply(inout loss_pct_t value) {
            value = 0;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, loss_pct_t>(loss_non3gpp) read_loss_non3gpp = {
        void apply(inout loss_pct_t value, out loss_pct_t result) {
            result = value;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, void>(loss_non3gpp) write_loss_non3gpp = {
        void apply(inout loss_pct_t value) {
            value = hdr.junction_ctl.loss_pct;
        }
    };
    RegisterAction<loss_pct_t, user_idx_t, void>(loss_non3gpp) clear_loss_non3gpp = {
        void apply(inout loss_pct_t value) {
            value = 0;
        }
    };

    // Downlink: seq % 128 below the share (0, never set, is even: bit 6 of seq clear).
    // A stateful ALU takes two PHV inputs, its register's actions together: these two,
    // seq % 128 and its bit 6; take_share's value comes in seq_mod_128 too (Probes).
    RegisterAction<ratio_t, user_idx_t, bit<1>>(autonomous_share) split_by_share = {
        void apply(inout ratio_t value, out bit<1> to_3gpp) {
            if (value == 0) {
                if (seq_bit6 == 0) {
                    to_3gpp = 1;
                } else {
                    to_3gpp = 0;
                }
            } else if (md.seq_mod_128 < value) {
                to_3gpp = 1;
            } else {
                to_3gpp = 0;
            }
        }
    };
    // A PROBE_ACK's share, which Probes puts in seq_mod_128 (0: none).
    RegisterAction<ratio_t, user_idx_t, void>(autonomous_share) take_share = {
        void apply(inout ratio_t value) {
            if (md.seq_mod_128 != 0) {
                value = md.seq_mod_128;
            }
        }
    };
    RegisterAction<suspended_t, user_idx_t, suspended_t>(path_updates_suspended) read_suspended = {
        void apply(inout suspended_t value, out suspended_t result) {
            result = value;
        }
    };

    // A report's writes, by tables rather than nested ifs where they can be: bf-p4c
    // makes a table of each branch of an if, and a Tofino stage holds 16 (ingress and
    // egress together). A table reaches one register (Tofino's address bus for them).
    suspended_t suspended_now;  // path_updates_suspended[user] (read_suspended)

    @hidden action keep() {}

    // The loss the report says (0 for LINK_DOWN), left alone while suspended.
    @hidden action write_loss_3gpp_action() {
        write_loss_3gpp.execute(md.user_idx);
    }
    @hidden action clear_loss_3gpp_action() {
        clear_loss_3gpp.execute(md.user_idx);
    }
    @hidden action write_loss_non3gpp_action() {
        write_loss_non3gpp.execute(md.user_idx);
    }
    @hidden action clear_loss_non3gpp_action() {
        clear_loss_non3gpp.execute(md.user_idx);
    }
    @hidden @name("report_loss_3gpp")
    table report_loss_3gpp {
        key = {
            suspended_now    : ternary;
            md.report_access : ternary;
            md.report_kind   : ternary;
        }
        actions = {
            write_loss_3gpp_action;
            clear_loss_3gpp_action;
            keep;
        }
        const default_action = keep();
        const entries = {
            (0, ACCESS_3GPP, REPORT_LINK_DOWN) : clear_loss_3gpp_action();
            (0, ACCESS_3GPP, _) : write_loss_3gpp_action();
        }
    }
    @hidden @name("report_loss_non3gpp")
    table report_loss_non3gpp {
        key = {
            suspended_now    : ternary;
            md.report_access : ternary;
            md.report_kind   : ternary;
        }
        actions = {
            write_loss_non3gpp_action;
            clear_loss_non3gpp_action;
            keep;
        }
        const default_action = keep();
        const entries = {
            (0, ACCESS_3GPP, _) : keep();
            (0, _, REPORT_LINK_DOWN) : clear_loss_non3gpp_action();
            (0, _, _) : write_loss_non3gpp_action();
        }
    }

    // A PROBE_ACK writes the UE's share (take_share: none when it carries 0), which a
    // suspension does not stop; link messages leave it.
    @hidden action take_share_action() {
        take_share.execute(md.user_idx);
    }
    @hidden @name("report_share")
    table report_share {
        key = {
            md.report_kind : exact;
        }
        actions = {
            take_share_action;
            keep;
        }
        const default_action = keep();
        const entries = {
            REPORT_RTT : take_share_action();
        }
    }

    apply {
        if (md.path == PATH_DOWNLINK && md.session_hit) {
            md.rtt_3gpp = read_rtt_3gpp.execute(md.user_idx);
            md.rtt_non3gpp = read_rtt_non3gpp.execute(md.user_idx);
            md.loss_3gpp = read_loss_3gpp.execute(md.user_idx);
            md.loss_non3gpp = read_loss_non3gpp.execute(md.user_idx);
            md.auto_3gpp = split_by_share.execute(md.user_idx);
        } else if (md.report_kind != 0) {
            // Read before the checks end (reading changes nothing), so that the writes
            // need not wait a stage more for them.
            suspended_now = read_suspended.execute(md.user_idx);
            // A report no check before it refused (DropReasons says CONSUMED).
            if (!md.checks.parser_error && !md.checks.unknown_teid && !md.checks.bad_junction &&
                    !md.checks.no_session && !md.checks.wrong_source) {
                if (suspended_now != 0) {
                    md.report_suspended = 1;
                } else if (md.report_access == ACCESS_3GPP) {
                    write_rtt_3gpp.execute(md.user_idx);
                } else {
                    write_rtt_non3gpp.execute(md.user_idx);
                }
                report_loss_3gpp.apply();
                report_loss_non3gpp.apply();
                report_share.apply();
                ig_dprsr_md.digest_type = DIGEST_TYPE_PROBE_REPORT;
            }
        }
    }
}

#endif  // JUNCTION_TNA_PATH_STATE_P4
