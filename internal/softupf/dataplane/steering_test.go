package dataplane

import (
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
)

func TestDecide(t *testing.T) {
	const (
		g = contract.Access3GPP
		n = contract.AccessNon3GPP
		x = contract.AccessNone
	)
	both := func(r3, rn uint32) paths {
		return paths{present: [3]bool{false, true, true}, rtt: [3]uint32{0, r3, rn}}
	}
	// lossy: both accesses up at 20 and 5 ms with the given losses (percent).
	lossy := func(l3, ln uint8) paths {
		return paths{present: [3]bool{false, true, true}, rtt: [3]uint32{0, 20, 5}, loss: [3]uint8{0, l3, ln}}
	}
	// shared: both up at 20 and 5 ms, the user's autonomous share at 3GPP 96/128.
	shared := paths{present: [3]bool{false, true, true}, rtt: [3]uint32{0, 20, 5}, share: 96}
	only3 := func(r3, rn uint32) paths {
		return paths{present: [3]bool{false, true, false}, rtt: [3]uint32{0, r3, rn}}
	}
	cases := []struct {
		name          string
		p             paths
		s             steering
		seq           uint32
		first, second contract.Access
	}{
		{"active-standby uses the active access when it is ok", both(20, 5), steering{mode: contract.ModeActiveStandby, access: g}, 0, g, x},
		{"active-standby on non-3GPP uses non-3GPP", both(20, 5), steering{mode: contract.ModeActiveStandby, access: n}, 0, n, x},
		{"active-standby moves to the standby when the active is over the threshold", both(20, 5), steering{mode: contract.ModeActiveStandby, access: g, threshold: 10}, 0, n, x},
		{"active-standby keeps the active when both are over the threshold", both(20, 30), steering{mode: contract.ModeActiveStandby, access: g, threshold: 10}, 0, g, x},
		{"active-standby moves to the standby when the active is down", both(0, 5), steering{mode: contract.ModeActiveStandby, access: g}, 0, n, x},
		{"active-standby has no path when both are down", both(0, 0), steering{mode: contract.ModeActiveStandby, access: g}, 0, x, x},
		{"a leg without a UE address is not available even with an RTT", only3(0, 5), steering{mode: contract.ModeActiveStandby, access: n}, 0, x, x},
		{"an unknown mode behaves as active-standby", both(20, 5), steering{mode: 42, access: g}, 0, g, x},
		{"smallest-delay picks the smaller RTT", both(20, 5), steering{mode: contract.ModeSmallestDelay}, 0, n, x},
		{"smallest-delay gives a tie to 3GPP", both(5, 5), steering{mode: contract.ModeSmallestDelay}, 0, g, x},
		{"smallest-delay ignores an unavailable access", both(20, 0), steering{mode: contract.ModeSmallestDelay}, 0, g, x},
		{"load-balance sends seq below the ratio to 3GPP", both(20, 5), steering{mode: contract.ModeLoadBalance, ratio: 32}, 31, g, x},
		{"load-balance sends seq at the ratio to non-3GPP", both(20, 5), steering{mode: contract.ModeLoadBalance, ratio: 32}, 32, n, x},
		{"load-balance counts seq modulo 128", both(20, 5), steering{mode: contract.ModeLoadBalance, ratio: 32}, 128 + 3, g, x},
		{"load-balance with ratio 128 always uses 3GPP", both(20, 5), steering{mode: contract.ModeLoadBalance, ratio: 128}, 127, g, x},
		{"load-balance falls back to the ok access when one exceeds the threshold", both(20, 5), steering{mode: contract.ModeLoadBalance, ratio: 128, threshold: 10}, 0, n, x},
		{"load-balance falls back to the smaller available RTT when none is ok", both(20, 30), steering{mode: contract.ModeLoadBalance, ratio: 0, threshold: 10}, 0, g, x},
		{"autonomous load-balance with a share never moved sends seq 63 to 3GPP", both(20, 5), steering{mode: contract.ModeAutonomousLoadBalance}, 63, g, x},
		{"autonomous load-balance with a share never moved sends seq 64 to non-3GPP", both(20, 5), steering{mode: contract.ModeAutonomousLoadBalance}, 64, n, x},
		{"autonomous load-balance sends seq below the share to 3GPP whatever the RTTs", shared, steering{mode: contract.ModeAutonomousLoadBalance}, 128 + 95, g, x},
		{"autonomous load-balance sends seq at the share to non-3GPP", shared, steering{mode: contract.ModeAutonomousLoadBalance}, 96, n, x},
		{"autonomous load-balance reads the share, not the policy's ratio", shared, steering{mode: contract.ModeAutonomousLoadBalance, ratio: 10}, 50, g, x},
		{"load-balance reads the policy's ratio, not the share", shared, steering{mode: contract.ModeLoadBalance, ratio: 10}, 50, n, x},
		{"autonomous load-balance with one access down uses the other", both(0, 5), steering{mode: contract.ModeAutonomousLoadBalance}, 7, n, x},
		{"priority-based uses the priority access under the threshold", both(8, 5), steering{mode: contract.ModePriorityBased, access: g, threshold: 10}, 0, g, x},
		{"priority-based overflows to the other access over the threshold", both(20, 5), steering{mode: contract.ModePriorityBased, access: g, threshold: 10}, 0, n, x},
		{"priority-based keeps the priority access over the threshold when the other is down", both(20, 0), steering{mode: contract.ModePriorityBased, access: g, threshold: 10}, 0, g, x},
		{"priority-based without a threshold always uses the priority access", both(900, 5), steering{mode: contract.ModePriorityBased, access: g}, 0, g, x},
		{"a loss limit of 0 is no limit", lossy(0, 100), steering{mode: contract.ModeActiveStandby, access: n}, 0, n, x},
		{"active-standby keeps the active while its loss is below the limit", lossy(0, 10), steering{mode: contract.ModeActiveStandby, access: n, lossLimit: 11}, 0, n, x},
		{"active-standby moves to the standby when the active's loss reaches the limit", lossy(0, 11), steering{mode: contract.ModeActiveStandby, access: n, lossLimit: 11}, 0, g, x},
		{"active-standby keeps the active when both are lossier than the limit", lossy(50, 30), steering{mode: contract.ModeActiveStandby, access: n, lossLimit: 11}, 0, n, x},
		{"an access must meet both the RTT and the loss threshold", lossy(0, 0), steering{mode: contract.ModeActiveStandby, access: g, threshold: 10, lossLimit: 11}, 0, n, x},
		{"priority-based overflows when the priority access is lossy", lossy(0, 20), steering{mode: contract.ModePriorityBased, access: n, threshold: 30, lossLimit: 6}, 0, g, x},
		{"load-balance sends everything to the access within the loss limit", lossy(25, 0), steering{mode: contract.ModeLoadBalance, ratio: 128, lossLimit: 6}, 0, n, x},
		{"smallest-delay reads no threshold", lossy(0, 100), steering{mode: contract.ModeSmallestDelay, lossLimit: 6}, 0, n, x},
		{"redundant duplicates on both available accesses", both(20, 5), steering{mode: contract.ModeRedundant}, 0, g, n},
		{"redundant with one access down sends one copy", both(20, 0), steering{mode: contract.ModeRedundant}, 0, g, x},
		{"redundant with no access has no path", both(0, 0), steering{mode: contract.ModeRedundant}, 0, x, x},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, s := decide(&c.p, c.s, c.seq)
			if f != c.first || s != c.second {
				t.Errorf("decide = (%d, %d), want (%d, %d)", f, s, c.first, c.second)
			}
		})
	}
}
