// JUNCTION-UPF: local addresses and GTP-U termination (docs/pipeline.md, step 1).
//
// Packet's way: IPv4 to one of the UPF's own addresses (local_addresses) is
// uplink. A GTP-U Echo Request is answered (Encap). A GTP-U G-PDU must name a
// known TEID (uplink_tunnels, whose entry names the leg the tunnel belongs to,
// and a single-access session's usage cell); what it carries is either
// Junction (the 3GPP leg, or a non-3GPP leg over N3 from an N3IWF, TNGF or
// W-AGF) or a plain user packet; a G-PDU on an N2 handover's indirect forwarding
// tunnel (forward_indirect) goes to the controller as it came, which sends it on to
// the target gNB. Junction straight over UDP:2153 is a plain
// non-3GPP leg. Anything else
// addressed to the UPF, and every non-IPv4 frame, goes to the controller. IPv4
// to other addresses is downlink. A frame the parser found malformed or truncated is
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
    action decap_gtpu(access_t access, usage_idx_t usage_idx) {
        md.teid_known = true;
        md.tunnel_access = access;  // ACCESS_NON3GPP: a gateway's N3 tunnel; else the 3GPP leg
        md.usage_idx = usage_idx;  // a single-access session's; Sessions sets an MA one's
    }

    // An indirect data forwarding tunnel (TS 23.502 §4.9.1.3): the source gNB forwards a UE's
    // downlink to it during an N2 handover, and the controller relays it to the target gNB's
    // tunnel (docs/n4.md, "Indirect data forwarding"). No leg, no usage: the pipeline counted
    // these packets when it sent them to the source gNB.
    @name(".forward_indirect") @id(0x0100001C)
    action forward_indirect() {
        md.teid_known = true;
        md.tunnel_access = ACCESS_FORWARDING;
    }

    @name(".drop_unknown_teid") @id(0x01000004)
    action drop_unknown_teid() {
        md.teid_known = false;
    }

    @name(".uplink_tunnels") @id(0x02000002)
    table uplink_tunnels {
        key = {
            hdr.gtpu.teid : exact @name("teid");
        }
        actions = {
            decap_gtpu;
            forward_indirect;
            @defaultonly drop_unknown_teid;
        }
        const default_action = drop_unknown_teid();
        size = MAX_UPLINK_TUNNELS;
    }

    @hidden @name("uplink_classify")
    action classify(path_t path, access_t arrival, bit<1> punt, bit<1> unknown_teid) {
        md.path = path;
        md.arrival_access = arrival;
        md.punt = (bool)punt;
        md.checks.unknown_teid = (bool)unknown_teid;
    }

    // The path, from what the parser found and the two lookups: one table of
    // constant entries in order (the first that matches wins), where a chain of
    // tests would take a table apiece.
    @hidden @name("paths")
    table paths {
        key = {
            hdr.ipv4.isValid()     : ternary;
            md.is_local            : ternary;
            hdr.gtpu.isValid()     : ternary;
            hdr.gtpu.msg_type      : ternary;
            hdr.junction.isValid() : ternary;
            hdr.inner_ipv4.isValid() : ternary;
            md.teid_known          : ternary;
            md.tunnel_access       : ternary;
        }
        actions = {
            classify;
        }
        // Local, neither GTP-U nor Junction: for the controller.
        const default_action = classify(PATH_PUNT, ACCESS_NONE, 1, 0);
        const entries = {
            (false, _, _, _, _, _, _, _) : classify(PATH_PUNT, ACCESS_NONE, 1, 0);
            (true, false, _, _, _, _, _, _) : classify(PATH_DOWNLINK, ACCESS_NONE, 0, 0);
            // A GTP-U Echo Request is answered whatever its TEID (Rewrite).
            (true, true, true, GTPU_ECHO_REQUEST, _, _, _, _) : classify(PATH_GTPU_ECHO, ACCESS_NONE, 0, 0);
            // A G-PDU on a forwarding tunnel, whatever it carries: for the controller.
            (true, true, true, _, _, _, true, ACCESS_FORWARDING) : classify(PATH_PUNT, ACCESS_3GPP, 1, 0);
            // A G-PDU: Junction (a non-3GPP leg over N3 when its tunnel says so, else
            // the 3GPP leg), a plain user packet, or for the controller when it
            // carries no IPv4; its TEID must be known.
            (true, true, true, _, true, _, true, ACCESS_NON3GPP) : classify(PATH_JUNCTION, ACCESS_NON3GPP, 0, 0);
            (true, true, true, _, true, _, true, _) : classify(PATH_JUNCTION, ACCESS_3GPP, 0, 0);
            (true, true, true, _, true, _, false, _) : classify(PATH_JUNCTION, ACCESS_3GPP, 0, 1);
            (true, true, true, _, false, true, true, _) : classify(PATH_GTPU_UPLINK, ACCESS_3GPP, 0, 0);
            (true, true, true, _, false, true, false, _) : classify(PATH_GTPU_UPLINK, ACCESS_3GPP, 0, 1);
            (true, true, true, _, false, false, true, _) : classify(PATH_PUNT, ACCESS_3GPP, 1, 0);
            (true, true, true, _, false, false, false, _) : classify(PATH_PUNT, ACCESS_3GPP, 1, 1);
            // Junction straight over UDP: the non-3GPP leg.
            (true, true, false, _, true, _, _, _) : classify(PATH_JUNCTION, ACCESS_NON3GPP, 0, 0);
        }
    }

    @hidden @name("uplink_parser_error")
    action parser_error() {
        md.checks.parser_error = true;
    }

    @hidden @name("uplink_sound")
    action sound() {
    }

    // Malformed or truncated (the parser and Lengths say which): a parser error,
    // unless the frame is downlink with sound IPv4 and UDP headers.
    @hidden @name("parser_errors")
    table parser_errors {
        key = {
            hdr.ipv4.isValid() : ternary;
            md.malformed       : ternary;
            md.unsound         : ternary;
            md.is_local        : ternary;
            hdr.udp.isValid()  : ternary;
        }
        actions = {
            parser_error;
            sound;
        }
        const default_action = sound();
        const entries = {
            (false, true, _, _, _) : parser_error();
            (true, _, true, _, _) : parser_error();
            (true, true, _, true, _) : parser_error();
            (true, true, _, _, false) : parser_error();
        }
    }

    // Both tables are looked up on what the parser found, and the path follows from
    // their results: nothing here waits for the length checks (Lengths), whose
    // verdict is a flag the drop reason takes first (DropReasons).
    apply {
        if (!md.done) {
            if (hdr.ipv4.isValid()) {
                local_addresses.apply();
            }
            if (hdr.gtpu.isValid()) {
                uplink_tunnels.apply();
            }
            paths.apply();
            parser_errors.apply();
        }
    }
}

#endif  // JUNCTION_CONTROL_UPLINK_P4
