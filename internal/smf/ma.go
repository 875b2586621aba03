package smf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Steering modes of TS 29.244 §8.2.124.
const (
	ActiveStandby uint8 = 0
	SmallestDelay uint8 = 1
	LoadBalancing uint8 = 2
	PriorityBased uint8 = 3
	Redundant     uint8 = 4
)

// Access names a leg in a Steering.
type Access int

const (
	ThreeGPP Access = iota
	NonThreeGPP
)

// Steering is what one MAR asks for.
type Steering struct {
	Mode uint8
	// Active is the active access of ActiveStandby; High the high-priority access of
	// PriorityBased; Weight3GPP the 3GPP share of LoadBalancing (0-100), Autonomous its ALBI.
	Active, High Access
	Weight3GPP   uint8
	Autonomous   bool
	// RTTms and LossPercent are the Rel-17 Thresholds (0 / nil: not sent).
	RTTms       uint16
	LossPercent *uint8
}

// App is a downlink PDR with an SDF filter and its own MAR.
type App struct {
	Flow string // IPFilterRule, e.g. "permit out 17 from 198.51.100.0/24 to assigned 5000-5100"
	// ApplicationID, when set, names the application in place of Flow: its PFDs (ProvidePFDs)
	// or the SteeringPolicy of that name describe it.
	ApplicationID string
	Precedence    uint32
	Steering      Steering
}

// MASession is an MA PDU session as the SMF sets it up: one UE IP address (Junction's session
// address), the UE's address on each leg, the gNB's N3 address and downlink TEID.
type MASession struct {
	IMSI         string
	UEAddr       netip.Addr // the session address
	UE3GPP       netip.Addr // the UE's address on the 3GPP leg (inside GTP-U)
	UENon3GPP    netip.Addr // the UE's address on the non-3GPP leg; invalid: 3GPP only
	GNB          netip.Addr
	DownlinkTEID uint32
	// Gateway, when valid, puts the non-3GPP leg on N3: GTP-U between the UPF and this access
	// gateway (N3IWF, TNGF, W-AGF), downlink with Non3GPPDownlinkTEID, uplink on a TEID the UPF
	// chooses; invalid: the leg is plain UDP/IPv4 to UENon3GPP.
	Gateway             netip.Addr
	Non3GPPDownlinkTEID uint32
	Default             Steering // the MAR of all traffic no App describes
	Apps                []App
	// URR, when set, measures the session's usage (URRID, named by every PDR).
	URR *URR
	// QFI, when not 0, is the session's QoS flow: a QER (QERID) with this QFI and open gates,
	// named by every PDR, as SMFs send for the default QoS flow.
	QFI uint8
	// MBRUL and MBRDL, when either is not 0, are the session's AMBR in kbit/s: the MBR of that
	// QER, as Open5GS and free5GC send it.
	MBRUL, MBRDL uint64
	// CSIDs, when set, are the session's Connection Set IDs: an FQ-CSID of the SMF's own address
	// (partial failure handling; DeleteSets deletes the sessions of some).
	CSIDs []uint16
}

// hasQER: the session's PDRs name the QER.
func (s MASession) hasQER() bool { return s.QFI != 0 || s.MBRUL != 0 || s.MBRDL != 0 }

// Rule IDs the emulator uses.
const (
	PDRUplink3GPP    uint16 = 1
	PDRUplinkNon3GPP uint16 = 2
	PDRDownlink      uint16 = 10 // +i for App i+1
	FARCore          uint32 = 1
	FAR3GPP          uint32 = 2
	FARNon3GPP       uint32 = 3
	QERID            uint32 = 1
	MARDefault       uint16 = 1 // +i for App i
	chooseID         uint8  = 1
	chooseIDNon3GPP  uint8  = 2
	junctionPort     uint16 = 2153
)

// Established is a session the UPF took.
type Established struct {
	CPSEID, UPSEID uint64
	UplinkTEID     uint32 // the 3GPP leg's, the UPF chose
	// UplinkTEIDNon3GPP is the non-3GPP leg's, for a leg over N3.
	UplinkTEIDNon3GPP uint32
	N3                netip.Addr
	Resp              *Response
}

