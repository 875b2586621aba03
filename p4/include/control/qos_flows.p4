// JUNCTION-UPF: which QoS flow of its PDU session a user packet is in, when the SMF gave the
// session more than its own (qos_flows).
//
// A PDU session has one QoS flow by default: its QFI (tunnel_qfis) and its MBR (mbr_sessions).
// An SMF may put part of its traffic in QoS flows of their own, each with SDF filters, a QFI and
// an MBR (free5GC does for a subscriber's flow rules). Each such flow has an entry per
// direction, keyed by the session's UE address and the user packet as seen from the UE: the
// remote end is the server (a downlink packet's source, an uplink one's destination). The entry
// gives the flow's QFI, written into the PDU Session Container of the downlink G-PDU in place
// of the session's (v1model in Verdict, TNA in Encap), and the cell of uplink_flow_mbr /
// downlink_flow_mbr the packet meets before the session's MBR policer. A GBR flow (gbr 1) is
// outside its session's MBR, the Session-AMBR (TS 23.501 §5.7.2.6): its packets meet its own
// policer only. A miss is the session's own flow. Entries of this ternary/range table need a
// priority: the SDF filter's precedence.
//
// The key comes in as parameters because the targets read it in different places: v1model in
// Verdict from the parsed user packet, TNA in egress from what its parser looked ahead at.

#ifndef JUNCTION_CONTROL_QOS_FLOWS_P4
#define JUNCTION_CONTROL_QOS_FLOWS_P4

control QoSFlows(in ipv4_addr_t ue_addr, in bit<1> uplink, in ipv4_addr_t remote_addr,
                 in ip_proto_t proto, in l4_port_t remote_port, in l4_port_t local_port,
                 out bool hit, out qfi_t qfi, out qos_flow_idx_t cell, out bool gbr_flow) {

    @name(".set_qos_flow") @id(0x0100001A)
    action set_qos_flow(qfi_t flow_qfi, qos_flow_idx_t flow_idx, bit<1> gbr) {
        hit = true;
        qfi = flow_qfi;
        cell = flow_idx;
        gbr_flow = gbr == 1;
    }

    @name(".no_qos_flow") @id(0x0100001B)
    action no_qos_flow() {
        hit = false;
        qfi = 0;
        cell = 0;
        gbr_flow = false;
    }

    // On Tofino 2 in egress stage 9, beside tunnel_qfis and before Encap, which writes the
    // flow's QFI (docs/tofino.md, "QoS flows on Tofino 2").
    @name(".qos_flows") @id(0x0200000D) TNA_STAGE(9)
    table qos_flows {
        key = {
            ue_addr     : exact   @name("ue_addr");
            uplink      : exact   @name("uplink");
            remote_addr : ternary @name("remote_addr");
            proto       : ternary @name("proto");
            remote_port : range   @name("remote_port");
            local_port  : range   @name("local_port");
        }
        actions = {
            set_qos_flow;
            @defaultonly no_qos_flow;
        }
        const default_action = no_qos_flow();
        size = MAX_QOS_FLOWS;
    }

    apply {
        qos_flows.apply();
    }
}

#endif  // JUNCTION_CONTROL_QOS_FLOWS_P4
