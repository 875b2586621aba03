package n4

// A session's QoS as the SMF's QERs give it (docs/n4.md, "QoS flows"): its default QoS flow (the
// QFI its G-PDUs carry, its MBR) and the QoS flows of its own that other PCC rules put part of
// its traffic in (spec.qosFlows).

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wmnsk/go-pfcp/ie"
	"k8s.io/apimachinery/pkg/api/equality"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// sessionQoS is a session's QFI, MBR and QoS flows of its own, and the flow each PDR is in
// (member: scopeDefault, or the position of a flow of its own).
type sessionQoS struct {
	qfi    int32
	mbr    *junctionv1.BitRate
	flows  []junctionv1.QoSFlow
	member map[uint16]int
	// pending are the downlink PDRs of flows of the session's own whose FAR buffers while the
	// default flow's forwards (pendingDownlink).
	pending map[uint16]bool
}

// gates are the gates of the session's QoS flows: the default flow's (returned, for spec.gates;
// nil: both open) and each flow of its own's (set in q.flows). A flow's direction is closed when
// the QERs its PDRs that way name close it (Gate Status UL for the uplink PDRs, DL for the
// downlink ones; one closed gate among a PDR's QERs closes it), or a URR that measures it has
// used up its quota (closes). The pipeline has one gate per flow and direction (a policer
// cell), so PDRs of one flow and direction whose QERs' gates differ are refused.
func (q *sessionQoS) gates(r *Rules, up, down []*PDR) (*junctionv1.Gates, error) {
	out := make([]junctionv1.Gates, len(q.flows)+1) // the flows', then the default flow's
	at := func(member int) *junctionv1.Gates {
		if member == scopeDefault {
			return &out[len(q.flows)]
		}
		return &out[member]
	}
	for _, d := range []struct {
		pdrs   []*PDR
		name   string
		closed func(*QER) bool
		gate   func(*junctionv1.Gates) *junctionv1.GateStatus
	}{
		{up, "uplink", func(e *QER) bool { return e.GateUL != gateOpen }, func(g *junctionv1.Gates) *junctionv1.GateStatus { return &g.Uplink }},
		{down, "downlink", func(e *QER) bool { return e.GateDL != gateOpen }, func(g *junctionv1.Gates) *junctionv1.GateStatus { return &g.Downlink }},
	} {
		first := map[int]*PDR{} // the first PDR of each flow this way
		for _, p := range d.pdrs {
			m := q.member[p.ID]
			gate := d.gate(at(m))
			closed := slices.ContainsFunc(p.QERIDs, func(id uint32) bool { return d.closed(r.QERs[id]) })
			switch f := first[m]; {
			case f == nil:
				first[m] = p
			case closed != (*gate == junctionv1.GateClosed):
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "%s PDR %d passes a gate that PDR %d of its QoS flow does not: Junction has one gate per QoS flow and direction (docs/n4.md)",
					d.name, p.ID, f.ID)
			}
			if closed {
				*gate = junctionv1.GateClosed
			}
		}
	}
	for scope, dirs := range r.closes() {
		for i := range out {
			if scope == scopeSession || &out[i] == at(scope) {
				if dirs[0] {
					out[i].Uplink = junctionv1.GateClosed
				}
				if dirs[1] {
					out[i].Downlink = junctionv1.GateClosed
				}
			}
		}
	}
	for i := range q.flows {
		if g := out[i]; g != (junctionv1.Gates{}) {
			q.flows[i].Gates = &g
		}
	}
	if g := out[len(q.flows)]; g != (junctionv1.Gates{}) {
		return &g, nil
	}
	return nil, nil
}

// pccRule is the PDRs of one of the SMF's rules: one precedence, SDF filters and application.
type pccRule struct {
	prec     uint32
	up, down []*PDR
}

func (g *pccRule) pdrs() []*PDR { return append(slices.Clone(g.down), g.up...) }

