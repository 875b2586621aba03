// JUNCTION-UPF: length fields checked against each other and against the frame,
// the rules the software UPF's parser applies (internal/wire) and the packet
// vectors pin (drop-malformed-*).
//
// Packet's way: an outer IPv4 total length below 20 or beyond the frame, or an
// outer UDP length below 8 or beyond the IPv4 payload, makes the outer headers
// unsound: PARSER_ERROR whatever the destination (Uplink). What a tunnel
// carries (GTP-U length beyond the UDP payload or below its optional fields,
// an inner IPv4 or UDP length that does not fit, a Junction header that does
// not fit its UDP payload) is malformed: PARSER_ERROR to the UPF's own
// addresses, downlink payload to anyone else. A TCP packet, outer or inside
// GTP-U, whose IPv4 total length leaves no room for its ports is malformed
// too: the parser took them from bytes past the packet (Ethernet padding,
// trailing bytes), which the software UPF never reads. (UDP's own length
// checks cover UDP; JunctionCheck judges the user packet inside Junction.)
//
// frame_len is the frame's length in bytes from the Ethernet header on, or 0
// where the architecture does not tell ingress (TNA): then the frame bound is
// not checked, only the fields against each other.
//
// In the shape a switch pipeline takes: what each header leaves for the next is
// computed first, then each "a fits in b" as min(a, b) == a (a gateway compares
// two fields only for equality), each check into a flag of its own, and the
// flags combined last. The checks are independent: a later one that reads a
// length an earlier one found wrong only adds to the same verdict.

#ifndef JUNCTION_CONTROL_LENGTHS_P4
#define JUNCTION_CONTROL_LENGTHS_P4

control Lengths(in headers_t hdr, inout local_metadata_t md, in bit<16> frame_len) {
    // What each header leaves for the next one: a length less a header. (Where the
    // length is below the header, the parser has said so: *_short, udp_no_header,
    // gtpu_below_8, or malformed.) Each is computed under its header's isValid(),
    // which also keeps p4c from folding the subtraction into the min that reads it:
    // a switch's action cannot use a value it computes itself.
    bit<16> frame_payload;   // the frame less Ethernet
    bit<16> ip_payload;      // outer IPv4 less its header
    bit<16> gtpu_room;       // outer UDP less its header and GTP-U's
    bit<16> gtpu_payload;    // GTP-U message less its optional fields and extension
    bit<16> inner_payload;   // inner IPv4 less its header

    // "a fits in b" is min(a, b) == a. One action for all five: bf-p4c gives each min
    // outside an action a table of its own, and a Tofino stage holds 16.
    bit<16> ip_fit;
    bit<16> udp_fit;
    bit<16> gtpu_fit;
    bit<16> inner_fit;
    bit<16> inner_udp_fit;
    @hidden action fits() {
        ip_fit = min_u16(hdr.ipv4.total_len, frame_payload);
        udp_fit = min_u16(hdr.udp.len, ip_payload);
        gtpu_fit = min_u16(hdr.gtpu.msg_len, gtpu_room);
        inner_fit = min_u16(hdr.inner_ipv4.total_len, gtpu_payload);
        inner_udp_fit = min_u16(hdr.inner_udp.len, inner_payload);
    }

    apply {
        frame_payload = 0;
        ip_payload = 0;
        gtpu_room = 0;
        gtpu_payload = 0;
        inner_payload = 0;
        if (hdr.ipv4.isValid()) {
            frame_payload = frame_len - ETHERNET_HDR_BYTES;
            ip_payload = hdr.ipv4.total_len - IPV4_HDR_BYTES;
        }
        if (hdr.gtpu.isValid()) {
            gtpu_room = md.gtpu_udp_len - (UDP_HDR_BYTES + GTPU_HDR_BYTES);
        }
        if (hdr.gtpu_psc.isValid()) {
            gtpu_payload = hdr.gtpu.msg_len - (GTPU_OPTIONS_BYTES + GTPU_PSC_BYTES);
        } else if (hdr.gtpu_options.isValid()) {
            gtpu_payload = hdr.gtpu.msg_len - GTPU_OPTIONS_BYTES;
        } else if (hdr.gtpu.isValid()) {
            gtpu_payload = hdr.gtpu.msg_len;
        }
        if (hdr.inner_ipv4.isValid()) {
            inner_payload = hdr.inner_ipv4.total_len - IPV4_HDR_BYTES;
        }

        fits();

        // The outer headers: unsound. (One test per if: what a gateway takes.)
        bool ip_bad = false;
        bool udp_bad = false;
        bool tcp_bad = false;  // TCP without room for its ports: malformed, not unsound
        if (hdr.ipv4.isValid()) {
            if (md.ipv4_short == IPV4_NO_HEADER) {
                ip_bad = true;
            } else if (frame_len != 0 && ip_fit != hdr.ipv4.total_len) {
                ip_bad = true;
            }
            if (hdr.udp.isValid()) {
                if (md.udp_no_header) {
                    udp_bad = true;
                } else if (udp_fit != hdr.udp.len) {
                    udp_bad = true;
                }
            }
            if (hdr.tcp.isValid()) {
                if (md.ipv4_short != IPV4_LONG_ENOUGH) {
                    tcp_bad = true;
                }
            }
        }
        md.unsound = false;
        if (ip_bad || udp_bad) {
            md.unsound = true;
        }

        // What a tunnel carries: malformed.
        bool gtpu_bad = false;
        if (hdr.gtpu.isValid()) {
            if (gtpu_fit != hdr.gtpu.msg_len) {
                gtpu_bad = true;
            } else if (hdr.gtpu_psc.isValid()) {
                if (md.gtpu_below_8) {
                    gtpu_bad = true;
                }
            }
        }
        bool inner_bad = false;
        if (hdr.gtpu.isValid() && hdr.inner_ipv4.isValid()) {
            if (md.inner_ipv4_short == IPV4_NO_HEADER) {
                inner_bad = true;
            } else if (inner_fit != hdr.inner_ipv4.total_len) {
                inner_bad = true;
            } else if (hdr.inner_udp.isValid()) {
                if (inner_udp_fit != hdr.inner_udp.len) {
                    inner_bad = true;
                }
            } else if (hdr.inner_tcp.isValid()) {
                if (md.inner_ipv4_short != IPV4_LONG_ENOUGH) {
                    inner_bad = true;
                }
            }
        }
        if (tcp_bad || gtpu_bad || inner_bad) {
            md.malformed = true;
        }
    }
}

#endif  // JUNCTION_CONTROL_LENGTHS_P4