// EstablishmentIEs are the IEs of the session's Establishment Request.
func (c *Client) EstablishmentIEs(s MASession, cpSEID uint64) []*ie.IE {
	pdr := s.createPDR
	ies := []*ie.IE{
		ie.NewNodeIDHeuristic(c.NodeID), c.FSEID(cpSEID), ie.NewPDNType(ie.PDNTypeIPv4),
		ie.NewProvideATSSSControlInformation(ie.NewATSSSLLControlInformation(1)),
		ie.NewCreateFAR(ie.NewFARID(FARCore), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
		ie.NewCreateFAR(ie.NewFARID(FAR3GPP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
			ie.NewDestinationInterface(ie.DstInterfaceAccess),
			ie.NewOuterHeaderCreation(0x0100, s.DownlinkTEID, s.GNB.String(), "", 0, 0, 0),
			ie.NewTGPPInterfaceType(11))), // N3 3GPP Access
		pdr(ie.NewPDRID(PDRUplink3GPP), ie.NewPrecedence(100), ie.NewPDI(s.uplinkQFI(
			ie.NewSourceInterface(ie.SrcInterfaceAccess),
			ie.NewFTEID(0x0d, 0, nil, nil, chooseID), // V4 | CH | CHID
			ie.NewUEIPAddress(0x02, s.UE3GPP.String(), "", 0, 0),
			ie.NewTGPPInterfaceType(11))...),
			ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(FARCore)),
	}
	if s.IMSI != "" {
		ies = append(ies, ie.NewUserID(0x01, s.IMSI, "", "", ""))
	}
	ies = append(ies, non3GPPLeg(s)...)
	ies = append(ies,
		pdr(ie.NewPDRID(PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, s.UEAddr.String(), "", 0, 0)),
			ie.NewMARID(MARDefault)),
		c.CreateMAR(MARDefault, s.Default, s.UENon3GPP.IsValid()))
	for i, a := range s.Apps {
		mar := appMAR(i)
		detect := ie.NewSDFFilter(a.Flow, "", "", "", 0)
		if a.ApplicationID != "" {
			detect = ie.NewApplicationID(a.ApplicationID)
		}
		ies = append(ies,
			pdr(ie.NewPDRID(PDRDownlink+uint16(i)+1), ie.NewPrecedence(a.Precedence), ie.NewPDI(
				ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, s.UEAddr.String(), "", 0, 0),
				detect),
				ie.NewMARID(mar)),
			c.CreateMAR(mar, a.Steering, s.UENon3GPP.IsValid()))
	}
	if s.URR != nil {
		ies = append(ies, s.URR.CreateURR())
	}
	if len(s.CSIDs) > 0 {
		ies = append(ies, c.FQCSID(s.CSIDs...))
	}
	if s.hasQER() {
		qer := []*ie.IE{ie.NewQERID(QERID), ie.NewGateStatus(ie.GateStatusOpen, ie.GateStatusOpen)}
		if s.MBRUL != 0 || s.MBRDL != 0 {
			qer = append(qer, ie.NewMBR(s.MBRUL, s.MBRDL))
		}
		if s.QFI != 0 {
			qer = append(qer, ie.NewQFI(s.QFI))
		}
		ies = append(ies, ie.NewCreateQER(qer...))
	}
	return ies
}

// uplinkQFI is the PDI of the 3GPP leg's uplink PDR with the session's QFI, when it has one:
// Open5GS's SMF puts its QoS flow's QFI in every uplink PDR (lib/pfcp/build.c).
func (s MASession) uplinkQFI(pdi ...*ie.IE) []*ie.IE {
	if s.QFI != 0 {
		pdi = append(pdi, ie.NewQFI(s.QFI))
	}
	return pdi
}

// appMAR is the MAR ID of App i.
func appMAR(i int) uint16 { return MARDefault + uint16(i) + 1 }

// createPDR is a Create PDR of s: ies and what every PDR of s names.
func (s MASession) createPDR(ies ...*ie.IE) *ie.IE {
	if s.URR != nil {
		ies = append(ies, ie.NewURRID(URRID))
	}
	if s.hasQER() {
		ies = append(ies, ie.NewQERID(QERID))
	}
	return ie.NewCreatePDR(ies...)
}

