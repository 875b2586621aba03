// JUNCTION-UPF: the user packet's fields, wherever it sits in the frame.
//
// Packet's way: downlink -> the outermost IPv4; plain GTP-U uplink -> the IPv4
// inside GTP-U; Junction DATA -> the IPv4 inside Junction. Classification
// (applications), filters, TTL and routing all read these fields, so they do
// not care how deep the user packet was. The session address that finds the
// user: a downlink packet's destination; on Junction, the user packet's source
// (DATA), the control body's (probes, link messages) or the marker's seq.

#ifndef JUNCTION_CONTROL_USER_PACKET_P4
#define JUNCTION_CONTROL_USER_PACKET_P4

control UserPacket(in headers_t hdr, inout local_metadata_t md) {

    @hidden @name("user_outer_udp")
    action outer_udp() {
        md.user_src = hdr.ipv4.src_addr;
        md.user_dst = hdr.ipv4.dst_addr;
        md.user_proto = hdr.ipv4.protocol;
        md.user_dscp = hdr.ipv4.dscp;
        md.user_sport = hdr.udp.src_port;
        md.user_dport = hdr.udp.dst_port;
        md.session_addr = hdr.ipv4.dst_addr;
    }

    @hidden @name("user_outer_tcp")
    action outer_tcp() {
        md.user_src = hdr.ipv4.src_addr;
        md.user_dst = hdr.ipv4.dst_addr;
        md.user_proto = hdr.ipv4.protocol;
        md.user_dscp = hdr.ipv4.dscp;
        md.user_sport = hdr.tcp.src_port;
        md.user_dport = hdr.tcp.dst_port;
        md.session_addr = hdr.ipv4.dst_addr;
    }

    @hidden @name("user_outer")
    action outer() {
        md.user_src = hdr.ipv4.src_addr;
        md.user_dst = hdr.ipv4.dst_addr;
        md.user_proto = hdr.ipv4.protocol;
        md.user_dscp = hdr.ipv4.dscp;
        md.session_addr = hdr.ipv4.dst_addr;
    }

    @hidden @name("user_inner_udp")
    action inner_udp() {
        md.user_src = hdr.inner_ipv4.src_addr;
        md.user_dst = hdr.inner_ipv4.dst_addr;
        md.user_proto = hdr.inner_ipv4.protocol;
        md.user_dscp = hdr.inner_ipv4.dscp;
        md.user_sport = hdr.inner_udp.src_port;
        md.user_dport = hdr.inner_udp.dst_port;
    }

    @hidden @name("user_inner_tcp")
    action inner_tcp() {
        md.user_src = hdr.inner_ipv4.src_addr;
        md.user_dst = hdr.inner_ipv4.dst_addr;
        md.user_proto = hdr.inner_ipv4.protocol;
        md.user_dscp = hdr.inner_ipv4.dscp;
        md.user_sport = hdr.inner_tcp.src_port;
        md.user_dport = hdr.inner_tcp.dst_port;
    }

    @hidden @name("user_inner")
    action inner() {
        md.user_src = hdr.inner_ipv4.src_addr;
        md.user_dst = hdr.inner_ipv4.dst_addr;
        md.user_proto = hdr.inner_ipv4.protocol;
        md.user_dscp = hdr.inner_ipv4.dscp;
    }

    // Junction DATA: the user packet inside; its source is the session's address.
    @hidden @name("user_junction_ports")
    action junction_ports() {
        md.user_src = hdr.user_ipv4.src_addr;
        md.user_dst = hdr.user_ipv4.dst_addr;
        md.user_proto = hdr.user_ipv4.protocol;
        md.user_dscp = hdr.user_ipv4.dscp;
        md.user_sport = hdr.user_ports.src_port;
        md.user_dport = hdr.user_ports.dst_port;
        md.session_addr = hdr.user_ipv4.src_addr;
    }

    @hidden @name("user_junction")
    action junction() {
        md.user_src = hdr.user_ipv4.src_addr;
        md.user_dst = hdr.user_ipv4.dst_addr;
        md.user_proto = hdr.user_ipv4.protocol;
        md.user_dscp = hdr.user_ipv4.dscp;
        md.session_addr = hdr.user_ipv4.src_addr;
    }

    @hidden @name("user_junction_control")
    action junction_control() {
        md.session_addr = hdr.junction_ctl.session_addr;
    }

    @hidden @name("user_junction_marker")
    action junction_marker() {
        md.session_addr = md.marker_session;  // the EX-PATH marker's seq
    }

    @hidden @name("user_none")
    action none() {
    }

    // Which header holds the user packet (and its ports), by what the parser found
    // and whether the frame is addressed to the UPF, the path as Uplink's paths
    // table decides it (not its result, so as not to wait for it): one lookup, where
    // tests of each would take a table apiece. On
    // Junction the parser extracts a user packet for DATA only and a control body for
    // control messages only; an EX-PATH marker has neither. Whether the message is
    // valid is JunctionCheck's to say: an invalid one is dropped.
    @hidden @name("user_packets")
    table user_packets {
        key = {
            hdr.ipv4.isValid()         : ternary;
            md.is_local                : ternary;
            hdr.gtpu.isValid()         : ternary;
            hdr.junction.isValid()     : ternary;
            hdr.udp.isValid()          : ternary;
            hdr.tcp.isValid()          : ternary;
            hdr.inner_udp.isValid()    : ternary;
            hdr.inner_tcp.isValid()    : ternary;
            hdr.user_ipv4.isValid()    : ternary;
            hdr.user_ports.isValid()   : ternary;
            hdr.junction_ctl.isValid() : ternary;
        }
        actions = {
            outer_udp;
            outer_tcp;
            outer;
            inner_udp;
            inner_tcp;
            inner;
            junction_ports;
            junction;
            junction_control;
            junction_marker;
            none;
        }
        const default_action = none();
        const entries = {
            // Downlink: IPv4 to another address.
            (true, false, _, _, true, _, _, _, _, _, _) : outer_udp();
            (true, false, _, _, _, true, _, _, _, _, _) : outer_tcp();
            (true, false, _, _, _, _, _, _, _, _, _) : outer();
            // Junction to the UPF, on either leg.
            (true, true, _, true, _, _, _, _, true, true, _) : junction_ports();
            (true, true, _, true, _, _, _, _, true, _, _) : junction();
            (true, true, _, true, _, _, _, _, _, _, true) : junction_control();
            (true, true, _, true, _, _, _, _, _, _, _) : junction_marker();
            // Plain GTP-U to the UPF: the packet inside.
            (true, true, true, false, _, _, true, _, _, _, _) : inner_udp();
            (true, true, true, false, _, _, _, true, _, _, _) : inner_tcp();
            (true, true, true, false, _, _, _, _, _, _, _) : inner();
        }
    }

    apply {
        user_packets.apply();
    }
}

#endif  // JUNCTION_CONTROL_USER_PACKET_P4
