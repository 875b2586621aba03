// JUNCTION-UPF, TNA build: bridged metadata, mirror headers and the metadata
// that only the Tofino program needs. Wire headers and local_metadata_t are
// shared (../../include/header.p4).

#ifndef JUNCTION_TNA_HEADER_P4
#define JUNCTION_TNA_HEADER_P4

// Ingress -> egress, in front of every packet the ingress pipe queues.
header bridged_md_t {
    bit<8>     bmd_type;    // BMD_BRIDGED
    bit<1>     drop;        // dropped in egress (after ingress sent its AFC message)
    bit<7>     qid;         // reorder queue the packet was held in, 0 if none
    user_idx_t user_idx;
}

// I2E mirror: the second copy of a redundant downlink packet.
header redundant_mirror_h {
    bit<8>       bmd_type;  // BMD_MIRROR_REDUNDANT
    access_t     access;    // the access the copy leaves on
    encap_kind_t encap_kind;
    seq_t        seq;
}

// I2E mirror: the reorder timer of one hold.
header timer_mirror_h {
    bit<8>     bmd_type;    // BMD_MIRROR_TIMER
    bit<1>     epoch;
    bit<7>     qid;
    bit<7>     _pad;
    PortId_t   port;
    user_idx_t user_idx;
    time_us_t  deadline;
}

// E2E mirror: a reorder queue ran empty after it was resumed.
header queue_free_mirror_h {
    bit<8>     bmd_type;    // BMD_MIRROR_QUEUE_FREE
    bit<1>     _pad;
    bit<7>     qid;
    user_idx_t user_idx;
}

struct tna_ingress_metadata_t {
    local_metadata_t lmd;
    bridged_md_t     bridged;
    MirrorId_t       mirror_session;
    // Reorder (Reorder -> ReorderQueue).
    bit<8>           reorder_decision;
    bit<8>           timer_result;
    bool             timer_expired;
    bool             queue_user_holding;
    reorder_state_t  holding_e;     // "holding, epoch E" for this packet's epoch
    reorder_state_t  released_e;    // "released, epoch E"
    time_us_t        reorder_deadline;
    user_idx_t       queue_owner;   // user_idx + 1: 0 marks a free queue
    bit<7>           reorder_qid;
}

struct egress_headers_t {
    redundant_mirror_h  redundant_md;
    timer_mirror_h      timer_md;
    queue_free_mirror_h queue_free_md;
    internal_t          internal;
    ethernet_t          ethernet;
    // The first copy's encapsulation, stripped from the redundant mirror copy.
    ipv4_t              enc_ipv4;
    udp_t               enc_udp;
    gtpu_t              enc_gtpu;
    ipv4_t              tun_ipv4;
    udp_t               tun_udp;
    junction_t          enc_junction;
}

struct tna_egress_metadata_t {
    bridged_md_t bridged;
    MirrorId_t   mirror_session;
    bit<7>       qid;
    user_idx_t   user_idx;
}

#endif  // JUNCTION_TNA_HEADER_P4
