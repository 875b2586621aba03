// Package gnb is the access-node emulator's data path and control: it carries the legs of the
// UEs it serves between their access links and the UPF's N3 address, in GTP-U with each
// session's TEIDs (3GPP TS 29.281, the PDU Session Container of TS 38.415), as an access node
// does after the PDU session is set up. It has two roles, one data path: a gNB carries the 3GPP
// legs that name it (spec.accessLegs.threeGPP.gnbAddress), a W-AGF, the wireline access gateway
// of TS 23.316 (a 5G-RG's fixed line ends at it), the non-3GPP legs that run over N3 through it
// (spec.accessLegs.nonThreeGPP.gatewayAddress with its TEIDs). There is no NGAP, RRC or
// wireline signalling: the TEIDs come from the ATSSSSessions, which is what the testbed and the
// demo need.
//
//	uplink    UE ─access link─> policy rule (iif link) ─> TUN ─> lookup by inner source (the
//	          UE's address on the leg) ─> GTP-U (uplink TEID, QFI) ─> UDP 2152 ─> UPF N3 address
//	downlink  UPF ─> UDP 2152 ─> GTP-U G-PDU ─> lookup by TEID (downlink TEID) ─> the session's
//	          QFI, if it has one ─> inner destination must be that UE ─> TUN ─> kernel routing
//	          ─> access link ─> UE
package gnb

import (
	"fmt"
	"net/netip"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Role is the access node the emulator stands in for.
type Role string

const (
	RoleGNB  Role = "gnb"   // the 3GPP legs that name it
	RoleWAGF Role = "w-agf" // the non-3GPP legs over N3 that name it
)

// ParseRole reads a --role value.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleGNB, RoleWAGF:
		return r, nil
	}
	return "", fmt.Errorf("role %q: want %s or %s", s, RoleGNB, RoleWAGF)
}

// field is the JSON path of the leg the role serves, for the watch and for errors.
func (r Role) field() string {
	if r == RoleWAGF {
		return "spec.accessLegs.nonThreeGPP"
	}
	return "spec.accessLegs.threeGPP"
}

// SelectField is the ATSSSSession selectable field the role's watch is filtered by.
func (r Role) SelectField() string {
	if r == RoleWAGF {
		return r.field() + ".gatewayAddress"
	}
	return r.field() + ".gnbAddress"
}

// NotServedReason is the reason of the Warning event for a session the role cannot serve.
func (r Role) NotServedReason() string {
	if r == RoleWAGF {
		return "WAGFNotServed"
	}
	return "GNBNotServed"
}

// leg is the session's leg the role serves, if it names node n3.
func (r Role) leg(s *junctionv1.ATSSSSession, n3 netip.Addr) (ue junctionv1.IPv4Address, ul, dl int64, ok bool) {
	if r == RoleWAGF {
		l := s.Spec.AccessLegs.NonThreeGPP
		if !l.OverN3() || string(l.GatewayAddress) != n3.String() {
			return "", 0, 0, false
		}
		return l.UEAddress, l.UplinkTEID, l.DownlinkTEID, true
	}
	l := s.Spec.AccessLegs.ThreeGPP
	if l == nil || string(l.GNBAddress) != n3.String() {
		return "", 0, 0, false
	}
	return l.UEAddress, l.UplinkTEID, l.DownlinkTEID, true
}

// Bearer is one UE's leg as the access node sees it.
type Bearer struct {
	UE           netip.Addr // the UE's address on the leg: inner source uplink, destination downlink
	UPF          netip.Addr // the UPF's N3 address
	UplinkTEID   uint32
	DownlinkTEID uint32
	// QFI is the session's QoS flow (spec.qfi), 0 if it has none. With one, the node puts it on
	// the uplink and takes only downlink G-PDUs whose PDU Session Container names it, as a gNB
	// that maps QoS flows to radio bearers does; without, it puts DefaultQFI on the uplink and
	// takes the downlink with any container or none.
	QFI     uint8
	Session string // namespace/name, for logs and errors
}

// DefaultQFI is the uplink's QFI for a session without spec.qfi: 9, the default non-GBR flow
// of TS 23.501 table 5.7.4-1.
const DefaultQFI = 9

// UplinkQFI is the QFI the bearer's uplink G-PDUs carry.
func (b Bearer) UplinkQFI() uint8 {
	if b.QFI != 0 {
		return b.QFI
	}
	return DefaultQFI
}