// qosOf maps the QERs of a session's PDRs. The rules at the largest precedence value are the
// session's default (the match-all one an SMF always sends); a rule whose PDRs mark another QFI,
// or police at an MBR of their own (a QER the default's PDRs do not name), is a QoS flow of its
// own, as free5GC's SMF makes every flow rule of a subscriber: its QFI from the QERs the default
// does not name, its MBR theirs (the session's MBR polices it too, as TS 23.501 has the
// Session-AMBR do for every non-GBR flow). Every other rule is in the default flow, and the QFI
// and MBR checks of one flow hold for all of them together (downlinkQFI, uplinkQFI, sessionMBR).
// The PDRs and the address their SDF filters' "assigned" is are r.byDirection's.
func qosOf(r *Rules) (sessionQoS, error) {
	up, down, ue := r.byDirection()
	var rules []*pccRule
	byKey := map[string]*pccRule{}
	for _, p := range append(slices.Clone(down), up...) {
		k := fmt.Sprintf("%d\x00%s\x00%v\x00%s", p.Precedence, strings.Join(slices.Sorted(slices.Values(p.SDF)), "\x00"), slices.Sorted(slices.Values(p.SDFRefs)), p.ApplicationID)
		g := byKey[k]
		if g == nil {
			g = &pccRule{prec: p.Precedence}
			byKey[k] = g
			rules = append(rules, g)
		}
		if p.Source == ifaceAccess {
			g.up = append(g.up, p)
		} else {
			g.down = append(g.down, p)
		}
	}
	slices.SortStableFunc(rules, func(a, b *pccRule) int { return cmp.Compare(a.prec, b.prec) })
	var last uint32
	if len(rules) > 0 {
		last = rules[len(rules)-1].prec
	}
	defQERs := map[uint32]bool{}
	var defUp, defDown []*PDR
	for _, g := range rules {
		if g.prec == last {
			defUp, defDown = append(defUp, g.up...), append(defDown, g.down...)
			for _, p := range g.pdrs() {
				for _, id := range p.QERIDs {
					defQERs[id] = true
				}
			}
		}
	}
	for id := range defQERs {
		if r.QERs[id].GBR {
			return sessionQoS{}, refuse(CauseServiceNotSupported, ie.GBR, "QER %d gives the session's default QoS flow a GBR: Junction takes a GBR for a QoS flow of the session's own (docs/n4.md)", id)
		}
	}
	var q sessionQoS
	var err error
	if q.qfi, err = downlinkQFI(r, defDown); err != nil {
		return q, err
	}
	if q.mbr, err = sessionMBR(r, defUp, defDown); err != nil {
		return q, err
	}
	// The other rules, by their QoS flow: rules of one QFI are one flow (Open5GS's downlink and
	// uplink PDRs of a flow carry different SDF filters, so they are rules apart here).
	var flowPDRs [][]*PDR
	for _, g := range rules {
		if g.prec == last {
			continue
		}
		qfi, mbr, gbr, err := ownQoS(r, g, defQERs)
		if err != nil {
			return q, err
		}
		if (qfi == 0 || qfi == q.qfi) && gbr == nil && sameRate(mbr.UplinkKbps, q.mbr, true) && sameRate(mbr.DownlinkKbps, q.mbr, false) {
			defUp, defDown = append(defUp, g.up...), append(defDown, g.down...) // in the default flow
			continue
		}
		first := g.pdrs()[0]
		switch {
		case qfi == 0 || qfi == q.qfi:
			return q, ruleFailure(ie.RuleIDTypePDR, uint32(first.ID), "PDR %d is in the session's QoS flow %d with an MBR or a GBR of its own: a QoS flow has one MBR, and the default flow no GBR (docs/n4.md)", first.ID, q.qfi)
		case g.prec > 65533:
			return q, ruleFailure(ie.RuleIDTypePDR, uint32(first.ID), "PDR %d: precedence %d is above 65533, the largest a QoS flow of a session's own takes", first.ID, g.prec)
		}
		if err := uplinkQFI(g.up, qfi); err != nil {
			return q, err
		}
		var rate *junctionv1.BitRate
		if mbr.UplinkKbps != nil || mbr.DownlinkKbps != nil {
			rate = &mbr
		}
		i := slices.IndexFunc(q.flows, func(f junctionv1.QoSFlow) bool { return f.QFI == qfi })
		if i < 0 {
			q.flows = append(q.flows, junctionv1.QoSFlow{Name: fmt.Sprintf("qfi-%d", qfi), QFI: qfi, Precedence: int32(g.prec), MaxBitRate: rate, GuaranteedBitRate: gbr})
			flowPDRs = append(flowPDRs, g.pdrs())
			continue
		}
		f, other := &q.flows[i], flowPDRs[i][0]
		merged, ok := mergeRates(f.MaxBitRate, rate)
		switch {
		case f.Precedence != int32(g.prec):
			return q, ruleFailure(ie.RuleIDTypePDR, uint32(first.ID), "PDR %d is in QoS flow %d at precedence %d, PDR %d of the flow at %d: a QoS flow has one precedence (docs/n4.md)", first.ID, qfi, g.prec, other.ID, f.Precedence)
		case !ok || !equality.Semantic.DeepEqual(f.GuaranteedBitRate, gbr):
			return q, ruleFailure(ie.RuleIDTypePDR, uint32(first.ID), "PDR %d is in QoS flow %d with other rates than PDR %d of the flow: a QoS flow has one MBR and one GBR (docs/n4.md)", first.ID, qfi, other.ID)
		}
		f.MaxBitRate = merged
		flowPDRs[i] = append(flowPDRs[i], g.pdrs()...)
	}
	q.pending = pendingDownlink(r, defDown, flowPDRs)
	for i := range q.flows {
		if err := flowFilters(r, &q.flows[i], flowPDRs[i], q.pending, ue); err != nil {
			return q, err
		}
	}
	// The default flow's QFI and MBR checks over every rule in it.
	if q.qfi, err = downlinkQFI(r, defDown); err != nil {
		return q, err
	}
	if err := uplinkQFI(defUp, q.qfi); err != nil {
		return q, err
	}
	if q.mbr, err = sessionMBR(r, defUp, defDown); err != nil {
		return q, err
	}
	q.member = map[uint16]int{}
	for _, p := range append(defUp, defDown...) {
		q.member[p.ID] = scopeDefault
	}
	for i, f := range q.flows {
		for _, p := range flowPDRs[i] {
			q.member[p.ID] = i
		}
		first := flowPDRs[i][0]
		switch {
		case q.qfi == 0:
			return q, ruleFailure(ie.RuleIDTypePDR, uint32(first.ID), "PDR %d is in QoS flow %d of its own, but the session's default PDRs mark no QFI: the flow's replaces the session's in their G-PDUs (docs/n4.md)", first.ID, f.QFI)
		case i >= junctionv1.MaxQoSFlows:
			return q, ruleFailure(ie.RuleIDTypePDR, uint32(first.ID), "PDR %d is in a QoS flow beyond the %d of its own a session holds", first.ID, junctionv1.MaxQoSFlows)
		}
	}
	return q, nil
}

