// JUNCTION-UPF, TNA build: parsers and deparsers of both pipes.
//
// Packet's way:
//   ingress parser: intrinsic + port metadata; from the CPU port, packet_out and
//     nothing more; from the recirculation port, the internal header (the second
//     copy of a redundant packet continues into the frame, timers and queue-free
//     notices stop there); everything else goes to the shared JunctionParser.
//   ingress deparser: mirror headers, the probe_reports digest, IPv4 checksums,
//     bridged metadata, then the headers.
//   egress parser: bridged metadata (ordinary packets: nothing else is parsed),
//     or one of the mirror headers; a redundant mirror copy is parsed down to the
//     user packet so that egress can strip the first copy's encapsulation.
//   egress deparser: the queue-free mirror, then the internal header if any.

#ifndef JUNCTION_TNA_PARSER_P4
#define JUNCTION_TNA_PARSER_P4

// p4c warns that md (md.lmd.now_us among others) and hdr.packet_out may be
// uninitialized here: safe. Tofino's parser zeroes the metadata it does not write,
// MetadataInit sets every per-pass field first thing in ingress, and a header no
// state extracts is invalid, as later stages expect.
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
        md.lmd.malformed = false;
        md.lmd.malformed_user = false;
        md.lmd.unsound = false;
        md.lmd.reorder_held = false;
        md.lmd.reorder_since = 0;
        md.lmd.reorder_ticket = 0;
        md.lmd.reorder_rounds = 0;
        md.lmd.reorder_now = 0;
        md.lmd.redundant_copy = false;
        md.lmd.forced_access = ACCESS_NONE;
        md.lmd.forced_seq = 0;
        md.lmd.skip_ttl = false;
        transition select(ig_intr_md.ingress_port) {
            TNA_CPU_PORT: parse_packet_out;
            TNA_RECIRC_PORT: parse_internal;
            default: parse_frame;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition accept;
    }

    state parse_internal {
        packet.extract(hdr.internal);
        transition select(hdr.internal.kind) {
            INTERNAL_REDUNDANT: parse_redundant_copy;
            default: accept;
        }
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
    Checksum() enc_ipv4_checksum;
    Checksum() tun_ipv4_checksum;
    Checksum() ipv4_checksum;
    Checksum() inner_ipv4_checksum;
    Checksum() user_ipv4_checksum;
    Mirror() mirror;

    @name(".probe_reports") @id(0x17416723)
    Digest<probe_report_t>() probe_reports;

    apply {
        if (ig_dprsr_md.mirror_type == MIRROR_TYPE_REDUNDANT) {
            mirror.emit<redundant_mirror_h>(md.mirror_session, {
                BMD_MIRROR_REDUNDANT,
                md.lmd.forced_access,
                md.lmd.encap_kind,
                md.lmd.seq
            });
        } else if (ig_dprsr_md.mirror_type == MIRROR_TYPE_TIMER) {
            mirror.emit<timer_mirror_h>(md.mirror_session, {
                BMD_MIRROR_TIMER,
                md.lmd.epoch,
                md.reorder_qid,
                0,
                md.lmd.egress_port,
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

        if (hdr.enc_ipv4.isValid()) {
            hdr.enc_ipv4.hdr_checksum = enc_ipv4_checksum.update({
                hdr.enc_ipv4.version, hdr.enc_ipv4.ihl, hdr.enc_ipv4.dscp, hdr.enc_ipv4.ecn,
                hdr.enc_ipv4.total_len, hdr.enc_ipv4.identification, hdr.enc_ipv4.flags,
                hdr.enc_ipv4.frag_offset, hdr.enc_ipv4.ttl, hdr.enc_ipv4.protocol,
                hdr.enc_ipv4.src_addr, hdr.enc_ipv4.dst_addr
            });
        }
        if (hdr.tun_ipv4.isValid()) {
            hdr.tun_ipv4.hdr_checksum = tun_ipv4_checksum.update({
                hdr.tun_ipv4.version, hdr.tun_ipv4.ihl, hdr.tun_ipv4.dscp, hdr.tun_ipv4.ecn,
                hdr.tun_ipv4.total_len, hdr.tun_ipv4.identification, hdr.tun_ipv4.flags,
                hdr.tun_ipv4.frag_offset, hdr.tun_ipv4.ttl, hdr.tun_ipv4.protocol,
                hdr.tun_ipv4.src_addr, hdr.tun_ipv4.dst_addr
            });
        }
        // Only headers the pipeline wrote or whose TTL it decremented get a checksum; the
        // rest (a punted frame, headers inside a routed packet) go as they came.
        if (hdr.ipv4.isValid() && (md.lmd.path == PATH_DOWNLINK || md.lmd.path == PATH_GTPU_ECHO)) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr
            });
        }
        if (hdr.inner_ipv4.isValid() && md.lmd.path == PATH_GTPU_UPLINK) {
            hdr.inner_ipv4.hdr_checksum = inner_ipv4_checksum.update({
                hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp, hdr.inner_ipv4.ecn,
                hdr.inner_ipv4.total_len, hdr.inner_ipv4.identification, hdr.inner_ipv4.flags,
                hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl, hdr.inner_ipv4.protocol,
                hdr.inner_ipv4.src_addr, hdr.inner_ipv4.dst_addr
            });
        }
        if (hdr.user_ipv4.isValid() && md.lmd.path == PATH_JUNCTION) {
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
        eg_md.qid = 0;
        eg_md.user_idx = 0;
        transition select(packet.lookahead<bit<8>>()) {
            BMD_BRIDGED: parse_bridged;
            BMD_MIRROR_REDUNDANT: parse_redundant;
            BMD_MIRROR_TIMER: parse_timer;
            BMD_MIRROR_QUEUE_FREE: parse_queue_free;
            default: reject;
        }
    }

    state parse_bridged {
        packet.extract(eg_md.bridged);
        transition accept;
    }

    state parse_redundant {
        packet.extract(hdr.redundant_md);
        packet.extract(hdr.ethernet);
        transition select(hdr.redundant_md.encap_kind) {
            ENCAP_JUNCTION_GTPU: parse_redundant_gtpu;
            ENCAP_JUNCTION: parse_redundant_junction;
            default: accept;
        }
    }

    state parse_redundant_gtpu {
        packet.extract(hdr.enc_ipv4);
        packet.extract(hdr.enc_udp);
        packet.extract(hdr.enc_gtpu);
        transition parse_redundant_junction;
    }

    state parse_redundant_junction {
        packet.extract(hdr.tun_ipv4);
        packet.extract(hdr.tun_udp);
        packet.extract(hdr.enc_junction);
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

    apply {
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_QUEUE_FREE) {
            mirror.emit<queue_free_mirror_h>(eg_md.mirror_session, {
                BMD_MIRROR_QUEUE_FREE,
                0,
                eg_md.qid,
                eg_md.user_idx
            });
        }
        packet.emit(hdr);
    }
}

#endif  // JUNCTION_TNA_PARSER_P4
