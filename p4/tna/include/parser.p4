// JUNCTION-UPF, TNA build: parsers and deparsers of both pipes.
//
// Packet's way:
//   ingress parser: intrinsic + port metadata; from the CPU port, packet_out and
//     nothing more, or with to_ingress the frame after it; from the recirculation port, the internal header (the second
//     copy of a redundant packet continues into the frame, timers and queue-free
//     notices stop there); everything else goes to the shared JunctionParser.
//   ingress deparser: mirror headers, the probe_reports digest, the checksums of
//     the IPv4 headers ingress rewrote, bridged metadata, then the headers.
//   egress parser: bridged metadata and Ethernet (ordinary packets: nothing else
//     is parsed), or one of the mirror headers.
//   egress deparser: the queue-free mirror, the checksums of the IPv4 headers
//     Encap added, then the internal header, or Ethernet and the added headers.

#ifndef JUNCTION_TNA_PARSER_P4
#define JUNCTION_TNA_PARSER_P4

// p4c warns that md (md.lmd.now_us among others) and hdr.packet_out may be
// uninitialized here: safe. Metadata starts at zero (@pa_auto_init_metadata on
// the ingress control), and a header no state extracts is invalid, as later
// stages expect.
parser JunctionTnaIngressParser(packet_in packet,
                                out headers_t hdr,
                                out tna_ingress_metadata_t md,
                                out ingress_intrinsic_metadata_t ig_intr_md) {
    JunctionParser() frame_parser;

    state start {
        packet.extract(ig_intr_md);
        packet.advance(PORT_METADATA_SIZE);
        md.bridged.setValid();
        md.bridged.bmd_type = BMD_BRIDGED;
        md.bridged.drop = 0;
        md.bridged.qid = 0;
        md.bridged.user_idx = 0;
        transition select(ig_intr_md.ingress_port) {
            TNA_CPU_PORT: parse_packet_out;
            TNA_RECIRC_PORT: parse_internal;
            default: parse_frame;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition select(hdr.packet_out.to_ingress) {
            1: parse_frame;  // as a frame from the CPU port
            default: packet_out_done;
        }
    }

    state packet_out_done {
        md.lmd.done = true;  // sent as it came (PacketOut)
        transition accept;
    }

    // A reorder timer or queue-free notice is not a frame: only ReorderQueue and
    // Verdict look at it.
    state parse_internal {
        packet.extract(hdr.internal);
        transition select(hdr.internal.kind) {
            INTERNAL_REDUNDANT: parse_redundant_copy;
            default: internal_notice;
        }
    }

    state internal_notice {
        md.lmd.path = PATH_INTERNAL;
        md.lmd.done = true;
        transition accept;
    }

    state parse_redundant_copy {
        md.lmd.redundant_copy = true;
        md.lmd.forced_access = hdr.internal.access;
        md.lmd.forced_seq = hdr.internal.value;
        md.lmd.skip_ttl = true;  // the first pass decremented it already
        transition parse_frame;
    }

    state parse_frame {
        frame_parser.apply(packet, hdr, md.lmd);
        transition accept;
    }
}

control JunctionTnaIngressDeparser(packet_out packet,
                                   inout headers_t hdr,
                                   in tna_ingress_metadata_t md,
                                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    Checksum() inner_ipv4_checksum;
    Checksum() user_ipv4_checksum;
    Mirror() mirror;

    @name(".probe_reports") @id(0x17416723)
    Digest<probe_report_t>() probe_reports;

    apply {
        if (ig_dprsr_md.mirror_type == MIRROR_TYPE_REDUNDANT) {
            mirror.emit<redundant_mirror_h>(md.mirror_session, {
                md.mirror_bmd_type,
                md.lmd.forced_access,
                md.lmd.seq
            });
        } else if (ig_dprsr_md.mirror_type == MIRROR_TYPE_TIMER) {
            mirror.emit<timer_mirror_h>(md.mirror_session, {
                md.mirror_bmd_type,
                md.reorder_target[15:7],
                md.reorder_target[6:0],
                md.lmd.epoch,
                0,
                md.lmd.user_idx,
                md.reorder_deadline
            });
        }

        if (ig_dprsr_md.digest_type == DIGEST_TYPE_PROBE_REPORT) {
            probe_reports.pack({
                md.lmd.session_addr,
                md.lmd.user_idx,
                md.lmd.report_access,
                md.lmd.report_kind,
                md.lmd.report_rtt,
                md.lmd.report_loss,
                md.lmd.report_suspended
            });
        }

        // Only headers the pipeline wrote or whose TTL it decremented get a checksum; the
        // rest (a punted frame, headers inside a routed packet) go as they came.
        if (md.lmd.csum_ipv4) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr
            });
        }
        if (md.lmd.csum_inner_ipv4) {
            hdr.inner_ipv4.hdr_checksum = inner_ipv4_checksum.update({
                hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp, hdr.inner_ipv4.ecn,
                hdr.inner_ipv4.total_len, hdr.inner_ipv4.identification, hdr.inner_ipv4.flags,
                hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl, hdr.inner_ipv4.protocol,
                hdr.inner_ipv4.src_addr, hdr.inner_ipv4.dst_addr
            });
        }
        if (md.lmd.csum_user_ipv4) {
            hdr.user_ipv4.hdr_checksum = user_ipv4_checksum.update({
                hdr.user_ipv4.version, hdr.user_ipv4.ihl, hdr.user_ipv4.dscp, hdr.user_ipv4.ecn,
                hdr.user_ipv4.total_len, hdr.user_ipv4.identification, hdr.user_ipv4.flags,
                hdr.user_ipv4.frag_offset, hdr.user_ipv4.ttl, hdr.user_ipv4.protocol,
                hdr.user_ipv4.src_addr, hdr.user_ipv4.dst_addr
            });
        }

        packet.emit(md.bridged);
        packet.emit(hdr);
    }
}

