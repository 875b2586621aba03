// JUNCTION-UPF, v1model: P4Runtime packet I/O.
//
// Packet's way: a frame from the CPU port carries packet_out. With to_ingress 0
// it is sent unchanged on packet_out.egress_port, skipping the pipeline
// (PacketOut, first); one whose egress_port is the CPU port is dropped
// (docs/pipeline.md: it would come back without a packet_in header), as one to
// a port the target does not have is. With to_ingress 1 only the header goes:
// the frame after it is processed as one that arrived on the CPU port.
// A frame the pipeline punts (non-IPv4, addressed to the UPF but neither a
// GTP-U G-PDU nor Junction, or downlink that buffer_downlink holds) goes to the CPU port with packet_in naming the
// port it arrived on (PacketIn, last), and so does a packet routed to the CPU
// port, as the routes made it.

#ifndef JUNCTION_V1MODEL_PACKETIO_P4
#define JUNCTION_V1MODEL_PACKETIO_P4

control PacketOut(inout headers_t hdr, inout local_metadata_t md,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.to_ingress == 1) {
                // Into the pipeline: nothing to do here.
            } else if (hdr.packet_out.egress_port == V1MODEL_CPU_PORT) {
                mark_to_drop(standard_metadata);
            } else {
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
            }
            hdr.packet_out.setInvalid();  // (the parser set md.done, or not for to_ingress)
        }
    }
}

control PacketIn(inout headers_t hdr, in local_metadata_t md,
                 inout standard_metadata_t standard_metadata) {
    apply {
        bool routed_to_cpu = !md.done && md.egress_port == V1MODEL_CPU_PORT;  // not held
        if ((md.punt || routed_to_cpu) && md.drop_reason == DROP_NONE) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
            standard_metadata.egress_spec = V1MODEL_CPU_PORT;
        }
    }
}

#endif  // JUNCTION_V1MODEL_PACKETIO_P4
