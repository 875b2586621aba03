// JUNCTION-UPF: packet headers and local metadata shared by both builds.
//
// The Junction header and its control body match docs/junction-header.md bit
// for bit (and internal/wire, the Go implementation).

#ifndef JUNCTION_HEADER_P4
#define JUNCTION_HEADER_P4

#include "define.p4"

// ---------------------------------------------------------------------------
// Controller headers (P4Runtime packet I/O)
// ---------------------------------------------------------------------------
@controller_header("packet_in")
@id(0x04000001)
header packet_in_header_t {
    port_num_t ingress_port;
    bit<7>     _pad;
}

// to_ingress 0: the frame after it leaves unchanged on egress_port; 1: it goes
// through the whole pipeline as a frame from the CPU port, egress_port ignored
// (a downlink packet the controller held, released: docs/pipeline.md).
@controller_header("packet_out")
@id(0x04000002)
header packet_out_header_t {
    port_num_t egress_port;
    bit<1>     to_ingress;
    bit<6>     _pad;
}

// ---------------------------------------------------------------------------
// Wire headers
// ---------------------------------------------------------------------------
header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    dscp_t      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    ip_proto_t  protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_t {
    l4_port_t src_port;
    l4_port_t dst_port;
    bit<16>   len;
    bit<16>   checksum;
}

// The first four bytes of TCP (or UDP): all that classification needs.
header l4_ports_t {
    l4_port_t src_port;
    l4_port_t dst_port;
}

// GTP-U (3GPP TS 29.281), mandatory part.
header gtpu_t {
    bit<3>  version;
    bit<1>  pt;
    bit<1>  spare;
    bit<1>  ex_flag;
    bit<1>  seq_flag;
    bit<1>  npdu_flag;
    bit<8>  msg_type;
    bit<16> msg_len;
    teid_t  teid;
}

// Present when any of E, S, PN is set.
header gtpu_options_t {
    bit<16> seq_num;
    bit<8>  n_pdu_num;
    bit<8>  next_ext;
}

// The Recovery IE an Echo Response carries (TS 29.281 §8.2).
header gtpu_recovery_t {
    bit<8> ie_type;
    bit<8> restart_counter;
}

// The 5G PDU Session Container (extension type 0x85, length 1 = 4 bytes),
// the one extension real gNBs send.
header gtpu_psc_t {
    bit<8>  len;
    bit<16> content;   // PDU type, flags, QFI
    bit<8>  next_ext;
}

// The Junction header (8 bytes after UDP port 2153).
header junction_t {
    bit<4>  msg_type;
    bit<4>  marks;
    bit<8>  proto;
    bit<16> len;
    bit<32> seq;
}

// The Junction control body (16 bytes) of PROBE, PROBE_REPLY, PROBE_ACK,
// LINK_DOWN and LINK_UP.
header junction_ctl_t {
    session_addr_t session_addr;
    access_t       access;
    loss_pct_t     loss_pct; // PROBE_ACK, LINK_UP: the UE's loss measured on that access
    bit<8>         share;    // PROBE_ACK: the UE's autonomous share in bits 6..0 (1..127; 0:
                             // none); bit 7 reserved
    bit<8>         reserved;
    bit<32>        ue_ts;   // probes: the UE clock; LINK_UP: rtt_us
    bit<32>        upf_ts;
}

// TNA only: prepended to packets the switch recirculates to itself (the second
// copy of a redundant packet, reorder timers, queue-free notices). Never leaves
// the switch; the v1model build carries the same facts in preserved metadata.
header internal_t {
    bit<8>     kind;
    access_t   access;
    port_num_t port;       // port and qid side by side: the AFC message's middle 16 bits
    bit<7>     qid;
    bit<1>     epoch;
    bit<7>     _pad0;
    user_idx_t user_idx;
    bit<32>    value;      // seq (redundant copy) or deadline in now_us (timer)
}

struct headers_t {
    packet_out_header_t packet_out;
    packet_in_header_t  packet_in;
    internal_t          internal;
    ethernet_t          ethernet;
    // Added on the way out, in this order.
    ipv4_t              enc_ipv4;      // to the gNB (3GPP leg)
    udp_t               enc_udp;
    gtpu_t              enc_gtpu;
    gtpu_options_t      enc_gtpu_options; // with the PDU Session Container, when the tunnel
    gtpu_psc_t          enc_gtpu_psc;     // has a QFI (tunnel_qfis)
    ipv4_t              tun_ipv4;      // Junction transport to the UE's leg address
    udp_t               tun_udp;
    junction_t          enc_junction;
    // As parsed, outermost first.
    ipv4_t              ipv4;
    udp_t               udp;
    l4_ports_t          tcp;
    gtpu_t              gtpu;
    gtpu_options_t      gtpu_options;
    gtpu_recovery_t     gtpu_recovery; // added to an Echo Response
    gtpu_psc_t          gtpu_psc;
    ipv4_t              inner_ipv4;    // inside GTP-U
    udp_t               inner_udp;
    l4_ports_t          inner_tcp;
    junction_t          junction;
    junction_ctl_t      junction_ctl;
    ipv4_t              user_ipv4;     // inside Junction
    l4_ports_t          user_ports;
}

