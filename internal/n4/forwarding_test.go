package n4

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// An N2 handover's indirect forwarding PDR (from Access, into a FAR to Access in GTP-U) becomes
// the 3GPP leg's indirectForwarding and is no uplink PDR of the session's; one on the uplink's
// TEID, one without an F-TEID and one in a session without a 3GPP leg are refused, naming it
// (docs/n4.md, "Indirect data forwarding").
func TestIndirectForwardingPlan(t *testing.T) {
	u8 := func(v uint8) *uint8 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	const ulTEID, n3iwfTEID, fwdTEID = 0x80000001, 0x80000002, 0x80000003
	withTunnel := func() *Rules {
		r := mappableRules()
		r.PDRs[20] = &PDR{ID: 20, Precedence: 4096, Source: ifaceAccess, SourceType: u8(28), FTEID: &FTEID{Choose: true, ChooseID: u8(10)},
			OHR: u8(ohrGTPUv4), FARID: u32(5), QFI: 1, QERIDs: []uint32{1}}
		r.FARs[5] = &FAR{ID: 5, Action: actForw, Dest: u8(ifaceAccess), DestType: u8(10),
			OHC: &OHC{Desc: ohcGTPUv4, TEID: 0x777, Addr: netip.MustParseAddr("198.51.100.12")}}
		return r
	}
	teids := map[uint16]uint32{1: ulTEID, 2: n3iwfTEID, 20: fwdTEID}

	p, err := makePlan(withTunnel(), teids, "imsi-001010000000001", netip.Addr{}, fuzzTarget)
	if err != nil {
		t.Fatal(err)
	}
	leg := p.Spec.AccessLegs.ThreeGPP
	if want := (junctionv1.IndirectForwarding{TEID: fwdTEID, GNBAddress: "198.51.100.12", GNBTEID: 0x777}); leg.IndirectForwarding == nil || *leg.IndirectForwarding != want {
		t.Errorf("indirectForwarding %+v, want %+v", leg.IndirectForwarding, want)
	}
	if leg.UplinkTEID != ulTEID || leg.GNBAddress != "198.51.100.10" || leg.DownlinkTEID != 0x1234 {
		t.Errorf("3GPP leg %+v: want the uplink PDR's TEID %#x and FAR 2's tunnel, as without the forwarding PDR", leg, ulTEID)
	}
	if p, err := makePlan(mappableRules(), teids, "imsi-001010000000001", netip.Addr{}, fuzzTarget); err != nil || p.Spec.AccessLegs.ThreeGPP.IndirectForwarding != nil {
		t.Errorf("without the forwarding PDR: %v, indirectForwarding %+v; want none", err, p.Spec.AccessLegs.ThreeGPP.IndirectForwarding)
	}

	for name, c := range map[string]struct {
		rules func() *Rules
		teids map[uint16]uint32
	}{
		"on the uplink's TEID": {withTunnel, map[uint16]uint32{1: ulTEID, 2: n3iwfTEID, 20: ulTEID}},
		"without an F-TEID": {func() *Rules {
			r := withTunnel()
			r.PDRs[20].FTEID = nil
			return r
		}, teids},
		"in a session without a 3GPP leg": {func() *Rules {
			r := withTunnel()
			delete(r.PDRs, 1)
			r.MARs[1].Mode, r.MARs[1].AFAI = modeActiveStandby, [2]*AFAI{nil, {FARID: 3}}
			return r
		}, teids},
	} {
		_, err := makePlan(c.rules(), c.teids, "imsi-001010000000001", netip.Addr{}, fuzzTarget)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Cause != CauseRuleFailure || ref.Rule == nil || ref.Rule.Type != ie.RuleIDTypePDR || ref.Rule.ID != 20 {
			t.Errorf("%s: %v (%+v), want cause 73 naming PDR 20", name, err, ref)
		}
	}
}
