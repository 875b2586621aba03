// JUNCTION-UPF for TNA (Intel Tofino 2, t2na.p4).
//
// The top level only wires controls together; what each step does is in the
// control's file. The shared controls (../include/control) are the same as in
// the v1model build; the stateful ones are Tofino's own (RegisterAction).
// Packet's way through ingress:
//   parse -> internal packet (reorder timer / queue-free)? -> packet-out (to_ingress:
//   on as a frame from the CPU port)? -> Lengths -> Uplink (PARSER_ERROR? local? GTP-U TEID?)
//   -> JunctionCheck -> UserPacket -> Sessions -> Applications
//   -> DownlinkTunnels (buffer_downlink: packet-in) -> SessionSeq -> Probes -> PathState
//   -> Steering -> Tunnels -> Filter -> Routing -> DropReasons -> Reorder -> Rewrite
//   -> ReorderQueue (pause / resume queues, timers) -> packet-in?
//   -> Verdict (drops and usage counters, port, redundant mirror)
// Egress adds the encapsulation (Encap): see include/control/egress.p4.
//
// Build: hack/p4-build.sh (bf-p4c --target tofino2 --arch t2na, and the flags it says why).

#include <core.p4>
#include <t2na.p4>

// The Tofino 2 profile: the capacities of size.p4 that one pipe cannot hold at the
// paper's design point, at the largest tried that compiles (docs/tofino.md says what limits
// each). The P4Info says the same sizes; TestTNAP4InfoAgreesWithV1model reads them here.
// (-D on the command line still overrides them, to try other sizes.)
#ifndef MAX_USERS
#define MAX_USERS 65536
#endif
#ifndef MAX_SESSIONS
#define MAX_SESSIONS 84992
#endif
#ifndef MAX_SESSION_OVERRIDES
#define MAX_SESSION_OVERRIDES 28672
#endif
#ifndef MAX_UPLINK_TUNNELS
#define MAX_UPLINK_TUNNELS 65536
#endif
#ifndef MAX_USAGE_RECORDS
#define MAX_USAGE_RECORDS 32768
#endif
#ifndef MAX_TUNNEL_QFIS
#define MAX_TUNNEL_QFIS 131072
#endif
#ifndef MAX_QOS_FLOWS
#define MAX_QOS_FLOWS 2048
#endif

#include "../include/define.p4"
#include "../include/size.p4"
#include "../include/header.p4"
#include "../include/parser.p4"
#include "include/define.p4"
#include "include/header.p4"
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
#include "include/control/reorder_queue.p4"
#include "include/control/verdict.p4"
#include "include/control/egress.p4"

// Metadata starts each pass at zero, as on v1model: the compiler initialises
// what is read before it is written, and only that, so fields with disjoint lives
// can share PHV containers.
@pa_auto_init_metadata
// state_rtt lives from Probes to PathState's register writes; bf-p4c 9.13.4 (alt-phv-alloc)
// ended its allocation a stage before the last write (bfas: "No phv record").
@pa_no_overlay("ingress", "md.lmd.state_rtt")
control JunctionTnaIngress(inout headers_t hdr,
                           inout tna_ingress_metadata_t md,
                           in ingress_intrinsic_metadata_t ig_intr_md,
                           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
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
    ReorderQueue() reorder_queue;
    PacketIn() to_controller;  // not packet_in: that is the core.p4 extern
    Verdict() verdict;
    // ingress_mac_tstamp is in ns; bits 41..10 are the contract's microsecond clock
    // (docs/pipeline.md), taken out by the hash unit: an ALU cannot shift a 48-bit
    // field that the parser left across containers.
    Hash<time_us_t>(HashAlgorithm_t.IDENTITY) clock_us;
    // The same clock once more for Reorder's deadline: computed from now_us, the
    // deadline would join every time the pipeline computes (RTTs, timer ages) in one
    // PHV cluster, more than one container group holds.
    Hash<time_us_t>(HashAlgorithm_t.IDENTITY) deadline_clock_us;
    // The user packet's length for Encap (in egress), copied by the hash unit:
    // lengths computed from the parsed one would join every length the pipeline
    // checks in one PHV cluster, more than one container group holds.
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) user_len;

    apply {
        md.lmd.now_us = clock_us.get({ig_intr_md.ingress_mac_tstamp[41:10]});
        if (hdr.junction.isValid()) {  // (another action: one takes 32 bits of hash)
            md.deadline_clock = deadline_clock_us.get({ig_intr_md.ingress_mac_tstamp[41:10]});
        }
        md.mirror_session = 0;
        md.mirror_bmd_type = 0;
        if (ig_prsr_md.parser_err != 0) {
            md.lmd.malformed = true;  // Uplink decides whether that is a PARSER_ERROR
        }
        if (hdr.internal.isValid() && hdr.internal.kind == INTERNAL_REDUNDANT) {
            hdr.internal.setInvalid();  // second copy: an ordinary downlink packet now
        }
        from_controller.apply(hdr, md.lmd, ig_tm_md);
        lengths.apply(hdr, md.lmd, 0);  // Tofino's ingress does not know the frame's length
        uplink.apply(hdr, md.lmd);
        junction_check.apply(hdr, md.lmd);
        user_packet.apply(hdr, md.lmd);
        sessions.apply(hdr, md.lmd);
        applications.apply(md.lmd);
        downlink_tunnels.apply(md.lmd);
        // Probes before SessionSeq: both write seq_mod_128 (a PROBE_ACK's share, a downlink
        // packet's seq % 128), and SessionSeq comes late anyway; the other way round, Probes
        // waited for it and the pipeline needed 21 stages.
        probes.apply(hdr, md.lmd);
        session_seq.apply(md.lmd, md.seq_bit6);
        path_state.apply(hdr, md.lmd, md.seq_bit6, ig_dprsr_md);
        steering.apply(md.lmd);
        // A packet that filters, TTL or routes drop never arms a hold it is not queued for
        // (docs/pipeline.md "Uplink reorder contract").
        tunnels.apply(hdr, md.lmd);
        filter.apply(hdr, md.lmd);
        routing.apply(hdr, md.lmd);
        drop_reasons.apply(md.lmd);
        reorder.apply(hdr, md);
        rewrite.apply(hdr, md.lmd);
        // What egress's Encap adds, bridged to it.
        md.bridged.encap_kind = md.lmd.encap_kind;
        md.bridged.reply = (bit<1>)md.lmd.reply;
        md.bridged.user_len = user_len.get({hdr.ipv4.total_len});
        md.bridged.seq = md.lmd.seq;
        md.bridged.teid = md.lmd.teid;
        md.bridged.n3_addr = md.lmd.n3_addr;
        md.bridged.junction_addr = md.lmd.junction_addr;
        md.bridged.peer_addr = md.lmd.peer_addr;
        md.bridged.junction_dst = md.lmd.junction_dst;
        reorder_queue.apply(hdr, md, ig_dprsr_md, ig_tm_md);
        to_controller.apply(hdr, md.lmd, ig_intr_md, ig_tm_md, ig_dprsr_md);
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
