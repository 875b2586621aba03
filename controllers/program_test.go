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
		rt := runtimeOf(t, tc.load)
		err := rt.canPolice(cells)
		if tc.refuse && (err == nil || !strings.Contains(err.Error(), "spec.maxBitRate")) {
			t.Errorf("%s: %v, want a refusal naming spec.maxBitRate", tc.name, err)
		}
		if !tc.refuse && err != nil {
			t.Errorf("%s: %v, want the MBR accepted", tc.name, err)
		}
	}
}

// QoS flows of a session's own are accepted where the UPF's pipeline has qos_flows (both builds,
// the Tofino 2 one for 409 sessions: its 2,048 flow meter cells in blocks of QoSFlowBlock,
// docs/tofino.md) and refused where a P4 program leaves them out.
func TestQoSFlowsNeedAPipelineWithThem(t *testing.T) {
	s := &junctionv1.ATSSSSession{Spec: junctionv1.ATSSSSessionSpec{QoSFlows: []junctionv1.QoSFlow{{QFI: 5}}}}
	stripped := func() (*p4configv1.P4Info, error) {
		info, err := p4.P4Info()
		if err == nil {
			info.Tables = slices.DeleteFunc(info.Tables, func(t *p4configv1.Table) bool { return t.GetPreamble().GetName() == "qos_flows" })
		}
		return info, err
	}
	for _, tc := range []struct {
		name   string
		load   func() (*p4configv1.P4Info, error)
		blocks int64 // sessions with flows the pipeline holds; 0: refused
	}{
		{"v1model", p4.P4Info, 65536 / junctionv1.QoSFlowBlock},
		{"tna", p4.TNAP4Info, 409},
		{"no qos_flows", stripped, 0},
	} {
		rt := runtimeOf(t, tc.load)
		err := rt.canHaveQoSFlows(s)
		if tc.blocks == 0 {
			if err == nil || !strings.Contains(err.Error(), "spec.qosFlows") {
				t.Errorf("%s: %v, want a refusal naming spec.qosFlows", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v, want the flows accepted", tc.name, err)
		}
		if n, err := qosFlowBlocks(rt.pipe.Load().schema); n != tc.blocks || err != nil {
			t.Errorf("%s: room for the flows of %d sessions (%v), want %d", tc.name, n, err, tc.blocks)
		}
	}
}

// runtimeOf is a UPF's runtime with the pipeline of the P4Info load gives, and nothing else.
func runtimeOf(t *testing.T, load func() (*p4configv1.P4Info, error)) *upfRuntime {
	t.Helper()
	info, err := load()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := upfclient.NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	rt := &upfRuntime{}
	rt.pipe.Store(&pipelineSpec{info: info, schema: sch})
	return rt
}
