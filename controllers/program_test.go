package controllers

import (
	"slices"
	"strings"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/p4"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// A session's MBR is accepted where the UPF's pipeline has the policer (both builds: v1model,
// which the software UPF and BMv2 run, and Tofino 2) and refused where it lacks it, whole or
// in part (docs/pipeline.md, "MBR policer").
func TestAnMBRNeedsAPipelineThatPolices(t *testing.T) {
	kbps := int64(8000)
	cells := desired.SessionMeters(desired.Session{UsageIndex: 3, Spec: junctionv1.ATSSSSessionSpec{MaxBitRate: &junctionv1.BitRate{DownlinkKbps: &kbps}}})
	if len(cells) != 1 {
		t.Fatalf("%d meter cells for a downlink MBR, want 1", len(cells))
	}
	without := func(strip func(*p4configv1.P4Info)) func() (*p4configv1.P4Info, error) {
		return func() (*p4configv1.P4Info, error) {
			info, err := p4.P4Info()
			if err == nil {
				strip(info)
			}
			return info, err
		}
	}
	for _, tc := range []struct {
		name   string
		load   func() (*p4configv1.P4Info, error)
		refuse bool
	}{
		{"v1model", p4.P4Info, false},
		{"tna", p4.TNAP4Info, false},
		{"no meters", without(func(i *p4configv1.P4Info) { i.Meters = nil }), true},
		{"no mbr_sessions", without(func(i *p4configv1.P4Info) {
			i.Tables = slices.DeleteFunc(i.Tables, func(t *p4configv1.Table) bool { return t.GetPreamble().GetName() == "mbr_sessions" })
		}), true},
	} {
		info, err := tc.load()
		if err != nil {
			t.Fatal(err)
		}
		sch, err := upfclient.NewSchema(info)
		if err != nil {
			t.Fatal(err)
		}
		rt := &upfRuntime{}
		rt.pipe.Store(&pipelineSpec{info: info, schema: sch})
		err = rt.canPolice(cells)
		if tc.refuse && (err == nil || !strings.Contains(err.Error(), "spec.maxBitRate")) {
			t.Errorf("%s: %v, want a refusal naming spec.maxBitRate", tc.name, err)
		}
		if !tc.refuse && err != nil {
			t.Errorf("%s: %v, want the MBR accepted", tc.name, err)
		}
	}
}
