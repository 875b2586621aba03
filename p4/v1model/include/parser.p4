// JUNCTION-UPF, v1model: parser preamble, checksums and deparser.
//
// Packet's way: a frame from the CPU port starts with packet_out; with
// to_ingress 0 nothing more is parsed (sent as it came), with to_ingress 1 the
// frame after it goes to the shared JunctionParser, as does every other frame.
// The test is on the port alone: BMv2 parses an I2E clone again from the bytes
// the packet came with (packet_out in front, for a to_ingress frame's redundant
// copy) with the ingress port set and the rest of the metadata, instance_type
// and the preserved fields included, left from an earlier packet
// (behavioral-model issue 795); a recirculated packet comes back with port 0,
// its packet_out gone (egress deparsed it without). Checksums are not
// verified (a UPF forwards what it gets); every IPv4 header the pipeline wrote
// or changed is given a fresh checksum.

#ifndef JUNCTION_V1MODEL_PARSER_P4
#define JUNCTION_V1MODEL_PARSER_P4

parser JunctionV1modelParser(packet_in packet,
                             out headers_t hdr,
                             inout local_metadata_t md,
                             inout standard_metadata_t standard_metadata) {
    JunctionParser() frame_parser;

    state start {
        transition select(standard_metadata.ingress_port) {
            V1MODEL_CPU_PORT: parse_packet_out;
            default: parse_frame;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition select(hdr.packet_out.to_ingress) {
            1: packet_out_to_ingress;
            default: packet_out_done;
        }
    }

    state packet_out_done {
        md.done = true;  // sent as it came (PacketOut)
        transition accept;
    }

    state packet_out_to_ingress {
        md.to_ingress = true;
        transition parse_frame;
    }

    // p4c warns hdr.packet_out "may be uninitialized" here: safe, an out header that no
    // state extracts is invalid, which is what every later stage expects.
    state parse_frame {
        frame_parser.apply(packet, hdr, md);
        transition accept;
    }
}

control JunctionVerifyChecksum(inout headers_t hdr, inout local_metadata_t md) {
    apply { }
}

control JunctionComputeChecksum(inout headers_t hdr, inout local_metadata_t md) {
    apply {
        update_checksum(hdr.enc_ipv4.isValid(), {
            hdr.enc_ipv4.version, hdr.enc_ipv4.ihl, hdr.enc_ipv4.dscp, hdr.enc_ipv4.ecn,
            hdr.enc_ipv4.total_len, hdr.enc_ipv4.identification, hdr.enc_ipv4.flags,
            hdr.enc_ipv4.frag_offset, hdr.enc_ipv4.ttl, hdr.enc_ipv4.protocol,
            hdr.enc_ipv4.src_addr, hdr.enc_ipv4.dst_addr
        }, hdr.enc_ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.tun_ipv4.isValid(), {
            hdr.tun_ipv4.version, hdr.tun_ipv4.ihl, hdr.tun_ipv4.dscp, hdr.tun_ipv4.ecn,
            hdr.tun_ipv4.total_len, hdr.tun_ipv4.identification, hdr.tun_ipv4.flags,
            hdr.tun_ipv4.frag_offset, hdr.tun_ipv4.ttl, hdr.tun_ipv4.protocol,
            hdr.tun_ipv4.src_addr, hdr.tun_ipv4.dst_addr
        }, hdr.tun_ipv4.hdr_checksum, HashAlgorithm.csum16);
        // Only headers the pipeline wrote or whose TTL it decremented get a checksum; the
        // rest (a punted frame, headers inside a routed packet) go as they came.
        update_checksum(md.csum_ipv4, {
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
            hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
            hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
            hdr.ipv4.src_addr, hdr.ipv4.dst_addr
        }, hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(md.csum_inner_ipv4, {
            hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp, hdr.inner_ipv4.ecn,
            hdr.inner_ipv4.total_len, hdr.inner_ipv4.identification, hdr.inner_ipv4.flags,
            hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl, hdr.inner_ipv4.protocol,
            hdr.inner_ipv4.src_addr, hdr.inner_ipv4.dst_addr
        }, hdr.inner_ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(md.csum_user_ipv4, {
            hdr.user_ipv4.version, hdr.user_ipv4.ihl, hdr.user_ipv4.dscp, hdr.user_ipv4.ecn,
            hdr.user_ipv4.total_len, hdr.user_ipv4.identification, hdr.user_ipv4.flags,
            hdr.user_ipv4.frag_offset, hdr.user_ipv4.ttl, hdr.user_ipv4.protocol,
            hdr.user_ipv4.src_addr, hdr.user_ipv4.dst_addr
        }, hdr.user_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control JunctionV1modelDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.enc_ipv4);
        packet.emit(hdr.enc_udp);
        packet.emit(hdr.enc_gtpu);
        packet.emit(hdr.enc_gtpu_options);
        packet.emit(hdr.enc_gtpu_psc);
        packet.emit(hdr.tun_ipv4);
        packet.emit(hdr.tun_udp);
        packet.emit(hdr.enc_junction);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.gtpu);
        packet.emit(hdr.gtpu_options);
        packet.emit(hdr.gtpu_recovery);
        packet.emit(hdr.gtpu_psc);
        packet.emit(hdr.inner_ipv4);
        packet.emit(hdr.inner_udp);
        packet.emit(hdr.inner_tcp);
        packet.emit(hdr.junction);
        packet.emit(hdr.junction_ctl);
        packet.emit(hdr.user_ipv4);
        packet.emit(hdr.user_ports);
    }
}

#endif  // JUNCTION_V1MODEL_PARSER_P4
