// JUNCTION-UPF for v1model (BMv2 simple_switch_grpc).
//
// The top level only wires controls together; what each step does is in the
// control's file. Packet's way through ingress:
//   parse -> packet-out (to_ingress: on as a frame from the CPU port)? -> Lengths -> Uplink (PARSER_ERROR? local? GTP-U TEID?)
//   -> JunctionCheck -> UserPacket -> Sessions -> Applications
//   -> DownlinkTunnels (buffer_downlink: packet-in) -> SessionSeq -> Probes -> PathState -> Steering
//   -> Reorder -> Tunnels -> Filter -> Routing -> Encap -> packet-in?
//   -> Verdict (drops and usage counters, held packets, redundant clone)
// Egress recirculates held packets and redundant clones; nothing else.
//
// Build: hack/p4-build.sh (p4c-bm2-ss from hack/tools.sh p4tools; see p4/README.md)

#include <core.p4>
// register<T, I> and counter<I> (typed indexes) exist in v1model.p4 only from this version on;
// without it p4c's v1model.p4 declares the older, untyped externs and rejects this program.
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "../include/define.p4"
#include "../include/size.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "include/define.p4"
#include "include/parser.p4"

#include "../include/control/lengths.p4"
#include "../include/control/uplink.p4"
#include "../include/control/junction.p4"
#include "../include/control/user_packet.p4"
#include "../include/control/sessions.p4"
#include "../include/control/applications.p4"
#include "../include/control/downlink_tunnels.p4"
#include "../include/control/probes.p4"
#include "../include/control/steering.p4"
#include "../include/control/tunnels.p4"
#include "../include/control/filter.p4"
#include "../include/control/routing.p4"
#include "../include/control/drop_reasons.p4"
#include "../include/control/encap.p4"
#include "../include/control/mbr.p4"
#include "../include/control/qos_flows.p4"
#include "include/control/packetio.p4"
#include "include/control/session_seq.p4"
#include "include/control/path_state.p4"
#include "include/control/reorder.p4"
#include "include/control/verdict.p4"

control JunctionV1modelIngress(inout headers_t hdr,
                               inout local_metadata_t md,
                               inout standard_metadata_t standard_metadata) {
    PacketOut() from_controller;  // not packet_out: that is the core.p4 extern
    Lengths() lengths;
    Uplink() uplink;
    JunctionCheck() junction_check;
    UserPacket() user_packet;
    Sessions() sessions;
    Applications() applications;
    DownlinkTunnels() downlink_tunnels;
    SessionSeq() session_seq;
    Probes() probes;
    PathState() path_state;
    Steering() steering;
    Reorder() reorder;
    Tunnels() tunnels;
    Filter() filter;
    Routing() routing;
    DropReasons() drop_reasons;
    Rewrite() rewrite;
    Encap() encap;
    PacketIn() to_controller;  // not packet_in: that is the core.p4 extern
    Verdict() verdict;

    apply {
        // BMv2 stamps a packet on arrival only: a recirculated one keeps no ingress time,
        // so a held packet brings the time egress saw on its last pass.
        time_us_t now_us = (time_us_t)standard_metadata.ingress_global_timestamp;
        if (md.reorder_held) {
            now_us = md.reorder_now;
        }
        md.now_us = now_us;  // BMv2 starts every pass with the rest at zero
        if (standard_metadata.parser_error != error.NoError) {
            md.malformed = true;  // Uplink decides whether that is a PARSER_ERROR
        }
        from_controller.apply(hdr, md, standard_metadata);
        // The frame's length bounds the outer IPv4 of a frame from a port or a to_ingress
        // packet-out (less its packet_out header); a packet back from the loop was checked
        // on its first pass.
        bit<16> frame_len = 0;
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            if (standard_metadata.ingress_port != V1MODEL_CPU_PORT) {
                frame_len = (bit<16>)standard_metadata.packet_length;
            } else if (md.to_ingress) {
                frame_len = (bit<16>)standard_metadata.packet_length - PACKET_OUT_BYTES;
            }
        }
        lengths.apply(hdr, md, frame_len);
        uplink.apply(hdr, md);
        junction_check.apply(hdr, md);
        user_packet.apply(hdr, md);
        sessions.apply(hdr, md);
        applications.apply(md);
        downlink_tunnels.apply(md);
        session_seq.apply(md);
        probes.apply(hdr, md);
        path_state.apply(md);
        steering.apply(md);
        // A packet that filters, TTL or routes drop never starts or joins a hold (the
        // software UPF's order, docs/pipeline.md "Uplink reorder contract").
        tunnels.apply(hdr, md);
        filter.apply(hdr, md);
        routing.apply(hdr, md);
        drop_reasons.apply(md);
        reorder.apply(md);
        rewrite.apply(hdr, md);
        encap.apply(hdr, md, hdr.ipv4.total_len, 0);
        to_controller.apply(hdr, md, standard_metadata);
        verdict.apply(hdr, md, standard_metadata);
    }
}

control JunctionV1modelEgress(inout headers_t hdr,
                              inout local_metadata_t md,
                              inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            // Second copy of a redundant packet: back to ingress for the other access.
            recirculate_preserving_field_list(FIELD_LIST_REDUNDANT);
        } else if (md.reorder_hold) {
            // Held for reorder: once more round the loop.
            md.reorder_now = (time_us_t)standard_metadata.egress_global_timestamp;
            recirculate_preserving_field_list(FIELD_LIST_REORDER);
        }
    }
}

V1Switch(JunctionV1modelParser(),
         JunctionVerifyChecksum(),
         JunctionV1modelIngress(),
         JunctionV1modelEgress(),
         JunctionComputeChecksum(),
         JunctionV1modelDeparser()) main;
