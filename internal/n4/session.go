package n4

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// IEs a session request may carry that inform and ask nothing to be enforced (PDN Type IPv4 is
// checked, the rest is accepted as it is).
var informational = []uint16{ie.PDNType, ie.APNDNN, ie.SNSSAI, ie.UserID}

func (e *Endpoint) sessionRequest(ctx context.Context, key string, from netip.AddrPort, h *message.Header, ies []*ie.IE, perr error) {
	e.pfdMu.RLock() // before any session's mu
	defer e.pfdMu.RUnlock()
	var s *State
	if h.Type != message.MsgTypeSessionEstablishmentRequest {
		e.mu.Lock()
		s = e.sessions[h.SEID]
		e.mu.Unlock()
	}
	respond := func(seid uint64, out ...*ie.IE) {
		var m marshaler
		switch h.Type {
		case message.MsgTypeSessionEstablishmentRequest:
			m = message.NewSessionEstablishmentResponse(0, 0, seid, h.SequenceNumber, 0, out...)
		case message.MsgTypeSessionModificationRequest:
			m = message.NewSessionModificationResponse(0, 0, seid, h.SequenceNumber, 0, out...)
		default:
			m = message.NewSessionDeletionResponse(0, 0, seid, h.SequenceNumber, 0, out...)
		}
		e.reply(key, from, m)
	}
	fail := func(seid uint64, err error) {
		var r *Refusal
		if !errors.As(err, &r) {
			r = refuse(CauseSystemFailure, 0, "%v", err)
			e.cfg.Log.Error(err, "N4 session request failed", "type", h.Type, "from", from)
		} else {
			e.cfg.Log.V(1).Info("N4: refused a session request", "type", h.Type, "from", from, "cause", r.Cause, "why", r.Msg)
		}
		out := []*ie.IE{ie.NewCause(r.Cause)}
		if h.Type == message.MsgTypeSessionEstablishmentRequest {
			out = append([]*ie.IE{ie.NewNodeIDHeuristic(e.cfg.NodeID)}, out...)
		}
		respond(seid, append(out, r.ies()...)...)
	}
	peerSEID := uint64(0)
	if s != nil {
		peerSEID = s.CPSEID
	}
	if perr != nil {
		var r *Refusal
		if !errors.As(perr, &r) {
			r = refuse(CauseInvalidLength, 0, "%v", perr)
		}
		fail(peerSEID, r)
		return
	}
	switch h.Type {
	case message.MsgTypeSessionEstablishmentRequest:
		seid, out, err := e.establish(ctx, ies)
		if err != nil {
			fail(seid, err)
			return
		}
		respond(seid, out...)
	case message.MsgTypeSessionModificationRequest, message.MsgTypeSessionDeletionRequest:
		if s == nil {
			// Unknown SEID: the response carries SEID 0 (TS 29.244 §7.2.2.4.2).
			fail(0, refuse(CauseSessionNotFound, 0, "no session with SEID %#x", h.SEID))
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		e.mu.Lock()
		gone := e.sessions[s.UPSEID] != s // deleted while this request waited
		e.mu.Unlock()
		if gone {
			fail(0, refuse(CauseSessionNotFound, 0, "no session with SEID %#x", h.SEID))
			return
		}
		var out []*ie.IE
		var err error
		if h.Type == message.MsgTypeSessionModificationRequest {
			out, err = e.modify(ctx, s, ies)
		} else {
			out, err = e.delete(ctx, s, ies)
		}
		if err != nil {
			fail(s.CPSEID, err)
			return
		}
		respond(s.CPSEID, append([]*ie.IE{ie.NewCause(CauseAccepted)}, out...)...)
	}
}

// establishment is a Session Establishment Request, decoded and checked on its own.
type establishment struct {
	smf    string
	cpSEID uint64
	cpAddr netip.Addr
	rules  *Rules
	supi   string
	atsss  *ie.IE  // the ATSSS Control Parameters to answer with, if asked
	csid   *FQCSID // the SMF's FQ-CSID, if it gave one
}

// decodeEstablishment reads a Session Establishment Request's IEs (TS 29.244 §7.5.2). The
// CP SEID is returned with a refusal whenever it could be read, for the response's header.
func decodeEstablishment(ies []*ie.IE) (_ *establishment, err error) {
	defer undecodable(&err)
	c, err := messageIEs(ies, ie.CreatePDR, ie.CreateFAR, ie.CreateQER, ie.CreateURR, ie.CreateMAR)
	if err != nil {
		return nil, err
	}
	x, err := c.need(ie.NodeID)
	if err != nil {
		return nil, err
	}
	q := &establishment{}
	if q.smf, err = x.NodeID(); err != nil {
		return nil, refuse(CauseMandatoryIEIncorrect, ie.NodeID, "Node ID: %v", err)
	}
	if x, err = c.need(ie.FSEID); err != nil {
		return nil, err
	}
	fseid, err := x.FSEID()
	if err != nil {
		return nil, refuse(CauseMandatoryIEIncorrect, ie.FSEID, "CP F-SEID: %v", err)
	}
	q.cpSEID = fseid.SEID
	q.cpAddr, _ = ipv4(fseid.IPv4Address)
	if err := c.only(append([]uint16{ie.NodeID, ie.FSEID, ie.CreatePDR, ie.CreateFAR, ie.CreateQER, ie.CreateURR, ie.CreateMAR, ie.CreateBAR, ie.ProvideATSSSControlInformation, ie.FQCSID}, informational...)...); err != nil {
		return q, err
	}
	if q.csid, err = smfCSID(c); err != nil {
		return q, err
	}
	if _, err := c.need(ie.CreatePDR); err != nil {
		return q, err
	}
	if _, err := c.need(ie.CreateFAR); err != nil {
		return q, err
	}
	if x := c.one(ie.PDNType); x != nil && (len(x.Payload) < 1 || x.Payload[0]&0x07 != 1) {
		return q, refuse(CauseServiceNotSupported, ie.PDNType, "PDN Type: only IPv4 sessions are supported")
	}
	if q.atsss, err = atsssControl(c.one(ie.ProvideATSSSControlInformation)); err != nil {
		return q, err
	}
	q.rules = newRules()
	if err := q.rules.create(c); err != nil {
		return q, err
	}
	q.rules.dropUnsetURRIDs()
	if x := c.one(ie.UserID); x != nil {
		if q.supi, err = supiOf(x); err != nil {
			return q, err
		}
	}
	return q, nil
}

// establish creates a session: all of its rules, or none (TS 29.244 §6.3.2).
func (e *Endpoint) establish(ctx context.Context, ies []*ie.IE) (uint64, []*ie.IE, error) {
	q, err := decodeEstablishment(ies)
	if err != nil {
		if q != nil {
			return q.cpSEID, nil, err
		}
		return 0, nil, err
	}
	smf, fseid, r, supi := q.smf, q.cpSEID, q.rules, q.supi
	e.resolveApps(r)
	e.mu.Lock()
	assoc := e.assocs[smf]
	// A CP F-SEID already in use by this SMF replaces that session (the SMF lost it).
	old := e.sessions[e.byCP[cpKey{smf, fseid}]]
	e.mu.Unlock()
	if assoc == nil {
		return fseid, nil, refuse(CauseNoAssociation, 0, "no PFCP association with %s", smf)
	}
	if old != nil {
		old.mu.Lock()
		if _, err := e.store.Remove(ctx, old); err != nil {
			old.mu.Unlock()
			return fseid, nil, err
		}
		e.forget(old)
		old.mu.Unlock()
	}

	now := time.Now()
	for _, u := range r.URRs {
		u.started(now, Usage{}, true) // the session's usage cells count from its first entry
	}
	packed, err := pack(r)
	if err != nil {
		return fseid, nil, refuse(CauseSystemFailure, 0, "keeping the session's rules: %v", err)
	}
	e.mu.Lock()
	s := &State{UPSEID: e.newSEIDLocked(), CPSEID: fseid, CPAddr: q.cpAddr, SMF: smf, SMFCSID: q.csid, Rules: packed}
	if supi == "" {
		supi = fmt.Sprintf("nai-n4-%016x@%s", s.UPSEID, e.cfg.UPF)
	}
	s.SUPI = supi
	created, err := e.chooseTEIDsLocked(s, r, nil)
	if err == nil {
		e.sessions[s.UPSEID] = s // reserved: a retransmission cannot race it, Lookups wait on s.mu
		e.byCP[cpKey{smf, fseid}] = s.UPSEID
	}
	s.mu.Lock()
	e.mu.Unlock()
	defer s.mu.Unlock()
	if err != nil {
		e.forget(s)
		return fseid, nil, err
	}
	p, err := makePlan(r, s.TEIDs, supi, netip.Addr{}, e.cfg.Target)
	if err == nil {
		// Parked from the start (an MA PDU session that holds its downlink): no entry names its
		// usage cells, which may hold an earlier session's counts until its first entry zeroes them.
		s.Idle, s.Parked = p.idle(), p.Parked
		if err = e.store.Apply(ctx, s, p); err != nil {
			// All of the rules or none: what the store wrote goes.
			if _, rerr := e.store.Remove(ctx, s); rerr != nil {
				e.cfg.Log.Error(rerr, "removing a refused N4 session", "upSEID", s.UPSEID)
			}
		}
	}
	if err != nil {
		e.forget(s)
		return fseid, nil, err
	}
	e.mu.Lock()
	e.dirty = true
	e.mu.Unlock()
	out := []*ie.IE{ie.NewNodeIDHeuristic(e.cfg.NodeID), ie.NewCause(CauseAccepted), ie.NewFSEID(s.UPSEID, e.fseidIP, nil)}
	out = append(out, created...)
	if q.atsss != nil {
		out = append(out, q.atsss)
	}
	if q.csid != nil {
		out = append(out, e.upFQCSID())
	}
	return fseid, out, nil
}

// modificationRules are the rule IEs a Session Modification Request may carry, each repeatable.
var modificationRules = []uint16{ie.CreatePDR, ie.CreateFAR, ie.CreateQER, ie.CreateURR, ie.CreateMAR, ie.UpdatePDR, ie.UpdateFAR,
	ie.UpdateQER, ie.UpdateURR, ie.UpdateMAR, ie.RemovePDR, ie.RemoveFAR, ie.RemoveQER, ie.RemoveURR, ie.RemoveMAR, ie.QueryURR}

// barIEs are the BAR IEs of a Session Modification Request, at most one each (TS 29.244 §7.5.4).
var barIEs = []uint16{ie.CreateBAR, ie.UpdateBARWithinSessionModificationRequest, ie.RemoveBAR}

// modify applies a Session Modification Request: all of it, or nothing (the session keeps its
// rules and its objects are put back as they were).
func (e *Endpoint) modify(ctx context.Context, s *State, ies []*ie.IE) ([]*ie.IE, error) {
	c, err := messageIEs(ies, modificationRules...)
	if err != nil {
		return nil, err
	}
	if err := c.only(append(append(modificationRules, barIEs...), ie.FSEID, ie.PFCPSMReqFlags, ie.FQCSID)...); err != nil {
		return nil, err
	}
	csid, err := smfCSID(c) // a new one replaces the session's (the SMF moved it to another set)
	if err != nil {
		return nil, err
	}
	if csid == nil {
		csid = s.SMFCSID
	}
	cur, err := s.Rules.rules()
	if err != nil {
		return nil, refuse(CauseSystemFailure, 0, "%v", err)
	}
	flags, err := smReqFlags(c)
	if err != nil {
		return nil, err
	}
	queried, err := queriedURRs(c, cur, flags)
	if err != nil {
		return nil, err
	}
	cpSEID, cpAddr := s.CPSEID, s.CPAddr
	if x := c.one(ie.FSEID); x != nil { // the SMF moved (TS 29.244 §6.3.3)
		f, err := x.FSEID()
		if err != nil {
			return nil, refuse(CauseMandatoryIEIncorrect, ie.FSEID, "CP F-SEID: %v", err)
		}
		cpSEID = f.SEID
		cpAddr, _ = ipv4(f.IPv4Address)
	}
	r, err := cur.modified(c)
	if err != nil {
		return nil, err
	}
	e.resolveApps(r)
	// Reports and new URRs need the session's usage now: read before anything changes. So do
	// QoS flows that move to other cells (flowMoves): what their cells counted is carried.
	var usage Usage
	from, flowsMove := flowMoves(cur, r)
	if len(queried) > 0 || len(c.all(ie.RemoveURR)) > 0 || newMeasurement(cur, r) || flowsMove {
		if usage, err = e.usage(ctx, s); err != nil {
			return nil, refuse(CauseSystemFailure, 0, "reading the session's usage: %v", err)
		}
	}
	usageNow := usage // with the new rules' flows
	if flowsMove {
		usageNow = usage.movedFlows(from)
		for _, u := range r.URRs {
			u.movedFlows(from)
		}
	}
	now := time.Now()
	for id, u := range r.URRs {
		u.started(now, usageNow, cur.URRs[id] == nil)
	}
	var reports []*ie.IE
	for _, id := range sortedKeys(cur.URRs) {
		if r.URRs[id] == nil { // removed: its last report (§7.5.5.2)
			reports = append(reports, cur.URRs[id].report(ie.UsageReportWithinSessionModificationResponse, cur, reportTERMR, now, usage))
		}
	}
	for _, id := range queried {
		if u := r.URRs[id]; u != nil {
			reports = append(reports, u.report(ie.UsageReportWithinSessionModificationResponse, r, reportIMMER, now, usageNow))
			u.reported(now, usageNow)
		}
	}
	packed, err := pack(r)
	if err != nil {
		return nil, refuse(CauseSystemFailure, 0, "keeping the session's rules: %v", err)
	}
	prevRules, prevTEIDs := s.Rules, s.TEIDs
	e.mu.Lock()
	created, err := e.chooseTEIDsLocked(s, r, prevTEIDs) // the new rules' PDRs, not the session's yet
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	restore := func() {
		e.mu.Lock()
		e.releaseTEIDsLocked(s.TEIDs, prevTEIDs)
		e.mu.Unlock()
		e.setRules(s, prevRules)
		s.TEIDs = prevTEIDs
	}
	p, err := makePlan(r, s.TEIDs, s.SUPI, s.Idle, e.cfg.Target)
	if err != nil {
		restore()
		return nil, err
	}
	p.DropBuffered = flags&smReqDROBU != 0
	p.EndMarkers = endMarkers(cur, r)
	prevPlan, _ := makePlan(cur, prevTEIDs, s.SUPI, s.Idle, e.cfg.Target)
	prevCP, prevAddr, prevIdle, prevCarried, prevParked, prevCSID := s.CPSEID, s.CPAddr, s.Idle, s.Carried, s.Parked, s.SMFCSID
	parks := p.Parked && !s.Parked
	if parks {
		// The cells stop counting with these rules and start from zero with the next: what
		// they hold is carried. Read now, to be saved with the rules, and again once the
		// entries are gone (below), for what came meanwhile.
		cur, err := e.usage(ctx, s)
		if err != nil {
			restore()
			return nil, refuse(CauseSystemFailure, 0, "reading the usage of a session left without PDRs: %v", err)
		}
		s.Carried = cur
	}
	e.setRules(s, packed)
	s.CPSEID, s.CPAddr, s.Idle, s.Parked, s.SMFCSID = cpSEID, cpAddr, p.idle(), p.Parked, csid
	if err := e.store.Apply(ctx, s, p); err != nil {
		s.CPSEID, s.CPAddr, s.Idle, s.Carried, s.Parked, s.SMFCSID = prevCP, prevAddr, prevIdle, prevCarried, prevParked, prevCSID
		restore()
		if prevPlan != nil {
			if rerr := e.store.Apply(ctx, s, prevPlan); rerr != nil {
				e.cfg.Log.Error(rerr, "putting an N4 session back after a refused modification", "upSEID", s.UPSEID)
			}
		}
		return nil, err
	}
	if flowsMove {
		s.carryMovedFlows(from)
	}
	if parks {
		if raw, err := e.store.Usage(ctx, s); err == nil && !raw.wentBack(s.lastRaw) {
			s.Carried = s.Carried.plus(raw.since(s.lastRaw)) // saved with the session's next rules or report
		}
		s.lastRaw = Usage{} // the next rules' cells count from zero
	}
	// Released TEIDs go back; a new CP SEID moves the session's lookup key.
	e.mu.Lock()
	e.releaseTEIDsLocked(prevTEIDs, s.TEIDs)
	if prevCP != cpSEID {
		delete(e.byCP, cpKey{s.SMF, prevCP})
		e.byCP[cpKey{s.SMF, cpSEID}] = s.UPSEID
	}
	e.mu.Unlock()
	return append(created, reports...), nil
}

// PFCPSMReq-Flags (§8.2.57) Junction acts on: DROBU, drop what the session buffered before the
// FARs apply; QAURR, report every URR; both in the request. SNDEM, send End Markers on the
// tunnels the FARs leave, belongs in an Update FAR's Update Forwarding Parameters (§7.5.4.3)
// and is refused in the request.
const (
	smReqDROBU = 0x01
	smReqSNDEM = 0x02
	smReqQAURR = 0x04
)

// smReqFlags are a modification's PFCPSMReq-Flags (0 without the IE).
func smReqFlags(c children) (byte, error) {
	x := c.one(ie.PFCPSMReqFlags)
	if x == nil {
		return 0, nil
	}
	if len(x.Payload) < 1 {
		return 0, bad(x, fmt.Errorf("no flags"))
	}
	if x.Payload[0]&^(smReqDROBU|smReqQAURR) != 0 {
		return 0, refuse(CauseServiceNotSupported, ie.PFCPSMReqFlags, "PFCPSMReq-Flags %#02x; only DROBU and QAURR are supported in the request (SNDEM goes in an Update FAR's Update Forwarding Parameters)", x.Payload[0])
	}
	return x.Payload[0], nil
}

// queriedURRs are the URRs a modification queries: Query URR IEs, or all of them with the
// QAURR flag.
func queriedURRs(c children, r *Rules, flags byte) ([]uint32, error) {
	if flags&smReqQAURR != 0 {
		return sortedKeys(r.URRs), nil
	}
	var out []uint32
	for _, x := range c.all(ie.QueryURR) {
		cc, err := childrenOf(x)
		if err != nil {
			return nil, err
		}
		y, err := cc.need(ie.URRID)
		if err != nil {
			return nil, err
		}
		id, err := y.URRID()
		if err != nil {
			return nil, bad(y, err)
		}
		if r.URRs[id] == nil {
			return nil, ruleFailure(ie.RuleIDTypeURR, id, "Query URR: no URR %d", id)
		}
		out = append(out, id)
	}
	return out, nil
}

// newMeasurement: next has a URR prev does not, or a quota, START or STOPT given anew: its start
// needs the usage now.
func newMeasurement(prev, next *Rules) bool {
	for id, u := range next.URRs {
		if prev.URRs[id] == nil || u.quotaGiven || u.startGiven || u.stopGiven {
			return true
		}
	}
	return false
}

func (e *Endpoint) delete(ctx context.Context, s *State, ies []*ie.IE) ([]*ie.IE, error) {
	if len(ies) > 0 {
		c, err := messageIEs(ies)
		if err != nil {
			return nil, err
		}
		// Some SMFs (pfcpsim) repeat their CP F-SEID; the SEID in the header is what counts.
		if err := c.only(ie.FSEID); err != nil {
			return nil, err
		}
	}
	usage, err := e.store.Remove(ctx, s)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Parked:
		usage = &s.Carried
	case usage != nil:
		*usage = s.counted(*usage)
	}
	e.forget(s)
	// Every URR's last report (§7.5.7); none when the UPF could not read the session's usage.
	if !s.Rules.urrs {
		return nil, nil
	}
	if usage == nil {
		e.cfg.Log.Info("N4: a deleted session's usage could not be read; no usage report", "upSEID", s.UPSEID)
		return nil, nil
	}
	r, err := s.Rules.rules()
	if err != nil {
		e.cfg.Log.Error(err, "N4: no usage report for a deleted session", "upSEID", s.UPSEID)
		return nil, nil
	}
	var out []*ie.IE
	now := time.Now()
	for _, id := range sortedKeys(r.URRs) {
		out = append(out, r.URRs[id].report(ie.UsageReportWithinSessionDeletionResponse, r, reportTERMR, now, *usage))
	}
	return out, nil
}