// pendingDownlink are the downlink PDRs of the flows of the session's own (flowPDRs) whose FAR
// buffers while the default flow's downlink (defDown) forwards: Open5GS's SMF creates a QoS
// flow so, BUFF and NOCP until the gNB has set the flow up, then forwards it into the session's
// tunnel. The pipeline buffers a session's downlink as a whole, not a flow's: until the FAR
// forwards, the flow's downlink stays in the default flow (its packets go into the session's
// tunnel with the session's QFI), which holds no packet back (docs/n4.md, "QoS flows").
func pendingDownlink(r *Rules, defDown []*PDR, flowPDRs [][]*PDR) map[uint16]bool {
	mode := func(p *PDR) (uint8, bool) {
		if p.FARID == nil || r.FARs[*p.FARID] == nil {
			return 0, false
		}
		return downlinkMode(r.FARs[*p.FARID]), true
	}
	if len(defDown) == 0 {
		return nil
	}
	if m, ok := mode(defDown[0]); !ok || m != 0 {
		return nil
	}
	var out map[uint16]bool
	for _, pdrs := range flowPDRs {
		for _, p := range pdrs {
			if m, ok := mode(p); ok && p.Source != ifaceAccess && m == actBuff {
				if out == nil {
					out = map[uint16]bool{}
				}
				out[p.ID] = true
			}
		}
	}
	return out
}

