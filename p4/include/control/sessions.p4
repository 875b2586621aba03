// JUNCTION-UPF: the session lookup, first level of the paper's hierarchical
// lookup (section V-C1).
//
// Packet's way: downlink looks up its destination; Junction uplink data, probes,
// link messages and EX-PATH markers look up the session address they carry.
// A hit gives the user (index into the per-user path state), the UPF endpoint,
// the gNB (index into tunnel_peers), the downlink TEID, the UE's address on
// each leg (0: the leg is absent), the non-3GPP leg's access gateway and TEID
// when that leg runs over N3 (gateway 0: plain IP) and the session's usage
// cell (Verdict). A miss drops Junction traffic (NO_SESSION); downlink falls
// through to downlink_tunnels and then plain routing. Junction traffic must
// come from the session's address on the leg it arrived on (the source of the
// IPv4 header that carried it: the outer one on a plain non-3GPP leg, the one
// inside GTP-U on 3GPP and on a non-3GPP leg over N3), and in the leg's form
// (GTP-U or not), else WRONG_SOURCE: no other host steers, probes or releases
// a session's uplink, and no probe reply goes to a third party.
//
// The gateway is an address in the entry, not a tunnel_peers index as the gNB
// is: the entry's action data has the room (two action words either way on
// Tofino), and a second peer lookup chosen by the steering decision would add
// stages the Tofino 2 ingress does not have (docs/tofino.md).

#ifndef JUNCTION_CONTROL_SESSIONS_P4
#define JUNCTION_CONTROL_SESSIONS_P4

control Sessions(in headers_t hdr, inout local_metadata_t md) {

    @name(".set_session") @id(0x01000009)
    action set_session(user_idx_t user_idx, endpoint_idx_t endpoint_idx,
                       peer_idx_t peer_idx, teid_t teid,
                       ipv4_addr_t ue_addr_3gpp, ipv4_addr_t ue_addr_non3gpp,
                       ipv4_addr_t gateway_non3gpp, teid_t teid_non3gpp,
                       usage_idx_t usage_idx) {
        md.session_hit = true;
        md.user_idx = user_idx;
        md.endpoint_idx = endpoint_idx;
        md.peer_idx = peer_idx;
        md.teid = teid;
        md.ue_addr_3gpp = ue_addr_3gpp;
        md.ue_addr_non3gpp = ue_addr_non3gpp;
        md.gateway_non3gpp = gateway_non3gpp;
        md.teid_non3gpp = teid_non3gpp;
        md.usage_idx = usage_idx;
    }

    @name(".miss_session") @id(0x0100000A)
    action miss_session() {
        md.session_hit = false;
    }

    @name(".sessions") @id(0x02000005)
    table sessions {
        key = {
            md.session_addr : exact @name("session_addr");
        }
        actions = {
            set_session;
            @defaultonly miss_session;
        }
        const default_action = miss_session();
        size = MAX_SESSIONS;
    }

    apply {
        if (md.path == PATH_DOWNLINK || md.path == PATH_JUNCTION) {
            sessions.apply();
            if (md.path == PATH_JUNCTION) {
                // Each leg's source compared where it is, not copied to one field first: a
                // field written from several headers ties them all together in the PHV.
                if (!md.session_hit) {
                    md.checks.no_session = true;
                } else if (md.arrival_access == ACCESS_3GPP) {
                    if (hdr.inner_ipv4.src_addr != md.ue_addr_3gpp) {
                        md.checks.wrong_source = true;
                    }
                } else if (hdr.gtpu.isValid()) {
                    // From an access gateway's tunnel: the leg must be one over N3. One
                    // test a condition: a Tofino gateway compares 4 bytes and 12 bits.
                    if (md.gateway_non3gpp == 0) {
                        md.checks.wrong_source = true;
                    } else if (hdr.inner_ipv4.src_addr != md.ue_addr_non3gpp) {
                        md.checks.wrong_source = true;
                    }
                } else if (md.gateway_non3gpp != 0) {
                    md.checks.wrong_source = true;  // a leg over N3 comes in GTP-U only
                } else if (hdr.ipv4.src_addr != md.ue_addr_non3gpp) {
                    md.checks.wrong_source = true;
                }
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_SESSIONS_P4
