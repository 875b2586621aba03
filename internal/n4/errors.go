package n4

import (
	"encoding/binary"
	"fmt"

	"github.com/wmnsk/go-pfcp/ie"
)

// Cause values of TS 29.244 §8.2.1 that the endpoint sends.
const (
	CauseAccepted             uint8 = 1
	CauseRejected             uint8 = 64
	CauseSessionNotFound      uint8 = 65
	CauseMandatoryIEMissing   uint8 = 66
	CauseConditionalIEMissing uint8 = 67
	CauseInvalidLength        uint8 = 68
	CauseMandatoryIEIncorrect uint8 = 69
	CauseNoAssociation        uint8 = 72
	CauseRuleFailure          uint8 = 73
	CauseCongestion           uint8 = 74
	CauseNoResources          uint8 = 75
	CauseServiceNotSupported  uint8 = 76
	CauseSystemFailure        uint8 = 77
	CauseUnknownApplicationID uint8 = 81
	ruleTypeMAR               uint8 = 5 // Failed Rule ID rule type (§8.2.80); go-pfcp names 0-4
)

// Refusal is a request the endpoint refuses: the cause, and the Offending IE or the Failed Rule
// ID the SMF needs to find what it sent wrong (TS 29.244 §7.5.3, §8.2.80).
type Refusal struct {
	Cause       uint8
	OffendingIE uint16 // 0: none
	Rule        *RuleRef
	Msg         string
	panicked    bool
}

// RuleRef names one rule for the Failed Rule ID IE.
type RuleRef struct {
	Type uint8 // ie.RuleIDTypePDR, ...FAR, ...QER, ruleTypeMAR
	ID   uint32
}

func (r *Refusal) Error() string { return fmt.Sprintf("cause %d: %s", r.Cause, r.Msg) }

func refuse(cause uint8, offending uint16, format string, args ...any) *Refusal {
	return &Refusal{Cause: cause, OffendingIE: offending, Msg: fmt.Sprintf(format, args...)}
}

func ruleFailure(typ uint8, id uint32, format string, args ...any) *Refusal {
	return &Refusal{Cause: CauseRuleFailure, Rule: &RuleRef{Type: typ, ID: id}, Msg: fmt.Sprintf(format, args...)}
}

// refusalOf is the refusal of a request whose framing or IEs did not parse (perr).
func refusalOf(perr error) *Refusal {
	if r, ok := perr.(*Refusal); ok {
		return r
	}
	return refuse(CauseInvalidLength, 0, "%v", perr)
}

// offending is the refusal's Offending IE, nil when it names none: for the node responses whose
// constructors take it apart.
func (r *Refusal) offending() *ie.IE {
	if r.OffendingIE == 0 {
		return nil
	}
	return ie.NewOffendingIE(r.OffendingIE)
}

// ies are the IEs that carry the refusal in a response, after the Cause.
func (r *Refusal) ies() []*ie.IE {
	var out []*ie.IE
	if x := r.offending(); x != nil {
		out = append(out, x)
	}
	if r.Rule != nil {
		out = append(out, failedRuleID(*r.Rule))
	}
	return out
}

// failedRuleID encodes a Failed Rule ID (§8.2.80): the rule type, then the rule's ID as wide as
// that rule's ID IE (PDR and MAR 2 octets, FAR, QER and URR 4, BAR 1). go-pfcp v0.0.24 writes
// no ID for a MAR.
func failedRuleID(r RuleRef) *ie.IE {
	b := []byte{r.Type & 0x0f}
	switch r.Type {
	case ie.RuleIDTypePDR, ruleTypeMAR:
		b = binary.BigEndian.AppendUint16(b, uint16(r.ID))
	case ie.RuleIDTypeBAR:
		b = append(b, uint8(r.ID))
	default:
		b = binary.BigEndian.AppendUint32(b, r.ID)
	}
	return ie.New(ie.FailedRuleID, b)
}

