package n4

import (
	"errors"
	"testing"
)

// TestUplinkQFI: an uplink PDR's PDI may name the session's one QoS flow (docs/n4.md, as
// Open5GS does in every uplink PDR); another flow, beside the downlink's or another uplink
// PDR's, is refused with 73 naming that PDR.
func TestUplinkQFI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		up     []*PDR
		qfi    int32
		failed uint16 // 0: accepted
	}{
		{"the downlink's flow", []*PDR{{ID: 1, QFI: 9}}, 9, 0},
		{"a flow, the downlink none", []*PDR{{ID: 1, QFI: 9}, {ID: 2, QFI: 9}}, 0, 0},
		{"no QFI at all", []*PDR{{ID: 1}, {ID: 2}}, 9, 0},
		{"another flow than the downlink's", []*PDR{{ID: 1}, {ID: 2, QFI: 5}}, 9, 2},
		{"two uplink flows", []*PDR{{ID: 1, QFI: 5}, {ID: 2}, {ID: 3, QFI: 6}}, 0, 3},
	} {
		err := uplinkQFI(tc.up, tc.qfi)
		var r *Refusal
		switch {
		case tc.failed == 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.failed != 0 && !errors.As(err, &r):
			t.Errorf("%s: %v, want a refusal", tc.name, err)
		case tc.failed != 0 && (r.Cause != CauseRuleFailure || r.Rule == nil || r.Rule.ID != uint32(tc.failed)):
			t.Errorf("%s: cause %d, failed rule %+v; want 73 naming PDR %d", tc.name, r.Cause, r.Rule, tc.failed)
		}
	}
}
