package n4

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"github.com/junction-atsss/junction/internal/smf"
)

var fuzzTarget = Target{UPF: "upf", TunnelEndpoint: "core", N3: netip.MustParseAddr("192.0.2.1")}

// causes are the causes TS 29.244 §8.2.1 defines that the endpoint sends on a refusal.
var causes = map[uint8]bool{
	CauseMandatoryIEMissing: true, CauseConditionalIEMissing: true, CauseInvalidLength: true,
	CauseMandatoryIEIncorrect: true, CauseRuleFailure: true, CauseServiceNotSupported: true, CauseUnknownApplicationID: true,
}

// decodePath is what the endpoint does with a Session Establishment or Modification Request
// before its store (framing, IEs, rules, and the mapping onto Junction's model), and with a PFD
// Management or Session Set Deletion Request before it acts. It returns the refusal, if any.
func decodePath(b []byte) error {
	h, err := message.ParseHeader(b)
	if err != nil || int(h.Length)+4 != len(b) {
		return nil // no PFCP header: dropped, nothing to answer
	}
	if err := checkFraming(h.Payload, 0); err != nil {
		return err
	}
	ies, err := ie.ParseMultiIEs(h.Payload)
	if err != nil {
		return refuse(CauseInvalidLength, 0, "%v", err)
	}
	var rules *Rules
	switch h.Type {
	case message.MsgTypePFDManagementRequest:
		_, _, err := decodePFDs(ies)
		return err
	case message.MsgTypeSessionSetDeletionRequest:
		_, _, err := decodeSetDeletion(ies)
		return err
	case message.MsgTypeSessionModificationRequest:
		// A modification of the first seed's session.
		c, err := messageIEs(ies, modificationRules...)
		if err != nil {
			return err
		}
		flags, err := smReqFlags(c)
		if err != nil {
			return err
		}
		if _, err := queriedURRs(c, baseRules, flags); err != nil {
			return err
		}
		if rules, err = baseRules.modified(c); err != nil {
			return err
		}
	default:
		q, err := decodeEstablishment(ies)
		if err != nil {
			return err
		}
		rules = q.rules
	}
	teids := map[uint16]uint32{}
	for id, p := range rules.PDRs {
		if p.FTEID != nil && p.FTEID.Choose {
			teids[id] = 0x80000000 + uint32(id)
		}
	}
	_, err = makePlan(rules, teids, "imsi-001010000000001", netip.Addr{}, fuzzTarget)
	return err
}

// baseRules are the rules of the first seed session, which modifications apply to.
var baseRules *Rules