// setRules gives s (whose mu the caller holds) new rules; e.mu too, for the report rounds and
// Node Reports that read every session's under it.
func (e *Endpoint) setRules(s *State, p packedRules) {
	e.mu.Lock()
	s.Rules = p
	e.mu.Unlock()
}

// releaseTEIDsLocked gives back the TEIDs of from that kept does not hold: PDRs that share a
// CHOOSE ID share a TEID, which stays while one of them does.
func (e *Endpoint) releaseTEIDsLocked(from, kept map[uint16]uint32) {
	for _, t := range from {
		held := false
		for _, k := range kept {
			held = held || k == t
		}
		if !held {
			delete(e.teids, t)
		}
	}
}

// chooseTEIDsLocked gives every PDR of r whose F-TEID has CH set a TEID: one per CHOOSE ID
// (PDRs with the same one share it, TS 29.244 §5.2.3.1), kept from prev for PDRs that had one,
// and sets them as s's. It returns the Created PDR IEs that tell the SMF.
func (e *Endpoint) chooseTEIDsLocked(s *State, r *Rules, prev map[uint16]uint32) ([]*ie.IE, error) {
	teids := map[uint16]uint32{}
	byChoose := map[uint8]uint32{}
	var created []*ie.IE
	var fresh []uint32
	for _, id := range sortedKeys(r.PDRs) {
		p := r.PDRs[id]
		if p.FTEID == nil || !p.FTEID.Choose {
			continue
		}
		t, had := prev[id]
		if !had && p.FTEID.ChooseID != nil {
			t, had = byChoose[*p.FTEID.ChooseID]
		}
		if !had {
			var err error
			if t, err = e.chooseTEIDLocked(); err != nil {
				for _, f := range fresh {
					delete(e.teids, f)
				}
				return nil, err
			}
			fresh = append(fresh, t)
		}
		if p.FTEID.ChooseID != nil {
			byChoose[*p.FTEID.ChooseID] = t
		}
		teids[id] = t
		if _, kept := prev[id]; !kept {
			created = append(created, ie.NewCreatedPDR(ie.NewPDRID(id), ie.NewFTEID(0x01, t, net.IP(e.cfg.N3.AsSlice()), nil, 0)))
		}
	}
	s.TEIDs = teids
	return created, nil
}