// Digest sent to the controller for every PROBE_ACK, LINK_DOWN and LINK_UP.
// v1model names a digest after its struct type, hence the @name.
@name("probe_reports")
struct probe_report_t {
    session_addr_t session_addr;
    user_idx_t     user_idx;
    access_t       access;
    report_kind_t  kind;
    rtt_us_t       rtt_us;
    loss_pct_t     loss_pct;
    suspended_t    suspended;
}

// ---------------------------------------------------------------------------
// Local metadata
// ---------------------------------------------------------------------------

// What each check found: one flag per drop reason, named for the check, which
// DropReasons turns into the reason of the first one set, in the order of
// docs/pipeline.md (its table, top to bottom). Every check runs whether or not
// one before it failed, so that no check waits for the others: in a row they
// would take more stages than a Tofino has. What must not happen to a packet an
// earlier check dropped (a register written, a digest, a copy) tests the flags
// of the checks before it.
struct check_flags_t {
    bool parser_error;     // Uplink: outer headers unsound, or malformed to a local address
    bool unknown_teid;     // Uplink: a G-PDU to a local address with a TEID not in uplink_tunnels
    bool bad_user_packet;  // JunctionCheck: DATA whose user packet is malformed (PARSER_ERROR)
    bool bad_junction;     // JunctionCheck
    bool no_session;       // Sessions: Junction traffic without its session
    bool wrong_source;     // Sessions
    bool report;           // Probes: PROBE_ACK, LINK_DOWN, LINK_UP: consumed
    bool no_path;          // Steering, or a PROBE on a leg the session lacks (Tunnels)
    bool no_endpoint;      // Tunnels
    bool no_tunnel_peer;   // Tunnels
    bool filtered;         // Filter
    bool ttl_expired;      // Filter
    bool no_route;         // Routing
}

struct local_metadata_t {
    // Set by the parser.
    bool            malformed;      // parsed, but not what it claims to be
    bool            malformed_user; // the user packet inside Junction DATA is (JunctionCheck)
    // Each IPv4 header's total length against 20 and 24 (IPV4_*): the parser
    // tests it for free, where a gateway's range test would split the length, and
    // every field computed from it, across PHV containers.
    ipv4_short_t    ipv4_short;
    ipv4_short_t    inner_ipv4_short;
    ipv4_short_t    user_ipv4_short;
    bool            udp_no_header;  // outer UDP length below 8
    bool            gtpu_below_8;   // GTP-U length 4..7: no room for an extension
    // Copies of lengths, for the checks that compare lengths across headers: each
    // check has its own, so that the fields computed with one another (which a
    // switch must place alike) stay few enough to fit one PHV container group.
    bit<16>         gtpu_udp_len;       // outer UDP length, for GTP-U's (Lengths)
    bit<16>         junction_udp_len;   // the UDP length around Junction (JunctionCheck)
    bit<16>         junction_len;       // the Junction header's length (JunctionCheck)
    bit<16>         user_total_len;     // the user packet's inside Junction (JunctionCheck)
    session_addr_t  marker_session;     // the Junction header's seq: an EX-PATH marker's
                                        // session (UserPacket); seq is also the reorder
                                        // timeout, which the deadline is computed from
    // Set by Lengths.
    bool            unsound;        // outer IPv4 or UDP lengths disagree with the frame
    // Carried across a v1model recirculation (field lists 1 and 2); the TNA
    // build fills them from the internal header.
    @field_list(1)
    bool            reorder_held;   // a held packet back from the loop
    @field_list(1)
    time_us_t       reorder_since;  // v1model: when it was first held
    @field_list(1)
    bit<16>         reorder_ticket; // v1model: its place in the user's release order
    @field_list(1)
    bit<8>          reorder_rounds; // v1model: rounds it waited, released, for its turn
    @field_list(1)
    time_us_t       reorder_now;    // v1model: the time of its last pass (see egress)
    @field_list(2)
    bool            redundant_copy; // the second copy of a redundant packet
    @field_list(2)
    access_t        forced_access;
    @field_list(2)
    seq_t           forced_seq;
    bool            skip_ttl;       // TNA second copy: TTL already decremented
    bool            to_ingress;     // v1model: a to_ingress packet-out's frame (parser)

