package ueagent

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

func testUPF() *junctionv1.UserPlaneFunction {
	return &junctionv1.UserPlaneFunction{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "upf"},
		Spec: junctionv1.UserPlaneFunctionSpec{TunnelEndpoints: []junctionv1.TunnelEndpoint{
			{Name: "core", N3Address: "192.0.2.1", JunctionAddress: "192.0.2.2"},
			{Name: "edge", N3Address: "192.0.2.101", JunctionAddress: "192.0.2.102"},
		}},
	}
}

func newTestSession(mod func(*junctionv1.ATSSSSession)) *junctionv1.ATSSSSession {
	s := &junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s1", Generation: 3},
		Spec: junctionv1.ATSSSSessionSpec{
			SessionAddress: "10.60.0.1",
			UPFRef:         junctionv1.LocalObjectReference{Name: "upf"},
			AccessLegs: junctionv1.AccessLegs{
				ThreeGPP:    &junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.1", GNBAddress: "198.51.100.10", UplinkTEID: 1, DownlinkTEID: 2},
				NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.11"},
			},
			PolicyRefs: []junctionv1.LocalObjectReference{{Name: "video"}, {Name: "absent"}},
		},
	}
	if mod != nil {
		mod(s)
	}
	return s
}

func policyWithID(name string, id int32, prefixes ...junctionv1.IPv4Prefix) junctionv1.SteeringPolicy {
	p := junctionv1.SteeringPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	p.Spec.TrafficDescriptor.DestinationPrefixes = prefixes
	if id > 0 {
		p.Status.ApplicationID = &id
	}
	return p
}

