package addrpool

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

func pool(ns string, sessions, ues []junctionv1.IPv4Prefix) junctionv1.AddressPool {
	return junctionv1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: ns + "-pool"},
		Spec: junctionv1.AddressPoolSpec{Namespace: ns, SessionAddresses: sessions, UEAddresses: ues}}
}

func session(ns, addr, leg3, legN string) *junctionv1.ATSSSSession {
	s := &junctionv1.ATSSSSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}
	s.Spec.SessionAddress = junctionv1.IPv4Address(addr)
	if leg3 != "" {
		s.Spec.AccessLegs.ThreeGPP = &junctionv1.ThreeGPPLeg{UEAddress: junctionv1.IPv4Address(leg3)}
	}
	if legN != "" {
		s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{UEAddress: junctionv1.IPv4Address(legN)}
	}
	return s
}

func TestCheck(t *testing.T) {
	pools := []junctionv1.AddressPool{
		pool("tenant-a", []junctionv1.IPv4Prefix{"10.60.0.0/24"}, []junctionv1.IPv4Prefix{"10.45.0.0/24", "203.0.113.0/24"}),
		pool("tenant-b", []junctionv1.IPv4Prefix{"10.61.0.0/24", "10.96.0.0/24"}, []junctionv1.IPv4Prefix{"10.46.0.0/24"}),
	}
	reserved := []Reserved{{netip.MustParsePrefix("10.96.0.0/12"), "the cluster's service range (ServiceCIDR kubernetes)"}}
	for _, tc := range []struct {
		name    string
		s       *junctionv1.ATSSSSession
		field   string // "" when allowed
		message string
	}{
		{"a session whose addresses its namespace's pools hold is allowed", session("tenant-a", "10.60.0.1", "10.45.0.1", "203.0.113.1"), "", ""},
		{"a session address from another namespace's pool is refused", session("tenant-b", "10.60.0.1", "10.46.0.1", ""), "spec.sessionAddress", "in no AddressPool's spec.sessionAddresses for namespace tenant-b"},
		{"a leg address from another namespace's pool is refused", session("tenant-b", "10.61.0.1", "10.45.0.1", ""), "spec.accessLegs.threeGPP.ueAddress", "10.45.0.1 is in no AddressPool's spec.ueAddresses"},
		{"a non-3GPP leg outside every pool is refused", session("tenant-a", "10.60.0.1", "", "198.51.100.1"), "spec.accessLegs.nonThreeGPP.ueAddress", "198.51.100.1"},
		{"a session address a pool holds but the cluster reserves is refused", session("tenant-b", "10.96.0.10", "", "10.46.0.1"), "spec.sessionAddress", "10.96.0.10 is in the cluster's service range (ServiceCIDR kubernetes) 10.96.0.0/12"},
		{"a namespace without pools gets nothing", session("tenant-c", "10.60.0.1", "", "203.0.113.1"), "spec.sessionAddress", "namespace tenant-c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.s, pools, reserved)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("Check: %v, want a refusal of %s saying %q", err, tc.field, tc.message)
			}
		})
	}
}