var ieNames = map[uint16]string{
	ie.CreatePDR: "Create PDR", ie.PDI: "PDI", ie.CreateFAR: "Create FAR", ie.ForwardingParameters: "Forwarding Parameters",
	ie.CreateURR: "Create URR", ie.CreateQER: "Create QER", ie.CreatedPDR: "Created PDR", ie.UpdatePDR: "Update PDR",
	ie.UpdateFAR: "Update FAR", ie.UpdateForwardingParameters: "Update Forwarding Parameters", ie.UpdateURR: "Update URR",
	ie.UpdateQER: "Update QER", ie.RemovePDR: "Remove PDR", ie.RemoveFAR: "Remove FAR", ie.RemoveURR: "Remove URR",
	ie.RemoveQER: "Remove QER", ie.Cause: "Cause", ie.SourceInterface: "Source Interface", ie.FTEID: "F-TEID",
	ie.NetworkInstance: "Network Instance", ie.SDFFilter: "SDF Filter", ie.ApplicationID: "Application ID",
	ie.GateStatus: "Gate Status", ie.MBR: "MBR", ie.GBR: "GBR", ie.QERCorrelationID: "QER Correlation ID",
	ie.Precedence: "Precedence", ie.DestinationInterface: "Destination Interface", ie.ApplyAction: "Apply Action",
	ie.PDRID: "PDR ID", ie.FSEID: "F-SEID", ie.NodeID: "Node ID", ie.OuterHeaderCreation: "Outer Header Creation",
	ie.CreateBAR: "Create BAR", ie.UpdateBARWithinSessionModificationRequest: "Update BAR", ie.RemoveBAR: "Remove BAR", ie.BARID: "BAR ID",
	ie.DownlinkDataNotificationDelay: "Downlink Data Notification Delay", ie.SuggestedBufferingPacketsCount: "Suggested Buffering Packets Count",
	ie.MTEDTControlInformation: "MT-EDT Control Information", ie.UEIPAddress: "UE IP Address", ie.OuterHeaderRemoval: "Outer Header Removal",
	ie.RecoveryTimeStamp: "Recovery Time Stamp", ie.FARID: "FAR ID", ie.QERID: "QER ID", ie.URRID: "URR ID",
	ie.QFI: "QFI", ie.UserID: "User ID", ie.TGPPInterfaceType: "3GPP Interface Type", ie.CreateMAR: "Create MAR", ie.FQCSID: "FQ-CSID",
	ie.TGPPAccessForwardingActionInformation:          "Access Forwarding Action Information 1",
	ie.NonTGPPAccessForwardingActionInformation:       "Access Forwarding Action Information 2",
	ie.UpdateTGPPAccessForwardingActionInformation:    "Update Access Forwarding Action Information 1",
	ie.UpdateNonTGPPAccessForwardingActionInformation: "Update Access Forwarding Action Information 2",
	ie.RemoveMAR: "Remove MAR", ie.UpdateMAR: "Update MAR", ie.MARID: "MAR ID", ie.SteeringFunctionality: "Steering Functionality",
	ie.SteeringMode: "Steering Mode", ie.Weight: "Weight", ie.Priority: "Priority", ie.PDNType: "PDN Type",
	ie.ProvideATSSSControlInformation: "Provide ATSSS Control Information", ie.UPFunctionFeatures: "UP Function Features",
	ie.CPFunctionFeatures: "CP Function Features", ie.APNDNN: "APN/DNN", ie.SNSSAI: "S-NSSAI",
	ie.VolumeThreshold: "Volume Threshold", ie.VolumeQuota: "Volume Quota", ie.TimeThreshold: "Time Threshold",
	ie.TimeQuota: "Time Quota", ie.MeasurementPeriod: "Measurement Period", ie.ReportingTriggers: "Reporting Triggers",
	ie.MeasurementMethod: "Measurement Method", ie.MeasurementInformation: "Measurement Information",
	ieThresholds: "Thresholds", ieSteeringModeIndicat: "Steering Mode Indicator",
}

func ieName(t uint16) string {
	if n, ok := ieNames[t]; ok {
		return n
	}
	return fmt.Sprintf("IE type %d", t)
}

// undecodable turns a panic of the IE decoders (go-pfcp's included) into a refusal of the IE as
// incorrect, so that no request can stop the endpoint; panicked marks it for the fuzz test,
// which fails on one (each is a decoder bug to fix).
func undecodable(err *error) {
	if p := recover(); p != nil {
		*err = &Refusal{Cause: CauseMandatoryIEIncorrect, Msg: fmt.Sprintf("an IE could not be decoded: %v", p), panicked: true}
	}
}