// FuzzEstablishment feeds mutated Session Establishment (and Modification, PFD Management and
// Session Set Deletion) Requests through the decode path: it
// must never panic, and every refusal must be a *Refusal with a cause TS 29.244 defines (and,
// for Rule creation/modification failure, the Failed Rule ID that cause needs).
func FuzzEstablishment(f *testing.F) {
	c := &smf.Client{NodeID: "smf.example"}
	loss := uint8(3)
	var seeds [][]byte
	for _, s := range []smf.MASession{
		{IMSI: "001010000000001", UEAddr: netip.MustParseAddr("10.60.0.1"), UE3GPP: netip.MustParseAddr("10.45.0.1"),
			UENon3GPP: netip.MustParseAddr("203.0.113.1"), GNB: netip.MustParseAddr("198.51.100.10"), DownlinkTEID: 7,
			Default: smf.Steering{Mode: smf.PriorityBased, High: smf.NonThreeGPP, RTTms: 40, LossPercent: &loss}, QFI: 9,
			Apps: []smf.App{{Flow: "permit out 6 from 192.0.2.0/24 443 to assigned", Precedence: 10, Steering: smf.Steering{Mode: smf.LoadBalancing, Autonomous: true}}},
			URR:  &smf.URR{Period: time.Minute, VolumeThreshold: 1 << 30}},
		{UEAddr: netip.MustParseAddr("10.60.0.2"), UE3GPP: netip.MustParseAddr("10.45.0.2"), GNB: netip.MustParseAddr("198.51.100.10"), DownlinkTEID: 9,
			Default: smf.Steering{Mode: smf.ActiveStandby}},
	} {
		b, err := message.NewSessionEstablishmentRequest(0, 0, 0, 1, 0, c.EstablishmentIEs(s, 1)...).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		if err := decodePath(b); err != nil {
			f.Fatalf("seed refused: %v", err)
		}
		f.Add(b)
		seeds = append(seeds, b)
	}
	// Modifications of the first session: a new MAR steering, a new gNB, a removed app.
	first := seeds[0]
	h, _ := message.ParseHeader(first)
	ies, _ := ie.ParseMultiIEs(h.Payload)
	q, err := decodeEstablishment(ies)
	if err != nil {
		f.Fatal(err)
	}
	baseRules = q.rules
	for _, mod := range [][]*ie.IE{
		{c.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.LoadBalancing, Weight3GPP: 20}, true)},
		{ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewUpdateForwardingParameters(ie.NewOuterHeaderCreation(0x0100, 99, "198.51.100.11", "", 0, 0, 0)))},
		{ie.NewRemovePDR(ie.NewPDRID(smf.PDRDownlink + 1)), ie.NewRemoveMAR(ie.NewMARID(smf.MARDefault + 1))},
		{ie.NewQueryURR(ie.NewURRID(smf.URRID)), ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x04, 0), ie.NewTimeThreshold(time.Hour))},
		{ie.NewPFCPSMReqFlags(0x04)},
		{ie.NewPFCPSMReqFlags(0x01)}, // DROBU
		{ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewUpdateForwardingParameters( // a path switch with SNDEM
			ie.NewOuterHeaderCreation(0x0100, 98, "198.51.100.12", "", 0, 0, 0), ie.NewPFCPSMReqFlags(0x02)))},
		{ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x01, 0x03), // quotas with VOLQU, TIMQU
			ie.NewVolumeQuota(0x07, 3000, 1000, 2000), ie.NewTimeQuota(time.Hour), ie.NewMeasurementInformation(0x19))},
		{ie.NewUpdateURR(ie.NewURRID(smf.URRID), ie.NewReportingTriggers(0x09, 0x81), // a validity and a holding time, QUVTI, QUHTI
			ie.NewVolumeQuota(0x01, 3000, 0, 0), ie.NewQuotaValidityTime(time.Hour), ie.NewQuotaHoldingTime(time.Minute))},
		{ie.NewCreateQER(ie.NewQERID(7), ie.NewGateStatus(1, 1)), // a closed uplink gate
			ie.NewUpdatePDR(ie.NewPDRID(smf.PDRUplink3GPP), ie.NewQERID(7)), ie.NewUpdatePDR(ie.NewPDRID(smf.PDRUplinkNon3GPP), ie.NewQERID(7))},
		{ie.NewCreateFAR(ie.NewFARID(40), ie.NewApplyAction(0x02), ie.NewForwardingParameters( // Open5GS's router solicitations to the CP function
			ie.NewDestinationInterface(ie.DstInterfaceCPFunction), ie.NewOuterHeaderCreation(0x0100, 1, "192.0.2.9", "", 0, 0, 0))),
			ie.NewCreatePDR(ie.NewPDRID(41), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x05, 0, nil, nil, 0),
				ie.NewSDFFilter("permit out 58 from ff02::2/128 to assigned", "", "", "", 0)), ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(40))},
		{ie.NewCreateQER(ie.NewQERID(8), ie.NewGateStatus(0, 0), ie.NewMBR(128, 128), ie.NewGBR(64, 64), ie.NewQFI(2)), // a GBR QoS flow of two SDF filters, one bidirectional
			ie.NewCreatePDR(ie.NewPDRID(60), ie.NewPrecedence(5), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewSDFFilter("permit out 17 from 192.0.2.7 30000 to assigned 40000", "", "", "", 1),
				ie.NewSDFFilter("permit out 17 from 192.0.2.7 30001 to assigned", "", "", "", 0)), ie.NewMARID(smf.MARDefault), ie.NewQERID(8))},
	} {
		b, err := message.NewSessionModificationRequest(0, 0, 5, 2, 0, mod...).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		if err := decodePath(b); err != nil {
			f.Fatalf("modification seed refused: %v", err)
		}
		f.Add(b)
	}
	// Node requests with IEs of their own: PFDs (flow descriptions in two kinds of contents), a
	// set deletion by FQ-CSIDs.
	for _, m := range []interface{ Marshal() ([]byte, error) }{
		message.NewPFDManagementRequest(3, ie.NewNodeIDHeuristic("smf.example"), ie.NewApplicationIDsPFDs(ie.NewApplicationID("video"),
			ie.NewPFDContext(ie.NewPFDContents("permit out 17 from 198.51.100.0/24 to assigned", "", "", "", "", nil, nil, nil)),
			ie.NewPFDContext(ie.NewPFDContents("", "", "", "", "", []string{"permit out 6 from 192.0.2.1 443 to assigned"}, nil, nil)))),
		message.NewSessionSetDeletionRequest(4, ie.NewNodeIDHeuristic("smf.example"), ie.NewFQCSID("192.0.2.9", 1, 2), ie.NewFQCSID("2001:db8::9", 3)),
	} {
		b, err := m.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		if err := decodePath(b); err != nil {
			f.Fatalf("node request seed refused: %v", err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := decodePath(b)
		if err == nil {
			return
		}
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("a refusal without a cause: %v", err)
		}
		if r.panicked {
			t.Fatalf("a decoder panicked: %v", r)
		}
		if !causes[r.Cause] {
			t.Fatalf("cause %d is not one the decode path may send: %v", r.Cause, r)
		}
		if r.Cause == CauseRuleFailure && r.Rule == nil {
			t.Fatalf("Rule creation/modification failure without a Failed Rule ID: %v", r)
		}
	})
}
