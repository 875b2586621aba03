package steer

import (
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

const (
	g  = contract.Access3GPP
	n  = contract.AccessNon3GPP
	no = contract.AccessNone
)

// enc encodes an API mode (and optional RTT threshold) as the operator does.
func enc(t *testing.T, m junctionv1.SteeringMode, rttThreshold string) desired.Steering {
	t.Helper()
	var th *junctionv1.Thresholds
	if rttThreshold != "" {
		th = &junctionv1.Thresholds{RTT: junctionv1.Duration(rttThreshold)}
	}
	s, err := desired.EncodeSteering(m, th)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lb(percent int32) junctionv1.SteeringMode {
	return junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptr(percent)}}
}

func priority(a junctionv1.Access, threshold string) junctionv1.SteeringMode {
	return junctionv1.SteeringMode{Mode: junctionv1.ModePriorityBased, PriorityBased: &junctionv1.PriorityBased{PriorityAccess: a, RTTThreshold: junctionv1.Duration(threshold)}}
}

// TestChoose follows docs/pipeline.md's "Steering decision" table row by row. RTTs are in µs;
// 0 is an unavailable access.
func TestChoose(t *testing.T) {
	type tc struct {
		name          string
		mode          junctionv1.SteeringMode
		threshold     string // thresholds.rtt
		r3, rn, seq   uint32
		first, second contract.Access
	}
	for _, c := range []tc{
		// active-standby: first of ok(A)→A, ok(B)→B, avail(A)→A, avail(B)→B.
		{"active-standby sends on the active access while it is available", apiActive3GPP, "", 30000, 10000, 0, g, no},
		{"active-standby with WiFi active sends on WiFi", apiActiveWiFi, "", 10000, 30000, 0, n, no},
		{"active-standby falls over to the standby when the active access is unavailable", apiActive3GPP, "", 0, 10000, 0, n, no},
		{"active-standby prefers a standby within the threshold to an active access over it", apiActive3GPP, "20ms", 30000, 10000, 0, n, no},
		{"an RTT equal to the threshold is within it", apiActive3GPP, "20ms", 20000, 10000, 0, g, no},
		{"active-standby keeps the active access when both are over the threshold", apiActive3GPP, "20ms", 30000, 40000, 0, g, no},
		{"active-standby uses a standby over the threshold when the active access is unavailable", apiActive3GPP, "20ms", 0, 40000, 0, n, no},
		{"active-standby with no available access sends nothing", apiActive3GPP, "", 0, 0, 0, no, no},

		// smallest-delay: the available access with the smaller RTT; a tie goes to 3GPP.
		{"smallest-delay picks the smaller RTT", apiSmallest, "", 30000, 10000, 0, n, no},
		{"smallest-delay picks 3GPP when it is faster", apiSmallest, "", 9000, 10000, 0, g, no},
		{"smallest-delay gives a tie to 3GPP", apiSmallest, "", 10000, 10000, 0, g, no},
		{"smallest-delay takes the only available access whatever its RTT", apiSmallest, "", 0, 900000, 0, n, no},
		{"smallest-delay ignores the threshold", apiSmallest, "1ms", 5000, 9000, 0, g, no},
		{"smallest-delay with no available access sends nothing", apiSmallest, "", 0, 0, 0, no, no},

		// load-balance: both ok: 3GPP when seq%128 < ratio (30% is 38/128); else smallest-delay
		// over the ok accesses, then over the available ones.
		{"load-balance sends seq 37 on 3GPP (37 < 38)", apiLB30, "", 10000, 10000, 37, g, no},
		{"load-balance sends seq 38 on non-3GPP", apiLB30, "", 10000, 10000, 38, n, no},
		{"load-balance counts seq modulo 128", apiLB30, "", 10000, 10000, 128 + 37, g, no},
		{"load-balance sends unsequenced traffic (seq 0) on 3GPP", apiLB30, "", 10000, 10000, 0, g, no},
		{"load-balance at 0 percent sends everything on non-3GPP", lb(0), "", 10000, 10000, 0, n, no},
		{"load-balance at 100 percent sends everything on 3GPP", lb(100), "", 10000, 10000, 127, g, no},
		{"load-balance sends on the only access within the threshold", apiLB30, "20ms", 10000, 30000, 100, g, no},
		{"load-balance over the threshold on both takes the faster available", apiLB30, "20ms", 30000, 25000, 0, n, no},
		{"load-balance with one access unavailable takes the other", apiLB30, "", 0, 25000, 0, n, no},
		{"load-balance with no available access sends nothing", apiLB30, "", 0, 0, 0, no, no},

		// priority-based: ok(A) → A; else avail(B) → B (overflow); else avail(A) → A.
		{"priority-based sends on the priority access under its threshold", apiPriority, "", 30000, 10000, 0, g, no},
		{"priority-based keeps the priority access at its threshold", apiPriority, "", 40000, 10000, 0, g, no},
		{"priority-based overflows to the other access over the threshold", apiPriority, "", 40001, 90000, 0, n, no},
		{"priority-based stays on the priority access over the threshold when the other is unavailable", apiPriority, "", 90000, 0, 0, g, no},
		{"priority-based uses the other access when the priority one is unavailable", apiPriority, "", 0, 90000, 0, n, no},
		{"priority-based with WiFi priority sends on WiFi", priority(junctionv1.AccessNon3GPP, "40ms"), "", 10000, 30000, 0, n, no},
		{"priority-based with WiFi priority overflows to 3GPP", priority(junctionv1.AccessNon3GPP, "40ms"), "", 90000, 50000, 0, g, no},
		{"priority-based with no available access sends nothing", apiPriority, "", 0, 0, 0, no, no},

		// redundant: a copy on every available access, 3GPP first.
		{"redundant sends on 3GPP and a copy on non-3GPP", apiRedundant, "", 30000, 10000, 5, g, n},
		{"redundant with only non-3GPP available sends one copy", apiRedundant, "", 0, 10000, 5, n, no},
		{"redundant with only 3GPP available sends one copy", apiRedundant, "", 10000, 0, 5, g, no},
		{"redundant with no available access sends nothing", apiRedundant, "", 0, 0, 5, no, no},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, second := Choose(enc(t, c.mode, c.threshold), Path{RTT: c.r3}, Path{RTT: c.rn}, 0, c.seq)
			if first != c.first || second != c.second {
				t.Errorf("got (%v, %v), want (%v, %v)", first, second, c.first, c.second)
			}
		})
	}
}

