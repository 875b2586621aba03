package gnb

import (
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

var n3 = netip.MustParseAddr("198.51.100.10")

func upf(ns, name string, eps ...junctionv1.TunnelEndpoint) junctionv1.UserPlaneFunction {
	return junctionv1.UserPlaneFunction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: junctionv1.UserPlaneFunctionSpec{TunnelEndpoints: eps}}
}

func ep(name, n3Addr string) junctionv1.TunnelEndpoint {
	return junctionv1.TunnelEndpoint{Name: name, N3Address: junctionv1.IPv4Address(n3Addr), JunctionAddress: "192.0.2.2"}
}

func sess(ns, name, gnb, ue string, ul, dl int64, mod func(*junctionv1.ATSSSSession)) junctionv1.ATSSSSession {
	s := junctionv1.ATSSSSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: junctionv1.ATSSSSessionSpec{
			UPFRef: junctionv1.LocalObjectReference{Name: "upf"},
			AccessLegs: junctionv1.AccessLegs{ThreeGPP: &junctionv1.ThreeGPPLeg{
				UEAddress: junctionv1.IPv4Address(ue), GNBAddress: junctionv1.IPv4Address(gnb), UplinkTEID: ul, DownlinkTEID: dl,
			}},
		},
	}
	if mod != nil {
		mod(&s)
	}
	return s
}

func TestBuildTable(t *testing.T) {
	upfs := []junctionv1.UserPlaneFunction{
		upf("a", "upf", ep("core", "192.0.2.1"), ep("edge", "192.0.2.101")),
		upf("b", "upf", ep("core", "192.0.2.201")),
	}
	sessions := []junctionv1.ATSSSSession{
		// Served: the first endpoint's N3 address when spec.tunnelEndpoint is empty, the named one otherwise.
		sess("a", "s1", "198.51.100.10", "10.45.0.1", 4097, 8193, nil),
		sess("a", "s2", "198.51.100.10", "10.45.0.2", 4098, 8194, func(s *junctionv1.ATSSSSession) { s.Spec.TunnelEndpoint = "edge"; s.Spec.QFI = 5 }),
		// The UPF is looked up in the session's own namespace.
		sess("b", "s3", "198.51.100.10", "10.45.0.3", 4099, 8195, nil),
		// Not this gNB's, or no 3GPP leg: ignored without an error.
		sess("a", "other-gnb", "198.51.100.11", "10.45.0.9", 5000, 9000, nil),
		sess("a", "wifi-only", "198.51.100.10", "10.45.0.8", 5001, 9001, func(s *junctionv1.ATSSSSession) { s.Spec.AccessLegs.ThreeGPP = nil }),
		// Not served, each with an error naming the field.
		sess("a", "no-upf", "198.51.100.10", "10.45.0.20", 6000, 10000, func(s *junctionv1.ATSSSSession) { s.Spec.UPFRef.Name = "gone" }),
		sess("a", "no-endpoint", "198.51.100.10", "10.45.0.21", 6001, 10001, func(s *junctionv1.ATSSSSession) { s.Spec.TunnelEndpoint = "nope" }),
		sess("a", "dup-ue-1", "198.51.100.10", "10.45.0.30", 6002, 10002, nil),
		sess("a", "dup-ue-2", "198.51.100.10", "10.45.0.30", 6003, 10003, nil),
		sess("a", "dup-teid-1", "198.51.100.10", "10.45.0.31", 6004, 10004, nil),
		sess("a", "dup-teid-2", "198.51.100.10", "10.45.0.32", 6005, 10004, nil),
	}
	tbl, errs := BuildTable(RoleGNB, n3, sessions, upfs)

	want := map[string]Bearer{
		"10.45.0.1": {UE: netip.MustParseAddr("10.45.0.1"), UPF: netip.MustParseAddr("192.0.2.1"), UplinkTEID: 4097, DownlinkTEID: 8193, Session: "a/s1"},
		"10.45.0.2": {UE: netip.MustParseAddr("10.45.0.2"), UPF: netip.MustParseAddr("192.0.2.101"), UplinkTEID: 4098, DownlinkTEID: 8194, QFI: 5, Session: "a/s2"},
		"10.45.0.3": {UE: netip.MustParseAddr("10.45.0.3"), UPF: netip.MustParseAddr("192.0.2.201"), UplinkTEID: 4099, DownlinkTEID: 8195, Session: "b/s3"},
	}
	if tbl.Len() != len(want) {
		t.Errorf("%d bearers, want %d", tbl.Len(), len(want))
	}
	for ue, b := range want {
		if got, ok := tbl.Uplink(netip.MustParseAddr(ue)); !ok || got != b {
			t.Errorf("Uplink(%s) = %+v, %v; want %+v", ue, got, ok, b)
		}
		if got, ok := tbl.Downlink(b.DownlinkTEID); !ok || got != b {
			t.Errorf("Downlink(%d) = %+v, %v; want %+v", b.DownlinkTEID, got, ok, b)
		}
	}
	for _, ue := range []string{"10.45.0.9", "10.45.0.8", "10.45.0.20", "10.45.0.30", "10.45.0.31", "10.45.0.32"} {
		if _, ok := tbl.Uplink(netip.MustParseAddr(ue)); ok {
			t.Errorf("UE %s is served; it must not be", ue)
		}
	}
	if _, ok := tbl.Downlink(10004); ok {
		t.Error("a downlink TEID two sessions share is served")
	}
	// A session without spec.qfi: uplink in the default flow 9, downlink in any flow or none.
	// With QFI 5: uplink in 5, downlink in 5 only (a G-PDU without a container reads as 0).
	s1, _ := tbl.Uplink(netip.MustParseAddr("10.45.0.1"))
	s2, _ := tbl.Uplink(netip.MustParseAddr("10.45.0.2"))
	if s1.UplinkQFI() != 9 || !s1.TakesDownlink(0) || !s1.TakesDownlink(7) {
		t.Errorf("a session without a QFI: uplink QFI %d, takes a downlink without a container %v, in flow 7 %v; want 9, true, true",
			s1.UplinkQFI(), s1.TakesDownlink(0), s1.TakesDownlink(7))
	}
	if s2.UplinkQFI() != 5 || !s2.TakesDownlink(5) || s2.TakesDownlink(0) || s2.TakesDownlink(9) {
		t.Errorf("a session with QFI 5: uplink QFI %d, takes flow 5 %v, none %v, flow 9 %v; want 5, true, false, false",
			s2.UplinkQFI(), s2.TakesDownlink(5), s2.TakesDownlink(0), s2.TakesDownlink(9))
	}

	wantErrs := map[string]string{
		"a/no-upf":      "spec.upfRef",
		"a/no-endpoint": "spec.tunnelEndpoint",
		"a/dup-ue-1":    "spec.accessLegs.threeGPP.ueAddress",
		"a/dup-ue-2":    "spec.accessLegs.threeGPP.ueAddress",
		"a/dup-teid-1":  "spec.accessLegs.threeGPP.downlinkTEID",
		"a/dup-teid-2":  "spec.accessLegs.threeGPP.downlinkTEID",
	}
	if len(errs) != len(wantErrs) {
		t.Errorf("%d errors, want %d: %v", len(errs), len(wantErrs), errs)
	}
	for _, e := range errs {
		field, ok := wantErrs[e.Session]
		if !ok || !strings.Contains(e.Error(), field) || !strings.Contains(e.Error(), e.Session) {
			t.Errorf("error %q: want it for one of %v, naming the session and %q", e.Error(), wantErrs, field)
		}
	}
}

