// JUNCTION-UPF for TNA (Intel Tofino 2, t2na.p4).
//
// The top level only wires controls together; what each step does is in the
// control's file. The shared controls (../include/control) are the same as in
// the v1model build; the stateful ones are Tofino's own (RegisterAction).
// Packet's way through ingress:
//   parse -> internal packet (reorder timer / queue-free)? -> packet-out?
//   -> Lengths -> Uplink (PARSER_ERROR? local? GTP-U TEID?) -> JunctionCheck -> UserPacket -> Sessions
//   -> Applications -> DownlinkTunnels -> SessionSeq -> Probes -> PathState
//   -> Steering -> Reorder -> Tunnels -> Filter -> Routing -> Encap
//   -> ReorderQueue (pause / resume queues, timers) -> packet-in?
//   -> Verdict (drops counter, port, redundant mirror)
// Egress: see include/control/egress.p4.
//
// Build: bf-p4c --target tofino2 --arch t2na -I p4 p4/tna/junction_upf.p4 (see p4/README.md)

#include <core.p4>
#include <t2na.p4>

#include "../include/define.p4"
#include "../include/size.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "include/define.p4"
#include "include/header.p4"
#include "include/parser.p4"

#include "../include/control/metadata_init.p4"
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
#include "../include/control/encap.p4"
#include "include/control/packetio.p4"
#include "include/control/session_seq.p4"
#include "include/control/path_state.p4"
#include "include/control/reorder.p4"
#include "include/control/reorder_queue.p4"
#include "include/control/verdict.p4"
#include "include/control/egress.p4"

control JunctionTnaIngress(inout headers_t hdr,
                           inout tna_ingress_metadata_t md,
                           in ingress_intrinsic_metadata_t ig_intr_md,
                           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    MetadataInit() metadata_init;
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
    Encap() encap;
    ReorderQueue() reorder_queue;
    PacketIn() to_controller;  // not packet_in: that is the core.p4 extern
    Verdict() verdict;

    apply {
        // ingress_mac_tstamp is in ns; >> 10 is the contract's microsecond clock.
        metadata_init.apply(md.lmd, (time_us_t)(ig_intr_md.ingress_mac_tstamp >> 10));
        md.mirror_session = 0;
        if (ig_prsr_md.parser_err != 0) {
            md.lmd.malformed = true;  // Uplink decides whether that is a PARSER_ERROR
        }
        if (hdr.internal.isValid() && !md.lmd.malformed) {
            if (hdr.internal.kind == INTERNAL_REDUNDANT) {
                hdr.internal.setInvalid();  // second copy: an ordinary downlink packet now
            } else {
                md.lmd.path = PATH_INTERNAL;
                md.lmd.done = true;
            }
        }
        from_controller.apply(hdr, md.lmd, ig_tm_md);
        lengths.apply(hdr, md.lmd, 0);  // Tofino's ingress does not know the frame's length
        uplink.apply(hdr, md.lmd);
        junction_check.apply(hdr, md.lmd);
        user_packet.apply(hdr, md.lmd);
        sessions.apply(hdr, md.lmd);
        applications.apply(md.lmd);
        downlink_tunnels.apply(md.lmd);
        session_seq.apply(md.lmd);
        probes.apply(hdr, md.lmd);
        path_state.apply(md.lmd, ig_dprsr_md);
        steering.apply(md.lmd);
        // A packet that filters, TTL or routes drop never arms a hold it is not queued for
        // (docs/pipeline.md "Uplink reorder contract").
        tunnels.apply(hdr, md.lmd);
        filter.apply(hdr, md.lmd);
        routing.apply(md.lmd);
        reorder.apply(hdr, md);
        encap.apply(hdr, md.lmd);
        reorder_queue.apply(hdr, md, ig_dprsr_md, ig_tm_md);
        to_controller.apply(hdr, md.lmd, ig_intr_md, ig_tm_md);
        verdict.apply(md, ig_dprsr_md, ig_tm_md);
    }
}

control JunctionTnaEgress(inout egress_headers_t hdr,
                          inout tna_egress_metadata_t eg_md,
                          in egress_intrinsic_metadata_t eg_intr_md,
                          in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                          inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                          inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    JunctionTnaEgressPipe() egress_pipe;

    apply {
        egress_pipe.apply(hdr, eg_md, eg_intr_md, eg_dprsr_md);
    }
}

Pipeline(JunctionTnaIngressParser(),
         JunctionTnaIngress(),
         JunctionTnaIngressDeparser(),
         JunctionTnaEgressParser(),
         JunctionTnaEgress(),
         JunctionTnaEgressDeparser()) pipe;

Switch(pipe) main;
