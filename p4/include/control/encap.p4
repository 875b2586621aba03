// JUNCTION-UPF: header rewrite, the last ingress step before the packet is
// queued. Decides nothing; applies what the earlier controls decided.
//
// Packet's way:
//   uplink (plain GTP-U)    strip IPv4/UDP/GTP-U           -> Ethernet/user IPv4
//   uplink (Junction DATA)  strip [IPv4/UDP/GTP-U/]IPv4/UDP/Junction
//   PROBE                   strip the transport, Junction becomes PROBE_REPLY with
//                           upf_ts = now_us, then the Junction transport is added
//   downlink                add Junction (DATA, proto 4, seq) and its transport
//   downlink_tunnels        add IPv4/UDP:2152/GTP-U
//   GTP-U Echo Request      becomes the Echo Response in place (TS 29.281 §7.2.2):
//                           addresses swapped, back to the request's UDP source
//                           port from 2152, its sequence number, TEID 0, and a
//                           Recovery IE (restart counter 0) in front of its IEs
// Added headers: IPv4 TTL 64, identification 0, no flags (checksum by the
// deparser); UDP with checksum 0 and source port = destination port; GTP-U
// flags 0x30, type 0xFF, length = bytes after the 8-byte GTP-U header.
// Finally the Ethernet addresses from routes.

#ifndef JUNCTION_CONTROL_ENCAP_P4
#define JUNCTION_CONTROL_ENCAP_P4