// flowFilters describes QoS flow f by the SDF filters of its PDRs (pdrs; Rules.filters): each
// Flow Description a filter for the direction of the PDRs that carry it (downlink from Core,
// uplink from Access), Bidirectional where both do; a pending downlink PDR's (pendingDownlink)
// for no direction yet. A flow of one filter both ways (free5GC's flow rule) is its
// trafficDescriptor, any other its filters. Every PDR of the flow needs a filter, and a filter
// must be to the UE (else 73, that PDR).
func flowFilters(r *Rules, f *junctionv1.QoSFlow, pdrs []*PDR, pending map[uint16]bool, ue netip.Addr) error {
	type filter struct {
		td       junctionv1.TrafficDescriptor
		down, up bool
	}
	var order []string
	byDesc := map[string]*filter{}
	for _, p := range pdrs {
		descs, err := r.filters(p)
		if err != nil {
			return err
		}
		if len(descs) == 0 {
			return ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d is in QoS flow %d of its own without an SDF filter: Junction tells a flow's packets by its filters (docs/n4.md)", p.ID, f.QFI)
		}
		for _, d := range descs {
			fl := byDesc[d]
			if fl == nil {
				td, err := parseFlowDescription(d, ue)
				if err != nil {
					return refuse(CauseMandatoryIEIncorrect, ie.SDFFilter, "SDF Filter of PDR %d: %v", p.ID, err)
				}
				if len(td.SourcePrefixes) > 0 {
					return ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d: a QoS flow's SDF filter must be to the UE's address (assigned), not %s", p.ID, td.SourcePrefixes[0])
				}
				fl = &filter{td: td}
				byDesc[d] = fl
				order = append(order, d)
			}
			if p.Source == ifaceAccess {
				fl.up = true
			} else if !pending[p.ID] {
				fl.down = true
			}
		}
	}
	order = slices.DeleteFunc(order, func(d string) bool { return !byDesc[d].down && !byDesc[d].up })
	if len(order) == 0 {
		return ruleFailure(ie.RuleIDTypePDR, uint32(pdrs[0].ID), "PDR %d: QoS flow %d has no SDF filter but its buffering downlink PDR's, and would match every packet (docs/n4.md)", pdrs[0].ID, f.QFI)
	}
	if fl := byDesc[order[0]]; len(order) == 1 && fl.down && fl.up {
		f.TrafficDescriptor = fl.td
		return nil
	}
	if len(order) > junctionv1.MaxQoSFlowFilters {
		return ruleFailure(ie.RuleIDTypePDR, uint32(pdrs[0].ID), "PDR %d: QoS flow %d has %d SDF filters, more than the %d a flow holds", pdrs[0].ID, f.QFI, len(order), junctionv1.MaxQoSFlowFilters)
	}
	for _, d := range order {
		fl, dir := byDesc[d], junctionv1.FlowBidirectional
		switch {
		case !fl.up:
			dir = junctionv1.FlowDownlink
		case !fl.down:
			dir = junctionv1.FlowUplink
		}
		f.Filters = append(f.Filters, junctionv1.QoSFlowFilter{Direction: dir, TrafficDescriptor: fl.td})
	}
	return nil
}

