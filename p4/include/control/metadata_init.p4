// JUNCTION-UPF: resets the per-pass local metadata.
//
// Fields the parser sets (malformed) and the ones carried across a
// recirculation (reorder_held, reorder_since, reorder_ticket, redundant_copy, forced_*,
// skip_ttl) are left alone. BMv2 zeroes metadata itself; Tofino does not
// promise to, so both builds run this first.

#ifndef JUNCTION_CONTROL_METADATA_INIT_P4
#define JUNCTION_CONTROL_METADATA_INIT_P4

control MetadataInit(inout local_metadata_t md, in time_us_t now_us) {
    apply {
        md.now_us = now_us;
        md.path = PATH_NONE;
        md.done = false;
        md.punt = false;
        md.consume = false;
        md.drop_reason = DROP_NONE;
        md.count_reason = DROP_NONE;
        md.is_local = false;
        md.arrival_access = ACCESS_NONE;
        md.junction_kind = JK_NONE;
        md.current_path = false;
        md.epoch = 0;
        md.reorder_timeout = 0;
        md.reorder_hold = false;
        md.user_src = 0;
        md.user_dst = 0;
        md.user_proto = 0;
        md.user_dscp = 0;
        md.user_sport = 0;
        md.user_dport = 0;
        md.user_len = 0;
        md.session_addr = 0;
        md.session_hit = false;
        md.user_idx = 0;
        md.endpoint_idx = 0;
        md.peer_idx = 0;
        md.teid = 0;
        md.ue_addr_3gpp = 0;
        md.ue_addr_non3gpp = 0;
        md.app_id = 0;
        md.mode = 0;
        md.param_access = ACCESS_NONE;
        md.ratio_3gpp = 0;
        md.rtt_threshold_us = 0;
        md.loss_limit_pct = 0;
        md.has_override = false;
        md.seq_index = 0;
        md.seq = 0;
        md.rtt_3gpp = 0;
        md.rtt_non3gpp = 0;
        md.loss_3gpp = 0;
        md.loss_non3gpp = 0;
        md.autonomous_share = AUTONOMOUS_SHARE_EVEN;
        md.access = ACCESS_NONE;
        md.redundant = false;
        md.downlink_tunnel_hit = false;
        md.encap_kind = ENCAP_NONE;
        md.n3_addr = 0;
        md.junction_addr = 0;
        md.peer_addr = 0;
        md.junction_dst = 0;
        md.reply = false;
        md.route_dst = 0;
        md.egress_port = 0;
        md.src_mac = 0;
        md.dst_mac = 0;
        md.report_kind = 0;
        md.report_access = ACCESS_NONE;
        md.report_rtt = 0;
        md.report_loss = 0;
        md.report_suspended = 0;
    }
}

#endif  // JUNCTION_CONTROL_METADATA_INIT_P4
