package desired

import (
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// TestSessionMeters: a direction with an MBR gets its cell at the MBR (rate in bytes per second,
// 100 ms bursts), a closed gate its cell at every rate and burst zero whatever its MBR
// (docs/pipeline.md, "MBR policer"), a direction with neither no cell.
func TestSessionMeters(t *testing.T) {
	kbps := int64(8000) // 1,000,000 bytes/s, 100,000-byte bursts
	mbr := MeterConfig{CIR: 1_000_000, CBurst: 100_000, PIR: 1_000_000, PBurst: 100_000}
	for _, tc := range []struct {
		name  string
		rate  *junctionv1.BitRate
		gates *junctionv1.Gates
		want  []MeterCell
	}{
		{"neither", nil, nil, nil},
		{"gates open", nil, &junctionv1.Gates{Uplink: junctionv1.GateOpen}, nil},
		{"a downlink MBR", &junctionv1.BitRate{DownlinkKbps: &kbps}, nil, []MeterCell{{MeterDownlinkMBR, 5, mbr}}},
		{"the uplink closed", nil, &junctionv1.Gates{Uplink: junctionv1.GateClosed}, []MeterCell{{MeterUplinkMBR, 5, MeterConfig{}}}},
		{"an MBR both ways, the downlink closed", &junctionv1.BitRate{UplinkKbps: &kbps, DownlinkKbps: &kbps}, &junctionv1.Gates{Downlink: junctionv1.GateClosed},
			[]MeterCell{{MeterUplinkMBR, 5, mbr}, {MeterDownlinkMBR, 5, MeterConfig{}}}},
	} {
		got := SessionMeters(Session{UsageIndex: 5, Spec: junctionv1.ATSSSSessionSpec{MaxBitRate: tc.rate, Gates: tc.gates}})
		if len(got) != len(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: cell %d %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}
