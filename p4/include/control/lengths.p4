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

#ifndef JUNCTION_CONTROL_LENGTHS_P4
#define JUNCTION_CONTROL_LENGTHS_P4

control Lengths(in headers_t hdr, inout local_metadata_t md, in bit<16> frame_len) {
    apply {
        md.unsound = false;
        if (hdr.ipv4.isValid()) {
            bit<16> ip_len = hdr.ipv4.total_len;
            if (ip_len < IPV4_HDR_BYTES ||
                    (frame_len != 0 && ip_len > frame_len - ETHERNET_HDR_BYTES)) {
                md.unsound = true;
            } else if (hdr.udp.isValid() &&
                    (hdr.udp.len < UDP_HDR_BYTES || hdr.udp.len > ip_len - IPV4_HDR_BYTES)) {
                md.unsound = true;
            } else if (hdr.tcp.isValid() && ip_len < IPV4_HDR_BYTES + L4_PORTS_BYTES) {
                md.malformed = true;
            }
        }
        if (!md.unsound && hdr.gtpu.isValid()) {
            bit<16> ext = 0;  // GTP-U optional fields and extension inside msg_len
            if (hdr.gtpu_options.isValid()) {
                ext = GTPU_OPTIONS_BYTES;
            }
            if (hdr.gtpu_psc.isValid()) {
                ext = GTPU_OPTIONS_BYTES + GTPU_PSC_BYTES;
            }
            if (hdr.udp.len < UDP_HDR_BYTES + GTPU_HDR_BYTES ||
                    hdr.gtpu.msg_len > hdr.udp.len - (UDP_HDR_BYTES + GTPU_HDR_BYTES) ||
                    hdr.gtpu.msg_len < ext) {
                md.malformed = true;
            } else if (hdr.inner_ipv4.isValid()) {
                bit<16> inner_len = hdr.inner_ipv4.total_len;
                if (inner_len < IPV4_HDR_BYTES || inner_len > hdr.gtpu.msg_len - ext) {
                    md.malformed = true;
                } else if (hdr.inner_udp.isValid() &&
                        (hdr.inner_udp.len < UDP_HDR_BYTES ||
                         hdr.inner_udp.len > inner_len - IPV4_HDR_BYTES)) {
                    md.malformed = true;
                } else if (hdr.inner_tcp.isValid() && inner_len < IPV4_HDR_BYTES + L4_PORTS_BYTES) {
                    md.malformed = true;
                }
            }
        }
        if (!md.unsound && !md.malformed && hdr.junction.isValid()) {
            bit<16> udp_len = hdr.udp.len;
            if (hdr.inner_udp.isValid()) {
                udp_len = hdr.inner_udp.len;
            }
            if (udp_len < UDP_HDR_BYTES + JUNCTION_HDR_BYTES) {
                md.malformed = true;  // the header does not fit: truncated, not BAD_JUNCTION
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_LENGTHS_P4
