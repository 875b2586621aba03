package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/p4"
)

// A Tofino UPF's pipeline ConfigMap holds bf-p4c's P4Info (p4/tna/p4info.txtpb), whose registers,
// counter and digest carry other IDs than p4c's (docs/tofino.md). The operator must program it by
// name all the same. Here against the software UPF, which serves whatever P4Info it is pushed:
// every entry and register the objects call for, at the IDs of the Tofino build.
func TestTheTofinoP4InfoIsProgrammedByName(t *testing.T) {
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	v1, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	info, err := p4.TNAP4Info()
	if err != nil {
		t.Fatal(err)
	}
	// The premise: the two builds' register IDs differ, or this test proves nothing new.
	v1IDs := map[string]uint32{}
	for _, r := range v1.GetRegisters() {
		v1IDs[r.GetPreamble().GetName()] = r.GetPreamble().GetId()
	}
	differ := 0
	for _, r := range info.GetRegisters() {
		if id, ok := v1IDs[r.GetPreamble().GetName()]; ok && id != r.GetPreamble().GetId() {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the TNA P4Info's registers have the v1model IDs: nothing to resolve by name")
	}

	cm, sch := pipelineConfigMapOf(t, ns, "pipeline", info)
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	grantDevice(t, upf)
	create(t, cm, upf)
	startOperator(t, ns, operatorOptions{})
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	lb := loadBalancePolicy(ns, "video", 10, 30, "198.18.10.0/24")
	create(t, lb)
	waitCondition(t, programTimeout, lb, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	s := session(ns, "a1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10", "video")
	create(t, s)
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries", func() error { return sameEntries(u, sch, ns, "upf") })
	got := &junctionv1.ATSSSSession{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), got); err != nil {
		t.Fatal(err)
	}
	for _, reg := range pathStateRegisters {
		if v, err := u.register(sch, reg, int64(*got.Status.UserIndex)); err != nil || v != 0 {
			t.Errorf("%s[%d] = %d (%v), want 0", reg, *got.Status.UserIndex, v, err)
		}
	}

	// The Tofino 2 build's MBR policer (in egress, docs/tofino.md): a session's maxBitRate gets
	// its mbr_sessions entry (in the entries compared above) and its meter cell, by the names of
	// the TNA P4Info: 8,000 kbit/s is 1,000,000 bytes/s, with a bucket of 100 ms of it.
	kbps := int64(8000)
	s2 := session(ns, "a2", "imsi-001010000000002", "10.60.0.2", "upf", "3n", "198.51.100.10", "video")
	s2.Spec.MaxBitRate = &junctionv1.BitRate{DownlinkKbps: &kbps}
	create(t, s2)
	waitCondition(t, programTimeout, s2, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries", func() error { return sameEntries(u, sch, ns, "upf") })
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s2), s2); err != nil {
		t.Fatal(err)
	}
	usage := int64(*s2.Status.UsageIndex)
	entries, err := u.entries(sch)
	if want := fmt.Sprintf("mbr_sessions ue_addr=0a3c0002 -> police(usage_idx=%s)", hx(uint64(usage), 4)); err != nil || !slices.Contains(entries, want) {
		t.Errorf("the UPF's entries (%v) lack %q", err, want)
	}
	c, err := u.meter(sch, "downlink_mbr", usage)
	if err != nil || c == nil || c.Cir != 1_000_000 || c.Pir != 1_000_000 || c.Pburst != 100_000 {
		t.Errorf("downlink_mbr[%d] = %v (%v), want rates of 1,000,000 bytes/s and a peak burst of 100,000", usage, c, err)
	}
}