// non3GPPLeg is the non-3GPP leg's FAR and uplink PDR; none without a UE address on that leg.
func non3GPPLeg(s MASession) []*ie.IE {
	pdr := s.createPDR
	switch {
	case s.UENon3GPP.IsValid() && s.Gateway.IsValid():
		// TS 29.244 §5.24 (ATSSS): the non-3GPP leg's tunnel with its N3IWF/TNGF/W-AGF.
		return []*ie.IE{
			ie.NewCreateFAR(ie.NewFARID(FARNon3GPP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceAccess),
				ie.NewOuterHeaderCreation(0x0100, s.Non3GPPDownlinkTEID, s.Gateway.String(), "", 0, 0, 0),
				ie.NewTGPPInterfaceType(12))), // N3 trusted non-3GPP access (a W-AGF, a TNGF)
			pdr(ie.NewPDRID(PDRUplinkNon3GPP), ie.NewPrecedence(100), ie.NewPDI(
				ie.NewSourceInterface(ie.SrcInterfaceAccess),
				ie.NewFTEID(0x0d, 0, nil, nil, chooseIDNon3GPP),
				ie.NewUEIPAddress(0x02, s.UENon3GPP.String(), "", 0, 0),
				ie.NewTGPPInterfaceType(12)),
				ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(FARCore)),
		}
	case s.UENon3GPP.IsValid():
		return []*ie.IE{
			ie.NewCreateFAR(ie.NewFARID(FARNon3GPP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(
				ie.NewDestinationInterface(ie.DstInterfaceAccess),
				ie.NewOuterHeaderCreation(0x0400, 0, s.UENon3GPP.String(), "", junctionPort, 0, 0),
				ie.NewTGPPInterfaceType(13))), // N3 untrusted non-3GPP access
			pdr(ie.NewPDRID(PDRUplinkNon3GPP), ie.NewPrecedence(100), ie.NewPDI(
				ie.NewSourceInterface(ie.SrcInterfaceAccess),
				ie.NewUEIPAddress(0x02, s.UENon3GPP.String(), "", 0, 0),
				ie.NewTGPPInterfaceType(13)),
				ie.NewOuterHeaderRemoval(2, 0), ie.NewFARID(FARCore)),
		}
	}
	return nil
}

// AddNon3GPPLegIEs are the IEs of a Session Modification Request that adds the non-3GPP leg of
// s to a session established without it (the UE registered over the other access later, TS
// 23.502 §4.22.7): its FAR and uplink PDR, and each MAR given that access's Forwarding Action
// Information. s is the session as it is now to be, with its UE address on that leg.
func (c *Client) AddNon3GPPLegIEs(s MASession) []*ie.IE {
	ies := non3GPPLeg(s)
	add := func(id uint16, st Steering) *ie.IE {
		return ie.NewUpdateMAR(ie.NewMARID(id), ie.NewNonTGPPAccessForwardingActionInformation(afai(st, NonThreeGPP, FARNon3GPP)...))
	}
	ies = append(ies, add(MARDefault, s.Default))
	for i, a := range s.Apps {
		ies = append(ies, add(appMAR(i), a.Steering))
	}
	return ies
}

// CreateMAR is a Create MAR for a steering; both: the session has a non-3GPP leg.
func (c *Client) CreateMAR(id uint16, st Steering, both bool) *ie.IE {
	out := []*ie.IE{ie.NewMARID(id), ie.NewSteeringFunctionality(0), ie.NewSteeringMode(st.Mode)}
	a1, a2 := afai(st, ThreeGPP, FAR3GPP), afai(st, NonThreeGPP, FARNon3GPP)
	out = append(out, ie.NewTGPPAccessForwardingActionInformation(a1...))
	if both {
		out = append(out, ie.NewNonTGPPAccessForwardingActionInformation(a2...))
	}
	return ie.NewCreateMAR(append(out, extras(st)...)...)
}

// UpdateMAR is an Update MAR that gives a MAR a new steering.
func (c *Client) UpdateMAR(id uint16, st Steering, both bool) *ie.IE {
	out := []*ie.IE{ie.NewMARID(id), ie.NewSteeringFunctionality(0), ie.NewSteeringMode(st.Mode)}
	out = append(out, ie.NewUpdateTGPPAccessForwardingActionInformation(afai(st, ThreeGPP, FAR3GPP)...))
	if both {
		out = append(out, ie.NewUpdateNonTGPPAccessForwardingActionInformation(afai(st, NonThreeGPP, FARNon3GPP)...))
	}
	return ie.NewUpdateMAR(append(out, extras(st)...)...)
}

