// JUNCTION-UPF, v1model: which QoS flow of its PDU session a user packet is in, when the SMF
// gave the session more than its own (qos_flows).
//
// A PDU session has one QoS flow by default: its QFI (tunnel_qfis) and its MBR (mbr_sessions).
// An SMF may put part of its traffic in QoS flows of their own, each with SDF filters, a QFI and
// an MBR (free5GC does for a subscriber's flow rules). Each such flow has an entry per
// direction, keyed by the session's UE address and the user packet as seen from the UE: the
// remote end is the server (a downlink packet's source, an uplink one's destination). The entry
// gives the flow's QFI, which Verdict writes into the PDU Session Container of the downlink
// G-PDU in place of the session's, and the cell of uplink_flow_mbr / downlink_flow_mbr the
// packet meets before the session's MBR policer. A GBR flow (gbr 1) is outside its session's
// MBR, the Session-AMBR (TS 23.501 §5.7.2.6): its packets meet its own policer only. A miss is
// the session's own flow. Entries of this ternary/range table need a priority: the SDF filter's
// precedence.

#ifndef JUNCTION_V1MODEL_QOS_FLOWS_P4
#define JUNCTION_V1MODEL_QOS_FLOWS_P4

control QoSFlows(in local_metadata_t md, in bool uplink, in ipv4_addr_t ue_addr,
                 out bool hit, out qfi_t qfi, out qos_flow_idx_t cell, out bool gbr_flow) {

    ipv4_addr_t remote_addr = md.user_src;
    l4_port_t remote_port = md.user_sport;
    l4_port_t local_port = md.user_dport;
    bit<1> direction = 0;

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

    @name(".qos_flows") @id(0x0200000D)
    table qos_flows {
        key = {
            ue_addr       : exact   @name("ue_addr");
            direction     : exact   @name("uplink");
            remote_addr   : ternary @name("remote_addr");
            md.user_proto : ternary @name("proto");
            remote_port   : range   @name("remote_port");
            local_port    : range   @name("local_port");
        }
        actions = {
            set_qos_flow;
            @defaultonly no_qos_flow;
        }
        const default_action = no_qos_flow();
        size = MAX_QOS_FLOWS;
    }

    apply {
        if (uplink) {
            direction = 1;
            remote_addr = md.user_dst;
            remote_port = md.user_dport;
            local_port = md.user_sport;
        }
        qos_flows.apply();
    }
}

#endif  // JUNCTION_V1MODEL_QOS_FLOWS_P4
