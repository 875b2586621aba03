package programmer

// Pure helpers of the programmer: converting desired entries for the P4Runtime client, and
// deciding the initial path state of users that appear on a device.

import (
	"sort"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// P4Info names the operator uses outside internal/desired (docs/pipeline.md).
const (
	TableSessions        = "sessions"
	tableOverrides       = "session_overrides"
	fieldAppID           = "app_id"
	RegisterRTT3GPP      = "rtt_3gpp"
	RegisterRTTNon3GPP   = "rtt_non3gpp"
	RegisterLoss3GPP     = "loss_3gpp"
	RegisterLossNon3GPP  = "loss_non3gpp"
	RegisterSuspended    = "path_updates_suspended"
	RegisterShare        = "autonomous_share"
	CounterUplinkUsage   = "uplink_usage"
	CounterDownlinkUsage = "downlink_usage"
	// What a session's MBR policer dropped, at its usage cell (a pipeline with a policer).
	CounterUplinkPoliced   = "uplink_policed"
	CounterDownlinkPoliced = "downlink_policed"
	paramUsageIndex        = "usage_idx"
	// A QoS flow's usage and what the policers dropped of it, at its cell (qos_flows' flow_idx).
	CounterUplinkFlowUsage     = "uplink_flow_usage"
	CounterDownlinkFlowUsage   = "downlink_flow_usage"
	CounterUplinkFlowPoliced   = "uplink_flow_policed"
	CounterDownlinkFlowPoliced = "downlink_flow_policed"
	paramFlowIndex             = "flow_idx"
)

// legs is the set of access legs of a sessions entry.
type legs uint8

const (
	leg3GPP    legs = 1 << 0
	legNon3GPP legs = 1 << 1
	// leg3GPPIdle: a 3GPP leg with its UE address but no tunnel peer, an MA PDU session's
	// inactive access whose uplink is still taken (internal/desired). Steering reads its path
	// state, which must stay unavailable: no downlink can leave on it.
	leg3GPPIdle legs = 1 << 2
)

// legCount counts the sessions entries of one user on a device that have each leg.
type legCount struct{ n3GPP, nNon3GPP, n3GPPIdle int }

func (c legCount) add(l legs, d int) legCount {
	if l&leg3GPP != 0 {
		c.n3GPP += d
	}
	if l&legNon3GPP != 0 {
		c.nNon3GPP += d
	}
	if l&leg3GPPIdle != 0 {
		c.n3GPPIdle += d
	}
	return c
}

func (c legCount) zero() bool { return c.n3GPP <= 0 && c.nNon3GPP <= 0 && c.n3GPPIdle <= 0 }

// sessionLegs reads the user index and present legs (a non-zero UE address; for 3GPP, idle
// without a tunnel peer) of a `sessions` entry; ok is false for entries of other tables or
// without set_session.
func sessionLegs(sch *upfclient.Schema, te *p4v1.TableEntry) (user uint32, l legs, ok bool) {
	a := te.GetAction().GetAction()
	if sch == nil || a == nil || sch.TableName(te.GetTableId()) != TableSessions || sch.ActionName(a.GetActionId()) != "set_session" {
		return 0, 0, false
	}
	u, ok := sch.ActionParam(a, "user_idx")
	if !ok {
		return 0, 0, false
	}
	if v, _ := sch.ActionParam(a, "ue_addr_3gpp"); v != 0 {
		if peer, _ := sch.ActionParam(a, "peer_idx"); peer != 0 {
			l |= leg3GPP
		} else {
			l |= leg3GPPIdle
		}
	}
	if v, _ := sch.ActionParam(a, "ue_addr_non3gpp"); v != 0 {
		l |= legNon3GPP
	}
	return uint32(u), l, true
}

// registerWrite is one path-state register cell to set.
type registerWrite struct {
	register string
	user     uint32
	value    uint64
}

// initialPathWrites decides the path-state resets for users whose legs appear on a device.
// Registers start at 0, which is the state a new user needs (accesses unavailable until the UE
// reports them, updates not suspended: docs/pipeline.md), so only an index that may hold an
// earlier user's state is written: for a user with no entry before, path_updates_suspended[user] = 0 and
// autonomous_share[user] = 0, and for every leg its entries have, rtt_<access>[user]
// and loss_<access>[user] = 0 — unless fresh says the index has had no sessions entry since the
// pipeline was pushed. A user already on the device keeps its measured state, but for a leg that
// appears (no entry had it before) and a 3GPP leg that goes idle (no entry has it with a tunnel
// peer any more): both start unavailable, so a replay onto a device that kept its state writes
// nothing. pending are users whose last reset failed: they get a whole reset again.
func initialPathWrites(before, after map[uint32]legCount, fresh func(user uint32) bool, pending map[uint32]string) []registerWrite {
	users := make([]uint32, 0, len(after)+len(pending))
	for u := range after {
		users = append(users, u)
	}
	for u := range pending {
		if _, ok := after[u]; !ok {
			users = append(users, u)
		}
	}
	sort.Slice(users, func(i, j int) bool { return users[i] < users[j] })
	var out []registerWrite
	for _, u := range users {
		b, a := before[u], after[u]
		if _, ok := after[u]; !ok {
			a = b // a pending user this round does not touch
		}
		if a.zero() {
			continue // gone: nothing to reset any more
		}
		_, retry := pending[u]
		whole := b.zero() || retry
		if b.zero() && !retry && fresh(u) {
			continue
		}
		if whole {
			out = append(out, registerWrite{RegisterSuspended, u, 0}, registerWrite{RegisterShare, u, 0})
		}
		has3GPP := a.n3GPP > 0 || a.n3GPPIdle > 0
		appears, goesIdle := b.n3GPP <= 0 && a.n3GPP > 0, b.n3GPP > 0 && a.n3GPP <= 0 && a.n3GPPIdle > 0
		if whole && has3GPP || appears || goesIdle {
			out = append(out, registerWrite{RegisterRTT3GPP, u, 0}, registerWrite{RegisterLoss3GPP, u, 0})
		}
		if (b.nNon3GPP <= 0 || retry) && a.nNon3GPP > 0 {
			out = append(out, registerWrite{RegisterRTTNon3GPP, u, 0}, registerWrite{RegisterLossNon3GPP, u, 0})
		}
	}
	return out
}
