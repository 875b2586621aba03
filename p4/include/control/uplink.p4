// JUNCTION-UPF: local addresses and GTP-U termination (docs/pipeline.md, step 1).
//
// Packet's way: IPv4 to one of the UPF's own addresses (local_addresses) is
// uplink. A GTP-U Echo Request is answered (Encap). A GTP-U G-PDU must name a
// known TEID (uplink_tunnels); what it carries is either Junction (3GPP leg)
// or a plain user packet. Junction straight over UDP:2153 is the non-3GPP leg.
// Anything else addressed to the UPF, and every non-IPv4 frame, goes to the
// controller. IPv4 to other
// addresses is downlink. A frame the parser found malformed or truncated is
// dropped as PARSER_ERROR, unless it is downlink with sound IPv4 and UDP
// headers: what a data-network packet carries over UDP is not the UPF's
// business. This control only decides; Encap removes headers.

#ifndef JUNCTION_CONTROL_UPLINK_P4
#define JUNCTION_CONTROL_UPLINK_P4

control Uplink(in headers_t hdr, inout local_metadata_t md) {

    @name(".accept_local") @id(0x01000001)
    action accept_local() {
        md.is_local = true;
    }

    @name(".not_local") @id(0x01000002)
    action not_local() {
        md.is_local = false;
    }

    @name(".local_addresses") @id(0x02000001)
    table local_addresses {
        key = {
            hdr.ipv4.dst_addr : exact @name("dst_addr");
        }
        actions = {
            accept_local;
            @defaultonly not_local;
        }
        const default_action = not_local();
        size = MAX_LOCAL_ADDRESSES;
    }

    @name(".decap_gtpu") @id(0x01000003)
    action decap_gtpu() {
        md.arrival_access = ACCESS_3GPP;
    }

    @name(".drop_unknown_teid") @id(0x01000004)
    action drop_unknown_teid() {
        md.drop_reason = DROP_UNKNOWN_TEID;
        md.done = true;
    }

    @name(".uplink_tunnels") @id(0x02000002)
    table uplink_tunnels {
        key = {
            hdr.gtpu.teid : exact @name("teid");
        }
        actions = {
            decap_gtpu;
            @defaultonly drop_unknown_teid;
        }
        const default_action = drop_unknown_teid();
        size = MAX_UPLINK_TUNNELS;
    }

    apply {
        if (!md.done && md.path == PATH_NONE) {
            if (!hdr.ipv4.isValid()) {
                md.path = PATH_PUNT;
                if (md.malformed) {
                    md.drop_reason = DROP_PARSER_ERROR;
                    md.done = true;
                }
            } else {
                local_addresses.apply();
                if (md.unsound || (md.malformed && (md.is_local || !hdr.udp.isValid()))) {
                    md.drop_reason = DROP_PARSER_ERROR;
                    md.done = true;
                } else if (!md.is_local) {
                    md.path = PATH_DOWNLINK;
                } else if (hdr.gtpu.isValid() && hdr.gtpu.msg_type == GTPU_ECHO_REQUEST) {
                    md.path = PATH_GTPU_ECHO;  // answered whatever its TEID (Encap)
                } else if (hdr.gtpu.isValid()) {
                    uplink_tunnels.apply();
                    if (!md.done) {
                        if (hdr.junction.isValid()) {
                            md.path = PATH_JUNCTION;
                        } else if (hdr.inner_ipv4.isValid()) {
                            md.path = PATH_GTPU_UPLINK;
                        } else {
                            md.path = PATH_PUNT;  // a G-PDU that does not carry IPv4
                        }
                    }
                } else if (hdr.junction.isValid()) {
                    md.arrival_access = ACCESS_NON3GPP;
                    md.path = PATH_JUNCTION;
                } else {
                    md.path = PATH_PUNT;
                }
            }
            if (md.path == PATH_PUNT && !md.done) {
                md.punt = true;
                md.done = true;
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_UPLINK_P4
