package n4

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"

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

// TestSDFFilter: an SDF Filter (TS 29.244 §8.2.5) as go-pfcp encodes it: a Flow Description; one
// with the SDF Filter ID of a bidirectional filter (BID); the ID alone, the same filter for the
// other direction's PDR (§5.2.1A.2A). Other flags, and ID 0, are refused (76); a malformed one is
// an error.
func TestSDFFilter(t *testing.T) {
	const fd = "permit out 17 from 198.51.100.20 30000 to assigned"
	for _, tc := range []struct {
		name    string
		payload []byte
		desc    string
		id      uint32
		refused bool // 76
		bad     bool // malformed
	}{
		{"a Flow Description", ie.NewSDFFilter(fd, "", "", "", 0).Payload, fd, 0, false, false},
		{"a bidirectional one with its ID", ie.NewSDFFilter(fd, "", "", "", 7).Payload, fd, 7, false, false},
		{"a bidirectional one by its ID alone", ie.NewSDFFilter("", "", "", "", 7).Payload, "", 7, false, false},
		{"a ToS Traffic Class", ie.NewSDFFilter("", "1010", "", "", 0).Payload, "", 0, true, false},
		{"no flag at all", []byte{0, 0}, "", 0, true, false},
		{"a description longer than the IE", []byte{0x01, 0, 0, 9, 'p'}, "", 0, false, true},
		{"an ID of 3 octets", []byte{0x10, 0, 0, 0, 7}, "", 0, false, true},
		{"ID 0", []byte{0x10, 0, 0, 0, 0, 0}, "", 0, true, false},
		{"octets past the description", append(ie.NewSDFFilter(fd, "", "", "", 0).Payload, 0), "", 0, false, true},
	} {
		desc, id, err := sdfFilter(tc.payload)
		var r *Refusal
		switch {
		case tc.refused && (!errors.As(err, &r) || r.Cause != CauseServiceNotSupported):
			t.Errorf("%s: %v, want a refusal with cause 76", tc.name, err)
		case tc.bad && (err == nil || errors.As(err, &r)):
			t.Errorf("%s: %v, want a decoding error", tc.name, err)
		case !tc.refused && !tc.bad && (err != nil || desc != tc.desc || id != tc.id):
			t.Errorf("%s: %q, ID %d, %v; want %q, ID %d", tc.name, desc, id, err, tc.desc, tc.id)
		}
	}
}

// TestDownlinkAddress: the session address is the downlink PDRs' UE IP Address; a PDR may leave
// it out when it has SDF filters to that address (Open5GS's dedicated QoS flow) and another PDR
// gives it; otherwise the PDR is refused with 73.
func TestDownlinkAddress(t *testing.T) {
	ue := netip.MustParseAddr("10.45.0.2")
	withIP := &PDR{ID: 1, Source: ifaceCore, UEIP: ue}
	for _, tc := range []struct {
		name   string
		pdrs   []*PDR
		failed uint16 // 0: the address is ue
	}{
		{"a flow's PDR to assigned", []*PDR{withIP, {ID: 2, Source: ifaceCore, SDF: []string{"permit out 17 from 10.10.0.1 to assigned"}}}, 0},
		{"to the session address", []*PDR{withIP, {ID: 2, Source: ifaceCore, SDF: []string{"permit out 17 from 10.10.0.1 to 10.45.0.2"}}}, 0},
		{"to another UE's address", []*PDR{withIP, {ID: 2, Source: ifaceCore, SDF: []string{"permit out 17 from 10.10.0.1 to 10.45.0.3"}}}, 2},
		{"no PDR gives the address", []*PDR{{ID: 2, Source: ifaceCore, SDF: []string{"permit out 17 from 10.10.0.1 to assigned"}}}, 2},
		{"neither an address nor a filter", []*PDR{withIP, {ID: 3, Source: ifaceCore}}, 3},
		{"two addresses", []*PDR{withIP, {ID: 4, Source: ifaceCore, UEIP: netip.MustParseAddr("10.45.0.3")}}, 4},
	} {
		r := &Rules{PDRs: map[uint16]*PDR{}}
		for _, p := range tc.pdrs {
			r.PDRs[p.ID] = p
		}
		got, err := downlinkAddress(r, tc.pdrs)
		var ref *Refusal
		switch {
		case tc.failed == 0 && (err != nil || got != ue):
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, ue)
		case tc.failed != 0 && (!errors.As(err, &ref) || ref.Cause != CauseRuleFailure || ref.Rule == nil || ref.Rule.ID != uint32(tc.failed)):
			t.Errorf("%s: %v, want 73 naming PDR %d", tc.name, err, tc.failed)
		}
	}
}