// ownQoS is the QFI, MBR and GBR of a rule's PDRs by the QERs the default flow's PDRs do not
// name (defQERs): the QFI they give (one for all the rule's PDRs), else its downlink PDRs' QFI
// (downlinkQFI); the smallest MBR they give per direction (none: nil); the GBR they give (nil:
// none, a non-GBR flow), one per direction. A GBR flow is outside the Session-AMBR (TS 23.501
// §5.7.2.6), so its PDRs may not name a default flow's QER with an MBR, as free5GC's SMF leaves
// out its session-AMBR QER for a GBR flow's.
func ownQoS(r *Rules, g *pccRule, defQERs map[uint32]bool) (int32, junctionv1.BitRate, *junctionv1.BitRate, error) {
	var qfi uint8
	var ul, dl uint64
	var gbr *QER                // the first QER with a GBR
	ambr := map[uint16]uint32{} // a PDR's default flow QER with an MBR
	for _, p := range g.pdrs() {
		var q uint8
		for _, id := range p.QERIDs {
			e := r.QERs[id]
			if defQERs[id] {
				if e.MBRUL != 0 || e.MBRDL != 0 {
					ambr[p.ID] = id
				}
				continue
			}
			if e.GBR {
				switch {
				case gbr == nil:
					gbr = e
				case e.GBRUL != gbr.GBRUL || e.GBRDL != gbr.GBRDL:
					return 0, junctionv1.BitRate{}, nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d names QER %d with a GBR of %d/%d kbit/s (UL/DL), its rule QER %d with %d/%d: a QoS flow has one GBR",
						p.ID, e.ID, e.GBRUL, e.GBRDL, gbr.ID, gbr.GBRUL, gbr.GBRDL)
				}
			}
			if e.QFI != 0 && q != 0 && e.QFI != q {
				return 0, junctionv1.BitRate{}, nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d names QERs with QFIs %d and %d: a PDR's packets are in one QoS flow", p.ID, q, e.QFI)
			}
			q = max(q, e.QFI)
			if v := e.MBRUL; v != 0 && p.Source == ifaceAccess && (ul == 0 || v < ul) {
				ul = v
			}
			if v := e.MBRDL; v != 0 && p.Source != ifaceAccess && (dl == 0 || v < dl) {
				dl = v
			}
		}
		switch {
		case q == 0:
		case qfi != 0 && q != qfi:
			return 0, junctionv1.BitRate{}, nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d is in QoS flow %d, a PDR of its rule in %d", p.ID, q, qfi)
		default:
			qfi = q
		}
	}
	if qfi == 0 && len(g.down) > 0 {
		v, err := downlinkQFI(r, g.down)
		if err != nil {
			return 0, junctionv1.BitRate{}, nil, err
		}
		qfi = uint8(v)
	}
	var guaranteed *junctionv1.BitRate
	if gbr != nil {
		for _, p := range g.pdrs() {
			if id, ok := ambr[p.ID]; ok {
				return 0, junctionv1.BitRate{}, nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d of a GBR QoS flow names QER %d, the session's MBR: a GBR flow is outside the Session-AMBR (TS 23.501 §5.7.2.6)", p.ID, id)
			}
		}
		guaranteed = &junctionv1.BitRate{}
		if gbr.GBRUL != 0 {
			v := int64(gbr.GBRUL)
			guaranteed.UplinkKbps = &v
		}
		if gbr.GBRDL != 0 {
			v := int64(gbr.GBRDL)
			guaranteed.DownlinkKbps = &v
		}
	}
	var rate junctionv1.BitRate
	if ul != 0 {
		v := int64(ul)
		rate.UplinkKbps = &v
	}
	if dl != 0 {
		v := int64(dl)
		rate.DownlinkKbps = &v
	}
	return int32(qfi), rate, guaranteed, nil
}

// mergeRates is the MBR of a QoS flow of rules a and b (nil: none), each direction the one either
// gives; false when both give one direction different rates.
func mergeRates(a, b *junctionv1.BitRate) (*junctionv1.BitRate, bool) {
	if a == nil || b == nil {
		return cmp.Or(a, b), true
	}
	out := *a
	for _, d := range []struct{ out, b **int64 }{{&out.UplinkKbps, &b.UplinkKbps}, {&out.DownlinkKbps, &b.DownlinkKbps}} {
		switch {
		case *d.b == nil:
		case *d.out == nil:
			*d.out = *d.b
		case **d.out != **d.b:
			return nil, false
		}
	}
	return &out, true
}

// sameRate: a rule's own rate (nil: none) is none or the session's in that direction.
func sameRate(own *int64, session *junctionv1.BitRate, uplink bool) bool {
	if own == nil {
		return true
	}
	var s *int64
	if session != nil {
		s = session.DownlinkKbps
		if uplink {
			s = session.UplinkKbps
		}
	}
	return s != nil && *s == *own
}

