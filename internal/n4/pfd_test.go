package n4

import (
	"errors"
	"slices"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
)

// TestPFDManagementRequest: a PFD Management Request (TS 29.244 §7.4.3.1) gives each
// application the flow descriptions of its PFD contexts (FD and AFD, §8.2.39), none when it has
// no context (its PFDs are removed), and a request without applications removes every PFD.
// Contents Junction cannot detect (a URL, a domain name), a flow description that does not
// parse, an application named twice or without its ID are refused, naming the IE.
func TestPFDManagementRequest(t *testing.T) {
	const video = "permit out 17 from 198.51.100.0/24 to assigned"
	const web = "permit out 6 from 203.0.113.80 80 to assigned"
	apps, smf, err := decodePFDs([]*ie.IE{
		ie.NewNodeIDHeuristic("smf.example"),
		ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.NewPFDContents(video, "", "", "", "", nil, nil, nil)),
			ie.NewPFDContext(ie.NewPFDContents("", "", "", "", "", []string{web, video}, nil, nil))),
		ie.NewApplicationIDsPFDs(ie.NewApplicationID("gone")),
	})
	if err != nil || smf != "smf.example" {
		t.Fatalf("a request: %v, Node ID %q", err, smf)
	}
	if got := apps["video"]; !slices.Equal(got, []string{video, web, video}) {
		t.Errorf("video's flow descriptions %q", got)
	}
	if got, ok := apps["gone"]; !ok || len(got) != 0 {
		t.Errorf("an application without a PFD context: %q %v; want it named with none (removed)", got, ok)
	}
	if apps, _, err := decodePFDs(nil); err != nil || apps != nil {
		t.Errorf("a request naming no application: %v %v; want nil (every PFD removed)", apps, err)
	}

	for _, tc := range []struct {
		name      string
		ies       []*ie.IE
		cause     uint8
		offending uint16
	}{
		{"a domain name", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.NewPFDContents("", "", "video.example", "", "", nil, nil, nil)))}, CauseServiceNotSupported, ie.PFDContents},
		{"a URL beside a flow description", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.NewPFDContents(video, "http://video.example/", "", "", "", nil, nil, nil)))}, CauseServiceNotSupported, ie.PFDContents},
		{"a flow description that does not parse", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.NewPFDContents("deny in ip from any to any", "", "", "", "", nil, nil, nil)))}, CauseMandatoryIEIncorrect, ie.PFDContents},
		{"a flow description longer than its IE", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.New(ie.PFDContents, []byte{pfdFD, 0, 0, 50, 'p'})))}, CauseInvalidLength, ie.PFDContents},
		{"more flow descriptions than AFD's length holds", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.New(ie.PFDContents, []byte{pfdAFD, 0, 0, 4, 0, 3, 'a', 'n', 'y'})))}, CauseInvalidLength, ie.PFDContents},
		{"an application twice", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video")), ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"))},
			CauseMandatoryIEIncorrect, ie.ApplicationIDsPFDs},
		{"no Application ID", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewPFDContext(ie.NewPFDContents(video, "", "", "", "", nil, nil, nil)))},
			CauseMandatoryIEMissing, ie.ApplicationID},
		{"a PFD context without contents", []*ie.IE{ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"), ie.NewPFDContext())},
			CauseMandatoryIEMissing, ie.PFDContents},
	} {
		_, _, err := decodePFDs(tc.ies)
		var r *Refusal
		if !errors.As(err, &r) || r.Cause != tc.cause || r.OffendingIE != tc.offending {
			t.Errorf("%s: %v; want cause %d with Offending IE %d", tc.name, err, tc.cause, tc.offending)
		}
	}
}
