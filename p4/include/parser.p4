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
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.total_len) {
            (IPV4_VERSION, IPV4_MIN_IHL, 0 &&& 0xfff0): ipv4_no_header;   // 0..15
            (IPV4_VERSION, IPV4_MIN_IHL, 16 &&& 0xfffc): ipv4_no_header;  // 16..19
            (IPV4_VERSION, IPV4_MIN_IHL, 20 &&& 0xfffc): ipv4_no_ports;   // 20..23
            (IPV4_VERSION, IPV4_MIN_IHL, _): parse_ipv4_l4;
            default: malformed;
        }
    }

    // Too short to be what it claims: Lengths judges it.
    state ipv4_no_header {
        md.ipv4_short = IPV4_NO_HEADER;
        transition parse_ipv4_l4;
    }

    state ipv4_no_ports {
        md.ipv4_short = IPV4_NO_PORTS;
        transition parse_ipv4_l4;
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

    // UDP's length against 8 (its own header) and 16 (a GTP-U or Junction header
    // after it), tested here for free as the IPv4 lengths are: too short for its own
    // header is unsound outer headers, too short for the tunnel header a malformed
    // tunnel, whose bytes are not parsed.
    state parse_udp {
        packet.extract(hdr.udp);
        md.gtpu_udp_len = hdr.udp.len;
        md.junction_udp_len = hdr.udp.len;
        transition select(hdr.udp.dst_port, hdr.udp.len) {
            (_, 0 &&& 0xfff8): udp_no_header;                   // 0..7
            (GTPU_UDP_PORT, 8 &&& 0xfff8): malformed;           // 8..15
            (JUNCTION_UDP_PORT, 8 &&& 0xfff8): malformed;
            (GTPU_UDP_PORT, _): check_gtpu;
            (JUNCTION_UDP_PORT, _): parse_junction;
            default: accept;
        }
    }

    state udp_no_header {
        md.udp_no_header = true;
        transition accept;
    }

    // --- GTP-U: a G-PDU, an Echo Request (S set, E clear, TS 29.281 §7.2.1),
    // which the UPF answers, or an End Marker, which it relays on a forwarding
    // tunnel; anything else on port 2152 is a parser error ---
    state check_gtpu {
        gtpu_t peek = packet.lookahead<gtpu_t>();
        transition select(peek.version, peek.pt, peek.msg_type, peek.ex_flag, peek.seq_flag) {
            (GTP_V1, GTP_PT_GTP, GTPU_GPDU, _, _): parse_gtpu;
            (GTP_V1, GTP_PT_GTP, GTPU_ECHO_REQUEST, 0, 1): parse_gtpu_echo;
            (GTP_V1, GTP_PT_GTP, GTPU_END_MARKER, _, _): parse_gtpu_end_marker;
            default: malformed;
        }
    }

    // No T-PDU follows; its optional fields and any extension stay unparsed payload.
    // A length that cannot hold the optional fields is malformed.
    state parse_gtpu_end_marker {
        packet.extract(hdr.gtpu);
        transition select(hdr.gtpu.ex_flag, hdr.gtpu.seq_flag, hdr.gtpu.npdu_flag, hdr.gtpu.msg_len) {
            (0, 0, 0, _): accept;
            (_, _, _, 0 &&& 0xfffc): malformed;  // 0..3
            default: accept;
        }
    }

    // Its IEs (a Private Extension at most) stay unparsed payload. A length that
    // cannot hold the optional fields is malformed.
    state parse_gtpu_echo {
        packet.extract(hdr.gtpu);
        packet.extract(hdr.gtpu_options);
        transition select(hdr.gtpu.msg_len) {
            0 &&& 0xfffc: malformed;  // 0..3
            default: accept;
        }
    }

    // The message length against the optional fields (4 bytes, present when any of E,
    // S, PN is set) and an extension (4 more; Lengths judges it once the extension is
    // known: gtpu_below_8).
    state parse_gtpu {
        packet.extract(hdr.gtpu);
        transition select(hdr.gtpu.ex_flag, hdr.gtpu.seq_flag, hdr.gtpu.npdu_flag, hdr.gtpu.msg_len) {
            (0, 0, 0, _): parse_inner_ipv4;
            (_, _, _, 0 &&& 0xfffc): malformed;        // 0..3
            (_, _, _, 4 &&& 0xfffc): gtpu_below_8;     // 4..7
            default: parse_gtpu_options;
        }
    }

    state gtpu_below_8 {
        md.gtpu_below_8 = true;
        transition parse_gtpu_options;
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
        transition select(hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.total_len) {
            (IPV4_VERSION, IPV4_MIN_IHL, 0 &&& 0xfff0): inner_ipv4_no_header;
            (IPV4_VERSION, IPV4_MIN_IHL, 16 &&& 0xfffc): inner_ipv4_no_header;
            (IPV4_VERSION, IPV4_MIN_IHL, 20 &&& 0xfffc): inner_ipv4_no_ports;
            (IPV4_VERSION, IPV4_MIN_IHL, _): parse_inner_l4;
            default: malformed;
        }
    }

    state inner_ipv4_no_header {
        md.inner_ipv4_short = IPV4_NO_HEADER;
        transition parse_inner_l4;
    }

    state inner_ipv4_no_ports {
        md.inner_ipv4_short = IPV4_NO_PORTS;
        transition parse_inner_l4;
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

    // Too short for its own header (below 8), or for the Junction header after it
    // (below 16): malformed.
    state parse_inner_udp {
        packet.extract(hdr.inner_udp);
        md.junction_udp_len = hdr.inner_udp.len;
        transition select(hdr.inner_udp.dst_port, hdr.inner_udp.len) {
            (_, 0 &&& 0xfff8): malformed;
            (JUNCTION_UDP_PORT, 8 &&& 0xfff8): malformed;
            (JUNCTION_UDP_PORT, _): parse_junction;
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
        md.junction_len = hdr.junction.len;
        md.marker_session = hdr.junction.seq;
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
    // Ports only within the user packet's total length: one too short to hold them
    // (below 24) has none to parse, and JunctionCheck's PARSER_ERROR judges it after the
    // Junction header around it. (Length here, fragment and protocol in the next state:
    // a Tofino parser state matches on 32 bits at most.)
    state parse_user_ipv4 {
        packet.extract(hdr.user_ipv4);
        md.user_total_len = hdr.user_ipv4.total_len;
        transition select(hdr.user_ipv4.version, hdr.user_ipv4.ihl, hdr.user_ipv4.total_len) {
            (IPV4_VERSION, IPV4_MIN_IHL, 0 &&& 0xfff0): user_ipv4_no_header;
            (IPV4_VERSION, IPV4_MIN_IHL, 16 &&& 0xfffc): user_ipv4_no_header;
            (IPV4_VERSION, IPV4_MIN_IHL, 20 &&& 0xfffc): user_ipv4_no_ports;
            (IPV4_VERSION, IPV4_MIN_IHL, _): parse_user_l4;
            default: malformed_user;
        }
    }

    state user_ipv4_no_header {
        md.user_ipv4_short = IPV4_NO_HEADER;
        transition accept;
    }

    state user_ipv4_no_ports {
        md.user_ipv4_short = IPV4_NO_PORTS;
        transition accept;
    }

    state malformed_user {
        md.malformed_user = true;
        transition accept;
    }

    state parse_user_l4 {
        transition select(hdr.user_ipv4.frag_offset, hdr.user_ipv4.protocol) {
            (0, PROTO_UDP): parse_user_ports;
            (0, PROTO_TCP): parse_user_ports;
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
