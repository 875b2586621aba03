package p4

import (
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
)

// TestGoContractMatchesTheP4Source: every number internal/contract holds is the P4 source's
// (define.p4, header.p4, size.p4), and every drop reason the source defines is in the Go list.
func TestGoContractMatchesTheP4Source(t *testing.T) {
	prog := contractProgram(t)
	check := func(name string, got int64) {
		t.Helper()
		if want := constValue(t, prog, name); got != want {
			t.Errorf("internal/contract has %s = %d, the P4 source %d", name, got, want)
		}
	}
	for name, v := range map[string]contract.Access{
		"ACCESS_NONE": contract.AccessNone, "ACCESS_3GPP": contract.Access3GPP, "ACCESS_NON3GPP": contract.AccessNon3GPP,
	} {
		check(name, int64(v))
	}
	for name, v := range map[string]contract.Mode{
		"MODE_ACTIVE_STANDBY": contract.ModeActiveStandby, "MODE_SMALLEST_DELAY": contract.ModeSmallestDelay,
		"MODE_LOAD_BALANCE": contract.ModeLoadBalance, "MODE_PRIORITY_BASED": contract.ModePriorityBased,
		"MODE_REDUNDANT": contract.ModeRedundant, "MODE_AUTONOMOUS_LOAD_BALANCE": contract.ModeAutonomousLoadBalance,
	} {
		check(name, int64(v))
	}
	for name, v := range map[string]contract.ReportKind{
		"REPORT_RTT": contract.ReportRTT, "REPORT_LINK_DOWN": contract.ReportLinkDown, "REPORT_LINK_UP": contract.ReportLinkUp,
	} {
		check(name, int64(v))
	}
	drops := map[string]contract.DropReason{
		"DROP_NONE": contract.DropNone, "DROP_PARSER_ERROR": contract.DropParserError, "DROP_UNKNOWN_TEID": contract.DropUnknownTEID,
		"DROP_NO_SESSION": contract.DropNoSession, "DROP_NO_PATH": contract.DropNoPath, "DROP_NO_ROUTE": contract.DropNoRoute,
		"DROP_FILTERED": contract.DropFiltered, "DROP_TTL_EXPIRED": contract.DropTTLExpired, "DROP_BAD_JUNCTION": contract.DropBadJunction,
		"DROP_NO_TUNNEL_PEER": contract.DropNoTunnelPeer, "DROP_NO_ENDPOINT": contract.DropNoEndpoint, "DROP_COPY_FAILED": contract.DropCopyFailed,
		"DROP_REORDER_OVERFLOW": contract.DropReorderOverflow, "DROP_CONSUMED": contract.DropConsumed,
		"DROP_WRONG_SOURCE": contract.DropWrongSource,
	}
	for name, r := range drops {
		check(name, int64(r))
		if got := "DROP_" + r.String(); got != name {
			t.Errorf("internal/contract names reason %d %s, the P4 source %s", r, got, name)
		}
	}
	goDrops := map[string]bool{}
	for _, r := range contract.DropReasons() {
		goDrops["DROP_"+r.String()] = true
	}
	for name := range prog.consts {
		if strings.HasPrefix(name, "DROP_") && !goDrops[name] {
			t.Errorf("the P4 source defines %s; internal/contract does not", name)
		}
	}
	for name, v := range map[string]int64{
		"REDUNDANT_CLONE_SESSION": contract.RedundantCloneSession, "MAX_USERS": contract.MaxUsers,
		"MAX_SESSION_OVERRIDES": contract.MaxSessionOverrides, "MAX_TUNNEL_PEERS": contract.MaxTunnelPeers,
		"AUTONOMOUS_SHARE_EVEN": int64(contract.AutonomousShareEven),
		"REORDER_MAX_HOLD_US":   contract.ReorderMaxHoldUS, "MAX_USAGE_RECORDS": contract.MaxUsageRecords,
	} {
		check(name, v)
	}

	st, ok := prog.types["probe_report_t"]
	if !ok {
		t.Fatal("the P4 source has no probe_report_t")
	}
	if len(st.fields) != len(contract.ProbeReportMembers) {
		t.Fatalf("probe_report_t has %d members, internal/contract %d", len(st.fields), len(contract.ProbeReportMembers))
	}
	for i, f := range st.fields {
		w, err := prog.width(f.typ)
		if err != nil {
			t.Fatal(err)
		}
		if m := contract.ProbeReportMembers[i]; m.Name != f.name || m.Width != w {
			t.Errorf("probe_report_t member %d is %s (%d bits), internal/contract says %s (%d bits)", i, f.name, w, m.Name, m.Width)
		}
	}
}
