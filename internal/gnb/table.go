// Package gnb is the gNB emulator's data path and control: it carries the 3GPP leg of the UEs
// it serves between their radio links and the UPF's N3 address, in GTP-U with each session's
// TEIDs (3GPP TS 29.281, the PDU Session Container of TS 38.415), as a gNB does after the PDU
// session is set up. There is no NGAP or RRC: the TEIDs come from the ATSSSSessions that name
// this gNB (spec.accessLegs.threeGPP.gnbAddress), which is what the testbed and the demo need.
//
//	uplink    UE ─radio─> policy rule (iif radio) ─> TUN ─> lookup by inner source (the UE's
//	          3GPP address) ─> GTP-U (uplink TEID, QFI) ─> UDP 2152 ─> UPF N3 address
//	downlink  UPF ─> UDP 2152 ─> GTP-U G-PDU ─> lookup by TEID (downlink TEID) ─> inner
//	          destination must be that UE ─> TUN ─> kernel routing ─> radio ─> UE
package gnb

import (
	"fmt"
	"net/netip"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Bearer is one UE's 3GPP leg as the gNB sees it.
type Bearer struct {
	UE           netip.Addr // the UE's 3GPP address: inner source uplink, destination downlink
	UPF          netip.Addr // the UPF's N3 address
	UplinkTEID   uint32
	DownlinkTEID uint32
	Session      string // namespace/name, for logs and errors
}

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

// BuildTable gathers the bearers of the sessions whose 3GPP leg names gNB address n3. A session
// that cannot be served (its UPF or N3 address unknown, its UE address or downlink TEID used by
// another) is left out with an error naming the field; the others are served.
func BuildTable(n3 netip.Addr, sessions []junctionv1.ATSSSSession, upfs []junctionv1.UserPlaneFunction) (*Table, []BearerError) {
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
		leg := s.Spec.AccessLegs.ThreeGPP
		if leg == nil || string(leg.GNBAddress) != n3.String() {
			continue
		}
		key := s.Namespace + "/" + s.Name
		ue, err := netip.ParseAddr(string(leg.UEAddress))
		if err != nil || !ue.Is4() {
			errs = append(errs, BearerError{key, fmt.Errorf("spec.accessLegs.threeGPP.ueAddress %q is not an IPv4 address", leg.UEAddress)})
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
		b := Bearer{UE: ue, UPF: upf, UplinkTEID: uint32(leg.UplinkTEID), DownlinkTEID: uint32(leg.DownlinkTEID), Session: key}
		cands = append(cands, b)
		ues[ue] = append(ues[ue], key)
		teids[b.DownlinkTEID] = append(teids[b.DownlinkTEID], key)
	}
	for _, b := range cands {
		switch {
		case len(ues[b.UE]) > 1:
			errs = append(errs, BearerError{b.Session, fmt.Errorf("spec.accessLegs.threeGPP.ueAddress %s is shared by %v; none of them is served", b.UE, ues[b.UE])})
		case len(teids[b.DownlinkTEID]) > 1:
			errs = append(errs, BearerError{b.Session, fmt.Errorf("spec.accessLegs.threeGPP.downlinkTEID %d is shared by %v; none of them is served", b.DownlinkTEID, teids[b.DownlinkTEID])})
		default:
			t.byUE[b.UE], t.byTEID[b.DownlinkTEID] = b, b
		}
	}
	return t, errs
}