// sessionMBR is the maximum bit rate in each direction of the PDRs of the session's default QoS
// flow (qosOf): the MBR of the QERs its uplink PDRs name (their UL rates) and of those its
// downlink PDRs name (DL rates); a PDR that names several QERs with a rate is held to the
// smallest, as each of them would police it. The pipeline polices one rate per flow and
// direction, so PDRs of one direction whose rates differ (two rates, or a rate for some and
// none for others) are refused.
func sessionMBR(r *Rules, up, down []*PDR) (*junctionv1.BitRate, error) {
	var out junctionv1.BitRate
	for _, d := range []struct {
		pdrs []*PDR
		name string
		rate func(*QER) uint64
		out  **int64
	}{
		{up, "uplink", func(q *QER) uint64 { return q.MBRUL }, &out.UplinkKbps},
		{down, "downlink", func(q *QER) uint64 { return q.MBRDL }, &out.DownlinkKbps},
	} {
		var first uint64
		for i, p := range d.pdrs {
			var rate uint64
			for _, id := range p.QERIDs {
				if v := d.rate(r.QERs[id]); v != 0 && (rate == 0 || v < rate) {
					rate = v
				}
			}
			if i > 0 && rate != first {
				return nil, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "%s PDR %d has an MBR of %d kbit/s, PDR %d of %d: a QoS flow has one rate per direction (0: none; docs/n4.md)",
					d.name, p.ID, rate, d.pdrs[0].ID, first)
			}
			first = rate
		}
		if first != 0 {
			v := int64(first)
			*d.out = &v
		}
	}
	if out.UplinkKbps == nil && out.DownlinkKbps == nil {
		return nil, nil
	}
	return &out, nil
}

// downlinkQFI is the QFI the G-PDUs of downlink PDRs of one QoS flow carry: the one the QERs
// of the PDRs give (the UPF inserts the QFI of a QER, TS 29.244), 0 when none gives one. The
// pipeline marks one QFI per flow, so downlink PDRs that differ (two QFIs, or a QFI for some and
// none for others) are refused. An uplink PDR's QFI marks nothing: its packets leave on N6
// without GTP-U.
func downlinkQFI(r *Rules, down []*PDR) (int32, error) {
	var qfi uint8
	for i, p := range down {
		var q uint8
		for _, id := range p.QERIDs {
			v := r.QERs[id].QFI
			if v != 0 && q != 0 && v != q {
				return 0, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "downlink PDR %d names QERs with QFIs %d and %d: a PDR's packets are in one QoS flow", p.ID, q, v)
			}
			q = max(q, v)
		}
		if i > 0 && q != qfi {
			return 0, ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "downlink PDR %d is in QoS flow %d, PDR %d of its flow in %d: a QoS flow has one QFI (0: none; docs/n4.md)", p.ID, q, down[0].ID, qfi)
		}
		qfi = q
	}
	return int32(qfi), nil
}

// uplinkQFI holds the QFIs of the PDIs of one QoS flow's uplink PDRs to the flow: all the same,
// and the downlink's (qfi) when it has one. The pipeline does not read the QFI of an uplink
// G-PDU's PDU Session Container: it tells a flow of the session's own by its packets
// (qos_flows), as the UE's QoS rules do, and the session's by their missing it.
func uplinkQFI(up []*PDR, qfi int32) error {
	var first *PDR
	for _, p := range up {
		switch {
		case p.QFI == 0:
		case qfi != 0 && int32(p.QFI) != qfi:
			return ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d is for QoS flow %d, its flow's downlink PDRs for %d (docs/n4.md)", p.ID, p.QFI, qfi)
		case first != nil && p.QFI != first.QFI:
			return ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "uplink PDR %d is for QoS flow %d, PDR %d of its flow for %d (docs/n4.md)", p.ID, p.QFI, first.ID, first.QFI)
		default:
			first = p
		}
	}
	return nil
}
