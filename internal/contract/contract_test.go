package contract

import "testing"

// TestAutonomousShareStep follows docs/pipeline.md: each RTT report moves the 3GPP share 2/128
// toward the access with the smaller live RTT, from 64 when it never moved, within [2, 126]; no
// step on equal RTTs or when the other access has no live RTT.
func TestAutonomousShareStep(t *testing.T) {
	for _, c := range []struct {
		name        string
		share       AutonomousShare
		access      Access
		rtt, other  uint32
		want        AutonomousShare
		wantRatio3G uint32
	}{
		{"a share never moved reads as 64 and stays with no live RTT to compare", 0, Access3GPP, 5000, 0, 0, 64},
		{"a faster 3GPP report moves a share never moved to 66", 0, Access3GPP, 5000, 9000, 66, 66},
		{"a slower 3GPP report moves a share never moved to 62", 0, Access3GPP, 9000, 5000, 62, 62},
		{"a faster non-3GPP report moves the share toward non-3GPP", 80, AccessNon3GPP, 5000, 9000, 78, 78},
		{"a slower non-3GPP report moves the share toward 3GPP", 80, AccessNon3GPP, 9000, 5000, 82, 82},
		{"equal RTTs leave the share", 80, Access3GPP, 7000, 7000, 80, 80},
		{"no live RTT on the other access leaves the share", 80, Access3GPP, 7000, 0, 80, 80},
		{"the share stops at 126 toward 3GPP", 126, Access3GPP, 1000, 9000, 126, 126},
		{"the share stops at 2 toward non-3GPP", 2, Access3GPP, 9000, 1000, 2, 2},
		{"an unknown access leaves the share", 80, AccessNone, 1000, 9000, 80, 80},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.share.Step(c.access, c.rtt, c.other)
			if got != c.want || got.Ratio3GPP() != c.wantRatio3G {
				t.Errorf("Step = %d (ratio %d), want %d (ratio %d)", got, got.Ratio3GPP(), c.want, c.wantRatio3G)
			}
		})
	}
}
