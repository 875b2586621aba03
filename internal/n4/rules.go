package n4

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"slices"
	"sort"

	"github.com/wmnsk/go-pfcp/ie"
)

// The rules of one PFCP session, decoded from the SMF's IEs (TS 29.244 §7.5.2). They are kept
// (and persisted, as JSON) as the SMF sent them, so a Session Modification applies to them what
// it would apply on any UPF; Plan maps them onto Junction's model afterwards.

// Values of Source Interface (§8.2.2) and Destination Interface (§8.2.24).
const (
	ifaceAccess     uint8 = 0
	ifaceCore       uint8 = 1
	ifaceN6LAN      uint8 = 2
	ifaceCPFunction uint8 = 3
)

// Values of 3GPP Interface Type (§8.2.118) that name an access.
const (
	itypeN3Access3GPP       uint8 = 11
	itypeN3TrustedNon3GPP   uint8 = 12
	itypeN3UntrustedNon3GPP uint8 = 13
)

// Outer Header Removal descriptions (§8.2.64) and Outer Header Creation descriptions (§8.2.56,
// octets 5-6 as one big-endian number) that Junction's legs use.
const (
	ohrGTPUv4 uint8 = 0
	ohrUDPv4  uint8 = 2

	ohcGTPUv4 uint16 = 0x0100
	ohcUDPv4  uint16 = 0x0400
)

// Apply Action flags (§8.2.26, octet 5) Junction takes: DROP or FORW, or BUFF with or without
// NOCP (hold a single-access session's downlink, and notify the SMF of its first packet: docs/n4.md,
// "Buffering"). DUPL and the flags of octet 6 are refused.
const (
	actDrop uint8 = 0x01
	actForw uint8 = 0x02
	actBuff uint8 = 0x04
	actNocp uint8 = 0x08
)

// IE types go-pfcp v0.0.24 does not name (Rel-17, TS 29.244 §8.2.186 and §8.2.187; Wireshark's
// PFCP dissector agrees on the numbers).
const (
	ieThresholds          uint16 = 288
	ieSteeringModeIndicat uint16 = 289
)

// Steering functionality (§8.2.123) and steering mode (§8.2.124) values.
const (
	functionalityATSSSLL uint8 = 0
	functionalityMPTCP   uint8 = 1

	modeActiveStandby uint8 = 0
	modeSmallestDelay uint8 = 1
	modeLoadBalancing uint8 = 2
	modePriorityBased uint8 = 3
	modeRedundant     uint8 = 4
)

// FTEID is a PDI's F-TEID: given by the SMF, or to be chosen by the UPF (CH).
type FTEID struct {
	TEID     uint32     `json:"teid,omitempty"`
	Addr     netip.Addr `json:"addr,omitzero"`
	Choose   bool       `json:"choose,omitempty"`
	ChooseID *uint8     `json:"chooseID,omitempty"`
}

// PDR is a Packet Detection Rule.
type PDR struct {
	ID         uint16 `json:"id"`
	Precedence uint32 `json:"precedence"`
	// Source is the PDI's Source Interface; SourceType its 3GPP Interface Type, if sent.
	Source     uint8  `json:"source"`
	SourceType *uint8 `json:"sourceType,omitempty"`
	FTEID      *FTEID `json:"fteid,omitempty"`
	// UEIP is the PDI's UE IP Address. Its S/D flag is not read: the Source Interface says on
	// which side of the packet the UE is, as most UPFs do (pfcpsim, for one, leaves S/D clear
	// on downlink PDRs).
	UEIP netip.Addr `json:"ueIP,omitzero"`
	SDF  []string   `json:"sdf,omitempty"` // Flow Descriptions (IPFilterRule)
	// SDFIDs are the SDF Filter IDs of SDF's bidirectional filters, one for each of SDF (0: a
	// filter without one), or none when no filter has one; SDFRefs the IDs of bidirectional
	// filters this PDR names by ID alone, whose description another PDR carries (Rules.filters).
	SDFIDs        []uint32 `json:"sdfIDs,omitempty"`
	SDFRefs       []uint32 `json:"sdfRefs,omitempty"`
	ApplicationID string   `json:"applicationID,omitempty"`
	// PFDs are the flow descriptions the SMFs provisioned for ApplicationID when the session was
	// last resolved against them (pfd.go); none: the SteeringPolicy of that name detects it.
	PFDs            []string `json:"pfds,omitempty"`
	NetworkInstance string   `json:"networkInstance,omitempty"`
	OHR             *uint8   `json:"ohr,omitempty"`
	FARID           *uint32  `json:"farID,omitempty"`
	MARID           *uint16  `json:"marID,omitempty"`
	QERIDs          []uint32 `json:"qerIDs,omitempty"`
	URRIDs          []uint32 `json:"urrIDs,omitempty"`
	// QFI is the PDI's QFI, 1-63 (an uplink PDR only: Open5GS puts its QoS flow's in every
	// uplink PDR), 0 when absent; plan.uplinkQFI holds it to the session's one QoS flow.
	QFI uint8 `json:"qfi,omitempty"`
}

