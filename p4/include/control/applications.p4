// JUNCTION-UPF: application classification and per-session overrides, the
// second and third levels of the hierarchical lookup (paper section V-C1).
//
// Packet's way (downlink with a session): applications, shared by every
// session on the UPF (M entries, not N x M), classifies the user packet as
// seen from the UE (remote = the server, local = the UE) and gives the
// steering mode and its parameters. session_overrides (session x application)
// replaces them for sessions that cannot be summarized, and names the
// session's sequence counter (session_seq). Entries of both ternary/range
// tables need a priority.

#ifndef JUNCTION_CONTROL_APPLICATIONS_P4
#define JUNCTION_CONTROL_APPLICATIONS_P4

control Applications(inout local_metadata_t md) {

    @name(".set_application") @id(0x0100000B)
    action set_application(app_id_t app_id, steering_mode_t mode, access_t access,
                           ratio_t ratio_3gpp, rtt_us_t rtt_threshold_us,
                           loss_pct_t loss_limit_pct) {
        md.app_id = app_id;
        md.mode = mode;
        md.param_access = access;
        md.ratio_3gpp = ratio_3gpp;
        md.rtt_threshold_us = rtt_threshold_us;
        md.loss_limit_pct = loss_limit_pct;
    }

    // Application 0: active-standby with 3GPP active, no thresholds.
    @name(".set_default_application") @id(0x0100000C)
    action set_default_application() {
        md.app_id = 0;
        md.mode = MODE_ACTIVE_STANDBY;
        md.param_access = ACCESS_3GPP;
        md.ratio_3gpp = 0;
        md.rtt_threshold_us = 0;
        md.loss_limit_pct = 0;
    }

    @name(".applications") @id(0x02000006)
    table applications {
        key = {
            md.user_src   : ternary @name("remote_addr");
            md.user_dst   : ternary @name("local_addr");
            md.user_proto : ternary @name("proto");
            md.user_sport : range   @name("remote_port");
            md.user_dport : range   @name("local_port");
            md.user_dscp  : ternary @name("dscp");
        }
        actions = {
            set_application;
            @defaultonly set_default_application;
        }
        const default_action = set_default_application();
        size = MAX_APPLICATIONS;
    }

    @name(".override_steering") @id(0x0100000D)
    action override_steering(steering_mode_t mode, access_t access, ratio_t ratio_3gpp,
                             rtt_us_t rtt_threshold_us, loss_pct_t loss_limit_pct,
                             seq_index_t seq_index) {
        md.has_override = true;
        md.mode = mode;
        md.param_access = access;
        md.ratio_3gpp = ratio_3gpp;
        md.rtt_threshold_us = rtt_threshold_us;
        md.loss_limit_pct = loss_limit_pct;
        md.seq_index = seq_index;
    }

    @name(".no_override") @id(0x0100000E)
    action no_override() {
        md.has_override = false;
    }

    @name(".session_overrides") @id(0x02000007)
    table session_overrides {
        key = {
            md.session_addr : exact @name("session_addr");
            md.app_id       : exact @name("app_id");
        }
        actions = {
            override_steering;
            @defaultonly no_override;
        }
        const default_action = no_override();
        size = MAX_SESSION_OVERRIDES;
    }

    apply {
        // Looked up for every frame, so as not to wait for the session's: only
        // downlink with a session reads the result (Steering, SessionSeq).
        if (!md.done) {
            applications.apply();
            session_overrides.apply();
        }
    }
}

#endif  // JUNCTION_CONTROL_APPLICATIONS_P4
