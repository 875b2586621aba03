// JUNCTION-UPF: types and constants shared by the v1model and TNA builds.
//
// Every value the control plane reads or writes has its own type, so that a
// table key, an action parameter or a register says what it carries. The
// encodings are the ones in docs/pipeline.md ("Encodings shared by every part")
// and docs/junction-header.md.

#ifndef JUNCTION_DEFINE_P4
#define JUNCTION_DEFINE_P4

// ---------------------------------------------------------------------------
// Domain types
// ---------------------------------------------------------------------------
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<32> session_addr_t;  // an MA PDU session's address: the session ID
typedef bit<16> l4_port_t;
typedef bit<8>  ip_proto_t;
typedef bit<6>  dscp_t;
typedef bit<9>  port_num_t;      // v1model egress_spec, TNA PortId_t
typedef bit<32> teid_t;
typedef bit<32> user_idx_t;      // 0..MAX_USERS-1, one per UE, shared by its sessions
typedef bit<8>  endpoint_idx_t;  // index into tunnel_endpoints (the UPF's own addresses)
typedef bit<16> peer_idx_t;      // index into tunnel_peers (gNB addresses)
typedef bit<6>  qfi_t;           // QoS Flow Identifier (TS 23.501 §5.7.1); 0: none to mark
typedef bit<16> app_id_t;
typedef bit<8>  steering_mode_t;
typedef bit<8>  access_t;
typedef bit<8>  ratio_t;         // share of packets on 3GPP, in 1/128 units (0..128)
typedef bit<32> rtt_us_t;        // microseconds; 0 in the path state means unavailable
typedef bit<8>  loss_pct_t;      // percent of a leg's probes lost, as the UE measured them
typedef bit<32> seq_index_t;     // index into session_seq
typedef bit<32> usage_idx_t;     // index into uplink_usage / downlink_usage, one per PDU session
typedef bit<32> qos_flow_idx_t;  // a QoS flow's cell of the flow meters and counters (qos_flows)
typedef bit<32> seq_t;
typedef bit<32> time_us_t;       // low 32 bits of a microsecond clock, compared modulo 2^32
typedef bit<8>  suspended_t;
typedef bit<8>  reorder_state_t;
typedef bit<8>  report_kind_t;
typedef bit<8>  drop_reason_t;
typedef bit<8>  path_t;
typedef bit<8>  junction_kind_t;
typedef bit<8>  encap_kind_t;
typedef bit<2>  ipv4_short_t;

// ---------------------------------------------------------------------------
// Protocol constants (specification values)
// ---------------------------------------------------------------------------
const bit<16>    ETHERTYPE_IPV4    = 0x0800;
const ip_proto_t PROTO_IPV4        = 4;    // IP-in-IP: the Junction header's proto for user packets
const ip_proto_t PROTO_TCP         = 6;
const ip_proto_t PROTO_UDP         = 17;
const bit<4>     IPV4_VERSION      = 4;
const bit<4>     IPV4_MIN_IHL      = 5;    // options are a parser error
const bit<8>     DEFAULT_IPV4_TTL  = 64;
const bit<16>    ETHERNET_HDR_BYTES = 14;
const bit<16>    IPV4_HDR_BYTES    = 20;
const bit<16>    UDP_HDR_BYTES     = 8;
const bit<16>    GTPU_HDR_BYTES    = 8;
const bit<16>    GTPU_OPTIONS_BYTES = 4;   // sequence number, N-PDU number, next extension type
const bit<16>    GTPU_PSC_BYTES    = 4;    // PDU Session Container
const bit<16>    GTPU_TRANSPORT_BYTES = IPV4_HDR_BYTES + UDP_HDR_BYTES + GTPU_HDR_BYTES;