// OHC is a FAR's Outer Header Creation.
type OHC struct {
	Desc uint16     `json:"desc"`
	TEID uint32     `json:"teid,omitempty"`
	Addr netip.Addr `json:"addr"`
	Port uint16     `json:"port,omitempty"`
}

// FAR is a Forwarding Action Rule.
type FAR struct {
	ID     uint32 `json:"id"`
	Action uint8  `json:"action"`
	// Dest, DestType, OHC and NetworkInstance are its Forwarding Parameters.
	Dest            *uint8 `json:"dest,omitempty"`
	DestType        *uint8 `json:"destType,omitempty"`
	OHC             *OHC   `json:"ohc,omitempty"`
	NetworkInstance string `json:"networkInstance,omitempty"`
	BARID           *uint8 `json:"barID,omitempty"` // must name the session's BAR
	// SendEndMarker: this request's Update Forwarding Parameters carry PFCPSMReq-Flags SNDEM
	// (endMarkers reads and clears it; it is no part of the rule).
	SendEndMarker bool `json:"-"`
}

// BAR is a Buffering Action Rule: how the UPF buffers the downlink of an idle UE (its Downlink
// Data Notification Delay, Suggested Buffering Packets Count). Junction holds a fixed count per
// session (internal/dlbuffer) and reports at once, so a BAR changes nothing: it is kept so that
// the FARs and the Update and Remove BARs that name it are checked, as SMFs send one with every
// session (Open5GS does).
type BAR struct {
	ID uint8 `json:"id"`
}

// gateOpen is the Gate Status (§8.2.7) of an open gate.
const gateOpen = 0

// QER is a QoS Enforcement Rule; Junction enforces the gate and marks the QFI.
type QER struct {
	ID     uint32 `json:"id"`
	GateUL uint8  `json:"gateUL"` // gateOpen, or closed (1; the spare 2 and 3 read as closed too)
	GateDL uint8  `json:"gateDL"`
	QFI    uint8  `json:"qfi,omitempty"` // 1-63: marked on the downlink of the PDRs that name it
	// MBR in kbit/s per direction (0: none); policed on the PDRs that name it (plan.go, sessionMBR).
	MBRUL uint64 `json:"mbrUL,omitempty"`
	MBRDL uint64 `json:"mbrDL,omitempty"`
	// A GBR IE (GBR): the PDRs that name it are a GBR flow's, outside the Session-AMBR; its
	// rates in kbit/s per direction (0: none given).
	GBR   bool   `json:"gbr,omitempty"`
	GBRUL uint64 `json:"gbrUL,omitempty"`
	GBRDL uint64 `json:"gbrDL,omitempty"`
}

// AFAI is one Access Forwarding Action Information of a MAR.
type AFAI struct {
	FARID    uint32 `json:"farID"`
	Weight   *uint8 `json:"weight,omitempty"`
	Priority *uint8 `json:"priority,omitempty"`
}

// MAR is a Multi-Access Rule.
type MAR struct {
	ID            uint16 `json:"id"`
	Functionality uint8  `json:"functionality"`
	Mode          uint8  `json:"mode"`
	// AFAI are Access Forwarding Action Information 1 and 2 (2 may be absent).
	AFAI [2]*AFAI `json:"afai"`
	// RTTms and LossPercent are the Rel-17 Thresholds; ALBI and UEAI the Steering Mode Indicator.
	RTTms       *uint16 `json:"rttMs,omitempty"`
	LossPercent *uint8  `json:"lossPercent,omitempty"`
	ALBI        bool    `json:"albi,omitempty"`
	UEAI        bool    `json:"ueai,omitempty"`
}

// Rules are a session's rules by ID.
type Rules struct {
	PDRs map[uint16]*PDR `json:"pdrs"`
	FARs map[uint32]*FAR `json:"fars"`
	QERs map[uint32]*QER `json:"qers,omitempty"`
	MARs map[uint16]*MAR `json:"mars,omitempty"`
	URRs map[uint32]*URR `json:"urrs,omitempty"`
	BARs map[uint8]*BAR  `json:"bars,omitempty"`
}

// packedRules are a session's Rules between requests: their JSON (what the session's
// annotation holds), decoded by each request that reads them. An endpoint keeps tens of
// thousands of sessions; decoded, each one's rules are dozens of small objects that the garbage
// collector walks in every cycle, and its marks set the answers' tail latency (docs/operator.md, "N4
// (PFCP) sessions"). The rules of a session whose URRs the endpoint polls stay decoded (live):
// every round of reports reads them.
type packedRules struct {
	json  []byte // nil when live
	live  *Rules
	urrs  bool         // the session has URRs
	peers []netip.Addr // the GTP-U peers of its FARs toward Access, sorted: for Node Reports
}

func pack(r *Rules) (packedRules, error) {
	p := packedRules{urrs: len(r.URRs) > 0}
	if r.polled() {
		p.live = r
	} else {
		var err error
		if p.json, err = json.Marshal(r); err != nil {
			return packedRules{}, err
		}
	}
	for _, f := range r.FARs {
		if f.OHC != nil && f.OHC.Desc == ohcGTPUv4 && f.Dest != nil && *f.Dest == ifaceAccess && !slices.Contains(p.peers, f.OHC.Addr) {
			p.peers = append(p.peers, f.OHC.Addr)
		}
	}
	slices.SortFunc(p.peers, func(a, b netip.Addr) int { return a.Compare(b) })
	return p, nil
}