parser JunctionTnaEgressParser(packet_in packet,
                               out egress_headers_t hdr,
                               out tna_egress_metadata_t eg_md,
                               out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        packet.extract(eg_intr_md);
        eg_md.mirror_session = 0;
        eg_md.mirror_bmd_type = 0;
        eg_md.qid = 0;
        eg_md.user_idx = 0;
        eg_md.ue_addr = 0;
        eg_md.has_user_ipv4 = false;
        eg_md.flow_uplink = 0;
        eg_md.remote_addr = 0;
        eg_md.proto = 0;
        eg_md.remote_port = 0;
        eg_md.local_port = 0;
        transition select(packet.lookahead<bit<8>>()) {
            BMD_BRIDGED: parse_bridged;
            BMD_MIRROR_REDUNDANT: parse_redundant;
            BMD_MIRROR_TIMER: parse_timer;
            BMD_MIRROR_QUEUE_FREE: parse_queue_free;
            default: reject;
        }
    }

    // Encap adds its headers after Ethernet. (A packet-in or an internal packet has
    // no encapsulation: whatever its first 14 bytes are goes out as it came.) The
    // user packet's IPv4 address after it is the MBR policer's key (its source on the
    // uplink, which ingress stripped of its transport; its destination on the
    // downlink, which Encap has not wrapped yet), read ahead: nothing more is extracted.
    state parse_bridged {
        packet.extract(eg_md.bridged);
        packet.extract(hdr.frame.ethernet);
        transition select(eg_md.bridged.drop, eg_md.bridged.reply, hdr.frame.ethernet.ether_type) {
            (0, 0, ETHERTYPE_IPV4): user_ipv4;
            default: accept;
        }
    }

    // encap_kind in a state of its own: one select on it and the three fields above needs
    // more than the parser's four 8-bit match registers.
    state user_ipv4 {
        transition select(eg_md.bridged.encap_kind) {
            0: uplink_ue_addr;
            default: downlink_ue_addr;
        }
    }

    // The IPv4 source is bytes 12-15, the destination 16-19; the protocol byte 9, the
    // fragment offset the low 13 bits of bytes 6-7; a first fragment of UDP or TCP has its
    // ports in bytes 20-23 (ingress forwards no IPv4 header with options).
    state uplink_ue_addr {
        eg_md.ue_addr = packet.lookahead<bit<128>>()[31:0];
        eg_md.remote_addr = packet.lookahead<bit<160>>()[31:0];
        eg_md.proto = packet.lookahead<bit<80>>()[7:0];
        eg_md.flow_uplink = 1;
        eg_md.has_user_ipv4 = true;
        transition select(packet.lookahead<bit<80>>()[28:0]) {
            (29w17 &&& 29w0x1fff00ff): uplink_ports;  // first fragment, UDP
            (29w6 &&& 29w0x1fff00ff): uplink_ports;   // first fragment, TCP
            default: accept;
        }
    }

    state uplink_ports {
        eg_md.local_port = packet.lookahead<bit<176>>()[15:0];
        eg_md.remote_port = packet.lookahead<bit<192>>()[15:0];
        transition accept;
    }

    state downlink_ue_addr {
        eg_md.ue_addr = packet.lookahead<bit<160>>()[31:0];
        eg_md.remote_addr = packet.lookahead<bit<128>>()[31:0];
        eg_md.proto = packet.lookahead<bit<80>>()[7:0];
        eg_md.has_user_ipv4 = true;
        transition select(packet.lookahead<bit<80>>()[28:0]) {
            (29w17 &&& 29w0x1fff00ff): downlink_ports;
            (29w6 &&& 29w0x1fff00ff): downlink_ports;
            default: accept;
        }
    }

    state downlink_ports {
        eg_md.remote_port = packet.lookahead<bit<176>>()[15:0];
        eg_md.local_port = packet.lookahead<bit<192>>()[15:0];
        transition accept;
    }

    // The mirrored copy of a redundant packet is the packet as ingress left it,
    // before egress encapsulated the first copy: only the internal header goes in
    // front of it.
    state parse_redundant {
        packet.extract(hdr.redundant_md);
        transition accept;
    }

    state parse_timer {
        packet.extract(hdr.timer_md);
        transition accept;
    }

    state parse_queue_free {
        packet.extract(hdr.queue_free_md);
        transition accept;
    }
}