// modified returns a copy of r with a Session Modification Request's Remove, Create and Update
// IEs applied, in that order.
func (r *Rules) modified(c children) (_ *Rules, err error) {
	defer undecodable(&err)
	out := r.clone()
	for _, step := range []func(children) error{out.remove, out.create, out.update} {
		if err := step(c); err != nil {
			return nil, err
		}
	}
	out.dropUnsetURRIDs()
	return out, nil
}

// create decodes the Create PDR/FAR/QER/URR/MAR/BAR IEs into r; an ID that exists is refused,
// but for a URR the session had before the request, created again as it is (sameDefinition).
func (r *Rules) create(c children) error {
	if x := c.one(ie.CreateBAR); x != nil {
		b, err := decodeBAR(x)
		if err != nil {
			return err
		}
		if len(r.BARs) > 0 { // one BAR a session (TS 29.244 §7.5.2: at most one Create BAR)
			return ruleFailure(ie.RuleIDTypeBAR, uint32(b.ID), "Create BAR %d: the session has a BAR", b.ID)
		}
		r.BARs[b.ID] = b
	}
	for _, x := range c.all(ie.CreateFAR) {
		f, err := decodeFAR(x, nil)
		if err != nil {
			return err
		}
		if r.FARs[f.ID] != nil {
			return ruleFailure(ie.RuleIDTypeFAR, f.ID, "FAR %d exists", f.ID)
		}
		r.FARs[f.ID] = f
	}
	for _, x := range c.all(ie.CreateQER) {
		q, err := decodeQER(x, nil)
		if err != nil {
			return err
		}
		if r.QERs[q.ID] != nil {
			return ruleFailure(ie.RuleIDTypeQER, q.ID, "QER %d exists", q.ID)
		}
		r.QERs[q.ID] = q
	}
	created := map[uint32]bool{}
	for _, x := range c.all(ie.CreateURR) {
		u, err := decodeURR(x, nil)
		if err != nil {
			return err
		}
		if old := r.URRs[u.ID]; old != nil {
			// OAI's SMF with enable_usage_reporting keeps its URR while the UE is idle and creates
			// it again, unchanged, on the Service Request (smf_procedure.cpp, "Re-enable also old
			// URR"): the URR goes on measuring. Twice in one request, or changed, is refused.
			if !created[u.ID] && old.sameDefinition(u) {
				continue
			}
			return ruleFailure(ie.RuleIDTypeURR, u.ID, "URR %d exists", u.ID)
		}
		r.URRs[u.ID] = u
		created[u.ID] = true
	}
	for _, x := range c.all(ie.CreateMAR) {
		m, err := decodeMAR(x, nil)
		if err != nil {
			return err
		}
		if r.MARs[m.ID] != nil {
			return ruleFailure(ruleTypeMAR, uint32(m.ID), "MAR %d exists", m.ID)
		}
		r.MARs[m.ID] = m
	}
	for _, x := range c.all(ie.CreatePDR) {
		p, err := decodePDR(x, nil)
		if err != nil {
			return err
		}
		if r.PDRs[p.ID] != nil {
			return ruleFailure(ie.RuleIDTypePDR, uint32(p.ID), "PDR %d exists", p.ID)
		}
		r.PDRs[p.ID] = p
	}
	return nil
}