// polled says whether a URR has a trigger the endpoint polls for (periodic, thresholds).
func (p packedRules) polled() bool { return p.live != nil }

// rules are the session's rules: live ones as they are, others decoded afresh.
func (p packedRules) rules() (*Rules, error) {
	if p.live != nil {
		return p.live, nil
	}
	r := newRules()
	if err := json.Unmarshal(p.json, r); err != nil {
		return nil, fmt.Errorf("the session's rules: %w", err)
	}
	return r, nil
}

func (p packedRules) MarshalJSON() ([]byte, error) {
	switch {
	case p.live != nil:
		return json.Marshal(p.live)
	case p.json == nil:
		return []byte("null"), nil
	}
	return p.json, nil
}

// UnmarshalJSON takes the rules from a session's saved state (a new leader's endpoint).
func (p *packedRules) UnmarshalJSON(b []byte) error {
	*p = packedRules{}
	if string(b) == "null" {
		return nil
	}
	r := newRules()
	if err := json.Unmarshal(b, r); err != nil {
		return err
	}
	var err error
	*p, err = pack(r)
	return err
}

// HasRules says whether a session's saved state had its rules.
func (s *State) HasRules() bool { return s.Rules.json != nil || s.Rules.live != nil }

func newRules() *Rules {
	return &Rules{PDRs: map[uint16]*PDR{}, FARs: map[uint32]*FAR{}, QERs: map[uint32]*QER{}, MARs: map[uint16]*MAR{}, URRs: map[uint32]*URR{}, BARs: map[uint8]*BAR{}}
}

// clone is a deep enough copy for a modification: rules are replaced whole, never edited in place.
func (r *Rules) clone() *Rules {
	c := newRules()
	for k, v := range r.PDRs {
		c.PDRs[k] = v
	}
	for k, v := range r.FARs {
		c.FARs[k] = v
	}
	for k, v := range r.QERs {
		c.QERs[k] = v
	}
	for k, v := range r.MARs {
		c.MARs[k] = v
	}
	for k, v := range r.URRs {
		cp := *v // a URR's measurement moves on with its reports
		c.URRs[k] = &cp
	}
	for k, v := range r.BARs {
		c.BARs[k] = v
	}
	return c
}

func sortedKeys[K ~uint16 | ~uint32, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// children returns a grouped IE's child IEs, each seen once: a second child of a type that may
// appear only once is refused. It reads g's own slice (a grouped IE has a few dozen children at
// most, so scans beat building a map for each of the thirty-odd groups of a request).
type children struct {
	parent uint16
	ies    []*ie.IE
}

func childrenOf(g *ie.IE, repeatable ...uint16) (children, error) {
	c := children{parent: g.Type, ies: g.ChildIEs}
	for _, x := range c.ies {
		if c.one(x.Type) != x && !contains(repeatable, x.Type) { // the first repeat on the wire
			return c, refuse(CauseMandatoryIEIncorrect, x.Type, "IE %s appears %d times in %s", ieName(x.Type), c.count(x.Type), ieName(g.Type))
		}
	}
	return c, nil
}

func (c children) count(t uint16) int {
	n := 0
	for _, x := range c.ies {
		if x.Type == t {
			n++
		}
	}
	return n
}

func contains(xs []uint16, t uint16) bool {
	for _, x := range xs {
		if x == t {
			return true
		}
	}
	return false
}

// only refuses the lowest child type not in known: Junction never accepts an IE it would not
// apply.
func (c children) only(known ...uint16) error {
	var unknown uint16
	found := false
	for _, x := range c.ies {
		if !contains(known, x.Type) && (!found || x.Type < unknown) {
			unknown, found = x.Type, true
		}
	}
	if !found {
		return nil
	}
	return refuse(CauseServiceNotSupported, unknown, "%s in %s is not supported (docs/n4.md)", ieName(unknown), ieName(c.parent))
}

func (c children) one(t uint16) *ie.IE {
	for _, x := range c.ies {
		if x.Type == t {
			return x
		}
	}
	return nil
}

func (c children) all(t uint16) []*ie.IE {
	var out []*ie.IE
	for _, x := range c.ies {
		if x.Type == t {
			out = append(out, x)
		}
	}
	return out
}

// need returns the child of type t or refuses with Mandatory IE missing.
func (c children) need(t uint16) (*ie.IE, error) {
	if x := c.one(t); x != nil {
		return x, nil
	}
	return nil, refuse(CauseMandatoryIEMissing, t, "%s has no %s", ieName(c.parent), ieName(t))
}

// bad refuses an IE whose value cannot be decoded.
func bad(x *ie.IE, err error) error {
	return refuse(CauseMandatoryIEIncorrect, x.Type, "%s: %v", ieName(x.Type), err)
}

func ipv4(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip.To4())
	return a, ok && ip.To4() != nil
}

