// JUNCTION-UPF, TNA: which QoS flow of its PDU session a user packet is in (qos_flows), the
// v1model table (../../../v1model/include/control/qos_flows.p4) in egress, keyed by what the
// egress parser reads of the user packet (eg_md: the UE address, the direction, and the
// remote address, protocol and ports as seen from the UE).

#ifndef JUNCTION_TNA_QOS_FLOWS_P4
#define JUNCTION_TNA_QOS_FLOWS_P4

typedef bit<32> qos_flow_idx_t;

#ifndef QOS_FLOWS_STAGE
#define QOS_FLOWS_STAGE 9
#endif

control QoSFlows(in tna_egress_metadata_t eg_md,
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

    @name(".qos_flows") @id(0x0200000D) TNA_STAGE(QOS_FLOWS_STAGE)
    table qos_flows {
        key = {
            eg_md.ue_addr     : exact   @name("ue_addr");
            eg_md.flow_uplink : exact   @name("uplink");
            eg_md.remote_addr : ternary @name("remote_addr");
            eg_md.proto       : ternary @name("proto");
            eg_md.remote_port : range   @name("remote_port");
            eg_md.local_port  : range   @name("local_port");
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

#endif  // JUNCTION_TNA_QOS_FLOWS_P4