// update applies the Update PDR/FAR/QER/URR/MAR/BAR IEs to r; a rule that does not exist is refused.
func (r *Rules) update(c children) error {
	if x := c.one(ie.UpdateBARWithinSessionModificationRequest); x != nil {
		b, err := decodeBAR(x)
		if err != nil {
			return err
		}
		if r.BARs[b.ID] == nil {
			return ruleFailure(ie.RuleIDTypeBAR, uint32(b.ID), "Update BAR: no BAR %d", b.ID)
		}
		r.BARs[b.ID] = b
	}
	for _, x := range c.all(ie.UpdateFAR) {
		id, err := x.FARID()
		if err != nil || r.FARs[id] == nil {
			return ruleFailure(ie.RuleIDTypeFAR, id, "Update FAR: no FAR %d", id)
		}
		if r.FARs[id], err = decodeFAR(x, r.FARs[id]); err != nil {
			return err
		}
	}
	for _, x := range c.all(ie.UpdateQER) {
		id, err := x.QERID()
		if err != nil || r.QERs[id] == nil {
			return ruleFailure(ie.RuleIDTypeQER, id, "Update QER: no QER %d", id)
		}
		if r.QERs[id], err = decodeQER(x, r.QERs[id]); err != nil {
			return err
		}
	}
	for _, x := range c.all(ie.UpdateURR) {
		id, err := x.URRID()
		if err != nil || r.URRs[id] == nil {
			return ruleFailure(ie.RuleIDTypeURR, id, "Update URR: no URR %d", id)
		}
		if r.URRs[id], err = decodeURR(x, r.URRs[id]); err != nil {
			return err
		}
	}
	for _, x := range c.all(ie.UpdateMAR) {
		id, err := x.MARID()
		if err != nil || r.MARs[id] == nil {
			return ruleFailure(ruleTypeMAR, uint32(id), "Update MAR: no MAR %d", id)
		}
		if r.MARs[id], err = decodeMAR(x, r.MARs[id]); err != nil {
			return err
		}
	}
	for _, x := range c.all(ie.UpdatePDR) {
		id, err := x.PDRID()
		if err != nil || r.PDRs[id] == nil {
			return ruleFailure(ie.RuleIDTypePDR, uint32(id), "Update PDR: no PDR %d", id)
		}
		if r.PDRs[id], err = decodePDR(x, r.PDRs[id]); err != nil {
			return err
		}
	}
	return nil
}