const l4_port_t  GTPU_UDP_PORT     = 2152;
const bit<3>     GTP_V1            = 1;
const bit<1>     GTP_PT_GTP        = 1;
const bit<8>     GTPU_GPDU         = 0xFF;
const bit<8>     GTPU_ECHO_REQUEST = 0x01; // path management (TS 29.281 §7.2), answered by the UPF
const bit<8>     GTPU_ECHO_RESPONSE = 0x02;
const bit<8>     GTPU_END_MARKER   = 0xFE;  // the last packet of a tunnel (TS 29.281 §7.3.2): no T-PDU
const bit<8>     GTPU_IE_RECOVERY  = 14;   // the Echo Response's one mandatory IE
const bit<16>    GTPU_RECOVERY_BYTES = 2;  // type and restart counter (0: GTP-U ignores it)
const bit<8>     GTPU_NEXT_EXT_NONE = 0;
const bit<8>     GTPU_NEXT_EXT_PSC  = 0x85; // 5G PDU Session Container, the only extension accepted
const bit<8>     GTPU_PSC_LEN       = 1;    // in 4-byte units
// What downlink G-PDUs carry after the mandatory header when their tunnel has a QFI: the
// option bytes and the PDU Session Container (DL PDU SESSION INFORMATION, TS 38.415 §5.5.2.1).
const bit<16>    GTPU_DL_PSC_BYTES  = GTPU_OPTIONS_BYTES + GTPU_PSC_BYTES;

const l4_port_t  JUNCTION_UDP_PORT = 2153;
const bit<16>    JUNCTION_HDR_BYTES = 8;
const bit<16>    JUNCTION_CTL_BYTES = 16;
const bit<16>    JUNCTION_TRANSPORT_BYTES = IPV4_HDR_BYTES + UDP_HDR_BYTES + JUNCTION_HDR_BYTES;

// Junction header: type (high nibble of byte 0).
const bit<4> JUNCTION_DATA        = 0;
const bit<4> JUNCTION_PROBE       = 1;
const bit<4> JUNCTION_PROBE_REPLY = 2;
const bit<4> JUNCTION_PROBE_ACK   = 3;
const bit<4> JUNCTION_LINK_DOWN   = 4;
const bit<4> JUNCTION_LINK_UP     = 5;

// Junction header: marks (low nibble of byte 0).
const bit<4> MARK_EX_PATH      = 0x1;
const bit<4> MARK_CURRENT_PATH = 0x2;
const bit<4> MARK_EPOCH        = 0x4;
const bit<4> MARK_RESERVED     = 0x8;


// ---------------------------------------------------------------------------
// Encodings shared with the operator and the software UPF
// ---------------------------------------------------------------------------
const access_t ACCESS_NONE    = 0;
const access_t ACCESS_3GPP    = 1;
const access_t ACCESS_NON3GPP = 2;
// Not a leg: what forward_indirect tells Uplink's paths of a TEID (the pipeline's own; no table
// parameter carries it).
const access_t ACCESS_FORWARDING = 3;

const steering_mode_t MODE_ACTIVE_STANDBY        = 1;
const steering_mode_t MODE_SMALLEST_DELAY        = 2;
const steering_mode_t MODE_LOAD_BALANCE          = 3;
const steering_mode_t MODE_PRIORITY_BASED        = 4;
const steering_mode_t MODE_REDUNDANT             = 5;
const steering_mode_t MODE_AUTONOMOUS_LOAD_BALANCE = 6;

// Autonomous load balance's per-user 3GPP share (autonomous_share, ratio_t):
// the UE's, from its PROBE_ACKs (1..127); 0 is a share never set and reads as EVEN.
const ratio_t AUTONOMOUS_SHARE_EVEN = 64;

const report_kind_t REPORT_RTT       = 1;
const report_kind_t REPORT_LINK_DOWN = 2;
const report_kind_t REPORT_LINK_UP   = 3;

