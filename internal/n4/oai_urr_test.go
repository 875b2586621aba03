package n4

import (
	"errors"
	"net"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
)

// OAI's SMF with enable_usage_reporting (smf_procedure.cpp): one URR, named by the
// establishment's uplink PDR; every PDR it made no URR for names URR 0, its unset ID; and on a
// Service Request it creates its kept URR again, unchanged. TS 29.244 gives no meaning to a
// reference to a missing rule but a refusal (cause 73, the PDR's ID), which stays for any ID
// but 0; a Create for an existing rule is refused (73) unless it re-creates a URR the session
// had before the request, as it is.
func TestOAIsURRIDs(t *testing.T) {
	oaiURR := func(volth uint64) *ie.IE {
		return ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 1), ie.NewMeasurementPeriod(10*time.Second),
			ie.NewReportingTriggers(0x07, 0x00), ie.NewTimeThreshold(5*time.Second), ie.NewVolumeThreshold(0x04, 0, 0, volth))
	}
	uplink := func(id uint16, urr uint32) *ie.IE {
		return ie.NewCreatePDR(ie.NewPDRID(id), ie.NewPrecedence(0), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
			ie.NewFTEID(0x0d, 0, nil, nil, 42), ie.NewUEIPAddress(0x02, "10.60.0.16", "", 0, 0)),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(uint32(id)), ie.NewURRID(urr))
	}
	downlink := func(id uint16, urr uint32) *ie.IE {
		return ie.NewCreatePDR(ie.NewPDRID(id), ie.NewPrecedence(0), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
			ie.NewUEIPAddress(0x06, "10.60.0.16", "", 0, 0)), ie.NewFARID(uint32(id)), ie.NewURRID(urr))
	}
	far := func(id uint32) *ie.IE {
		return ie.NewCreateFAR(ie.NewFARID(id), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore)))
	}
	q, err := decodeEstablishment([]*ie.IE{ie.NewNodeIDHeuristic("smf.oai"), ie.NewFSEID(1, net.ParseIP("192.0.2.9"), nil), oaiURR(1000), far(1), uplink(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	modify := func(r *Rules, ies ...*ie.IE) (*Rules, error) {
		c, err := messageIEs(ies, modificationRules...)
		if err != nil {
			t.Fatal(err)
		}
		return r.modified(c)
	}
	refused := func(what string, err error, ruleType uint8, id uint32) {
		t.Helper()
		var rf *Refusal
		if !errors.As(err, &rf) || rf.Cause != CauseRuleFailure || rf.Rule == nil || rf.Rule.Type != ruleType || rf.Rule.ID != id {
			t.Errorf("%s: %v, want cause 73 naming rule %d of type %d", what, err, id, ruleType)
		}
	}

	// The gNB's downlink PDR names URR 0: it names none.
	r, err := modify(q.rules, far(2), downlink(2, 0))
	if err != nil {
		t.Fatalf("the downlink PDR naming URR 0: %v", err)
	}
	if got := r.PDRs[2].URRIDs; len(got) != 0 {
		t.Errorf("the downlink PDR names URRs %v, want none", got)
	}
	if got := r.PDRs[1].URRIDs; !slices.Equal(got, []uint32{1}) {
		t.Errorf("the uplink PDR names URRs %v, want [1]", got)
	}
	if err := r.checkURRs(); err != nil {
		t.Errorf("checkURRs: %v", err)
	}
	if ul, dl, err := r.directions(r.URRs[1]); err != nil || !ul || dl {
		t.Errorf("URR 1 measures uplink %v, downlink %v (%v); want the uplink alone", ul, dl, err)
	}

	// An Update PDR naming URR 0 (a handover's path switch) changes nothing, and the rules it was
	// made from keep their PDRs as they were.
	upd, err := modify(r, ie.NewUpdatePDR(ie.NewPDRID(1), ie.NewPrecedence(0), ie.NewURRID(0), ie.NewFARID(1)))
	if err != nil || len(upd.PDRs[1].URRIDs) != 0 {
		t.Errorf("the uplink PDR updated with URR 0: %v, URRs %v; want accepted, none", err, upd.PDRs[1].URRIDs)
	}
	if got := r.PDRs[1].URRIDs; !slices.Equal(got, []uint32{1}) {
		t.Errorf("the rules modified from name URRs %v on the uplink PDR after the update, want [1]", got)
	}

	// The UE goes idle (every PDR and FAR removed, the URR kept), then comes back: the uplink
	// again, naming URR 1, and URR 1 created again as it was.
	idle, err := modify(r, ie.NewRemovePDR(ie.NewPDRID(1)), ie.NewRemovePDR(ie.NewPDRID(2)), ie.NewRemoveFAR(ie.NewFARID(1)), ie.NewRemoveFAR(ie.NewFARID(2)))
	if err != nil {
		t.Fatalf("idle: %v", err)
	}
	idle.URRs[1].Seq = 4 // what the endpoint has since measured and reported
	back, err := modify(idle, far(3), uplink(3, 1), oaiURR(1000))
	if err != nil {
		t.Fatalf("the Service Request, URR 1 created again as it is: %v", err)
	}
	if !reflect.DeepEqual(back.URRs[1], idle.URRs[1]) {
		t.Errorf("URR 1 after the Service Request is %+v, want the kept one %+v", back.URRs[1], idle.URRs[1])
	}
	if _, err := modify(back, far(4), downlink(4, 0)); err != nil {
		t.Errorf("the Service Request's downlink naming URR 0: %v", err)
	}

	// What stays refused: another missing URR, URR 1 created again changed, twice in one
	// request, and URR 0 named while the session has a URR 0 is URR 0.
	seven, err := modify(back, far(5), downlink(5, 7))
	if err == nil {
		err = seven.checkURRs() // as makePlan does
	}
	refused("a PDR naming URR 7", err, ie.RuleIDTypePDR, 5)
	_, err = modify(back, oaiURR(2000))
	refused("URR 1 created again with another threshold", err, ie.RuleIDTypeURR, 1)
	_, err = decodeEstablishment([]*ie.IE{ie.NewNodeIDHeuristic("smf.oai"), ie.NewFSEID(2, net.ParseIP("192.0.2.9"), nil), oaiURR(1000), oaiURR(1000), far(1), uplink(1, 1)})
	refused("URR 1 created twice in an establishment", err, ie.RuleIDTypeURR, 1)
	with0, err := modify(back, ie.NewCreateURR(ie.NewURRID(0), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0)), far(6), downlink(6, 0))
	if err != nil {
		t.Fatalf("a PDR naming the session's URR 0: %v", err)
	}
	if got := with0.PDRs[6].URRIDs; !slices.Equal(got, []uint32{0}) {
		t.Errorf("a PDR naming the session's URR 0 names URRs %v, want [0]", got)
	}
}
