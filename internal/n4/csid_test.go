package n4

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
)

// TestFQCSID: an FQ-CSID (TS 29.244 §8.2.46) is read with its node ID as its type says (IPv4,
// IPv6, MCC/MNC-based) and as many CSIDs as it counts; one whose length disagrees, of another
// node type, or without a CSID is refused, naming the IE. A set is named by the same node and a
// CSID in common.
func TestFQCSID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload []byte
		want    FQCSID
	}{
		{"IPv4", []byte{0x02, 192, 0, 2, 1, 0, 7, 0x12, 0x34}, FQCSID{"192.0.2.1", []uint16{7, 0x1234}}},
		{"IPv6", append(append([]byte{0x11}, make([]byte, 15)...), 1, 0, 9), FQCSID{"::1", []uint16{9}}},
		{"MCC/MNC-based", []byte{0x21, 0x00, 0xf1, 0x10, 0x05, 0, 1}, FQCSID{"00f11005", []uint16{1}}},
	} {
		f, err := decodeFQCSID(ie.New(ie.FQCSID, tc.payload))
		if err != nil || f.Node != tc.want.Node || !slices.Equal(f.CSIDs, tc.want.CSIDs) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, f, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		cause   uint8
	}{
		{"one CSID counted, two sent", []byte{0x01, 192, 0, 2, 1, 0, 7, 0, 8}, CauseInvalidLength},
		{"two counted, one sent", []byte{0x02, 192, 0, 2, 1, 0, 7}, CauseInvalidLength},
		{"an IPv6 node in 4 octets", []byte{0x11, 192, 0, 2, 1, 0, 7}, CauseInvalidLength},
		{"node ID type 3", []byte{0x31, 192, 0, 2, 1, 0, 7}, CauseMandatoryIEIncorrect},
		{"no CSID", []byte{0x00, 192, 0, 2, 1}, CauseMandatoryIEIncorrect},
		{"empty", nil, CauseInvalidLength},
	} {
		_, err := decodeFQCSID(ie.New(ie.FQCSID, tc.payload))
		var r *Refusal
		if !errors.As(err, &r) || r.Cause != tc.cause || r.OffendingIE != ie.FQCSID {
			t.Errorf("%s: %v; want cause %d with Offending IE FQ-CSID", tc.name, err, tc.cause)
		}
	}

	set := &FQCSID{"192.0.2.1", []uint16{1, 2}}
	for _, tc := range []struct {
		f    FQCSID
		want bool
	}{
		{FQCSID{"192.0.2.1", []uint16{2}}, true},
		{FQCSID{"192.0.2.1", []uint16{3, 1}}, true},
		{FQCSID{"192.0.2.1", []uint16{3}}, false},
		{FQCSID{"192.0.2.9", []uint16{1}}, false}, // another SMF's CSID 1
	} {
		if got := tc.f.names(set); got != tc.want {
			t.Errorf("%+v names %+v: %v, want %v", tc.f, *set, got, tc.want)
		}
	}
	if (&FQCSID{"192.0.2.1", []uint16{1}}).names(nil) {
		t.Error("an FQ-CSID names a session that came without one")
	}
}

// TestSessionSetDeletionRequest: the request needs its Node ID (66) and an FQ-CSID (67), and
// takes no other IE (76); a malformed FQ-CSID is refused as such.
func TestSessionSetDeletionRequest(t *testing.T) {
	node, csid := ie.NewNodeIDHeuristic("192.0.2.1"), ie.NewFQCSID("192.0.2.1", 4)
	sets, smf, err := decodeSetDeletion([]*ie.IE{node, csid, ie.NewFQCSID("192.0.2.1", 5, 6)})
	if err != nil || smf != "192.0.2.1" || len(sets) != 2 || !slices.Equal(sets[1].CSIDs, []uint16{5, 6}) {
		t.Fatalf("two FQ-CSIDs: %v, %q, %+v", err, smf, sets)
	}
	for _, tc := range []struct {
		name      string
		ies       []*ie.IE
		cause     uint8
		offending uint16
	}{
		{"no Node ID", []*ie.IE{csid}, CauseMandatoryIEMissing, ie.NodeID},
		{"no FQ-CSID", []*ie.IE{node}, CauseConditionalIEMissing, ie.FQCSID},
		{"an IE it does not take", []*ie.IE{node, csid, ie.NewRecoveryTimeStamp(time.Unix(1_900_000_000, 0))}, CauseServiceNotSupported, ie.RecoveryTimeStamp},
		{"a malformed FQ-CSID", []*ie.IE{node, ie.New(ie.FQCSID, []byte{0x02, 192, 0, 2, 1, 0, 4})}, CauseInvalidLength, ie.FQCSID},
	} {
		_, _, err := decodeSetDeletion(tc.ies)
		var r *Refusal
		if !errors.As(err, &r) || r.Cause != tc.cause || r.OffendingIE != tc.offending {
			t.Errorf("%s: %v; want cause %d with Offending IE %d", tc.name, err, tc.cause, tc.offending)
		}
	}
}
