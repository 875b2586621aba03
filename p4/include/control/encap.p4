// JUNCTION-UPF: header rewrite, the last step before the packet is queued
// (Rewrite) and the headers added in front of it (Encap). Decide nothing; apply
// what the earlier controls decided.
//
// Packet's way:
//   uplink (plain GTP-U)    strip IPv4/UDP/GTP-U           -> Ethernet/user IPv4
//   uplink (Junction DATA)  strip [IPv4/UDP/GTP-U/]IPv4/UDP/Junction
//   PROBE                   strip the transport, Junction becomes PROBE_REPLY with
//                           upf_ts = now_us; Encap adds the Junction transport
//   downlink                Encap adds Junction (DATA, proto 4, seq) and its transport
//   downlink_tunnels        Encap adds IPv4/UDP:2152/GTP-U
//   buffer_downlink         to the controller as it came: the TTL Filter took, back
//   (every GTP-U Encap adds carries a PDU Session Container with the QFI tunnel_qfis
//   gives its tunnel: TS 29.281 §5.2.2.7 asks it of every downlink G-PDU on N3, and
//   TS 29.244 has the UPF mark the QFI its SMF gave; no entry, no container)
//   GTP-U Echo Request      becomes the Echo Response in place (TS 29.281 §7.2.2):
//                           addresses swapped, back to the request's UDP source
//                           port from 2152, its sequence number, TEID 0, and a
//                           Recovery IE (restart counter 0) in front of its IEs
// Added headers: IPv4 TTL 64, identification 0, no flags (checksum by the
// deparser, as for the user packet's IPv4 whose TTL Filter decremented and the
// Echo Response's: csum_*); UDP with checksum 0 and source port = destination port; GTP-U
// flags 0x30, type 0xFF, length = bytes after the 8-byte GTP-U header; with a QFI,
// flags 0x34 (E), sequence 0, N-PDU 0, next type 0x85, and the container: length 1,
// PDU type 0 (downlink), no flags, the QFI, next type 0.
// (Routing writes the Ethernet addresses.)
//
// v1model applies both in ingress. TNA applies Encap in egress, on the
// parameters ingress bridges (bridged_md_t): egress has the stages to spare, and
// a redundant packet's mirrored copy leaves ingress without the first copy's
// transport.

#ifndef JUNCTION_CONTROL_ENCAP_P4
#define JUNCTION_CONTROL_ENCAP_P4

