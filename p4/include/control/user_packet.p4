// JUNCTION-UPF: the user packet's fields, wherever it sits in the frame.
//
// Packet's way: downlink -> the outermost IPv4; plain GTP-U uplink -> the IPv4
// inside GTP-U; Junction DATA -> the IPv4 inside Junction. Classification
// (applications), filters, TTL and routing all read these fields, so they do
// not care how deep the user packet was. A downlink packet's session address
// is its destination.

#ifndef JUNCTION_CONTROL_USER_PACKET_P4
#define JUNCTION_CONTROL_USER_PACKET_P4

control UserPacket(in headers_t hdr, inout local_metadata_t md) {
    apply {
        if (!md.done) {
            if (md.path == PATH_DOWNLINK) {
                md.user_src = hdr.ipv4.src_addr;
                md.user_dst = hdr.ipv4.dst_addr;
                md.user_proto = hdr.ipv4.protocol;
                md.user_dscp = hdr.ipv4.dscp;
                md.user_len = hdr.ipv4.total_len;
                if (hdr.udp.isValid()) {
                    md.user_sport = hdr.udp.src_port;
                    md.user_dport = hdr.udp.dst_port;
                } else if (hdr.tcp.isValid()) {
                    md.user_sport = hdr.tcp.src_port;
                    md.user_dport = hdr.tcp.dst_port;
                }
                md.session_addr = hdr.ipv4.dst_addr;
            } else if (md.path == PATH_GTPU_UPLINK) {
                md.user_src = hdr.inner_ipv4.src_addr;
                md.user_dst = hdr.inner_ipv4.dst_addr;
                md.user_proto = hdr.inner_ipv4.protocol;
                md.user_dscp = hdr.inner_ipv4.dscp;
                md.user_len = hdr.inner_ipv4.total_len;
                if (hdr.inner_udp.isValid()) {
                    md.user_sport = hdr.inner_udp.src_port;
                    md.user_dport = hdr.inner_udp.dst_port;
                } else if (hdr.inner_tcp.isValid()) {
                    md.user_sport = hdr.inner_tcp.src_port;
                    md.user_dport = hdr.inner_tcp.dst_port;
                }
            } else if (md.path == PATH_JUNCTION && md.junction_kind == JK_DATA) {
                md.user_src = hdr.user_ipv4.src_addr;
                md.user_dst = hdr.user_ipv4.dst_addr;
                md.user_proto = hdr.user_ipv4.protocol;
                md.user_dscp = hdr.user_ipv4.dscp;
                md.user_len = hdr.user_ipv4.total_len;
                if (hdr.user_ports.isValid()) {
                    md.user_sport = hdr.user_ports.src_port;
                    md.user_dport = hdr.user_ports.dst_port;
                }
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_USER_PACKET_P4
