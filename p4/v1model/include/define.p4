// JUNCTION-UPF, v1model build: target facts of BMv2 simple_switch_grpc.

#ifndef JUNCTION_V1MODEL_DEFINE_P4
#define JUNCTION_V1MODEL_DEFINE_P4

// The CPU port is a target fact: start simple_switch_grpc with --cpu-port 255.
#ifndef CPU_PORT
#define CPU_PORT 255
#endif
const port_num_t V1MODEL_CPU_PORT = CPU_PORT;

// The packet_out header's bytes, which BMv2 counts in packet_length.
const bit<16> PACKET_OUT_BYTES = 2;

// The smaller of two values; the TNA build's is Tofino's min instruction, which the
// shared controls compare fields with (a <= b is min_u32(a, b) == a).
bit<32> min_u32(in bit<32> a, in bit<32> b) {
    if (a <= b) {
        return a;
    }
    return b;
}
bit<16> min_u16(in bit<16> a, in bit<16> b) {
    if (a <= b) {
        return a;
    }
    return b;
}
bit<8> min_u8(in bit<8> a, in bit<8> b) {
    if (a <= b) {
        return a;
    }
    return b;
}

// standard_metadata.instance_type values of BMv2 simple_switch.
const bit<32> PKT_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;

// Field lists preserved across clone and recirculation (see @field_list in
// local_metadata_t).
const bit<8> FIELD_LIST_REORDER   = 1;
const bit<8> FIELD_LIST_REDUNDANT = 2;

// The MBR policer (Verdict): execute_meter's colour that it drops (v1model.p4: GREEN 0,
// YELLOW 1, RED 2).
const bit<2> METER_RED    = 2;

// Where a table goes: a Tofino placement (tna/include/define.p4), nothing here.
#define TNA_STAGE(n)

// digest() receiver; BMv2 forwards every digest to the P4Runtime server.
const bit<32> PROBE_REPORT_RECEIVER = 1;

#endif  // JUNCTION_V1MODEL_DEFINE_P4
