package n4

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Flow Descriptions as TS 29.212 §5.4.2 writes them for the downlink ("permit out", from the
// remote side to the UE), and what a Junction traffic descriptor (seen from the UE: the
// server's side is destination*) must say of them.
func TestParseFlowDescription(t *testing.T) {
	ue := netip.MustParseAddr("10.60.0.7")
	to := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		in   string
		want junctionv1.TrafficDescriptor
	}{
		{"permit out ip from any to assigned", junctionv1.TrafficDescriptor{}},
		{"permit out 17 from 198.51.100.0/24 to assigned 5000-5100", junctionv1.TrafficDescriptor{
			Protocol: junctionv1.ProtocolUDP, DestinationPrefixes: []junctionv1.IPv4Prefix{"198.51.100.0/24"},
			SourcePorts: []junctionv1.PortRange{{From: 5000, To: to(5100)}}}},
		{"permit out 6 from 192.0.2.10 443 to 10.60.0.7", junctionv1.TrafficDescriptor{
			Protocol: junctionv1.ProtocolTCP, DestinationPrefixes: []junctionv1.IPv4Prefix{"192.0.2.10/32"},
			DestinationPorts: []junctionv1.PortRange{{From: 443}}}},
		{"permit out 6 from any 80,443,8000-8080 to assigned", junctionv1.TrafficDescriptor{
			Protocol: junctionv1.ProtocolTCP, DestinationPorts: []junctionv1.PortRange{{From: 80}, {From: 443}, {From: 8000, To: to(8080)}}}},
		{"permit out 1 from 203.0.113.0/24 to 10.60.0.0/16", junctionv1.TrafficDescriptor{
			Protocol: junctionv1.ProtocolICMP, DestinationPrefixes: []junctionv1.IPv4Prefix{"203.0.113.0/24"}, SourcePrefixes: []junctionv1.IPv4Prefix{"10.60.0.0/16"}}},
	} {
		got, err := parseFlowDescription(tc.in, ue)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !equalJSON(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"deny out ip from any to assigned", "want \"permit out"},
		{"permit in ip from any to assigned", "want \"permit out"},
		{"permit out 47 from any to assigned", "protocol \"47\""},
		{"permit out 6 from any to assigned established", "options \"established\""},
		{"permit out 6 from 198.51.100.7/24 to assigned", "host bits"},
		{"permit out 6 from any 99999 to assigned", "port \"99999\""},
		{"permit out 6 from any 90-80 to assigned", "not low-high"},
		{"permit out ip from any 80 to assigned", "ports need protocol 6 or 17"},
		{"permit out 6 from any", "want \"permit out"},
		{"permit out 6 from any frag to assigned", "\"to\" expected"},
		{"permit out 6 from 2001:db8::/32 to assigned", "not any, assigned or an IPv4 prefix"},
	} {
		_, err := parseFlowDescription(tc.in, ue)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
