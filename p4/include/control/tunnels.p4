// JUNCTION-UPF: which headers a packet leaves with, and the addresses in them.
//
// Packet's way:
//   downlink on the non-3GPP leg  -> IPv4/UDP:2153/Junction to ue_addr_non3gpp
//   downlink on the 3GPP leg      -> the same inside IPv4/UDP:2152/GTP-U to the gNB
//   downlink on a non-3GPP leg    -> the same inside IPv4/UDP:2152/GTP-U to the leg's
//     over N3                        access gateway, with the leg's TEID
//   downlink_tunnels hit          -> IPv4/UDP:2152/GTP-U to the gNB
//   PROBE on the non-3GPP leg     -> PROBE_REPLY to the probe's outer source
//   PROBE on the 3GPP leg         -> PROBE_REPLY inside GTP-U to the session's gNB,
//                                    to the session's 3GPP UE address
//   PROBE on a non-3GPP leg       -> PROBE_REPLY inside GTP-U to the leg's gateway,
//     over N3                        to the session's non-3GPP UE address
//   uplink, plain routing         -> no new headers
//   GTP-U Echo Request            -> the response, to the request's source
// tunnel_endpoints gives the UPF's own N3 and Junction addresses, tunnel_peers
// the gNB address (split out of sessions as in papers/004, Method 2); an access
// gateway's address comes with the session (Sessions says why). The result is
// the final outer destination that routes looks up.

#ifndef JUNCTION_CONTROL_TUNNELS_P4
#define JUNCTION_CONTROL_TUNNELS_P4

control Tunnels(in headers_t hdr, inout local_metadata_t md) {

    @name(".set_tunnel_endpoint") @id(0x01000005)
    action set_tunnel_endpoint(ipv4_addr_t n3_addr, ipv4_addr_t junction_addr) {
        md.endpoint_hit = true;
        md.n3_addr = n3_addr;
        md.junction_addr = junction_addr;
    }

    @name(".drop_no_endpoint") @id(0x01000006)
    action drop_no_endpoint() {
        md.endpoint_hit = false;
    }

    @name(".tunnel_endpoints") @id(0x02000003)
    table tunnel_endpoints {
        key = {
            md.endpoint_idx : exact @name("endpoint_idx");
        }
        actions = {
            set_tunnel_endpoint;
            @defaultonly drop_no_endpoint;
        }
        const default_action = drop_no_endpoint();
        size = MAX_TUNNEL_ENDPOINTS;
    }

    @name(".set_tunnel_peer") @id(0x01000007)
    action set_tunnel_peer(ipv4_addr_t peer_addr) {
        md.peer_hit = true;
        md.peer_addr = peer_addr;
    }

    @name(".drop_no_tunnel_peer") @id(0x01000008)
    action drop_no_tunnel_peer() {
        md.peer_hit = false;
    }

    @name(".tunnel_peers") @id(0x02000004)
    table tunnel_peers {
        key = {
            md.peer_idx : exact @name("peer_idx");
        }
        actions = {
            set_tunnel_peer;
            @defaultonly drop_no_tunnel_peer;
        }
        const default_action = drop_no_tunnel_peer();
        size = MAX_TUNNEL_PEERS;
    }

    // The endpoint and the gNB are looked up as soon as their indexes are known (from
    // sessions or downlink_tunnels), before steering says whether the gNB is needed:
    // a miss is a flag that only a packet needing the entry turns into a drop.
    apply {
        if ((md.path == PATH_DOWNLINK && (md.session_hit || md.downlink_tunnel_hit)) ||
                (md.path == PATH_JUNCTION && md.reply)) {
            tunnel_endpoints.apply();
            tunnel_peers.apply();
            if (!md.endpoint_hit) {
                md.checks.no_endpoint = true;
            }
        }

        md.route_dst = md.user_dst;
        if (md.path == PATH_GTPU_ECHO) {
            md.route_dst = hdr.ipv4.src_addr;  // the response goes back to the requester
        } else if (md.path == PATH_DOWNLINK && md.session_hit) {
            if (md.access == ACCESS_3GPP) {
                md.encap_kind = ENCAP_JUNCTION_GTPU;
                md.junction_dst = md.ue_addr_3gpp;
                md.route_dst = md.peer_addr;
                if (!md.peer_hit) {
                    md.checks.no_tunnel_peer = true;
                }
            } else if (md.gateway_non3gpp != 0) {
                md.encap_kind = ENCAP_JUNCTION_GTPU;
                md.junction_dst = md.ue_addr_non3gpp;
                md.peer_addr = md.gateway_non3gpp;
                md.teid = md.teid_non3gpp;
                md.route_dst = md.gateway_non3gpp;
            } else {
                md.encap_kind = ENCAP_JUNCTION;
                md.junction_dst = md.ue_addr_non3gpp;
                md.route_dst = md.ue_addr_non3gpp;
            }
        } else if (md.path == PATH_DOWNLINK && md.downlink_tunnel_hit) {
            md.encap_kind = ENCAP_GTPU;
            md.route_dst = md.peer_addr;
            if (!md.peer_hit) {
                md.checks.no_tunnel_peer = true;
            }
        } else if (md.path == PATH_JUNCTION && md.reply) {
            if (md.arrival_access == ACCESS_3GPP) {
                md.encap_kind = ENCAP_JUNCTION_GTPU;
                md.junction_dst = md.ue_addr_3gpp;
                md.route_dst = md.peer_addr;
                if (md.ue_addr_3gpp == 0) {
                    md.checks.no_path = true;  // the session has no such leg
                } else if (!md.peer_hit) {
                    md.checks.no_tunnel_peer = true;
                }
            } else if (hdr.gtpu.isValid()) {
                // Over N3 (Sessions checked that the leg is): back through its gateway.
                md.encap_kind = ENCAP_JUNCTION_GTPU;
                md.junction_dst = md.ue_addr_non3gpp;
                md.peer_addr = md.gateway_non3gpp;
                md.teid = md.teid_non3gpp;
                md.route_dst = md.gateway_non3gpp;
                if (md.ue_addr_non3gpp == 0) {
                    md.checks.no_path = true;
                }
            } else {
                md.encap_kind = ENCAP_JUNCTION;
                md.junction_dst = hdr.ipv4.src_addr;
                md.route_dst = hdr.ipv4.src_addr;
                if (hdr.ipv4.src_addr == 0) {
                    md.checks.no_path = true;
                }
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_TUNNELS_P4
