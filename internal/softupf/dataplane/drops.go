package dataplane

// DropReason indexes the `drops` counter (docs/pipeline.md, "Drop reasons").
type DropReason uint8

// Specification constants: the drop reasons are part of the P4Info contract.
const (
	ParserError     DropReason = 1
	UnknownTEID     DropReason = 2
	NoSession       DropReason = 3
	NoPath          DropReason = 4
	NoRoute         DropReason = 5
	Filtered        DropReason = 6
	TTLExpired      DropReason = 7
	BadJunction     DropReason = 8
	NoTunnelPeer    DropReason = 9
	NoEndpoint      DropReason = 10
	CopyFailed      DropReason = 11 // software UPF only: no buffer for the redundant copy; counted, the first copy still goes out
	ReorderOverflow DropReason = 12 // counted, the packet is forwarded
	Consumed        DropReason = 13 // probe ACKs, link notifications and EX-PATH markers end here

	numDropReasons = 14
)

var dropNames = [numDropReasons]string{
	"", "PARSER_ERROR", "UNKNOWN_TEID", "NO_SESSION", "NO_PATH", "NO_ROUTE", "FILTERED",
	"TTL_EXPIRED", "BAD_JUNCTION", "NO_TUNNEL_PEER", "NO_ENDPOINT", "COPY_FAILED",
	"REORDER_OVERFLOW", "CONSUMED",
}

func (r DropReason) String() string {
	if int(r) < len(dropNames) && dropNames[r] != "" {
		return dropNames[r]
	}
	return "UNKNOWN"
}
