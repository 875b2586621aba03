package desired

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

func TestCovers(t *testing.T) {
	prefix := func(field string, a, b, c, d, bits byte) Match {
		return Match{Field: field, Kind: Ternary, Value: []byte{a, b, c, d}, Mask: prefixMask(int(bits))}
	}
	ports := func(field string, lo, hi uint16) Match {
		return Match{Field: field, Kind: Range, Low: u16(lo), High: u16(hi)}
	}
	proto := func(p uint8) Match { return Match{Field: "proto", Kind: Ternary, Value: u8(p), Mask: u8(0xff)} }
	for _, tc := range []struct {
		name         string
		outer, inner []Match
		want         bool
	}{
		{"a catch-all covers a catch-all", nil, nil, true},
		{"a catch-all covers anything", nil, []Match{proto(17), ports("remote_port", 443, 443)}, true},
		{"a narrow rule does not cover a catch-all", []Match{proto(17)}, nil, false},
		{"a /16 covers a /24 inside it", []Match{prefix("remote_addr", 198, 18, 0, 0, 16)}, []Match{prefix("remote_addr", 198, 18, 10, 0, 24)}, true},
		{"a /24 does not cover the /16 around it", []Match{prefix("remote_addr", 198, 18, 10, 0, 24)}, []Match{prefix("remote_addr", 198, 18, 0, 0, 16)}, false},
		{"a /16 does not cover a /24 outside it", []Match{prefix("remote_addr", 198, 18, 0, 0, 16)}, []Match{prefix("remote_addr", 198, 19, 10, 0, 24)}, false},
		{"a port range covers one inside it, ends included", []Match{ports("remote_port", 1000, 2000)}, []Match{ports("remote_port", 1000, 2000)}, true},
		{"a port range does not cover one that sticks out", []Match{ports("remote_port", 1000, 2000)}, []Match{ports("remote_port", 1500, 2001)}, false},
		{"every field outer constrains must be as tight in inner", []Match{proto(6), ports("remote_port", 0, 1023)}, []Match{proto(6), ports("remote_port", 443, 443), ports("local_port", 80, 80)}, true},
		{"another protocol is not covered", []Match{proto(6)}, []Match{proto(17)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Covers(tc.outer, tc.inner); got != tc.want {
				t.Errorf("Covers = %v, want %v", got, tc.want)
			}
		})
	}
}

// docs/pipeline.md: the applications table is shared; lower precedence wins, then the lower
// application ID.
func TestShadows(t *testing.T) {
	api := func(name string, id, prec int32, td junctionv1.TrafficDescriptor) junctionv1.SteeringPolicy {
		p := junctionv1.SteeringPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec = junctionv1.SteeringPolicySpec{Precedence: prec, TrafficDescriptor: td, Steering: activeWiFi}
		p.Status.ApplicationID = &id
		return p
	}
	web := junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolTCP, DestinationPorts: []junctionv1.PortRange{{From: 443}}}
	dns := junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolUDP, DestinationPorts: []junctionv1.PortRange{{From: 53}}}
	all := []junctionv1.SteeringPolicy{
		api("everything-a", 1, 10, junctionv1.TrafficDescriptor{}),
		api("everything-b", 2, 20, junctionv1.TrafficDescriptor{}),
		api("web", 3, 5, web),
		api("dns", 4, 30, dns),
		api("tie", 5, 10, junctionv1.TrafficDescriptor{}),
	}
	sel := func(names ...string) []Policy {
		var out []Policy
		for _, p := range all {
			for _, n := range names {
				if p.Name == n {
					out = append(out, Policy{Name: p.Name, AppID: uint16(*p.Status.ApplicationID), Spec: p.Spec})
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		sel  []Policy
		want []Shadow
	}{
		{"the winning catch-all and web are shadowed by nothing", sel("everything-a", "web"), nil},
		{"a lower-precedence catch-all is taken whole by the higher ones, not by a narrower one",
			sel("everything-b", "web"), []Shadow{{"everything-b", "everything-a"}, {"everything-b", "tie"}}},
		{"equal precedence goes to the lower application ID", sel("tie", "web"), []Shadow{{"tie", "everything-a"}}},
		{"a narrow policy above every catch-all is shadowed by nothing", sel("web"), nil},
		{"a narrow policy below a catch-all is taken whole by it", sel("dns", "web"), []Shadow{{"dns", "everything-a"}, {"dns", "everything-b"}, {"dns", "tie"}}},
		{"a catch-all below a narrower unselected policy (web) is layering, not shadowing", sel("everything-a"), nil},
		{"selecting every policy shadows nothing", sel("everything-a", "everything-b", "web", "dns", "tie"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Shadows(tc.sel, all); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Shadows = %v, want %v", got, tc.want)
			}
		})
	}
	pending := api("pending", 9, 1, junctionv1.TrafficDescriptor{})
	pending.Status.ApplicationID = nil
	if got := Shadows(sel("everything-a"), append(all[:1:1], pending)); got != nil {
		t.Errorf("a policy without an application ID is not on the UPF and shadows nothing: %v", got)
	}
}

func TestCoveredBy(t *testing.T) {
	policy := func(name string, prec int32, td junctionv1.TrafficDescriptor) junctionv1.SteeringPolicy {
		p := junctionv1.SteeringPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec = junctionv1.SteeringPolicySpec{Precedence: prec, TrafficDescriptor: td, Steering: activeWiFi}
		return p
	}
	web := junctionv1.TrafficDescriptor{Protocol: junctionv1.ProtocolTCP, DestinationPorts: []junctionv1.PortRange{{From: 443}}}
	all := []junctionv1.SteeringPolicy{
		policy("everything", 50, junctionv1.TrafficDescriptor{}), // no application ID yet: still counted
		policy("web", 5, web),
		policy("also-everything", 10, junctionv1.TrafficDescriptor{}),
	}
	for _, tc := range []struct {
		name string
		q    junctionv1.SteeringPolicy
		want []string
	}{
		{"a catch-all covers every other policy, whatever the precedences", all[0], []string{"web", "also-everything"}},
		{"a narrow policy covers no catch-all", all[1], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CoveredBy(tc.q, all); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("CoveredBy = %v, want %v", got, tc.want)
			}
		})
	}
}