// remove applies the Remove PDR/FAR/QER/URR/MAR/BAR IEs to r; a rule that does not exist is refused.
// Rules still named by others are caught by makePlan afterwards.
func (r *Rules) remove(c children) error {
	if x := c.one(ie.RemoveBAR); x != nil {
		id, err := x.BARID()
		if err != nil || r.BARs[id] == nil {
			return ruleFailure(ie.RuleIDTypeBAR, uint32(id), "Remove BAR: no BAR %d", id)
		}
		delete(r.BARs, id)
	}
	for _, x := range c.all(ie.RemovePDR) {
		id, err := x.PDRID()
		if err != nil || r.PDRs[id] == nil {
			return ruleFailure(ie.RuleIDTypePDR, uint32(id), "Remove PDR: no PDR %d", id)
		}
		delete(r.PDRs, id)
	}
	for _, x := range c.all(ie.RemoveFAR) {
		id, err := x.FARID()
		if err != nil || r.FARs[id] == nil {
			return ruleFailure(ie.RuleIDTypeFAR, id, "Remove FAR: no FAR %d", id)
		}
		delete(r.FARs, id)
	}
	for _, x := range c.all(ie.RemoveQER) {
		id, err := x.QERID()
		if err != nil || r.QERs[id] == nil {
			return ruleFailure(ie.RuleIDTypeQER, id, "Remove QER: no QER %d", id)
		}
		delete(r.QERs, id)
	}
	for _, x := range c.all(ie.RemoveURR) {
		id, err := x.URRID()
		if err != nil || r.URRs[id] == nil {
			return ruleFailure(ie.RuleIDTypeURR, id, "Remove URR: no URR %d", id)
		}
		delete(r.URRs, id)
	}
	for _, x := range c.all(ie.RemoveMAR) {
		id, err := x.MARID()
		if err != nil || r.MARs[id] == nil {
			return ruleFailure(ruleTypeMAR, uint32(id), "Remove MAR: no MAR %d", id)
		}
		delete(r.MARs, id)
	}
	return nil
}

