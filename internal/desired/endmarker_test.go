package desired

import (
	"net/netip"
	"strings"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// An End Marker leaves by the route with the longest prefix that holds the old gNB, with that
// route's MAC addresses; without a route to the gNB there is none, and the error names the gNB.
func TestEndMarkerRoute(t *testing.T) {
	spec := junctionv1.UserPlaneFunctionSpec{
		TunnelEndpoints: []junctionv1.TunnelEndpoint{{Name: "core", N3Address: "192.0.2.1", JunctionAddress: "192.0.2.2"}},
		Ports: []junctionv1.Port{
			{Name: "n3", Number: 1, MAC: "02:00:00:00:01:01"},
			{Name: "n3b", Number: 2, MAC: "02:00:00:00:01:02"},
		},
		Routes: []junctionv1.Route{
			{Destination: "198.51.0.0/16", Port: "n3", NextHopMAC: "02:00:00:00:02:01"},
			{Destination: "198.51.100.0/24", Port: "n3b", NextHopMAC: "02:00:00:00:02:02"},
		},
	}
	frame, port, err := EndMarker(spec, 0, netip.MustParseAddr("198.51.100.10"), 7)
	if err != nil {
		t.Fatal(err)
	}
	if port != 2 || string(frame[:12]) != "\x02\x00\x00\x00\x02\x02\x02\x00\x00\x00\x01\x02" {
		t.Errorf("to 198.51.100.10: port %d, MACs %x; want port 2 (the /24), 02:00:00:00:02:02 from 02:00:00:00:01:02", port, frame[:12])
	}
	if _, _, err := EndMarker(spec, 0, netip.MustParseAddr("203.0.113.1"), 7); err == nil || !strings.Contains(err.Error(), "no route to 203.0.113.1") {
		t.Errorf("to a gNB no route holds: %v, want an error naming it", err)
	}
	if _, _, err := EndMarker(spec, 1, netip.MustParseAddr("198.51.100.10"), 7); err == nil {
		t.Error("from a tunnel endpoint the UPF does not have: no error")
	}
}
