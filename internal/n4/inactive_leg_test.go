package n4

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// A MAR's FAR that buffers, drops or has no Outer Header Creation yet makes its access inactive
// (docs/n4.md, "An access not active"): the leg stays in the object with the UE's address on it
// from its uplink PDR and dropDownlink, a 3GPP one with its uplink TEID (the uplink PDR still
// forwards), and no tunnel; the MAR's steering is kept for when it
// forwards again. An SMF sends so for an access whose node has not answered yet, and for one
// whose user plane it deactivated (the UE idle on 3GPP, gone from WiFi). With no access active
// and 3GPP's FAR buffering, the UPF holds the downlink so that the SMF can page the UE.
func TestInactiveLegPlan(t *testing.T) {
	u8 := func(v uint8) *uint8 { return &v }
	u16 := func(v uint16) *uint16 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	const ulTEID, n3iwfTEID = 0x80000001, 0x80000002
	teids := map[uint16]uint32{1: ulTEID, 2: n3iwfTEID}
	threeGPPWants := junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", GNBAddress: "198.51.100.10", UplinkTEID: ulTEID, DownlinkTEID: 0x1234}
	non3GPPWants := junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.7", GatewayAddress: "198.51.100.20",
		UplinkTEID: n3iwfTEID, DownlinkTEID: 0x5678}
	inactive3GPP := junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", UplinkTEID: ulTEID, DropDownlink: true}
	inactiveNon3GPP := junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.7", DropDownlink: true}
	// No access active and 3GPP's FAR buffers: the UPF holds the downlink (and keeps the uplink
	// TEID in the object, as an idle single-access session does).
	holding3GPP := junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", UplinkTEID: ulTEID, BufferDownlink: true}

	for name, c := range map[string]struct {
		edit     func(*Rules)
		three    junctionv1.ThreeGPPLeg
		nonThree junctionv1.NonThreeGPPLeg
	}{
		"3GPP idle: BUFF and NOCP, no tunnel":                       {func(r *Rules) { r.FARs[2].Action, r.FARs[2].OHC = actBuff|actNocp, nil }, inactive3GPP, non3GPPWants},
		"3GPP idle, the old tunnel kept":                            {func(r *Rules) { r.FARs[2].Action = actBuff }, inactive3GPP, non3GPPWants},
		"3GPP not answered yet: DROP":                               {func(r *Rules) { r.FARs[2].Action, r.FARs[2].OHC = actDrop, nil }, inactive3GPP, non3GPPWants},
		"3GPP not answered yet: FORW without Outer Header Creation": {func(r *Rules) { r.FARs[2].OHC = nil }, inactive3GPP, non3GPPWants},
		"non-3GPP gone: BUFF":                                       {func(r *Rules) { r.FARs[3].Action, r.FARs[3].OHC = actBuff, nil }, threeGPPWants, inactiveNon3GPP},
		"both not answered yet (an establishment), DROP": {func(r *Rules) {
			r.FARs[2].Action, r.FARs[2].OHC = actDrop, nil
			r.FARs[3].Action, r.FARs[3].OHC = actDrop, nil
		}, inactive3GPP, inactiveNon3GPP},
		"both not answered yet, 3GPP BUFF: the downlink held": {func(r *Rules) {
			r.FARs[2].Action, r.FARs[2].OHC = actBuff|actNocp, nil
			r.FARs[3].Action, r.FARs[3].OHC = actBuff|actNocp, nil
		}, holding3GPP, inactiveNon3GPP},
		"idle on 3GPP, gone from WiFi: the downlink held": {func(r *Rules) {
			r.FARs[2].Action = actBuff | actNocp
			r.FARs[3].Action, r.FARs[3].OHC = actDrop, nil
		}, holding3GPP, inactiveNon3GPP},
		"3GPP not answered yet, WiFi gone with BUFF: nothing held (no paging on WiFi)": {func(r *Rules) {
			r.FARs[2].Action, r.FARs[2].OHC = actDrop, nil
			r.FARs[3].Action, r.FARs[3].OHC = actBuff|actNocp, nil
		}, inactive3GPP, inactiveNon3GPP},
		"a FAR per MAR, both into the gNB's tunnel": {func(r *Rules) {
			r.FARs[5] = &FAR{ID: 5, Action: actForw, Dest: u8(ifaceAccess), OHC: &OHC{Desc: ohcGTPUv4, TEID: 0x1234, Addr: netip.MustParseAddr("198.51.100.10")}}
			r.PDRs[11] = &PDR{ID: 11, Precedence: 100, Source: ifaceCore, UEIP: netip.MustParseAddr("10.60.0.7"), SDF: []string{"permit out 17 from any to assigned 5000"}, MARID: u16(2)}
			r.MARs[2] = &MAR{ID: 2, Mode: modeSmallestDelay, AFAI: [2]*AFAI{{FARID: 5}, {FARID: 3}}}
		}, threeGPPWants, non3GPPWants},
	} {
		r := mappableRules()
		c.edit(r)
		p, err := makePlan(r, teids, "imsi-001010000000001", netip.Addr{}, fuzzTarget)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		legs := p.Spec.AccessLegs
		if p.Parked != c.three.BufferDownlink {
			t.Errorf("%s: Parked %v, want it exactly while the downlink is held (no entry names the usage cells)", name, p.Parked)
		}
		if legs.ThreeGPP == nil || *legs.ThreeGPP != c.three {
			t.Errorf("%s: 3GPP leg %+v, want %+v", name, legs.ThreeGPP, c.three)
		}
		if legs.NonThreeGPP == nil || *legs.NonThreeGPP != c.nonThree {
			t.Errorf("%s: non-3GPP leg %+v, want %+v", name, legs.NonThreeGPP, c.nonThree)
		}
		// MAR 1 (load balancing 70/30) steers PDR 10's traffic whatever its legs do: the
		// pipeline sends on what is active (docs/pipeline.md, "Steering decision").
		if ps := p.Spec.PolicySteering; len(ps) == 0 || ps[len(ps)-1].Steering.Mode != junctionv1.ModeLoadBalance ||
			ps[len(ps)-1].Steering.LoadBalance == nil || *ps[len(ps)-1].Steering.LoadBalance.ThreeGPPPercent != 70 {
			t.Errorf("%s: policy steering %+v, want PDR 10's load balancing with 70%% on 3GPP", name, ps)
		}
	}

	for name, c := range map[string]struct {
		edit func(*Rules)
		typ  uint8
		id   uint32
	}{
		"one MAR's 3GPP FAR buffers, another's forwards": {func(r *Rules) {
			r.FARs[2].Action, r.FARs[2].OHC = actBuff, nil
			r.FARs[5] = &FAR{ID: 5, Action: actForw, Dest: u8(ifaceAccess), OHC: &OHC{Desc: ohcGTPUv4, TEID: 0x1234, Addr: netip.MustParseAddr("198.51.100.10")}}
			r.PDRs[11] = &PDR{ID: 11, Precedence: 100, Source: ifaceCore, UEIP: netip.MustParseAddr("10.60.0.7"), SDF: []string{"permit out 17 from any to assigned 5000"}, MARID: u16(2)}
			r.MARs[2] = &MAR{ID: 2, Mode: modeSmallestDelay, AFAI: [2]*AFAI{{FARID: 5}, {FARID: 3}}}
		}, ruleTypeMAR, 2},
		"a MAR's FAR that buffers toward Core": {func(r *Rules) { r.FARs[2].Action, r.FARs[2].OHC, r.FARs[2].Dest = actBuff, nil, u8(ifaceCore) }, ie.RuleIDTypeFAR, 2},
		"an inactive plain non-3GPP leg whose uplink PDR gives no UE address": {func(r *Rules) {
			r.PDRs[2] = &PDR{ID: 2, Precedence: 100, Source: ifaceAccess, OHR: u8(ohrUDPv4), FARID: u32(1)}
			r.FARs[3] = &FAR{ID: 3, Action: actBuff, Dest: u8(ifaceAccess)}
		}, ie.RuleIDTypeFAR, 3},
	} {
		r := mappableRules()
		c.edit(r)
		_, err := makePlan(r, teids, "imsi-001010000000001", netip.Addr{}, fuzzTarget)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Cause != CauseRuleFailure || ref.Rule == nil || ref.Rule.Type != c.typ || ref.Rule.ID != c.id {
			t.Errorf("%s: %v (%+v), want cause 73 naming rule type %d, ID %d", name, err, ref, c.typ, c.id)
		}
	}
}
