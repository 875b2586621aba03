// JUNCTION-UPF: the frame parser shared by both builds. Each architecture's
// top-level parser handles its own preamble (v1model: packet-out from the CPU
// port; TNA: intrinsic and port metadata, recirculated internal packets) and
// then invokes JunctionParser on the Ethernet frame.
//
// Layouts (docs/pipeline.md):
//   Ethernet / IPv4 / [TCP|UDP]                                      downlink
//   Ethernet / IPv4 / UDP:2152 / GTP-U [/ ext] / IPv4                 plain GTP-U
//   ... / GTP-U [/ ext] / IPv4 / UDP:2153 / Junction / [IPv4 | body]  Junction, 3GPP leg
//   Ethernet / IPv4 / UDP:2153 / Junction / [IPv4 | body]             Junction, non-3GPP leg
//
// Something that claims to be one of these but is inconsistent (IPv4 options,
// a GTP-U message other than a G-PDU or an Echo Request with S set and E clear,
// an extension other than one PDU Session Container) sets md.malformed;
// truncation is the architecture's PacketTooShort.
// Uplink turns both into PARSER_ERROR, except for a packet not addressed to the
// UPF whose IPv4 and UDP headers are sound: that is downlink traffic whatever
// its UDP payload looks like.

#ifndef JUNCTION_PARSER_P4
#define JUNCTION_PARSER_P4

#include "header.p4"