// atsssControl answers Provide ATSSS Control Information (TS 29.244 §7.5.2.11) with ATSSS
// Control Parameters: ATSSS-LL is what Junction does; MPTCP and the PMF are refused (Junction's
// own probes measure RTT and loss, which the RTTWP feature says).
func atsssControl(x *ie.IE) (*ie.IE, error) {
	if x == nil {
		return nil, nil
	}
	c, err := childrenOf(x)
	if err != nil {
		return nil, err
	}
	if err := c.only(ie.MPTCPControlInformation, ie.ATSSSLLControlInformation, ie.PMFControlInformation); err != nil {
		return nil, err
	}
	if y := c.one(ie.MPTCPControlInformation); y != nil {
		if v, err := y.MPTCPControlInformation(); err != nil || v&0x01 != 0 {
			return nil, refuse(CauseServiceNotSupported, ie.MPTCPControlInformation, "MPTCP steering functionality is not offered")
		}
	}
	if y := c.one(ie.PMFControlInformation); y != nil {
		if v, err := y.PMFControlInformation(); err != nil || v&0x01 != 0 {
			return nil, refuse(CauseServiceNotSupported, ie.PMFControlInformation, "the PMF is not offered: Junction measures RTT and loss with its own probes (RTTWP)")
		}
	}
	var params []*ie.IE
	if y := c.one(ie.ATSSSLLControlInformation); y != nil {
		v, err := y.ATSSSLLControlInformation()
		if err != nil {
			return nil, refuse(CauseMandatoryIEIncorrect, ie.ATSSSLLControlInformation, "ATSSS-LL Control Information: %v", err)
		}
		if v&0x01 != 0 {
			params = append(params, ie.NewATSSSLLParameters(ie.NewATSSSLLInformation(1)))
		}
	}
	if len(params) == 0 {
		return nil, nil
	}
	return ie.NewATSSSControlParameters(params...), nil
}

// supiOf turns a User ID into a SUPI: the IMSI or the NAI (what the SMF knows the UE by, so all
// its sessions share one user index, one set of path state).
func supiOf(x *ie.IE) (string, error) {
	u, err := x.UserID()
	if err != nil {
		return "", refuse(CauseMandatoryIEIncorrect, ie.UserID, "User ID: %v", err)
	}
	switch {
	case u.Flags&0x01 != 0 && len(u.IMSI) >= 5 && len(u.IMSI) <= 15 && digits(u.IMSI):
		return "imsi-" + u.IMSI, nil
	case u.Flags&0x08 != 0 && u.NAI != "" && len(u.NAI) <= 240:
		return "nai-" + u.NAI, nil
	}
	return "", nil
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