// decodePDR decodes a Create PDR, or applies an Update PDR to old: each IE it carries replaces
// old's (a PDI whole, QER IDs as a list).
func decodePDR(g *ie.IE, old *PDR) (*PDR, error) {
	c, err := childrenOf(g, ie.QERID, ie.URRID)
	if err != nil {
		return nil, err
	}
	if err := c.only(ie.PDRID, ie.Precedence, ie.PDI, ie.OuterHeaderRemoval, ie.FARID, ie.QERID, ie.URRID, ie.MARID); err != nil {
		return nil, err
	}
	p := &PDR{}
	if old != nil {
		cp := *old
		p = &cp
	}
	x, err := c.need(ie.PDRID)
	if err != nil {
		return nil, err
	}
	if p.ID, err = x.PDRID(); err != nil {
		return nil, bad(x, err)
	}
	if x = c.one(ie.Precedence); x != nil {
		if p.Precedence, err = x.Precedence(); err != nil {
			return nil, bad(x, err)
		}
	} else if g.Type == ie.CreatePDR {
		return nil, refuse(CauseMandatoryIEMissing, ie.Precedence, "PDR %d has no Precedence", p.ID)
	}
	if x = c.one(ie.PDI); x != nil {
		p.Source, p.SourceType, p.FTEID, p.UEIP, p.SDF, p.ApplicationID, p.NetworkInstance, p.QFI = 0, nil, nil, netip.Addr{}, nil, "", "", 0
		p.SDFIDs, p.SDFRefs = nil, nil
		if err := decodePDI(x, p); err != nil {
			return nil, err
		}
	} else if g.Type == ie.CreatePDR {
		return nil, refuse(CauseMandatoryIEMissing, ie.PDI, "PDR %d has no PDI", p.ID)
	}
	if x = c.one(ie.OuterHeaderRemoval); x != nil {
		b, err := x.OuterHeaderRemoval()
		if err != nil || len(b) == 0 {
			return nil, bad(x, fmt.Errorf("no description"))
		}
		p.OHR = &b[0]
	}
	if x = c.one(ie.FARID); x != nil {
		v, err := x.FARID()
		if err != nil {
			return nil, bad(x, err)
		}
		p.FARID = &v
	}
	if x = c.one(ie.MARID); x != nil {
		v, err := x.MARID()
		if err != nil {
			return nil, bad(x, err)
		}
		p.MARID = &v
	}
	if qers := c.all(ie.QERID); len(qers) > 0 {
		p.QERIDs = nil
	}
	for _, x := range c.all(ie.QERID) {
		v, err := x.QERID()
		if err != nil {
			return nil, bad(x, err)
		}
		p.QERIDs = append(p.QERIDs, v)
	}
	if urrs := c.all(ie.URRID); len(urrs) > 0 {
		p.URRIDs = nil
	}
	for _, x := range c.all(ie.URRID) {
		v, err := x.URRID()
		if err != nil {
			return nil, bad(x, err)
		}
		p.URRIDs = append(p.URRIDs, v)
	}
	return p, nil
}

func decodePDI(g *ie.IE, p *PDR) error {
	c, err := childrenOf(g, ie.SDFFilter)
	if err != nil {
		return err
	}
	if err := c.only(ie.SourceInterface, ie.FTEID, ie.NetworkInstance, ie.UEIPAddress, ie.SDFFilter, ie.ApplicationID, ie.TGPPInterfaceType, ie.QFI); err != nil {
		return err
	}
	x, err := c.need(ie.SourceInterface)
	if err != nil {
		return err
	}
	if p.Source, err = x.SourceInterface(); err != nil {
		return bad(x, err)
	}
	if x = c.one(ie.TGPPInterfaceType); x != nil {
		v, err := x.TGPPInterfaceType()
		if err != nil {
			return bad(x, err)
		}
		p.SourceType = &v
	}
	if x = c.one(ie.FTEID); x != nil {
		f, err := x.FTEID()
		if err != nil {
			return bad(x, err)
		}
		t := &FTEID{Choose: f.HasCh()}
		if !f.HasIPv4() && !t.Choose {
			return refuse(CauseMandatoryIEIncorrect, ie.FTEID, "F-TEID of PDR %d has no IPv4 address (Junction's N3 is IPv4)", p.ID)
		}
		if t.Choose {
			if f.HasChID() {
				id := f.ChooseID
				t.ChooseID = &id
			}
		} else {
			t.TEID = f.TEID
			t.Addr, _ = ipv4(f.IPv4Address)
		}
		p.FTEID = t
	}
	if x = c.one(ie.NetworkInstance); x != nil {
		if p.NetworkInstance, err = x.NetworkInstance(); err != nil {
			return bad(x, err)
		}
	}
	if x = c.one(ie.UEIPAddress); x != nil {
		u, err := x.UEIPAddress()
		if err != nil {
			return bad(x, err)
		}
		a, ok := ipv4(u.IPv4Address)
		if !ok || u.Flags&0x02 == 0 {
			return refuse(CauseServiceNotSupported, ie.UEIPAddress, "UE IP Address of PDR %d is not one IPv4 address (Junction's sessions are IPv4; CHV4 allocation is not offered)", p.ID)
		}
		p.UEIP = a
	}
	var ids []uint32
	for _, x := range c.all(ie.SDFFilter) {
		fd, id, err := sdfFilter(x.Payload)
		if err != nil {
			if r, ok := err.(*Refusal); ok {
				r.Msg = fmt.Sprintf("SDF Filter of PDR %d: %s", p.ID, r.Msg)
				return r
			}
			return bad(x, err)
		}
		if fd == "" {
			p.SDFRefs = append(p.SDFRefs, id)
			continue
		}
		p.SDF, ids = append(p.SDF, fd), append(ids, id)
	}
	if slices.ContainsFunc(ids, func(id uint32) bool { return id != 0 }) {
		p.SDFIDs = ids
	}
	if x = c.one(ie.ApplicationID); x != nil {
		if p.ApplicationID, err = x.ApplicationID(); err != nil {
			return bad(x, err)
		}
	}
	if x = c.one(ie.QFI); x != nil {
		v, err := x.QFI()
		if err != nil {
			return bad(x, err)
		}
		switch p.QFI = v & 0x3f; { // the two spare bits ignored
		case p.Source != ifaceAccess:
			return refuse(CauseServiceNotSupported, ie.QFI, "QFI in the PDI of PDR %d, whose packets come from the data network without one", p.ID)
		case p.QFI == 0:
			return refuse(CauseMandatoryIEIncorrect, ie.QFI, "QFI 0 in the PDI of PDR %d", p.ID)
		}
	}
	return nil
}

