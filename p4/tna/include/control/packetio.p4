// JUNCTION-UPF, TNA build: P4Runtime packet I/O.
//
// Packet's way: a frame from the CPU port carries packet_out and is sent
// unchanged on packet_out.egress_port (PacketOut, first); one whose egress_port
// is the CPU port is dropped (PacketIn, docs/pipeline.md), as one to a port the
// target does not have is. (Tested in PacketIn, near the end: stage 0 has no
// gateway to spare, and a test there costs the pipeline two more stages.) With
// to_ingress the frame after packet_out is processed as one from the CPU port:
// PacketOut sets the port all the same (no test in stage 0, for the same
// reason), and Verdict or PacketIn set the packet's own. A frame the pipeline
// punts (buffer_downlink's too) goes to the CPU port with packet_in naming the
// port it arrived on (PacketIn, last), and so does a packet routed to the CPU
// port, as the routes made it.

#ifndef JUNCTION_TNA_PACKETIO_P4
#define JUNCTION_TNA_PACKETIO_P4

control PacketOut(inout headers_t hdr, inout local_metadata_t md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    apply {
        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();  // (the parser set md.done)
        }
    }
}

control PacketIn(inout headers_t hdr, in local_metadata_t md,
                 in ingress_intrinsic_metadata_t ig_intr_md,
                 inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                 inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        // _pad apart from the port: one instruction cannot write a constant and a port
        // that the parser left split across two containers.
        hdr.packet_in._pad = 0;
        bool routed_to_cpu = !md.done && md.egress_port == TNA_CPU_PORT;
        if ((md.punt || routed_to_cpu) && md.drop_reason == DROP_NONE) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = ig_intr_md.ingress_port;
            ig_tm_md.ucast_egress_port = TNA_CPU_PORT;
        } else if (md.done && ig_tm_md.ucast_egress_port == TNA_CPU_PORT) {
            ig_dprsr_md.drop_ctl = 1;  // a packet-out to the CPU port
        }
    }
}

#endif  // JUNCTION_TNA_PACKETIO_P4
