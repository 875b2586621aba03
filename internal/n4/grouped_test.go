package n4

import (
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
)

// The grouped IEs of TS 29.244 (Table 8.1.2-1, "Extendable / Grouped"), and some that are not,
// as go-pfcp sees them once groupedIE stands in for its lookup.
func TestGroupedIETableIsTheSpecs(t *testing.T) {
	for typ, grouped := range map[uint16]bool{
		ie.CreatePDR: true, ie.PDI: true, ie.CreateFAR: true, ie.ForwardingParameters: true,
		ie.CreateMAR: true, ie.TGPPAccessForwardingActionInformation: true,
		ie.NonTGPPAccessForwardingActionInformation: true, ie.UpdateMAR: true,
		ie.ProvideATSSSControlInformation: true, ie.ATSSSControlParameters: true, ie.CreateURR: true,
		ie.Cause: false, ie.FTEID: false, ie.UEIPAddress: false, ie.SDFFilter: false,
		ie.SteeringMode: false, ie.Weight: false, ie.RecoveryTimeStamp: false, 0: false, 0xffff: false,
	} {
		if got := (&ie.IE{Type: typ}).IsGrouped(); got != grouped {
			t.Errorf("IE type %d: grouped %v, want %v", typ, got, grouped)
		}
	}
}