parser JunctionParser(packet_in packet,
                      inout headers_t hdr,
                      inout local_metadata_t md) {

    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;  // punted to the CPU by the ingress control
        }
    }

    // --- outermost IPv4: a downlink user packet or a tunnel toward the UPF ---
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (IPV4_VERSION, IPV4_MIN_IHL): parse_ipv4_l4;
            default: malformed;
        }
    }

    state parse_ipv4_l4 {
        // Non-first fragments carry no transport header.
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, PROTO_UDP): parse_udp;
            (0, PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            GTPU_UDP_PORT: check_gtpu;
            JUNCTION_UDP_PORT: parse_junction;
            default: accept;
        }
    }

    // --- GTP-U: a G-PDU, or an Echo Request (S set, E clear, TS 29.281 §7.2.1),
    // which the UPF answers; anything else on port 2152 is a parser error ---
    state check_gtpu {
        gtpu_t peek = packet.lookahead<gtpu_t>();
        transition select(peek.version, peek.pt, peek.msg_type, peek.ex_flag, peek.seq_flag) {
            (GTP_V1, GTP_PT_GTP, GTPU_GPDU, _, _): parse_gtpu;
            (GTP_V1, GTP_PT_GTP, GTPU_ECHO_REQUEST, 0, 1): parse_gtpu_echo;
            default: malformed;
        }
    }

    // Its IEs (a Private Extension at most) stay unparsed payload.
    state parse_gtpu_echo {
        packet.extract(hdr.gtpu);
        packet.extract(hdr.gtpu_options);
        transition accept;
    }

    state parse_gtpu {
        packet.extract(hdr.gtpu);
        transition select(hdr.gtpu.ex_flag, hdr.gtpu.seq_flag, hdr.gtpu.npdu_flag) {
            (0, 0, 0): parse_inner_ipv4;
            default: parse_gtpu_options;
        }
    }

    // With E set, the next extension is none or the PDU Session Container;
    // without E, next_ext means nothing.
    state parse_gtpu_options {
        packet.extract(hdr.gtpu_options);
        transition select(hdr.gtpu.ex_flag, hdr.gtpu_options.next_ext) {
            (0, _): parse_inner_ipv4;
            (1, GTPU_NEXT_EXT_NONE): parse_inner_ipv4;
            (1, GTPU_NEXT_EXT_PSC): parse_gtpu_psc;
            default: malformed;
        }
    }

    // Exactly one extension: length 1, and nothing after it.
    state parse_gtpu_psc {
        packet.extract(hdr.gtpu_psc);
        transition select(hdr.gtpu_psc.len, hdr.gtpu_psc.next_ext) {
            (GTPU_PSC_LEN, GTPU_NEXT_EXT_NONE): parse_inner_ipv4;
            default: malformed;
        }
    }

    // --- IPv4 inside GTP-U: the user packet, or the Junction transport ---
    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
        transition select(hdr.inner_ipv4.version, hdr.inner_ipv4.ihl) {
            (IPV4_VERSION, IPV4_MIN_IHL): parse_inner_l4;
            default: malformed;
        }
    }

    state parse_inner_l4 {
        transition select(hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.protocol) {
            (0, PROTO_UDP): parse_inner_udp;
            (0, PROTO_TCP): parse_inner_tcp;
            default: accept;
        }
    }

    state parse_inner_tcp {
        packet.extract(hdr.inner_tcp);
        transition accept;
    }

    state parse_inner_udp {
        packet.extract(hdr.inner_udp);
        transition select(hdr.inner_udp.dst_port) {
            JUNCTION_UDP_PORT: parse_junction;
            default: accept;
        }
    }

    // --- Junction (either leg) ---
    // What follows the header is parsed only when the header itself is valid
    // (docs/junction-header.md), its length included: an invalid header is
    // BAD_JUNCTION, not a parser error, and JunctionCheck says so. (DATA with a
    // length below an IPv4 header, or a control body with a length other than
    // 16, would otherwise be extracted past the end of a frame that holds just
    // what the length says, and be a parser error.)
    state parse_junction {
        packet.extract(hdr.junction);
        transition select(hdr.junction.msg_type, hdr.junction.marks, hdr.junction.proto,
                          hdr.junction.len) {
            (JUNCTION_DATA, _, _, 0 &&& 0xfff0): accept;   // 0..15
            (JUNCTION_DATA, _, _, 16 &&& 0xfffc): accept;  // 16..19
            (JUNCTION_DATA, 0, PROTO_IPV4, _): parse_user_ipv4;
            (JUNCTION_DATA, MARK_CURRENT_PATH, PROTO_IPV4, _): parse_user_ipv4;
            (JUNCTION_DATA, MARK_CURRENT_PATH | MARK_EPOCH, PROTO_IPV4, _): parse_user_ipv4;
            (JUNCTION_PROBE, 0, 0, JUNCTION_CTL_BYTES): parse_junction_ctl;
            (JUNCTION_PROBE_REPLY, 0, 0, JUNCTION_CTL_BYTES): parse_junction_ctl;
            (JUNCTION_PROBE_ACK, 0, 0, JUNCTION_CTL_BYTES): parse_junction_ctl;
            (JUNCTION_LINK_DOWN, 0, 0, JUNCTION_CTL_BYTES): parse_junction_ctl;
            (JUNCTION_LINK_UP, 0, 0, JUNCTION_CTL_BYTES): parse_junction_ctl;
            default: accept;  // the EX-PATH marker has no payload
        }
    }

    state parse_junction_ctl {
        packet.extract(hdr.junction_ctl);
        transition accept;
    }

    // A user packet with options or another version is malformed_user: JunctionCheck
    // weighs it against the Junction header around it (a bad header is BAD_JUNCTION first).
    state parse_user_ipv4 {
        packet.extract(hdr.user_ipv4);
        transition select(hdr.user_ipv4.version, hdr.user_ipv4.ihl) {
            (IPV4_VERSION, IPV4_MIN_IHL): parse_user_l4;
            default: malformed_user;
        }
    }

    state malformed_user {
        md.malformed_user = true;
        transition accept;
    }

    // Ports only within the user packet's total length: one too short to hold them is
    // JunctionCheck's PARSER_ERROR, judged after the Junction header around it.
    state parse_user_l4 {
        transition select(hdr.user_ipv4.frag_offset, hdr.user_ipv4.protocol, hdr.user_ipv4.total_len) {
            (0, PROTO_UDP, 0 &&& 0xfff0): accept;   // 0..15
            (0, PROTO_UDP, 16 &&& 0xfff8): accept;  // 16..23
            (0, PROTO_TCP, 0 &&& 0xfff0): accept;
            (0, PROTO_TCP, 16 &&& 0xfff8): accept;
            (0, PROTO_UDP, _): parse_user_ports;
            (0, PROTO_TCP, _): parse_user_ports;
            default: accept;
        }
    }

    state parse_user_ports {
        packet.extract(hdr.user_ports);
        transition accept;
    }

    state malformed {
        md.malformed = true;
        transition accept;
    }
}

#endif  // JUNCTION_PARSER_P4