control JunctionTnaEgressDeparser(packet_out packet,
                                  inout egress_headers_t hdr,
                                  in tna_egress_metadata_t eg_md,
                                  in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror() mirror;
    Checksum() enc_ipv4_checksum;
    Checksum() tun_ipv4_checksum;

    apply {
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_QUEUE_FREE) {
            mirror.emit<queue_free_mirror_h>(eg_md.mirror_session, {
                eg_md.mirror_bmd_type,
                0,
                eg_md.qid,
                eg_md.user_idx
            });
        }
        if (hdr.frame.enc_ipv4.isValid()) {
            hdr.frame.enc_ipv4.hdr_checksum = enc_ipv4_checksum.update({
                hdr.frame.enc_ipv4.version, hdr.frame.enc_ipv4.ihl, hdr.frame.enc_ipv4.dscp,
                hdr.frame.enc_ipv4.ecn, hdr.frame.enc_ipv4.total_len,
                hdr.frame.enc_ipv4.identification, hdr.frame.enc_ipv4.flags,
                hdr.frame.enc_ipv4.frag_offset, hdr.frame.enc_ipv4.ttl, hdr.frame.enc_ipv4.protocol,
                hdr.frame.enc_ipv4.src_addr, hdr.frame.enc_ipv4.dst_addr
            });
        }
        if (hdr.frame.tun_ipv4.isValid()) {
            hdr.frame.tun_ipv4.hdr_checksum = tun_ipv4_checksum.update({
                hdr.frame.tun_ipv4.version, hdr.frame.tun_ipv4.ihl, hdr.frame.tun_ipv4.dscp,
                hdr.frame.tun_ipv4.ecn, hdr.frame.tun_ipv4.total_len,
                hdr.frame.tun_ipv4.identification, hdr.frame.tun_ipv4.flags,
                hdr.frame.tun_ipv4.frag_offset, hdr.frame.tun_ipv4.ttl, hdr.frame.tun_ipv4.protocol,
                hdr.frame.tun_ipv4.src_addr, hdr.frame.tun_ipv4.dst_addr
            });
        }
        packet.emit(hdr.frame);
    }
}

#endif  // JUNCTION_TNA_PARSER_P4