func TestBuildConfig(t *testing.T) {
	policies := []junctionv1.SteeringPolicy{policyWithID("video", 7, "198.18.10.0/24")}
	c, unresolved, err := BuildConfig(newTestSession(nil), testUPF(), policies)
	if err != nil {
		t.Fatal(err)
	}
	want := [3]netip.Addr{contract.Access3GPP: netip.MustParseAddr("10.45.0.1"), contract.AccessNon3GPP: netip.MustParseAddr("203.0.113.11")}
	if c.Session != netip.MustParseAddr("10.60.0.1") || c.UPF != netip.MustParseAddr("192.0.2.2") || c.Legs != want || c.Generation != 3 {
		t.Errorf("config %+v: want session 10.60.0.1, the first endpoint's junctionAddress 192.0.2.2, both legs, generation 3", c)
	}
	if len(c.Policies) != 1 || c.Policies[0].Name != "video" || len(unresolved) != 1 || unresolved[0] != "absent" {
		t.Errorf("policies %+v, unresolved %v: want video selected and absent reported", c.Policies, unresolved)
	}

	// The named endpoint, and a 3GPP-only session.
	c, _, err = BuildConfig(newTestSession(func(s *junctionv1.ATSSSSession) {
		s.Spec.TunnelEndpoint = "edge"
		s.Spec.AccessLegs.NonThreeGPP = nil
	}), testUPF(), nil)
	if err != nil || c.UPF != netip.MustParseAddr("192.0.2.102") || c.Legs[contract.AccessNon3GPP].IsValid() {
		t.Errorf("endpoint edge, no WiFi leg: %+v, %v", c, err)
	}

	for _, tc := range []struct {
		name  string
		mod   func(*junctionv1.ATSSSSession)
		upf   *junctionv1.UserPlaneFunction
		field string
	}{
		{"bad session address", func(s *junctionv1.ATSSSSession) { s.Spec.SessionAddress = "10.60.0" }, testUPF(), "spec.sessionAddress"},
		{"unspecified session address", func(s *junctionv1.ATSSSSession) { s.Spec.SessionAddress = "0.0.0.0" }, testUPF(), "spec.sessionAddress"},
		{"UPF missing", nil, nil, "spec.upfRef"},
		{"endpoint missing", func(s *junctionv1.ATSSSSession) { s.Spec.TunnelEndpoint = "nope" }, testUPF(), "spec.tunnelEndpoint"},
		{"bad 3GPP address", func(s *junctionv1.ATSSSSession) { s.Spec.AccessLegs.ThreeGPP.UEAddress = "x" }, testUPF(), "spec.accessLegs.threeGPP.ueAddress"},
		{"IPv6 WiFi address", func(s *junctionv1.ATSSSSession) { s.Spec.AccessLegs.NonThreeGPP.UEAddress = "2001:db8::1" }, testUPF(), "spec.accessLegs.nonThreeGPP.ueAddress"},
	} {
		if _, _, err := BuildConfig(newTestSession(tc.mod), tc.upf, nil); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
}

func TestSameTunnel(t *testing.T) {
	base := Config{Session: netip.MustParseAddr("10.60.0.1"), UPF: netip.MustParseAddr("192.0.2.2"),
		Legs: [3]netip.Addr{contract.Access3GPP: netip.MustParseAddr("10.45.0.1")}}
	steer := base
	steer.Policies = []desired.Policy{{Name: "video"}}
	steer.Generation = 9
	if !base.sameTunnel(steer) {
		t.Error("a policy or generation change needs a new tunnel; it must update in place")
	}
	for name, mod := range map[string]func(*Config){
		"session address": func(c *Config) { c.Session = netip.MustParseAddr("10.60.0.2") },
		"UPF":             func(c *Config) { c.UPF = netip.MustParseAddr("192.0.2.3") },
		"a leg added":     func(c *Config) { c.Legs[contract.AccessNon3GPP] = netip.MustParseAddr("203.0.113.11") },
	} {
		o := base
		mod(&o)
		if base.sameTunnel(o) {
			t.Errorf("a changed %s kept the tunnel", name)
		}
	}
}

func TestAgentView(t *testing.T) {
	probe := time.Date(2026, 11, 24, 10, 0, 0, 700e6, time.UTC)
	legs := []LegView{
		{Access: contract.Access3GPP, State: junctionv1.LegUp, Interface: "ran0", RTT: 12345678 * time.Nanosecond, LastProbe: probe,
			LossPercent: 25, LossProbes: 20},
		{Access: contract.AccessNon3GPP, State: junctionv1.LegDown, Reason: "LinkDown", Interface: "wlan0", LossPercent: 100, LossProbes: 3},
	}
	st, c := agentView("node-a", "jx0a3c0001", 4, legs, []string{"gone"}, condition{})
	if st.NodeName != "node-a" || st.Interface != "jx0a3c0001" || st.ObservedGeneration != 4 || len(st.Legs) != 2 {
		t.Fatalf("status %+v", st)
	}
	if l := st.Legs[0]; l.Access != junctionv1.Access3GPP || l.RTT != "12.346ms" || l.LastProbe == nil || !l.LastProbe.Time.Equal(probe.Truncate(time.Second)) {
		t.Errorf("3GPP leg %+v: want RTT 12.346ms (µs precision) and the probe time in whole seconds", l)
	}
	if l := st.Legs[0]; l.LossPercent == nil || *l.LossPercent != 25 {
		t.Errorf("3GPP leg loss %v, want 25%% (20 probes counted)", l.LossPercent)
	}
	if l := st.Legs[1]; l.Access != junctionv1.AccessNon3GPP || l.State != junctionv1.LegDown || l.Reason != "LinkDown" || l.RTT != "" || l.LastProbe != nil ||
		l.LossPercent != nil { // 3 probes are too few to say
		t.Errorf("WiFi leg %+v", l)
	}
	if c.status != metav1.ConditionTrue || c.reason != "TunnelUp" || !strings.Contains(c.message, "Non3GPP Down (LinkDown)") || !strings.Contains(c.message, "gone") {
		t.Errorf("condition %+v: want True/TunnelUp naming the down leg and the unresolved policy", c)
	}

	legs[0].State, legs[0].Reason = junctionv1.LegNoAddress, "AddressNotOnNode"
	if _, c := agentView("node-a", "jx0a3c0001", 4, legs, nil, condition{}); c.status != metav1.ConditionFalse || c.reason != "NoWorkingLeg" {
		t.Errorf("no leg up: %+v, want False/NoWorkingLeg", c)
	}
	if _, c := agentView("node-a", "", 4, nil, nil, notReady("InvalidSession", "spec.sessionAddress: bad")); c.status != metav1.ConditionFalse || c.reason != "InvalidSession" {
		t.Errorf("forced condition: %+v", c)
	}
}

func TestLegStatesEqual(t *testing.T) {
	a := junctionv1.AgentStatus{NodeName: "n", Interface: "jx", Legs: []junctionv1.AgentLeg{{Access: junctionv1.Access3GPP, State: junctionv1.LegUp, RTT: "1ms"}}}
	b := *a.DeepCopy()
	b.Legs[0].RTT = "2ms" // RTTs alone wait for the status interval
	if !legStatesEqual(a, b) {
		t.Error("views differing only in RTT are reported as a state change")
	}
	b.Legs[0].State = junctionv1.LegDown
	if legStatesEqual(a, b) {
		t.Error("a leg going down is not a state change")
	}
}
