package n4

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testRules are an MA PDU session's rules as an SMF sends them: uplink PDRs on the gNB's N3 and
// an N3IWF's, a downlink PDR steered by a MAR, a FAR per leg and one to Core.
func testRules() *Rules {
	u8 := func(v uint8) *uint8 { return &v }
	u16 := func(v uint16) *uint16 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	gnb, n3iwf := netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("198.51.100.20")
	r := newRules()
	r.PDRs[1] = &PDR{ID: 1, Precedence: 100, Source: ifaceAccess, FTEID: &FTEID{Choose: true, ChooseID: u8(1)}, OHR: u8(ohrGTPUv4), FARID: u32(1)}
	r.PDRs[2] = &PDR{ID: 2, Precedence: 100, Source: ifaceAccess, SourceType: u8(itypeN3UntrustedNon3GPP), FTEID: &FTEID{Choose: true, ChooseID: u8(2)}, OHR: u8(ohrGTPUv4), FARID: u32(1)}
	r.PDRs[10] = &PDR{ID: 10, Precedence: 65000, Source: ifaceCore, UEIP: netip.MustParseAddr("10.60.0.7"), SDF: []string{"permit out ip from any to assigned"}, MARID: u16(1)}
	r.FARs[1] = &FAR{ID: 1, Action: actForw, Dest: u8(ifaceCore)}
	r.FARs[2] = &FAR{ID: 2, Action: actForw, Dest: u8(ifaceAccess), OHC: &OHC{Desc: ohcGTPUv4, TEID: 0x1234, Addr: gnb}}
	r.FARs[3] = &FAR{ID: 3, Action: actForw, Dest: u8(ifaceAccess), DestType: u8(itypeN3UntrustedNon3GPP), OHC: &OHC{Desc: ohcGTPUv4, TEID: 0x5678, Addr: n3iwf}}
	r.FARs[4] = &FAR{ID: 4, Action: actForw, Dest: u8(ifaceAccess), OHC: &OHC{Desc: ohcGTPUv4, TEID: 0x1235, Addr: gnb}}
	r.MARs[1] = &MAR{ID: 1, Mode: modeLoadBalancing, AFAI: [2]*AFAI{{FARID: 2, Weight: u8(70)}, {FARID: 3, Weight: u8(30)}}, RTTms: u16(50)}
	r.QERs[1] = &QER{ID: 1}
	return r
}

// mappableRules are testRules with the UE's address on each uplink PDR, as makePlan needs them.
func mappableRules() *Rules {
	r := testRules()
	r.PDRs[1].UEIP, r.PDRs[2].UEIP = netip.MustParseAddr("10.45.0.7"), netip.MustParseAddr("203.0.113.7")
	return r
}

// A session's rules kept packed come back as they were, are saved in the JSON the session's
// annotation has always held (an operator of the release before reads what this one writes,
// and the reverse), and say which GTP-U peers toward Access they name: each distinct address
// of a FAR to Access with GTP-U outer header creation, sorted.
func TestPackedRulesComeBackAsTheyWere(t *testing.T) {
	for _, polled := range []bool{false, true} {
		r := testRules()
		if polled {
			r.URRs[1] = &URR{ID: 1, Volume: true, Period: 60, Since: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), Base: Usage{ULBytes: 100}, Seq: 3}
		}
		p, err := pack(r)
		if err != nil {
			t.Fatal(err)
		}
		if p.polled() != polled || p.urrs != polled {
			t.Errorf("polled URR %v: packed polled() %v, urrs %v", polled, p.polled(), p.urrs)
		}
		got, err := p.rules()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("polled URR %v: rules came back as %+v, want %+v", polled, got, r)
		}
		wantPeers := []netip.Addr{netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("198.51.100.20")}
		if !reflect.DeepEqual(p.peers, wantPeers) {
			t.Errorf("peers %v, want %v", p.peers, wantPeers)
		}

		// The saved state: "rules" is the Rules' own JSON.
		s := &State{UPSEID: 7, SMF: "smf.example", Rules: p}
		saved, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		before := struct {
			Rules *Rules `json:"rules"`
		}{newRules()}
		if err := json.Unmarshal(saved, &before); err != nil || !reflect.DeepEqual(before.Rules, r) {
			t.Errorf("saved state %s: rules %+v (%v), want %+v", saved, before.Rules, err, r)
		}
		if !strings.Contains(string(saved), `"fars":{"1":{"id":1,"action":2,"dest":1}`) {
			t.Errorf("saved state %s: want the FARs by ID as the annotation holds them", saved)
		}
		var back State
		if err := json.Unmarshal(saved, &back); err != nil {
			t.Fatal(err)
		}
		if !back.HasRules() || back.Rules.polled() != polled || !reflect.DeepEqual(back.Rules.peers, wantPeers) {
			t.Errorf("loaded state: rules %v, polled %v, peers %v", back.HasRules(), back.Rules.polled(), back.Rules.peers)
		}
		if got, err := back.Rules.rules(); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("loaded state's rules %+v (%v), want %+v", got, err, r)
		}
	}
	var none State
	if err := json.Unmarshal([]byte(`{"upSEID":7,"rules":null}`), &none); err != nil || none.HasRules() {
		t.Errorf(`"rules": null: HasRules %v (%v), want false`, none.HasRules(), err)
	}
}

// PDRs with one CHOOSE ID share the TEID the UPF chose (TS 29.244 §5.2.3.1): a modification that
// removes one of them keeps the TEID for the others; the TEID of a PDR removed alone goes back,
// and TEIDs of other sessions stay.
func TestATEIDSharedByPDRsStaysWhileOneHasIt(t *testing.T) {
	const shared, alone, other = 0x80000001, 0x80000002, 0x80000003
	e := &Endpoint{teids: map[uint32]bool{shared: true, alone: true, other: true}}
	e.releaseTEIDsLocked(map[uint16]uint32{1: shared, 3: shared, 2: alone}, map[uint16]uint32{1: shared})
	if want := map[uint32]bool{shared: true, other: true}; !reflect.DeepEqual(e.teids, want) {
		t.Errorf("TEIDs in use %v, want %v", e.teids, want)
	}
}