// TestChooseAutonomous: autonomous load-balance with both accesses ok sends seq%128 below the
// share on 3GPP, whatever the RTTs; a share of 0 (never moved) is 64; otherwise it falls back as
// load-balance does.
func TestChooseAutonomous(t *testing.T) {
	for _, c := range []struct {
		name      string
		threshold string
		r3, rn    uint32
		share     contract.AutonomousShare
		seq       uint32
		first     contract.Access
	}{
		{"a share never moved sends seq 63 on 3GPP", "", 30000, 10000, 0, 63, g},
		{"a share never moved sends seq 64 on non-3GPP", "", 30000, 10000, 0, 64, n},
		{"a share of 100 sends seq 99 on 3GPP though non-3GPP is faster", "", 30000, 10000, 100, 99, g},
		{"a share of 100 sends seq 100 on non-3GPP", "", 30000, 10000, 100, 100, n},
		{"the share counts seq modulo 128", "", 10000, 10000, 2, 128 + 1, g},
		{"a share of 2 sends seq 2 on non-3GPP", "", 10000, 10000, 2, 2, n},
		{"with one access over the threshold it takes the other whatever the share", "20ms", 10000, 30000, 2, 100, g},
		{"with one access unavailable it takes the other whatever the share", "", 0, 10000, 126, 1, n},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, second := Choose(enc(t, apiAutoLB, c.threshold), Path{RTT: c.r3}, Path{RTT: c.rn}, c.share, c.seq)
			if first != c.first || second != no {
				t.Errorf("got (%v, %v), want (%v, %v)", first, second, c.first, no)
			}
		})
	}
}

// TestChooseLossThreshold follows the same table with a policy's packetLossPercent: an access
// meets it while its loss is at most that percent (docs/pipeline.md, ok(a)), in the modes that
// read thresholds. Losses are in percent; both accesses are up (3GPP 30 ms, WiFi 10 ms).
func TestChooseLossThreshold(t *testing.T) {
	for _, c := range []struct {
		name          string
		mode          junctionv1.SteeringMode
		percent       int32 // thresholds.packetLossPercent
		l3, ln        uint8
		first, second contract.Access
	}{
		{"active-standby keeps WiFi at exactly the threshold", apiActiveWiFi, 10, 0, 10, n, no},
		{"active-standby leaves WiFi above the threshold", apiActiveWiFi, 10, 0, 15, g, no},
		{"active-standby keeps WiFi when 5G is as lossy", apiActiveWiFi, 10, 50, 15, n, no},
		{"a threshold of 0 tolerates no loss", apiActiveWiFi, 0, 0, 5, g, no},
		{"priority-based overflows from a lossy priority access", priority(junctionv1.AccessNon3GPP, "40ms"), 2, 0, 5, g, no},
		{"load-balance sends everything on the access within the threshold", lb(50), 5, 20, 0, n, no},
		{"smallest-delay reads no threshold", junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay}, 5, 0, 90, n, no},
		{"redundant reads no threshold", apiRedundant, 5, 90, 90, g, n},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := desired.EncodeSteering(c.mode, &junctionv1.Thresholds{PacketLossPercent: ptr(c.percent)})
			if err != nil {
				t.Fatal(err)
			}
			first, second := Choose(s, Path{RTT: 30000, Loss: c.l3}, Path{RTT: 10000, Loss: c.ln}, 0, 1)
			if first != c.first || second != c.second {
				t.Errorf("got (%v, %v), want (%v, %v)", first, second, c.first, c.second)
			}
		})
	}
}

func TestChooseUnknownModeSteersLikeActiveStandby(t *testing.T) {
	// The pipeline's default branch: any mode it does not know is active-standby.
	s := desired.Steering{Mode: 9, Access: contract.AccessNon3GPP}
	if first, second := Choose(s, Path{RTT: 10000}, Path{RTT: 30000}, 0, 0); first != n || second != no {
		t.Errorf("got (%v, %v), want (non-3GPP, none)", first, second)
	}
	if first, _ := Choose(s, Path{RTT: 10000}, Path{}, 0, 0); first != g {
		t.Errorf("got %v, want 3GPP once non-3GPP is unavailable", first)
	}
}

func TestDefaultApplicationSteersOn3GPP(t *testing.T) {
	c, err := NewClassifier(nil, junctionv1.ATSSSSessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	_, s := c.Classify(pkt{src: ue, dst: server, proto: udp}.bytes())
	if first, _ := Choose(s, Path{RTT: 30000}, Path{RTT: 10000}, 0, 0); first != g {
		t.Errorf("the default application went on %v, want 3GPP (active-standby on 3GPP)", first)
	}
}