// sdfFilter reads an SDF Filter (§8.2.5): flags (FD, BID), a spare octet, then with FD the Flow
// Description's length and the description, with BID the SDF Filter ID. A bidirectional filter
// comes once with its description and ID, and may then come in the PDR of the other direction
// by its ID alone (§5.2.1A.2A, as Open5GS's SMF sends a QoS flow's): the description is "" and
// the ID names it. ToS, SPI and flow label are refused. (go-pfcp v0.0.24 reads past the IE on a
// length that overruns it.)
func sdfFilter(b []byte) (desc string, id uint32, err error) {
	const fd, bid = 0x01, 0x10
	if len(b) < 2 {
		return "", 0, fmt.Errorf("%d octets, too short for an SDF Filter", len(b))
	}
	if b[0]&(fd|bid) == 0 || b[0]&^(fd|bid) != 0 {
		return "", 0, refuse(CauseServiceNotSupported, ie.SDFFilter, "only a Flow Description, a bidirectional filter's ID, or both are supported (flags %#02x: no ToS, SPI or flow label)", b[0])
	}
	rest := b[2:]
	if b[0]&fd != 0 {
		if len(rest) < 2 {
			return "", 0, fmt.Errorf("%d octets, too short for a Flow Description", len(b))
		}
		n := int(binary.BigEndian.Uint16(rest[0:2]))
		if n == 0 || n > len(rest)-2 {
			return "", 0, fmt.Errorf("Flow Description length %d, %d octets for it", n, len(rest)-2)
		}
		desc, rest = string(rest[2:2+n]), rest[2+n:]
	}
	if b[0]&bid != 0 {
		if len(rest) != 4 {
			return "", 0, fmt.Errorf("%d octets for the SDF Filter ID, want 4", len(rest))
		}
		if id = binary.BigEndian.Uint32(rest); id == 0 { // Open5GS numbers them from 1
			return "", 0, refuse(CauseServiceNotSupported, ie.SDFFilter, "SDF Filter ID 0: Junction takes IDs from 1")
		}
		rest = nil
	}
	if len(rest) != 0 {
		return "", 0, fmt.Errorf("%d octets past the Flow Description", len(rest))
	}
	return desc, id, nil
}

// filters are p's Flow Descriptions, and the descriptions of the bidirectional filters it names
// by ID alone (SDFRefs), from the PDR of the session that carries each: the same filter,
// applied to p's direction (§5.2.1A.2A; a description is always written for the downlink, and
// Junction reads it so for either direction). An ID no description carries is refused (73, p).
func (r *Rules) filters(p *PDR) ([]string, error) {
	if len(p.SDFRefs) == 0 {
		return p.SDF, nil
	}
	out := slices.Clone(p.SDF)
	for _, id := range p.SDFRefs {
		desc := ""
		for _, k := range sortedKeys(r.PDRs) {
			q := r.PDRs[k]
			if i := slices.Index(q.SDFIDs, id); i >= 0 && desc == "" {
				desc = q.SDF[i]
			}
		}
		if desc == "" {
			return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d names SDF Filter ID %d, which no Flow Description of the session carries", p.ID, id)
		}
		out = append(out, desc)
	}
	return out, nil
}