// TakesDownlink reports whether a downlink G-PDU in QoS flow qfi (0: no container) belongs to
// the bearer's flow.
func (b Bearer) TakesDownlink(qfi uint8) bool { return b.QFI == 0 || qfi == b.QFI }

// BearerError says why a session is not served.
type BearerError struct {
	Session string // namespace/name
	Err     error  // names the field
}

func (e BearerError) Error() string { return "ATSSSSession " + e.Session + ": " + e.Err.Error() }

// Table is the gNB's forwarding state, replaced whole on every change.
type Table struct {
	byUE   map[netip.Addr]Bearer
	byTEID map[uint32]Bearer
}

// Len is the number of bearers.
func (t *Table) Len() int { return len(t.byUE) }

// Uplink finds the bearer of a packet from UE address ue.
func (t *Table) Uplink(ue netip.Addr) (Bearer, bool) {
	b, ok := t.byUE[ue]
	return b, ok
}

// Downlink finds the bearer of a G-PDU with TEID teid.
func (t *Table) Downlink(teid uint32) (Bearer, bool) {
	b, ok := t.byTEID[teid]
	return b, ok
}

// BuildTable gathers the bearers of the sessions whose leg of the role names node address n3. A
// session that cannot be served (its UPF or N3 address unknown, its UE address or downlink TEID
// used by another) is left out with an error naming the field; the others are served.
func BuildTable(role Role, n3 netip.Addr, sessions []junctionv1.ATSSSSession, upfs []junctionv1.UserPlaneFunction) (*Table, []BearerError) {
	t := &Table{byUE: map[netip.Addr]Bearer{}, byTEID: map[uint32]Bearer{}}
	byName := map[string]*junctionv1.UserPlaneFunction{}
	for i := range upfs {
		byName[upfs[i].Namespace+"/"+upfs[i].Name] = &upfs[i]
	}
	var errs []BearerError
	var cands []Bearer
	ues, teids := map[netip.Addr][]string{}, map[uint32][]string{}
	for i := range sessions {
		s := &sessions[i]
		ueAddr, ul, dl, ok := role.leg(s, n3)
		if !ok {
			continue
		}
		key := s.Namespace + "/" + s.Name
		ue, err := netip.ParseAddr(string(ueAddr))
		if err != nil || !ue.Is4() {
			errs = append(errs, BearerError{key, fmt.Errorf("%s.ueAddress %q is not an IPv4 address", role.field(), ueAddr)})
			continue
		}
		u, ok := byName[s.Namespace+"/"+s.Spec.UPFRef.Name]
		if !ok {
			errs = append(errs, BearerError{key, fmt.Errorf("spec.upfRef: UserPlaneFunction %q not found", s.Spec.UPFRef.Name)})
			continue
		}
		ep, err := u.TunnelEndpointIndex(s.Spec.TunnelEndpoint)
		if err != nil {
			errs = append(errs, BearerError{key, err})
			continue
		}
		upf, err := netip.ParseAddr(string(u.Spec.TunnelEndpoints[ep].N3Address))
		if err != nil || !upf.Is4() {
			errs = append(errs, BearerError{key, fmt.Errorf("UserPlaneFunction %s: spec.tunnelEndpoints[%d].n3Address %q is not an IPv4 address", u.Name, ep, u.Spec.TunnelEndpoints[ep].N3Address)})
			continue
		}
		// The API server bounds both TEIDs to 1..2^32-1.
		b := Bearer{UE: ue, UPF: upf, UplinkTEID: uint32(ul), DownlinkTEID: uint32(dl), QFI: uint8(s.Spec.QFI), Session: key}
		cands = append(cands, b)
		ues[ue] = append(ues[ue], key)
		teids[b.DownlinkTEID] = append(teids[b.DownlinkTEID], key)
	}
	for _, b := range cands {
		switch {
		case len(ues[b.UE]) > 1:
			errs = append(errs, BearerError{b.Session, fmt.Errorf("%s.ueAddress %s is shared by %v; none of them is served", role.field(), b.UE, ues[b.UE])})
		case len(teids[b.DownlinkTEID]) > 1:
			errs = append(errs, BearerError{b.Session, fmt.Errorf("%s.downlinkTEID %d is shared by %v; none of them is served", role.field(), b.DownlinkTEID, teids[b.DownlinkTEID])})
		default:
			t.byUE[b.UE], t.byTEID[b.DownlinkTEID] = b, b
		}
	}
	return t, errs
}