    // Everything below starts each pass at 0 / false (BMv2 zeroes metadata; the TNA
    // build has the compiler do it, @pa_auto_init_metadata), now_us aside.
    time_us_t       now_us;
    path_t          path;
    // Not a frame the pipeline processes (a packet-out; TNA: a reorder timer or
    // queue-free notice), set by the parser; v1model also sets it for a packet held
    // for reorder, which goes round the loop unchanged.
    bool            done;
    bool            punt;           // to the controller as packet-in (Uplink)
    bool            consume;        // an EX-PATH marker ends here (Reorder)
    check_flags_t   checks;
    drop_reason_t   drop_reason;    // DropReasons, from checks; CONSUMED added by Verdict
    drop_reason_t   count_reason;   // counted but forwarded
    bool            teid_known;     // uplink_tunnels hit
    access_t        tunnel_access;  // uplink_tunnels: the leg the TEID belongs to

    bool            is_local;
    access_t        arrival_access;

    junction_kind_t junction_kind;
    bool            current_path;
    bit<1>          epoch;
    time_us_t       reorder_timeout;
    bool            reorder_hold;   // v1model: this pass goes round the loop

    // The user packet, seen from the UE side.
    ipv4_addr_t     user_src;
    ipv4_addr_t     user_dst;
    ip_proto_t      user_proto;
    dscp_t          user_dscp;
    l4_port_t       user_sport;
    l4_port_t       user_dport;

    session_addr_t  session_addr;
    bool            session_hit;
    user_idx_t      user_idx;
    endpoint_idx_t  endpoint_idx;
    peer_idx_t      peer_idx;
    teid_t          teid;
    ipv4_addr_t     ue_addr_3gpp;
    ipv4_addr_t     ue_addr_non3gpp;
    ipv4_addr_t     gateway_non3gpp; // the non-3GPP leg's access gateway on N3; 0: plain IP
    teid_t          teid_non3gpp;    // its downlink TEID
    usage_idx_t     usage_idx;      // the PDU session's usage cell (decap_gtpu, set_session,
                                    // encap_gtpu; Verdict counts it)

    app_id_t        app_id;
    steering_mode_t mode;
    access_t        param_access;
    ratio_t         ratio_3gpp;
    rtt_us_t        rtt_threshold_us;
    loss_pct_t      loss_limit_pct;  // 0: none; else an access is ok while its loss is below it
    bool            has_override;
    seq_index_t     seq_index;
    seq_t           seq;
    ratio_t         seq_mod_128;    // seq % 128, load balance's position (SessionSeq); in a
                                    // PROBE_ACK, the share it carries (Probes)
    rtt_us_t        rtt_3gpp;
    rtt_us_t        rtt_non3gpp;
    loss_pct_t      loss_3gpp;
    loss_pct_t      loss_non3gpp;
    bit<1>          auto_3gpp;      // autonomous load balance: seq % 128 < the user's share (PathState)
    access_t        access;         // the access this copy leaves on
    bool            redundant;      // send a second copy on the other access

    bool            downlink_tunnel_hit;
    bool            endpoint_hit;   // tunnel_endpoints hit
    bool            peer_hit;       // tunnel_peers hit
    encap_kind_t    encap_kind;
    ipv4_addr_t     n3_addr;
    ipv4_addr_t     junction_addr;
    ipv4_addr_t     peer_addr;
    ipv4_addr_t     junction_dst;   // the UE's address on the chosen leg
    bool            reply;          // answer a PROBE with PROBE_REPLY

    // Which parsed IPv4 headers leave with a fresh checksum (Encap): the ones the
    // pipeline rewrote or whose TTL it decremented. Flags, not a test of path: a
    // Tofino deparser conditions a checksum on a header's validity or a bool only.
    bool            csum_ipv4;
    bool            csum_inner_ipv4;
    bool            csum_user_ipv4;

    ipv4_addr_t     route_dst;
    port_num_t      egress_port;

    report_kind_t   report_kind;
    access_t        report_access;
    rtt_us_t        report_rtt;
    rtt_us_t        state_rtt;      // the same, for the path-state registers: bf-p4c 9.13.4
                                    // cannot place a field the digest and a stateful ALU
                                    // both read ("cannot find allocation")
    loss_pct_t      report_loss;
    suspended_t     report_suspended;
}

#endif  // JUNCTION_HEADER_P4
