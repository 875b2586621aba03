package desired

import (
	"reflect"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// An entry read back from its binary form is the entry: the same key, action and params, and
// the same entry for the P4Runtime client; a form cut short is refused.
func TestAnEntryComesBackFromItsBinaryForm(t *testing.T) {
	video := policy("video", 7, 10, junctionv1.TrafficDescriptor{
		DestinationPrefixes: []junctionv1.IPv4Prefix{"198.18.10.0/24"},
		DestinationPorts:    []junctionv1.PortRange{{From: 443, To: ptr(int32(8443))}},
		Protocol:            junctionv1.ProtocolTCP,
	}, loadBalance30)
	apps, err := ApplicationEntries(video)
	if err != nil {
		t.Fatal(err)
	}
	upf, err := UPFEntries(sampleUPF())
	if err != nil {
		t.Fatal(err)
	}
	s := session(nil, video)
	s.SequenceIndex = ptr[uint32](3)
	sess, err := SessionEntries(s)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append(append([]Entry{}, apps...), upf...), sess...)
	all = append(all, Entry{Table: "applications", Priority: 7, Match: []Match{ // every kind and part
		{Field: "app_dst", Kind: Ternary, Value: []byte{198, 18, 10, 0}, Mask: []byte{255, 255, 255, 0}},
		{Field: "app_dport", Kind: Range, Low: []byte{1, 187}, High: []byte{1, 187}},
		{Field: "ue_addr", Kind: LPM, Value: []byte{10}, PrefixLen: 8},
	}})
	for _, e := range all {
		form := string(e.AppendBinary(nil))
		got, err := ParseEntry(form)
		if err != nil {
			t.Fatalf("%s: %v", e.Key(), err)
		}
		if got.Key() != e.Key() || !got.SameAction(e) || !reflect.DeepEqual(got.Client(), e.Client()) {
			t.Errorf("%s came back as %+v, want %+v", e.Key(), got, e)
		}
		for i := range len(form) {
			if _, err := ParseEntry(form[:i]); err == nil {
				t.Errorf("%s: the first %d of %d bytes of its form were taken for an entry", e.Key(), i, len(form))
				break
			}
		}
	}
	if _, err := ParseEntry(string(all[0].AppendBinary(nil)) + "x"); err == nil {
		t.Error("a form with a byte more was taken for an entry")
	}
}
