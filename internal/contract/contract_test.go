package contract

import "testing"

// TestAutonomousShareValid follows docs/junction-header.md: the UPF takes a PROBE_ACK's share
// from 1 to 127 (each access keeps at least one packet in 128) and ignores 0 (none) and 128 up;
// a share never set (0) splits evenly.
func TestAutonomousShareValid(t *testing.T) {
	for _, c := range []struct {
		share     AutonomousShare
		valid     bool
		ratio3GPP uint32
	}{
		{0, false, 64}, {1, true, 1}, {26, true, 26}, {127, true, 127}, {128, false, 128}, {255, false, 255},
	} {
		if got := c.share.Valid(); got != c.valid {
			t.Errorf("AutonomousShare(%d).Valid() = %v, want %v", c.share, got, c.valid)
		}
		if got := c.share.Ratio3GPP(); got != c.ratio3GPP {
			t.Errorf("AutonomousShare(%d).Ratio3GPP() = %d, want %d", c.share, got, c.ratio3GPP)
		}
	}
}