control Rewrite(inout headers_t hdr, inout local_metadata_t md) {
    apply {
        // buffer_downlink: the frame goes up as it came, so Filter's TTL decrement is given
        // back. (Filter skipping it instead, on the flag downlink_tunnels sets, made bf-p4c
        // 9.13.4 fail: "No valid block for PHV container".)
        if (md.punt && md.path == PATH_DOWNLINK && !md.checks.ttl_expired) {
            hdr.ipv4.ttl = hdr.ipv4.ttl + 1;
        }
        if (!md.done && !md.punt) {  // a punted frame goes to the controller as it came
            if (md.path == PATH_DOWNLINK || md.path == PATH_GTPU_ECHO) {
                md.csum_ipv4 = hdr.ipv4.isValid();
            } else if (md.path == PATH_GTPU_UPLINK) {
                md.csum_inner_ipv4 = hdr.inner_ipv4.isValid();
            } else if (md.path == PATH_JUNCTION) {
                md.csum_user_ipv4 = hdr.user_ipv4.isValid();
            }

            if (md.path == PATH_GTPU_UPLINK || md.path == PATH_JUNCTION) {
                hdr.ipv4.setInvalid();
                hdr.udp.setInvalid();
                hdr.gtpu.setInvalid();
                hdr.gtpu_options.setInvalid();
                hdr.gtpu_psc.setInvalid();
            }
            if (md.path == PATH_JUNCTION) {
                hdr.inner_ipv4.setInvalid();
                hdr.inner_udp.setInvalid();
                if (hdr.user_ipv4.isValid()) {
                    hdr.junction.setInvalid();  // DATA: the user packet goes on alone
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

            if (md.reply) {
                // md.reply is set for a PROBE only, which has a valid Junction header: p4c's
                // "potentially invalid hdr.junction" warning here is safe.
                hdr.junction.msg_type = JUNCTION_PROBE_REPLY;
                hdr.junction.seq = 0;  // a new message: seq, loss, share and reserved are sent as 0
                hdr.junction_ctl.loss_pct = 0;
                hdr.junction_ctl.share = 0;
                hdr.junction_ctl.reserved = 0;
                hdr.junction_ctl.upf_ts = md.now_us;
            }
        }
    }
}

// user_len is the downlink user packet's length (its IPv4 total length), for the
// lengths of the headers added around it. The TNA build passes a copy made by the
// hash unit, which keeps the added lengths apart from the parsed ones in the PHV.
// flow_qfi is the QoS flow's QFI (qos_flows) in place of the tunnel's, 0 for the tunnel's: the
// TNA build looks the flow up in egress before Encap; v1model passes 0 and writes it in Verdict.
control Encap(inout headers_t hdr, in local_metadata_t md, in bit<16> user_len, in qfi_t flow_qfi) {
    // The QoS flow of the tunnel the packet goes into, 0 for none (tunnel_qfis).
    qfi_t tunnel_qfi = 0;

    @name(".set_qfi") @id(0x01000015)
    action set_qfi(qfi_t qfi) {
        tunnel_qfi = qfi;
    }

    @name(".no_qfi") @id(0x01000016)
    action no_qfi() {
        tunnel_qfi = 0;
    }

    // A GTP-U tunnel's QFI, by the tunnel: the peer (gNB or access gateway) and the TEID it
    // gave, which Tunnels has chosen by then (md.peer_addr, md.teid). Looked up here, by the
    // encapsulation, rather than carried from sessions: on Tofino 2 the ingress has no stage to
    // spare for one more field, and egress has.
    @name(".tunnel_qfis") @id(0x0200000B) TNA_STAGE(9)
    table tunnel_qfis {
        key = {
            md.peer_addr : exact @name("peer_addr");
            md.teid      : exact @name("teid");
        }
        actions = {
            set_qfi;
            @defaultonly no_qfi;
        }
        const default_action = no_qfi();
        size = MAX_TUNNEL_QFIS;
    }

    // The Junction header of a data packet (a reply has its own already).
    @hidden action junction_header() {
        hdr.enc_junction.setValid();
        hdr.enc_junction.msg_type = JUNCTION_DATA;
        hdr.enc_junction.marks = 0;
        hdr.enc_junction.proto = PROTO_IPV4;
        hdr.enc_junction.len = user_len;
        hdr.enc_junction.seq = md.seq;
    }

    // Every added length is the user packet's or the probe body's plus a constant:
    // one field and one constant each, which is what one instruction computes (a
    // length computed from another computed length would take a stage more, and
    // tie more fields together in the PHV).
    @hidden action junction_transport(bit<16> ip_len, bit<16> udp_len) {
        hdr.tun_ipv4.setValid();
        hdr.tun_ipv4.version = 4;
        hdr.tun_ipv4.ihl = IPV4_MIN_IHL;
        hdr.tun_ipv4.dscp = 0;
        hdr.tun_ipv4.ecn = 0;
        hdr.tun_ipv4.total_len = ip_len;
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
        hdr.tun_udp.len = udp_len;
        hdr.tun_udp.checksum = 0;
    }

    @hidden action gtpu_transport(bit<16> ip_len, bit<16> udp_len, bit<16> msg_len) {
        hdr.enc_ipv4.setValid();
        hdr.enc_ipv4.version = 4;
        hdr.enc_ipv4.ihl = IPV4_MIN_IHL;
        hdr.enc_ipv4.dscp = 0;
        hdr.enc_ipv4.ecn = 0;
        hdr.enc_ipv4.total_len = ip_len;
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
        hdr.enc_udp.len = udp_len;
        hdr.enc_udp.checksum = 0;
        hdr.enc_gtpu.setValid();
        hdr.enc_gtpu.version = GTP_V1;
        hdr.enc_gtpu.pt = GTP_PT_GTP;
        hdr.enc_gtpu.spare = 0;
        hdr.enc_gtpu.ex_flag = 0;
        hdr.enc_gtpu.seq_flag = 0;
        hdr.enc_gtpu.npdu_flag = 0;
        hdr.enc_gtpu.msg_type = GTPU_GPDU;
        hdr.enc_gtpu.msg_len = msg_len;
        hdr.enc_gtpu.teid = md.teid;
    }

    // The DL PDU Session Container after gtpu_transport's header, whose lengths already
    // count its GTPU_DL_PSC_BYTES.
    @hidden action pdu_session_container() {
        hdr.enc_gtpu.ex_flag = 1;
        hdr.enc_gtpu_options.setValid();
        hdr.enc_gtpu_options.seq_num = 0;
        hdr.enc_gtpu_options.n_pdu_num = 0;
        hdr.enc_gtpu_options.next_ext = GTPU_NEXT_EXT_PSC;
        hdr.enc_gtpu_psc.setValid();
        hdr.enc_gtpu_psc.len = GTPU_PSC_LEN;
        hdr.enc_gtpu_psc.content = (bit<16>)tunnel_qfi;  // PDU type 0, no PPP/RQI, the QFI
        hdr.enc_gtpu_psc.next_ext = GTPU_NEXT_EXT_NONE;
    }

    // The same with the QoS flow's QFI (a tunnel with a QFI of its own only).
    @hidden action pdu_session_container_flow() {
        hdr.enc_gtpu.ex_flag = 1;
        hdr.enc_gtpu_options.setValid();
        hdr.enc_gtpu_options.seq_num = 0;
        hdr.enc_gtpu_options.n_pdu_num = 0;
        hdr.enc_gtpu_options.next_ext = GTPU_NEXT_EXT_PSC;
        hdr.enc_gtpu_psc.setValid();
        hdr.enc_gtpu_psc.len = GTPU_PSC_LEN;
        hdr.enc_gtpu_psc.content = (bit<16>)flow_qfi;
        hdr.enc_gtpu_psc.next_ext = GTPU_NEXT_EXT_NONE;
    }

    @hidden @name("encap_none")
    action none() {}

    // One action per kind of encapsulation, a data packet's or a reply's.
    @hidden @name("encap_junction_data")
    action junction_data() {
        junction_header();
        junction_transport(user_len + JUNCTION_TRANSPORT_BYTES,
                           user_len + (UDP_HDR_BYTES + JUNCTION_HDR_BYTES));
    }
    @hidden @name("encap_junction_reply")
    action junction_reply() {
        junction_transport(JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES,
                           UDP_HDR_BYTES + JUNCTION_HDR_BYTES + JUNCTION_CTL_BYTES);
    }
    // GTP-U carries the Junction transport around the user packet or the reply.
    @hidden @name("encap_junction_gtpu_data")
    action junction_gtpu_data() {
        junction_data();
        gtpu_transport(user_len + (GTPU_TRANSPORT_BYTES + JUNCTION_TRANSPORT_BYTES),
                       user_len + (UDP_HDR_BYTES + GTPU_HDR_BYTES + JUNCTION_TRANSPORT_BYTES),
                       user_len + JUNCTION_TRANSPORT_BYTES);
    }
    @hidden @name("encap_junction_gtpu_reply")
    action junction_gtpu_reply() {
        junction_reply();
        gtpu_transport(GTPU_TRANSPORT_BYTES + JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES,
                       UDP_HDR_BYTES + GTPU_HDR_BYTES + JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES,
                       JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES);
    }
    // GTP-U carries the user packet.
    @hidden @name("encap_gtpu")
    action gtpu() {
        gtpu_transport(user_len + GTPU_TRANSPORT_BYTES,
                       user_len + (UDP_HDR_BYTES + GTPU_HDR_BYTES),
                       user_len);
    }
    // The same three with the PDU Session Container.
    @hidden @name("encap_junction_gtpu_data_qfi")
    action junction_gtpu_data_qfi() {
        junction_data();
        gtpu_transport(user_len + (GTPU_TRANSPORT_BYTES + GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES),
                       user_len + (UDP_HDR_BYTES + GTPU_HDR_BYTES + GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES),
                       user_len + (GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES));
        pdu_session_container();
    }
    @hidden @name("encap_junction_gtpu_reply_qfi")
    action junction_gtpu_reply_qfi() {
        junction_reply();
        gtpu_transport(GTPU_TRANSPORT_BYTES + GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES,
                       UDP_HDR_BYTES + GTPU_HDR_BYTES + GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES,
                       GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES + JUNCTION_CTL_BYTES);
        pdu_session_container();
    }
    @hidden @name("encap_gtpu_qfi")
    action gtpu_qfi() {
        gtpu_transport(user_len + (GTPU_TRANSPORT_BYTES + GTPU_DL_PSC_BYTES),
                       user_len + (UDP_HDR_BYTES + GTPU_HDR_BYTES + GTPU_DL_PSC_BYTES),
                       user_len + GTPU_DL_PSC_BYTES);
        pdu_session_container();
    }

    // The data ones with the QoS flow's QFI.
    @hidden @name("encap_junction_gtpu_data_flow_qfi")
    action junction_gtpu_data_flow_qfi() {
        junction_data();
        gtpu_transport(user_len + (GTPU_TRANSPORT_BYTES + GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES),
                       user_len + (UDP_HDR_BYTES + GTPU_HDR_BYTES + GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES),
                       user_len + (GTPU_DL_PSC_BYTES + JUNCTION_TRANSPORT_BYTES));
        pdu_session_container_flow();
    }
    @hidden @name("encap_gtpu_flow_qfi")
    action gtpu_flow_qfi() {
        gtpu_transport(user_len + (GTPU_TRANSPORT_BYTES + GTPU_DL_PSC_BYTES),
                       user_len + (UDP_HDR_BYTES + GTPU_HDR_BYTES + GTPU_DL_PSC_BYTES),
                       user_len + GTPU_DL_PSC_BYTES);
        pdu_session_container_flow();
    }

    // A table of constant entries rather than nested ifs: on Tofino each branch of an if
    // is a table, and a stage holds 16 (ingress and egress together). Of two entries
    // that match, the first listed wins (a QFI of 0 before any QFI).
    @hidden @name("encaps") TNA_STAGE(10)
    table encaps {
        key = {
            md.encap_kind : exact;
            md.reply      : exact;
            tunnel_qfi    : ternary;
            flow_qfi      : ternary;
        }
        actions = {
            junction_data;
            junction_reply;
            junction_gtpu_data;
            junction_gtpu_reply;
            gtpu;
            junction_gtpu_data_qfi;
            junction_gtpu_reply_qfi;
            gtpu_qfi;
            junction_gtpu_data_flow_qfi;
            gtpu_flow_qfi;
            @defaultonly none;
        }
        const default_action = none();  // ENCAP_NONE
        const entries = {
            (ENCAP_JUNCTION, false, _, _) : junction_data();
            (ENCAP_JUNCTION, true, _, _) : junction_reply();
            (ENCAP_JUNCTION_GTPU, false, 0, _) : junction_gtpu_data();
            (ENCAP_JUNCTION_GTPU, true, 0, _) : junction_gtpu_reply();
            (ENCAP_GTPU, false, 0, _) : gtpu();
            (ENCAP_GTPU, true, 0, _) : gtpu();
            (ENCAP_JUNCTION_GTPU, false, _, 0) : junction_gtpu_data_qfi();
            (ENCAP_JUNCTION_GTPU, true, _, _) : junction_gtpu_reply_qfi();
            (ENCAP_GTPU, false, _, 0) : gtpu_qfi();
            (ENCAP_GTPU, true, _, _) : gtpu_qfi();
            (ENCAP_JUNCTION_GTPU, false, _, _) : junction_gtpu_data_flow_qfi();
            (ENCAP_GTPU, false, _, _) : gtpu_flow_qfi();
        }
    }

    apply {
        if (md.encap_kind == ENCAP_GTPU || md.encap_kind == ENCAP_JUNCTION_GTPU) {
            tunnel_qfis.apply();
        }
        encaps.apply();
    }
}

#endif  // JUNCTION_CONTROL_ENCAP_P4
