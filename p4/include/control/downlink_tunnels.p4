// JUNCTION-UPF: single-access PDU sessions (plain GTP-U downlink).
//
// Packet's way: downlink whose destination is not an MA PDU session address
// looks up downlink_tunnels; a hit wraps the packet in GTP-U toward the gNB
// (Tunnels resolves peer and endpoint) and names the session's usage cell
// (Verdict); a miss leaves it to plain routing (the UPF is also a router).
// buffer_downlink (an SMF's BUFF FAR: the UE is idle) sends the packet to the
// controller as a packet-in, as it arrived, which holds it and later sends it
// back as a to_ingress packet-out: a punt, so no route, no encapsulation, no
// usage (Rewrite gives back the TTL Filter took); a parser error still drops it
// first (DropReasons).

#ifndef JUNCTION_CONTROL_DOWNLINK_TUNNELS_P4
#define JUNCTION_CONTROL_DOWNLINK_TUNNELS_P4

control DownlinkTunnels(inout local_metadata_t md) {

    @name(".encap_gtpu") @id(0x0100000F)
    action encap_gtpu(teid_t teid, peer_idx_t peer_idx, endpoint_idx_t endpoint_idx,
                      usage_idx_t usage_idx) {
        md.downlink_tunnel_hit = true;
        md.teid = teid;
        md.peer_idx = peer_idx;
        md.endpoint_idx = endpoint_idx;
        md.usage_idx = usage_idx;
    }

    @name(".buffer_downlink") @id(0x01000019)
    action buffer_downlink() {
        md.downlink_tunnel_hit = false;
        md.punt = true;
    }

    @name(".no_tunnel") @id(0x01000010)
    action no_tunnel() {
        md.downlink_tunnel_hit = false;
    }

    @name(".downlink_tunnels") @id(0x02000008)
    table downlink_tunnels {
        key = {
            md.user_dst : exact @name("ue_addr");
        }
        actions = {
            encap_gtpu;
            buffer_downlink;
            @defaultonly no_tunnel;
        }
        const default_action = no_tunnel();
        size = MAX_DOWNLINK_TUNNELS;
    }

    apply {
        if (md.path == PATH_DOWNLINK && !md.session_hit) {
            downlink_tunnels.apply();
        }
    }
}

#endif  // JUNCTION_CONTROL_DOWNLINK_TUNNELS_P4
