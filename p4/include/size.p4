// JUNCTION-UPF: every capacity in one place.
//
// The defaults are the paper's Table I configuration (256K users with two
// MA PDU sessions each), except the exception entries: one per session, not the
// paper's 16K, because over N4 every MA PDU session carries its own MAR (docs/n4.md).
// docs/pipeline.md lists them and `go test ./p4/...` checks that both agree.
// Override with -D at build time.

#ifndef JUNCTION_SIZE_P4
#define JUNCTION_SIZE_P4

// Tables and per-user state.
#ifndef MAX_USERS
#define MAX_USERS 262144
#endif
#ifndef MAX_SESSIONS
#define MAX_SESSIONS 524288
#endif
#ifndef MAX_SESSION_OVERRIDES
#define MAX_SESSION_OVERRIDES MAX_SESSIONS
#endif
#ifndef MAX_APPLICATIONS
#define MAX_APPLICATIONS 1024
#endif
#ifndef MAX_UPLINK_TUNNELS
#define MAX_UPLINK_TUNNELS 524288
#endif
#ifndef MAX_DOWNLINK_TUNNELS
#define MAX_DOWNLINK_TUNNELS 65536
#endif
#ifndef MAX_TUNNEL_PEERS
#define MAX_TUNNEL_PEERS 4096
#endif
#ifndef MAX_TUNNEL_ENDPOINTS
#define MAX_TUNNEL_ENDPOINTS 16
#endif
#ifndef MAX_LOCAL_ADDRESSES
#define MAX_LOCAL_ADDRESSES 64
#endif
#ifndef MAX_FILTERS
#define MAX_FILTERS 1024
#endif
#ifndef MAX_ROUTES
#define MAX_ROUTES 4096
#endif

// Usage counters (uplink_usage, downlink_usage): one cell per PDU session the UPF
// can hold, MA sessions (sessions) and single-access ones (downlink_tunnels).
#ifndef MAX_USAGE_RECORDS
#define MAX_USAGE_RECORDS (MAX_SESSIONS + MAX_DOWNLINK_TUNNELS)
#endif

// QoS flows of downlink GTP-U tunnels (tunnel_qfis): one per tunnel the UPF can send into,
// an MA session's two legs over N3 and a single-access session's one.
#ifndef MAX_TUNNEL_QFIS
#define MAX_TUNNEL_QFIS (2 * MAX_SESSIONS + MAX_DOWNLINK_TUNNELS)
#endif

// QoS flows beside a session's own (qos_flows; 2,048 in the Tofino 2 profile): a flow's entry per
// direction, and its MBR policer's cells (uplink_flow_mbr, downlink_flow_mbr).
#ifndef MAX_QOS_FLOWS
#define MAX_QOS_FLOWS 65536
#endif

// The drops counter has one cell per drop reason (define.p4), with room to grow.
#ifndef DROP_REASON_COUNT
#define DROP_REASON_COUNT 32
#endif

// The longest reorder timeout a CURRENT_PATH packet may ask for (its seq), in
// microseconds, on every target: a larger one is cut to it, so no UE holds a
// user's traffic (and a queue) for more. v1model also bounds each held packet's
// time in the recirculation loop by it, forwarding it anyway (REORDER_OVERFLOW)
// whatever the deadline says: a time, not a pass count, since a pass takes tens
// of microseconds on BMv2 and far less on a hardware v1model target.
#ifndef REORDER_MAX_HOLD_US
#define REORDER_MAX_HOLD_US 2000000
#endif
// v1model: how many rounds of the loop a released packet waits for the tickets
// before its own; a ticket still missing then is forgiven (its packet is gone).
#ifndef REORDER_DRAIN_PASSES
#define REORDER_DRAIN_PASSES 4
#endif

// TNA: reorder queues on the upstream port, in two hash ways (the paper's
// two-way associative queue tracking). Way A owns queues 64..127, way B
// owns 32..63; queues 0..31 stay for ordinary traffic.
#ifndef REORDER_QUEUES_A
#define REORDER_QUEUES_A 64
#endif
#ifndef REORDER_QUEUES_B
#define REORDER_QUEUES_B 32
#endif

#endif  // JUNCTION_SIZE_P4
