// JUNCTION-UPF: the drop reason, from what the checks found.
//
// Every check sets a flag of its own (md.checks, header.p4) whether or not a
// check before it failed; here the first flag set, in the order of
// docs/pipeline.md (Uplink, JunctionCheck, Sessions, Probes, Steering, Tunnels,
// Filter, Routing), gives the reason the drops counter counts. A packet for the
// controller (punt) is no drop, unless the parser refused it or its TEID is
// unknown. An EX-PATH marker, consumed by Reorder after this, becomes CONSUMED
// in Verdict.
//
// Packet's way: drop_reasons, a table of constant entries in that order (the
// first entry that matches wins, so each lists only its own flag): one lookup,
// where a chain of tests would take a stage per reason.

#ifndef JUNCTION_CONTROL_DROP_REASONS_P4
#define JUNCTION_CONTROL_DROP_REASONS_P4

control DropReasons(inout local_metadata_t md) {

    @hidden @name("drop_reason_set")
    action set(drop_reason_t reason) {
        md.drop_reason = reason;
    }

    @hidden @name("drop_reasons")
    table drop_reasons {
        key = {
            md.checks.parser_error    : ternary;
            md.checks.unknown_teid    : ternary;
            md.punt                   : ternary;
            md.checks.bad_user_packet : ternary;
            md.checks.bad_junction    : ternary;
            md.checks.no_session      : ternary;
            md.checks.wrong_source    : ternary;
            md.checks.report          : ternary;
            md.checks.no_path         : ternary;
            md.checks.no_endpoint     : ternary;
            md.checks.no_tunnel_peer  : ternary;
            md.checks.filtered        : ternary;
            md.checks.ttl_expired     : ternary;
            md.checks.no_route        : ternary;
        }
        actions = {
            set;
        }
        const default_action = set(DROP_NONE);
        const entries = {
            (true, _, _, _, _, _, _, _, _, _, _, _, _, _) : set(DROP_PARSER_ERROR);
            (_, true, _, _, _, _, _, _, _, _, _, _, _, _) : set(DROP_UNKNOWN_TEID);
            (_, _, true, _, _, _, _, _, _, _, _, _, _, _) : set(DROP_NONE);
            (_, _, _, true, _, _, _, _, _, _, _, _, _, _) : set(DROP_PARSER_ERROR);
            (_, _, _, _, true, _, _, _, _, _, _, _, _, _) : set(DROP_BAD_JUNCTION);
            (_, _, _, _, _, true, _, _, _, _, _, _, _, _) : set(DROP_NO_SESSION);
            (_, _, _, _, _, _, true, _, _, _, _, _, _, _) : set(DROP_WRONG_SOURCE);
            (_, _, _, _, _, _, _, true, _, _, _, _, _, _) : set(DROP_CONSUMED);
            (_, _, _, _, _, _, _, _, true, _, _, _, _, _) : set(DROP_NO_PATH);
            (_, _, _, _, _, _, _, _, _, true, _, _, _, _) : set(DROP_NO_ENDPOINT);
            (_, _, _, _, _, _, _, _, _, _, true, _, _, _) : set(DROP_NO_TUNNEL_PEER);
            (_, _, _, _, _, _, _, _, _, _, _, true, _, _) : set(DROP_FILTERED);
            (_, _, _, _, _, _, _, _, _, _, _, _, true, _) : set(DROP_TTL_EXPIRED);
            (_, _, _, _, _, _, _, _, _, _, _, _, _, true) : set(DROP_NO_ROUTE);
        }
    }

    apply {
        if (!md.done) {
            drop_reasons.apply();
        }
    }
}

#endif  // JUNCTION_CONTROL_DROP_REASONS_P4
