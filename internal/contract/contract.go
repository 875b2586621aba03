// Package contract holds the numbers the P4 program and every Go part of Junction share: access
// codes, steering modes, report kinds, drop reasons, the probe_reports digest layout, the
// redundant clone session and the sizes the operator falls back on. They are the P4 source's
// (p4/include/define.p4, header.p4, size.p4), which p4's TestGoContractMatchesTheP4Source reads
// and compares with this file; docs/pipeline.md explains them. Nothing else spells these numbers.
package contract

import "fmt"

// Access is an access network (access_t): in table parameters, registers, digests and the
// Junction control body.
type Access uint8

const (
	AccessNone    Access = 0 // ACCESS_NONE: no leg available
	Access3GPP    Access = 1 // ACCESS_3GPP: 5G NR, the GTP-U leg
	AccessNon3GPP Access = 2 // ACCESS_NON3GPP: WiFi or wireline
)

func (a Access) String() string {
	switch a {
	case AccessNone:
		return "none"
	case Access3GPP:
		return "3GPP"
	case AccessNon3GPP:
		return "non-3GPP"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// Label is the access as metric labels spell it: "3gpp", "non3gpp", "none".
func (a Access) Label() string {
	switch a {
	case Access3GPP:
		return "3gpp"
	case AccessNon3GPP:
		return "non3gpp"
	}
	return "none"
}

// Valid reports whether a is one of the two accesses.
func (a Access) Valid() bool { return a == Access3GPP || a == AccessNon3GPP }

// Other returns the other access of the two, AccessNone for anything else.
func (a Access) Other() Access {
	switch a {
	case Access3GPP:
		return AccessNon3GPP
	case AccessNon3GPP:
		return Access3GPP
	}
	return AccessNone
}

// Mode is a steering mode (steering_mode_t) in applications and session_overrides entries.
type Mode uint8

const (
	ModeActiveStandby         Mode = 1 // MODE_ACTIVE_STANDBY
	ModeSmallestDelay         Mode = 2 // MODE_SMALLEST_DELAY
	ModeLoadBalance           Mode = 3 // MODE_LOAD_BALANCE
	ModePriorityBased         Mode = 4 // MODE_PRIORITY_BASED
	ModeRedundant             Mode = 5 // MODE_REDUNDANT
	ModeAutonomousLoadBalance Mode = 6 // MODE_AUTONOMOUS_LOAD_BALANCE
)

// RatioScale is the load-balance ratio's unit: ratio_3gpp is the 3GPP share in 1/128, the packet
// with sequence number seq goes on 3GPP when seq % RatioScale < ratio_3gpp.
const RatioScale = 128

// AutonomousShare is autonomous load balance's split of one user's traffic (the
// autonomous_share register, docs/pipeline.md): the 3GPP share in 1/RatioScale. The UE decides it
// (internal/ueagent/steer.Balancer) and sends it in every PROBE_ACK, in 7 bits: the UPF takes any
// share but 0 (none), so each access keeps at least one packet in 128. 0 is also a share never
// set, which splits evenly, so a new user needs no register write.
type AutonomousShare uint8

const (
	AutonomousShareEven AutonomousShare = RatioScale / 2 // AUTONOMOUS_SHARE_EVEN: what 0 reads as
	AutonomousShareMin  AutonomousShare = 1              // the smallest share a PROBE_ACK sets
	AutonomousShareMax  AutonomousShare = RatioScale - 1 // the largest (7 bits)
)

// Ratio3GPP is the share as a load-balance ratio: the packet with sequence number seq goes on
// 3GPP when seq % RatioScale < Ratio3GPP.
func (s AutonomousShare) Ratio3GPP() uint32 {
	if s == 0 {
		return uint32(AutonomousShareEven)
	}
	return uint32(s)
}

// Valid reports whether a PROBE_ACK's share is one the UPF takes.
func (s AutonomousShare) Valid() bool { return s >= AutonomousShareMin && s <= AutonomousShareMax }

// ReportKind is what a probe_reports digest is about (report_kind_t).
type ReportKind uint8

const (
	ReportRTT      ReportKind = 1 // REPORT_RTT: a probe exchange measured the arrival access
	ReportLinkDown ReportKind = 2 // REPORT_LINK_DOWN: the UE reports the access down
	ReportLinkUp   ReportKind = 3 // REPORT_LINK_UP: the UE reports it up, with its RTT
)

// String is the kind as metric labels spell it: "rtt", "link_down", "link_up".
func (k ReportKind) String() string {
	switch k {
	case ReportRTT:
		return "rtt"
	case ReportLinkDown:
		return "link_down"
	case ReportLinkUp:
		return "link_up"
	}
	return "unknown"
}

// DropReason indexes the drops counter (drop_reason_t).
type DropReason uint8

const (
	DropNone            DropReason = 0
	DropParserError     DropReason = 1
	DropUnknownTEID     DropReason = 2
	DropNoSession       DropReason = 3
	DropNoPath          DropReason = 4
	DropNoRoute         DropReason = 5
	DropFiltered        DropReason = 6
	DropTTLExpired      DropReason = 7
	DropBadJunction     DropReason = 8
	DropNoTunnelPeer    DropReason = 9
	DropNoEndpoint      DropReason = 10
	DropCopyFailed      DropReason = 11 // software UPF only: no buffer for a redundant copy
	DropReorderOverflow DropReason = 12 // counted, the packet is forwarded
	DropConsumed        DropReason = 13 // probe ACKs, link notifications, EX-PATH markers end here
	DropWrongSource     DropReason = 14 // Junction not from the session's address on its leg
)

// dropNames are the reasons' names without the DROP_ prefix, by index.
var dropNames = [...]string{"NONE", "PARSER_ERROR", "UNKNOWN_TEID", "NO_SESSION", "NO_PATH", "NO_ROUTE",
	"FILTERED", "TTL_EXPIRED", "BAD_JUNCTION", "NO_TUNNEL_PEER", "NO_ENDPOINT", "COPY_FAILED",
	"REORDER_OVERFLOW", "CONSUMED", "WRONG_SOURCE"}

// DropReasons is every defined reason, in index order.
func DropReasons() []DropReason {
	out := make([]DropReason, len(dropNames))
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}

// String is the reason's name in the P4 source without DROP_, e.g. "NO_SESSION".
func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return fmt.Sprintf("DROP_%d", uint8(r))
}

// RedundantCloneSession duplicates redundant-mode packets (REDUNDANT_CLONE_SESSION): a clone
// session on v1model, a mirror session on TNA.
const RedundantCloneSession = 100

// Member is one member of a digest's struct.
type Member struct {
	Name  string
	Width int // bits
}

// ProbeReportMembers is the probe_reports digest's struct (probe_report_t), in member order.
var ProbeReportMembers = []Member{
	{"session_addr", 32}, {"user_idx", 32}, {"access", 8}, {"kind", 8}, {"rtt_us", 32}, {"loss_pct", 8}, {"suspended", 8},
}

// Sizes the operator assumes when a P4Info does not give one (size.p4).
const (
	MaxUsers            = 262144 // MAX_USERS: path-state registers, user indexes
	MaxSessionOverrides = 524288 // MAX_SESSION_OVERRIDES (= MAX_SESSIONS): also the session_seq register
	MaxTunnelPeers      = 4096   // MAX_TUNNEL_PEERS
	MaxUsageRecords     = 589824 // MAX_USAGE_RECORDS: cells of uplink_usage and downlink_usage
)

// ReorderMaxHoldUS is the longest reorder timeout a CURRENT_PATH packet may ask for, in µs
// (REORDER_MAX_HOLD_US): a larger seq is cut to it.
const ReorderMaxHoldUS = 2_000_000