control Encap(inout headers_t hdr, inout local_metadata_t md) {

    apply {
        if (!md.done) {
            bool strip_transport = md.path == PATH_GTPU_UPLINK || md.path == PATH_JUNCTION;
            if (strip_transport) {
                hdr.ipv4.setInvalid();
                hdr.udp.setInvalid();
                hdr.gtpu.setInvalid();
                hdr.gtpu_options.setInvalid();
                hdr.gtpu_psc.setInvalid();
            }
            if (md.path == PATH_JUNCTION) {
                hdr.inner_ipv4.setInvalid();
                hdr.inner_udp.setInvalid();
                if (md.junction_kind == JK_DATA) {
                    hdr.junction.setInvalid();
                }
            }

            // (The isValid()s are what the parser guarantees on this path; they tell p4c so.)
            if (md.path == PATH_GTPU_ECHO && hdr.ipv4.isValid() && hdr.udp.isValid() &&
                    hdr.gtpu.isValid() && hdr.gtpu_options.isValid()) {
                ipv4_addr_t requester = hdr.ipv4.src_addr;
                hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                hdr.ipv4.dst_addr = requester;
                hdr.ipv4.dscp = 0;
                hdr.ipv4.ecn = 0;
                hdr.ipv4.identification = 0;
                hdr.ipv4.flags = 0;
                hdr.ipv4.frag_offset = 0;
                hdr.ipv4.ttl = DEFAULT_IPV4_TTL;
                hdr.ipv4.total_len = hdr.ipv4.total_len + GTPU_RECOVERY_BYTES;
                hdr.udp.dst_port = hdr.udp.src_port;
                hdr.udp.src_port = GTPU_UDP_PORT;
                hdr.udp.len = hdr.udp.len + GTPU_RECOVERY_BYTES;
                hdr.udp.checksum = 0;
                hdr.gtpu.msg_type = GTPU_ECHO_RESPONSE;
                hdr.gtpu.msg_len = hdr.gtpu.msg_len + GTPU_RECOVERY_BYTES;
                hdr.gtpu.teid = 0;
                hdr.gtpu_options.n_pdu_num = 0;
                hdr.gtpu_options.next_ext = 0;
                hdr.gtpu_recovery.setValid();
                hdr.gtpu_recovery.ie_type = GTPU_IE_RECOVERY;
                hdr.gtpu_recovery.restart_counter = 0;
            }

            // The bytes after the Junction header, when one is added or kept.
            bit<16> body_len = md.user_len;
            if (md.reply) {
                // md.reply is set for a PROBE only, which has a valid Junction header: p4c's
                // "potentially invalid hdr.junction" warning here is safe.
                hdr.junction.msg_type = JUNCTION_PROBE_REPLY;
                hdr.junction.seq = 0;  // a new message: seq, loss and reserved are sent as 0
                hdr.junction_ctl.loss_pct = 0;
                hdr.junction_ctl.reserved = 0;
                hdr.junction_ctl.upf_ts = md.now_us;
                body_len = JUNCTION_CTL_BYTES;
            } else if (md.encap_kind == ENCAP_JUNCTION || md.encap_kind == ENCAP_JUNCTION_GTPU) {
                hdr.enc_junction.setValid();
                hdr.enc_junction.msg_type = JUNCTION_DATA;
                hdr.enc_junction.marks = 0;
                hdr.enc_junction.proto = PROTO_IPV4;
                hdr.enc_junction.len = md.user_len;
                hdr.enc_junction.seq = md.seq;
            }

            // Length of what GTP-U carries: the Junction transport, or the user packet.
            bit<16> gtpu_payload_len = md.user_len;
            if (md.encap_kind == ENCAP_JUNCTION || md.encap_kind == ENCAP_JUNCTION_GTPU) {
                hdr.tun_ipv4.setValid();
                hdr.tun_ipv4.version = 4;
                hdr.tun_ipv4.ihl = IPV4_MIN_IHL;
                hdr.tun_ipv4.dscp = 0;
                hdr.tun_ipv4.ecn = 0;
                hdr.tun_ipv4.total_len = IPV4_HDR_BYTES + UDP_HDR_BYTES + JUNCTION_HDR_BYTES + body_len;
                hdr.tun_ipv4.identification = 0;
                hdr.tun_ipv4.flags = 0;
                hdr.tun_ipv4.frag_offset = 0;
                hdr.tun_ipv4.ttl = DEFAULT_IPV4_TTL;
                hdr.tun_ipv4.protocol = PROTO_UDP;
                hdr.tun_ipv4.hdr_checksum = 0;
                hdr.tun_ipv4.src_addr = md.junction_addr;
                hdr.tun_ipv4.dst_addr = md.junction_dst;
                hdr.tun_udp.setValid();
                hdr.tun_udp.src_port = JUNCTION_UDP_PORT;
                hdr.tun_udp.dst_port = JUNCTION_UDP_PORT;
                hdr.tun_udp.len = UDP_HDR_BYTES + JUNCTION_HDR_BYTES + body_len;
                hdr.tun_udp.checksum = 0;
                gtpu_payload_len = hdr.tun_ipv4.total_len;
            }

            if (md.encap_kind == ENCAP_JUNCTION_GTPU || md.encap_kind == ENCAP_GTPU) {
                hdr.enc_ipv4.setValid();
                hdr.enc_ipv4.version = 4;
                hdr.enc_ipv4.ihl = IPV4_MIN_IHL;
                hdr.enc_ipv4.dscp = 0;
                hdr.enc_ipv4.ecn = 0;
                hdr.enc_ipv4.total_len = IPV4_HDR_BYTES + UDP_HDR_BYTES + GTPU_HDR_BYTES + gtpu_payload_len;
                hdr.enc_ipv4.identification = 0;
                hdr.enc_ipv4.flags = 0;
                hdr.enc_ipv4.frag_offset = 0;
                hdr.enc_ipv4.ttl = DEFAULT_IPV4_TTL;
                hdr.enc_ipv4.protocol = PROTO_UDP;
                hdr.enc_ipv4.hdr_checksum = 0;
                hdr.enc_ipv4.src_addr = md.n3_addr;
                hdr.enc_ipv4.dst_addr = md.peer_addr;
                hdr.enc_udp.setValid();
                hdr.enc_udp.src_port = GTPU_UDP_PORT;
                hdr.enc_udp.dst_port = GTPU_UDP_PORT;
                hdr.enc_udp.len = UDP_HDR_BYTES + GTPU_HDR_BYTES + gtpu_payload_len;
                hdr.enc_udp.checksum = 0;
                hdr.enc_gtpu.setValid();
                hdr.enc_gtpu.version = GTP_V1;
                hdr.enc_gtpu.pt = GTP_PT_GTP;
                hdr.enc_gtpu.spare = 0;
                hdr.enc_gtpu.ex_flag = 0;
                hdr.enc_gtpu.seq_flag = 0;
                hdr.enc_gtpu.npdu_flag = 0;
                hdr.enc_gtpu.msg_type = GTPU_GPDU;
                hdr.enc_gtpu.msg_len = gtpu_payload_len;
                hdr.enc_gtpu.teid = md.teid;
            }

            hdr.ethernet.src_addr = md.src_mac;
            hdr.ethernet.dst_addr = md.dst_mac;
        }
    }
}

#endif  // JUNCTION_CONTROL_ENCAP_P4