func afai(st Steering, a Access, far uint32) []*ie.IE {
	out := []*ie.IE{ie.NewFARID(far)}
	switch st.Mode {
	case ActiveStandby:
		p := ie.PriorityStandby
		if st.Active == a {
			p = ie.PriorityActive
		}
		out = append(out, ie.NewPriority(p))
	case PriorityBased:
		p := ie.PriorityLow
		if st.High == a {
			p = ie.PriorityHigh
		}
		out = append(out, ie.NewPriority(p))
	case LoadBalancing:
		if !st.Autonomous {
			w := st.Weight3GPP
			if a == NonThreeGPP {
				w = 100 - w
			}
			out = append(out, ie.NewWeight(w))
		}
	}
	return out
}

// extras are the Rel-17 Thresholds (IE 288) and Steering Mode Indicator (IE 289), which
// go-pfcp does not name: flags, RTT in ms (2 octets), loss in percent (1 octet); ALBI bit 1.
func extras(st Steering) []*ie.IE {
	var out []*ie.IE
	if st.RTTms != 0 || st.LossPercent != nil {
		b := []byte{0}
		if st.RTTms != 0 {
			b[0] |= 0x01
			b = binary.BigEndian.AppendUint16(b, st.RTTms)
		}
		if st.LossPercent != nil {
			b[0] |= 0x02
			b = append(b, *st.LossPercent)
		}
		out = append(out, ie.New(288, b))
	}
	if st.Autonomous {
		out = append(out, ie.New(289, []byte{0x01}))
	}
	return out
}

// Establish sends the session's Establishment Request; a response with another cause than
// Request accepted is returned with an error that names it.
func (c *Client) Establish(ctx context.Context, s MASession) (*Established, error) {
	cp := c.NewCPSEID()
	r, err := c.Session(ctx, message.MsgTypeSessionEstablishmentRequest, 0, c.EstablishmentIEs(s, cp)...)
	if err != nil {
		return nil, err
	}
	out := &Established{CPSEID: cp, Resp: r}
	if cause := r.Cause(); cause != ie.CauseRequestAccepted {
		return out, fmt.Errorf("establishment refused with cause %d", cause)
	}
	if x := r.Find(ie.FSEID); x != nil {
		f, err := x.FSEID()
		if err != nil {
			return out, err
		}
		out.UPSEID = f.SEID
		c.mu.Lock()
		c.upSEIDs[cp] = f.SEID
		c.mu.Unlock()
	}
	for _, x := range r.IEs {
		if x.Type != ie.CreatedPDR {
			continue
		}
		f, err := x.FTEID()
		if err != nil {
			continue
		}
		if id, err := x.PDRID(); err == nil && id == PDRUplinkNon3GPP {
			out.UplinkTEIDNon3GPP = f.TEID
			continue
		}
		out.UplinkTEID = f.TEID
		out.N3, _ = netip.AddrFromSlice(f.IPv4Address.To4())
	}
	return out, nil
}

// Modify sends a Session Modification Request with the given IEs.
func (c *Client) Modify(ctx context.Context, s *Established, ies ...*ie.IE) (*Response, error) {
	return c.Session(ctx, message.MsgTypeSessionModificationRequest, s.UPSEID, ies...)
}

// Delete sends a Session Deletion Request.
func (c *Client) Delete(ctx context.Context, s *Established) (*Response, error) {
	return c.Session(ctx, message.MsgTypeSessionDeletionRequest, s.UPSEID)
}

// FieldManager is the emulator's field manager on the ATSSSSessions it hands to UE agents.
const FieldManager = "junction-smf-emulator"

// HandToAgent sets an N4 session's spec.ue.nodeName by server-side apply under the emulator's
// own field manager: what NAS does in a 5G core (the UE learns its ATSSS rules); here the UE
// agent of that node picks the session up (docs/n4.md). The N4 endpoint's own applies leave
// the field alone.
func HandToAgent(ctx context.Context, c client.Client, key types.NamespacedName, node string) error {
	patch, err := json.Marshal(map[string]any{
		"apiVersion": junctionv1.GroupVersion.String(), "kind": "ATSSSSession",
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace},
		"spec":     map[string]any{"ue": map[string]any{"nodeName": node}},
	})
	if err != nil {
		return err
	}
	// The UPF writes the session's object after its answer (docs/n4.md): wait for it, or the
	// apply would create a session of nothing but a node name.
	obj := &junctionv1.ATSSSSession{}
	for {
		err := c.Get(ctx, key, obj)
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ATSSSSession %s: %w", key, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return c.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, patch), client.FieldOwner(FieldManager))
}