// Index into the drops counter.
const drop_reason_t DROP_NONE             = 0;
const drop_reason_t DROP_PARSER_ERROR     = 1;
const drop_reason_t DROP_UNKNOWN_TEID     = 2;
const drop_reason_t DROP_NO_SESSION       = 3;
const drop_reason_t DROP_NO_PATH          = 4;
const drop_reason_t DROP_NO_ROUTE         = 5;
const drop_reason_t DROP_FILTERED         = 6;
const drop_reason_t DROP_TTL_EXPIRED      = 7;
const drop_reason_t DROP_BAD_JUNCTION     = 8;
const drop_reason_t DROP_NO_TUNNEL_PEER   = 9;
const drop_reason_t DROP_NO_ENDPOINT      = 10;
// p4c warns DROP_COPY_FAILED unused: safe, the P4 program never counts it.
const drop_reason_t DROP_COPY_FAILED      = 11;  // software UPF only: no buffer for a
                                                 // redundant copy (a P4 target cannot see a
                                                 // missing clone session or a failed replication)
const drop_reason_t DROP_REORDER_OVERFLOW = 12;  // counted, not dropped
const drop_reason_t DROP_CONSUMED         = 13;  // ends in the UPF by design
const drop_reason_t DROP_WRONG_SOURCE     = 14;  // Junction from another address than the
                                                 // session's on the leg it came on

// reorder_state register bits (per user).
const reorder_state_t REORDER_HOLDING        = 0x01;
const reorder_state_t REORDER_HELD_EPOCH     = 0x02;
const reorder_state_t REORDER_RELEASED_VALID = 0x04;
const reorder_state_t REORDER_RELEASED_EPOCH = 0x08;
const reorder_state_t REORDER_HOLD_MASK      = 0x03;  // HOLDING | HELD_EPOCH
const reorder_state_t REORDER_RELEASE_MASK   = 0x0C;  // RELEASED_VALID | RELEASED_EPOCH

// Clone (v1model) / mirror (TNA) session that duplicates redundant traffic.
const bit<32> REDUNDANT_CLONE_SESSION = 100;

// ---------------------------------------------------------------------------
// Internal encodings (local metadata only, never seen by the control plane)
// ---------------------------------------------------------------------------
// The way a packet takes through the pipeline (0: none, a frame Uplink does not
// classify: a packet-out, a TNA internal notice).
const path_t PATH_DOWNLINK    = 1;  // IPv4 not addressed to the UPF
const path_t PATH_GTPU_UPLINK = 2;  // plain GTP-U G-PDU to a local address
const path_t PATH_JUNCTION    = 3;  // Junction to a local address (either leg)
const path_t PATH_PUNT        = 4;  // to the controller as packet-in
const path_t PATH_INTERNAL    = 5;  // TNA reorder timer / queue-free notices
                                    // (p4c warns it unused in the v1model build: safe)
const path_t PATH_GTPU_ECHO   = 6;  // GTP-U Echo Request to a local address: answered

// An IPv4 header's total length, as the parser classes it (ipv4_short_t).
const ipv4_short_t IPV4_LONG_ENOUGH = 0;  // 24 or more
const ipv4_short_t IPV4_NO_PORTS    = 1;  // 20..23: no room for TCP or UDP ports
const ipv4_short_t IPV4_NO_HEADER   = 2;  // below 20: not even its own header

// What a valid Junction message is (JunctionCheck; 0: not a valid one).
const junction_kind_t JK_DATA       = 1;
const junction_kind_t JK_MARKER     = 2;  // DATA with EX_PATH, no payload
const junction_kind_t JK_PROBE      = 3;
const junction_kind_t JK_PROBE_ACK  = 4;
const junction_kind_t JK_LINK_DOWN  = 5;
const junction_kind_t JK_LINK_UP    = 6;

// Headers added on the way out (0: none).
const encap_kind_t ENCAP_JUNCTION      = 1;  // IPv4/UDP:2153/Junction (non-3GPP leg)
const encap_kind_t ENCAP_JUNCTION_GTPU = 2;  // IPv4/UDP:2152/GTP-U/IPv4/UDP:2153/Junction (3GPP leg)
const encap_kind_t ENCAP_GTPU          = 3;  // IPv4/UDP:2152/GTP-U (single-access PDU session)

// The direction an MBR policer polices (mbr.p4), which is also its cell of mbr_drops.
const bit<1> MBR_UPLINK   = 0;
const bit<1> MBR_DOWNLINK = 1;

#endif  // JUNCTION_DEFINE_P4
