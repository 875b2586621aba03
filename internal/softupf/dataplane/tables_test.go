package dataplane

import (
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// TestQoSFlowListOrder: a UE's qos_flows entries are matched highest priority first, whatever
// the order they came in, past the two its table slot holds (qosFlowList); a deleted entry no
// longer matches.
func TestQoSFlowListOrder(t *testing.T) {
	h := topology(t)
	ue := ip4("10.60.0.9")
	insert := func(prio int32, remote tv, qfi, cell uint64) {
		match := map[string]any{"ue_addr": ue, "uplink": uint64(0)}
		if remote.m != 0 {
			match["remote_addr"] = remote
		}
		h.insert("qos_flows", match, prio, "set_qos_flow", map[string]uint64{"flow_qfi": qfi, "flow_idx": cell, "gbr": 0})
	}
	insert(1, tv{}, 0, 40)                                  // the default flow's, first in
	insert(200, tv{ip4("198.51.100.0"), 0xffffff00}, 2, 20) // the /24
	insert(300, tv{ip4("198.51.100.7"), 0xffffffff}, 3, 30) // one server of it, ahead
	insert(250, tv{ip4("203.0.113.0"), 0xffffff00}, 4, 50)  // a fourth: the list's third and on
	cellOf := func(server string) uint32 {
		return h.p.st.t.qosFlow(uint32(ue), false, &flow{src: uint32(ip4(server)), dst: uint32(ue), proto: 17}).cell
	}
	for _, c := range []struct {
		server string
		cell   uint32
	}{{"198.51.100.7", 30}, {"198.51.100.8", 20}, {"203.0.113.9", 50}, {"192.0.2.1", 40}} {
		if got := cellOf(c.server); got != c.cell {
			t.Errorf("from %s: cell %d, want %d", c.server, got, c.cell)
		}
	}
	h.write(p4v1.Update_DELETE, h.entry("qos_flows", map[string]any{"ue_addr": ue, "uplink": uint64(0), "remote_addr": tv{ip4("198.51.100.7"), 0xffffffff}}, 300, "", nil))
	if got := cellOf("198.51.100.7"); got != 20 {
		t.Errorf("from 198.51.100.7 once its entry went: cell %d, want the /24's 20", got)
	}
}
