// JUNCTION-UPF, TNA build: bridged metadata, mirror headers and the metadata
// that only the Tofino program needs. Wire headers and local_metadata_t are
// shared (../../include/header.p4).

#ifndef JUNCTION_TNA_HEADER_P4
#define JUNCTION_TNA_HEADER_P4

// Ingress -> egress, in front of every packet the ingress pipe queues.
header bridged_md_t {
    bit<8>       bmd_type;  // BMD_BRIDGED
    bit<1>       drop;      // dropped in egress (after ingress sent its AFC message)
    bit<7>       qid;       // reorder queue the packet was held in, 0 if none
    user_idx_t   user_idx;
    // What Encap, in egress, adds (../../include/control/encap.p4).
    encap_kind_t encap_kind;
    bit<7>       _pad;
    bit<1>       reply;
    bit<16>      user_len;
    seq_t        seq;
    teid_t       teid;
    ipv4_addr_t  n3_addr;
    ipv4_addr_t  junction_addr;
    ipv4_addr_t  peer_addr;
    ipv4_addr_t  junction_dst;
}

// I2E mirror: the second copy of a redundant downlink packet.
header redundant_mirror_h {
    bit<8>       bmd_type;  // BMD_MIRROR_REDUNDANT
    access_t     access;    // the access the copy leaves on
    seq_t        seq;
}

// I2E mirror: the reorder timer of one hold.
header timer_mirror_h {
    bit<8>     bmd_type;    // BMD_MIRROR_TIMER
    PortId_t   port;
    bit<7>     qid;
    bit<1>     epoch;
    bit<7>     _pad;
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
    bit<8>           mirror_bmd_type;  // the mirror header's first byte (BMD_MIRROR_*)
    // Reorder (Reorder -> ReorderQueue).
    bit<8>           reorder_decision;
    bit<8>           timer_result;
    reorder_state_t  holding_e;     // "holding, epoch E" for this packet's epoch
    reorder_state_t  released_e;    // "released, epoch E"
    time_us_t        reorder_deadline;
    time_us_t        deadline_clock; // now_us again, for the deadline alone (junction_upf.p4)
    bit<1>           seq_bit6;       // SessionSeq -> PathState
    user_idx_t       queue_owner;   // user_idx + 1: 0 marks a free queue
    // The hold's egress port (15:7) and reorder queue (6:0, 0: none): what its timer
    // carries (timer_mirror_h).
    bit<16>          reorder_target;
}

struct egress_headers_t {
    redundant_mirror_h  redundant_md;
    timer_mirror_h      timer_md;
    queue_free_mirror_h queue_free_md;
    // What egress emits: the internal header of a packet it recirculates, or the
    // Ethernet header and the headers Encap adds after it (nothing else is parsed:
    // the rest of the frame follows as it came).
    headers_t           frame;
}

struct tna_egress_metadata_t {
    bridged_md_t     bridged;
    // The MBR policer's key, read by the parser ahead of Encap's headers (not extracted: the
    // user packet goes out as it came): the user packet's source on the uplink, its
    // destination on the downlink. has_user_ipv4 says the parser found one.
    ipv4_addr_t      ue_addr;
    bool             has_user_ipv4;
    // qos_flows' key beside ue_addr, read by the parser as ue_addr is: the user packet seen
    // from the UE (the remote end the server: an uplink packet's destination, a downlink
    // one's source), its ports when it is a first fragment of UDP or TCP (else 0).
    bit<1>           flow_uplink;
    ipv4_addr_t      remote_addr;
    ip_proto_t       proto;
    l4_port_t        remote_port;
    l4_port_t        local_port;
    qfi_t            flow_qfi;      // qos_flows -> Encap (0: the tunnel's QFI)
    local_metadata_t lmd;           // Encap's parameters, from bridged
    MirrorId_t       mirror_session;
    bit<8>           mirror_bmd_type;
    bit<7>           qid;
    user_idx_t       user_idx;
}

#endif  // JUNCTION_TNA_HEADER_P4