// TestBuildTableWAGF: the W-AGF role serves the non-3GPP legs over N3 that name its address,
// with their own TEIDs and UE addresses; plain non-3GPP legs and 3GPP legs are not its.
func TestBuildTableWAGF(t *testing.T) {
	wagf := netip.MustParseAddr("203.0.113.2")
	upfs := []junctionv1.UserPlaneFunction{upf("a", "upf", ep("core", "192.0.2.1"))}
	overN3 := func(gw, ue string, ul, dl int64) func(*junctionv1.ATSSSSession) {
		return func(s *junctionv1.ATSSSSession) {
			s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWireline,
				UEAddress: junctionv1.IPv4Address(ue), GatewayAddress: junctionv1.IPv4Address(gw), UplinkTEID: ul, DownlinkTEID: dl}
		}
	}
	sessions := []junctionv1.ATSSSSession{
		// Its 3GPP leg names this address as a gNB: not the W-AGF's business.
		sess("a", "rg", "203.0.113.2", "10.45.0.1", 4097, 8193, overN3("203.0.113.2", "203.0.113.12", 0x3001, 0x3002)),
		sess("a", "other-wagf", "198.51.100.10", "10.45.0.2", 4098, 8194, overN3("203.0.113.3", "203.0.113.13", 0x3003, 0x3004)),
		sess("a", "plain", "198.51.100.10", "10.45.0.3", 4099, 8195, func(s *junctionv1.ATSSSSession) {
			s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.14", GatewayAddress: "203.0.113.2"}
		}),
		sess("a", "dup", "198.51.100.10", "10.45.0.4", 4100, 8196, overN3("203.0.113.2", "203.0.113.15", 0x3005, 0x3002)),
	}
	tbl, errs := BuildTable(RoleWAGF, wagf, sessions, upfs)
	if tbl.Len() != 0 || len(errs) != 2 {
		t.Fatalf("%d bearers, errors %v; want none served (rg and dup share downlink TEID 0x3002), two errors", tbl.Len(), errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "spec.accessLegs.nonThreeGPP.downlinkTEID") {
			t.Errorf("error %q does not name spec.accessLegs.nonThreeGPP.downlinkTEID", e.Error())
		}
	}
	tbl, errs = BuildTable(RoleWAGF, wagf, sessions[:3], upfs)
	want := Bearer{UE: netip.MustParseAddr("203.0.113.12"), UPF: netip.MustParseAddr("192.0.2.1"), UplinkTEID: 0x3001, DownlinkTEID: 0x3002, Session: "a/rg"}
	if len(errs) != 0 || tbl.Len() != 1 {
		t.Fatalf("%d bearers, errors %v; want rg's non-3GPP leg only", tbl.Len(), errs)
	}
	if got, ok := tbl.Downlink(0x3002); !ok || got != want {
		t.Errorf("Downlink(0x3002) = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := tbl.Uplink(netip.MustParseAddr("10.45.0.1")); ok {
		t.Error("the W-AGF serves a 3GPP leg")
	}
}