// decodeFAR decodes a Create FAR, or applies an Update FAR to old: Apply Action and each IE of
// Update Forwarding Parameters replace old's.
func decodeFAR(g *ie.IE, old *FAR) (*FAR, error) {
	c, err := childrenOf(g)
	if err != nil {
		return nil, err
	}
	if err := c.only(ie.FARID, ie.ApplyAction, ie.ForwardingParameters, ie.UpdateForwardingParameters, ie.BARID); err != nil {
		return nil, err
	}
	f := &FAR{}
	if old != nil {
		cp := *old
		f = &cp
		f.SendEndMarker = false // a request's, not the rule's
	}
	x, err := c.need(ie.FARID)
	if err != nil {
		return nil, err
	}
	if f.ID, err = x.FARID(); err != nil {
		return nil, bad(x, err)
	}
	if x = c.one(ie.ApplyAction); x != nil {
		b, err := x.ApplyAction()
		if err != nil || len(b) == 0 {
			return nil, bad(x, fmt.Errorf("no flags"))
		}
		f.Action = b[0]
		extra := b[0] &^ (actForw | actDrop | actBuff | actNocp)
		for _, o := range b[1:] {
			extra |= o
		}
		switch a := b[0]; {
		case extra != 0:
			return nil, refuse(CauseServiceNotSupported, ie.ApplyAction, "Apply Action of FAR %d: only FORW, DROP, BUFF and NOCP are supported (no duplication, no octet 6 flags)", f.ID)
		case a&actNocp != 0 && a&actBuff == 0:
			return nil, refuse(CauseServiceNotSupported, ie.ApplyAction, "Apply Action of FAR %d: NOCP without BUFF (a notification of packets that are neither buffered nor forwarded) is not supported", f.ID)
		case bits.OnesCount8(a&(actForw|actDrop|actBuff)) != 1:
			return nil, refuse(CauseMandatoryIEIncorrect, ie.ApplyAction, "Apply Action of FAR %d: exactly one of FORW, DROP and BUFF (flags %#02x)", f.ID, a)
		}
	} else if g.Type == ie.CreateFAR {
		return nil, refuse(CauseMandatoryIEMissing, ie.ApplyAction, "FAR %d has no Apply Action", f.ID)
	}
	if x = c.one(ie.BARID); x != nil {
		v, err := x.BARID()
		if err != nil {
			return nil, bad(x, err)
		}
		f.BARID = &v
	}
	fp := c.one(ie.ForwardingParameters)
	if u := c.one(ie.UpdateForwardingParameters); u != nil {
		if g.Type != ie.UpdateFAR || fp != nil {
			return nil, refuse(CauseMandatoryIEIncorrect, u.Type, "FAR %d: Update Forwarding Parameters belongs in Update FAR only", f.ID)
		}
		fp = u
	}
	if fp != nil {
		if err := decodeForwarding(fp, f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func decodeForwarding(g *ie.IE, f *FAR) error {
	c, err := childrenOf(g)
	if err != nil {
		return err
	}
	allowed := []uint16{ie.DestinationInterface, ie.NetworkInstance, ie.OuterHeaderCreation, ie.TGPPInterfaceType}
	if g.Type == ie.UpdateForwardingParameters {
		allowed = append(allowed, ie.PFCPSMReqFlags) // SNDEM (§7.5.4.3)
	}
	if err := c.only(allowed...); err != nil {
		return err
	}
	if x := c.one(ie.PFCPSMReqFlags); x != nil {
		if len(x.Payload) < 1 {
			return bad(x, fmt.Errorf("no flags"))
		}
		if x.Payload[0]&^smReqSNDEM != 0 {
			return refuse(CauseServiceNotSupported, ie.PFCPSMReqFlags, "PFCPSMReq-Flags %#02x in the Update Forwarding Parameters of FAR %d; only SNDEM is supported there", x.Payload[0], f.ID)
		}
		f.SendEndMarker = x.Payload[0]&smReqSNDEM != 0
	}
	if x := c.one(ie.DestinationInterface); x != nil {
		v, err := x.DestinationInterface()
		if err != nil {
			return bad(x, err)
		}
		f.Dest = &v
	} else if g.Type == ie.ForwardingParameters {
		return refuse(CauseMandatoryIEMissing, ie.DestinationInterface, "Forwarding Parameters of FAR %d have no Destination Interface", f.ID)
	}
	if x := c.one(ie.TGPPInterfaceType); x != nil {
		v, err := x.TGPPInterfaceType()
		if err != nil {
			return bad(x, err)
		}
		f.DestType = &v
	}
	if x := c.one(ie.NetworkInstance); x != nil {
		if f.NetworkInstance, err = x.NetworkInstance(); err != nil {
			return bad(x, err)
		}
	}
	if x := c.one(ie.OuterHeaderCreation); x != nil {
		o, err := outerHeaderCreation(x.Payload)
		if err != nil {
			if r, ok := err.(*Refusal); ok {
				r.Msg = fmt.Sprintf("Outer Header Creation of FAR %d: %s", f.ID, r.Msg)
				return r
			}
			return bad(x, err)
		}
		f.OHC = o
	}
	return nil
}

// outerHeaderCreation reads the two Outer Header Creations Junction's legs use (§8.2.56):
// GTP-U/UDP/IPv4 (description, TEID, IPv4) and UDP/IPv4 (description, IPv4, port). (go-pfcp
// v0.0.24 reads past a short one.)
func outerHeaderCreation(b []byte) (*OHC, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%d octets, too short for a description", len(b))
	}
	desc := binary.BigEndian.Uint16(b[0:2])
	addr := func(at int) netip.Addr { return netip.AddrFrom4([4]byte(b[at : at+4])) }
	switch {
	case desc == ohcGTPUv4 && len(b) == 10:
		return &OHC{Desc: desc, TEID: binary.BigEndian.Uint32(b[2:6]), Addr: addr(6)}, nil
	case desc == ohcUDPv4 && len(b) == 8:
		return &OHC{Desc: desc, Addr: addr(2), Port: binary.BigEndian.Uint16(b[6:8])}, nil
	case desc == ohcGTPUv4 || desc == ohcUDPv4:
		return nil, fmt.Errorf("description %#04x with %d octets", desc, len(b))
	}
	return nil, refuse(CauseServiceNotSupported, ie.OuterHeaderCreation, "description %#04x; only GTP-U/UDP/IPv4 and UDP/IPv4 are supported", desc)
}

// decodeBAR decodes a Create BAR or an Update BAR (TS 29.244 §7.5.2.6, §7.5.4.8): its BAR ID
// and what it may carry besides, none of which Junction acts on (type BAR).
func decodeBAR(g *ie.IE) (*BAR, error) {
	c, err := childrenOf(g)
	if err != nil {
		return nil, err
	}
	if err := c.only(ie.BARID, ie.DownlinkDataNotificationDelay, ie.SuggestedBufferingPacketsCount, ie.MTEDTControlInformation); err != nil {
		return nil, err
	}
	x, err := c.need(ie.BARID)
	if err != nil {
		return nil, err
	}
	id, err := x.BARID()
	if err != nil {
		return nil, bad(x, err)
	}
	return &BAR{ID: id}, nil
}

// decodeQER decodes a Create QER, or an Update QER over old.
func decodeQER(g *ie.IE, old *QER) (*QER, error) {
	c, err := childrenOf(g)
	if err != nil {
		return nil, err
	}
	// The rest (QER Correlation ID, Packet Rate, DL Flow Level Marking, RQI, Paging Policy
	// Indicator, Averaging Window, QER Control Indications) is QoS the pipeline does not
	// enforce: refused, never ignored.
	if err := c.only(ie.QERID, ie.GateStatus, ie.QFI, ie.MBR, ie.GBR); err != nil {
		return nil, err
	}
	q := &QER{}
	if old != nil {
		cp := *old
		q = &cp
	}
	x, err := c.need(ie.QERID)
	if err != nil {
		return nil, err
	}
	if q.ID, err = x.QERID(); err != nil {
		return nil, bad(x, err)
	}
	if x = c.one(ie.GateStatus); x != nil {
		v, err := x.GateStatus()
		if err != nil {
			return nil, bad(x, err)
		}
		q.GateUL, q.GateDL = v>>2&0x03, v&0x03
	} else if g.Type == ie.CreateQER {
		return nil, refuse(CauseMandatoryIEMissing, ie.GateStatus, "QER %d has no Gate Status", q.ID)
	}
	if x = c.one(ie.QFI); x != nil {
		v, err := x.QFI()
		if err != nil {
			return nil, bad(x, err)
		}
		if q.QFI = v & 0x3f; q.QFI == 0 { // the two spare bits ignored
			return nil, refuse(CauseMandatoryIEIncorrect, ie.QFI, "QER %d has QFI 0; Junction marks QFIs 1 to 63", q.ID)
		}
	}
	if x = c.one(ie.MBR); x != nil {
		// A direction of 0 is taken as no limit, which is how Open5GS leaves a direction it has
		// no rate for.
		if q.MBRUL, q.MBRDL, err = bitRates(x); err != nil {
			return nil, bad(x, err)
		}
	}
	if x = c.one(ie.GBR); x != nil {
		// A GBR makes the QoS flow of the PDRs that name the QER a GBR flow (qos.go, ownQoS);
		// the rate is the RAN's to guarantee, and recorded.
		if q.GBRUL, q.GBRDL, err = bitRates(x); err != nil {
			return nil, bad(x, err)
		}
		q.GBR = true
	}
	return q, nil
}

// bitRates reads an MBR or a GBR (TS 29.244 §8.2.8, §8.2.9): two 40-bit rates in kbit/s, uplink
// then downlink.
func bitRates(x *ie.IE) (ul, dl uint64, err error) {
	b := x.Payload
	if len(b) != 10 {
		return 0, 0, fmt.Errorf("%d octets, want 10", len(b))
	}
	rate := func(b []byte) uint64 { return uint64(b[0])<<32 | uint64(binary.BigEndian.Uint32(b[1:5])) }
	return rate(b[0:5]), rate(b[5:10]), nil
}

// decodeMAR decodes a Create MAR, or applies an Update MAR to old: what the update carries
// replaces what old had (an Update AFAI only the fields it carries).
func decodeMAR(g *ie.IE, old *MAR) (*MAR, error) {
	create := g.Type == ie.CreateMAR
	afai := [2]uint16{ie.TGPPAccessForwardingActionInformation, ie.NonTGPPAccessForwardingActionInformation}
	known := []uint16{ie.MARID, ie.SteeringFunctionality, ie.SteeringMode, afai[0], afai[1], ieThresholds, ieSteeringModeIndicat}
	if !create {
		// An Update MAR carries Update AFAI 1/2, or an AFAI 2 the MAR did not have.
		afai[0] = ie.UpdateTGPPAccessForwardingActionInformation
		known = append(known, afai[0], ie.UpdateNonTGPPAccessForwardingActionInformation)
	}
	c, err := childrenOf(g)
	if err != nil {
		return nil, err
	}
	if err := c.only(known...); err != nil {
		return nil, err
	}
	m := &MAR{}
	if old != nil {
		cp := *old
		m = &cp
	}
	x, err := c.need(ie.MARID)
	if err != nil {
		return nil, err
	}
	if m.ID, err = x.MARID(); err != nil {
		return nil, bad(x, err)
	}
	for _, f := range []struct {
		t   uint16
		dst *uint8
	}{{ie.SteeringFunctionality, &m.Functionality}, {ie.SteeringMode, &m.Mode}} {
		x := c.one(f.t)
		if x == nil {
			if create {
				return nil, refuse(CauseMandatoryIEMissing, f.t, "MAR %d has no %s", m.ID, ieName(f.t))
			}
			continue
		}
		if len(x.Payload) < 1 {
			return nil, bad(x, fmt.Errorf("empty"))
		}
		*f.dst = x.Payload[0] & 0x0f
	}
	for i, t := range afai {
		x := c.one(t)
		if x == nil && i == 1 && !create {
			if x = c.one(ie.UpdateNonTGPPAccessForwardingActionInformation); x != nil && m.AFAI[1] == nil {
				return nil, refuse(CauseMandatoryIEIncorrect, x.Type, "MAR %d has no Access Forwarding Action Information 2 to update", m.ID)
			}
		}
		if x == nil {
			if i == 0 && create {
				return nil, refuse(CauseMandatoryIEMissing, t, "MAR %d has no Access Forwarding Action Information 1", m.ID)
			}
			continue
		}
		if m.AFAI[i], err = decodeAFAI(x, m.ID, m.AFAI[i]); err != nil {
			return nil, err
		}
	}
	if x = c.one(ieThresholds); x != nil {
		m.RTTms, m.LossPercent = nil, nil
		b := x.Payload
		if len(b) < 1 {
			return nil, bad(x, fmt.Errorf("empty"))
		}
		flags, rest := b[0], b[1:]
		if flags&0x01 != 0 { // RTT, 2 octets, milliseconds
			if len(rest) < 2 {
				return nil, bad(x, fmt.Errorf("too short for its RTT"))
			}
			v := uint16(rest[0])<<8 | uint16(rest[1])
			m.RTTms, rest = &v, rest[2:]
		}
		if flags&0x02 != 0 { // PLR, 1 octet, percent
			if len(rest) < 1 || rest[0] > 100 {
				return nil, bad(x, fmt.Errorf("packet loss rate missing or above 100"))
			}
			v := rest[0]
			m.LossPercent = &v
		}
	}
	if x = c.one(ieSteeringModeIndicat); x != nil {
		if len(x.Payload) < 1 {
			return nil, bad(x, fmt.Errorf("empty"))
		}
		m.ALBI, m.UEAI = x.Payload[0]&0x01 != 0, x.Payload[0]&0x02 != 0
	}
	return m, nil
}

// decodeAFAI decodes an AFAI, or an Update AFAI over old (only what it carries changes).
func decodeAFAI(g *ie.IE, mar uint16, old *AFAI) (*AFAI, error) {
	c, err := childrenOf(g)
	if err != nil {
		return nil, err
	}
	if err := c.only(ie.FARID, ie.Weight, ie.Priority); err != nil {
		return nil, err
	}
	a := &AFAI{}
	update := g.Type == ie.UpdateTGPPAccessForwardingActionInformation || g.Type == ie.UpdateNonTGPPAccessForwardingActionInformation
	if update && old != nil {
		cp := *old
		a = &cp
	}
	if x := c.one(ie.FARID); x != nil {
		if a.FARID, err = x.FARID(); err != nil {
			return nil, bad(x, err)
		}
	} else if !update {
		return nil, refuse(CauseMandatoryIEMissing, ie.FARID, "an Access Forwarding Action Information of MAR %d has no FAR ID", mar)
	}
	var x *ie.IE
	if x = c.one(ie.Weight); x != nil {
		if len(x.Payload) < 1 || x.Payload[0] > 100 {
			return nil, bad(x, fmt.Errorf("weight missing or above 100 in MAR %d", mar))
		}
		v := x.Payload[0]
		a.Weight = &v
	}
	if x = c.one(ie.Priority); x != nil {
		if len(x.Payload) < 1 {
			return nil, bad(x, fmt.Errorf("empty"))
		}
		v := x.Payload[0] & 0x0f
		a.Priority = &v
	}
	return a, nil
}
