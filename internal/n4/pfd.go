package n4

// PFD Management (TS 29.244 §6.2.5, §7.4.3): an SMF provisions the Packet Flow Descriptions of
// the applications its PDRs name by Application ID (a 5G core's NEF hands them to it). Junction
// takes flow descriptions, the IPFilterRule of SDF filters, and keeps them per UPF, in the
// UPF's status.n4.pfds; a PDR whose Application ID has PFDs detects by them as a PDR with those
// SDF filters would (plan.go), and one whose Application ID has none by the SteeringPolicy of
// that name, as before. New PFDs apply to the sessions that name the application at once.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// PFD Contents flags (§8.2.39): FD, a flow description; AFD, more of them. The others (URL,
// domain name, custom content and their kin) ask for inspection the pipeline does not do.
const (
	pfdFD  = 0x01
	pfdAFD = 0x20
)

// maxPFDBytes bounds what the PFDs of a UPF may take in its status (the API server keeps an
// object within 1.5 MB), besides status.n4.pfds' own limits (junctionv1.MaxPFD...).
const maxPFDBytes = 512 << 10

// decodePFDs reads a PFD Management Request: the SMF's Node ID, if it sent one, and each
// application's flow descriptions (none: the application's PFDs are removed), or nil apps when
// the request names none (all PFDs are removed). Every flow description must parse.
func decodePFDs(ies []*ie.IE) (apps map[string][]string, smf string, err error) {
	defer undecodable(&err)
	c, err := messageIEs(ies, ie.ApplicationIDsPFDs)
	if err != nil {
		return nil, "", err
	}
	if err := c.only(ie.NodeID, ie.ApplicationIDsPFDs); err != nil {
		return nil, "", err
	}
	if x := c.one(ie.NodeID); x != nil {
		if smf, err = x.NodeID(); err != nil {
			return nil, "", refuse(CauseMandatoryIEIncorrect, ie.NodeID, "Node ID: %v", err)
		}
	}
	for _, x := range c.all(ie.ApplicationIDsPFDs) {
		a, err := childrenOf(x, ie.PFDContext)
		if err != nil {
			return nil, "", err
		}
		if err := a.only(ie.ApplicationID, ie.PFDContext); err != nil {
			return nil, "", err
		}
		idIE, err := a.need(ie.ApplicationID)
		if err != nil {
			return nil, "", err
		}
		app, err := idIE.ApplicationID()
		if err != nil || app == "" {
			return nil, "", refuse(CauseMandatoryIEIncorrect, ie.ApplicationID, "Application ID: %q %v", app, err)
		}
		if apps == nil {
			apps = map[string][]string{}
		}
		if _, twice := apps[app]; twice {
			return nil, "", refuse(CauseMandatoryIEIncorrect, ie.ApplicationIDsPFDs, "Application ID %q appears twice", app)
		}
		var fds []string
		for _, ctx := range a.all(ie.PFDContext) {
			p, err := childrenOf(ctx, ie.PFDContents)
			if err != nil {
				return nil, "", err
			}
			if err := p.only(ie.PFDContents); err != nil {
				return nil, "", err
			}
			if _, err := p.need(ie.PFDContents); err != nil {
				return nil, "", err
			}
			for _, y := range p.all(ie.PFDContents) {
				// The flags first: what Junction cannot detect is refused as such, however it is encoded.
				if len(y.Payload) > 0 && y.Payload[0]&^(pfdFD|pfdAFD) != 0 {
					return nil, "", refuse(CauseServiceNotSupported, ie.PFDContents,
						"PFDs of %q: contents %#x; Junction detects applications by flow descriptions alone (URLs and domain names need inspection it does not do)", app, y.Payload[0])
				}
				more, err := flowDescriptions(y.Payload)
				if err != nil {
					return nil, "", refuse(CauseInvalidLength, ie.PFDContents, "PFDs of %q: %v", app, err)
				}
				fds = append(fds, more...)
			}
		}
		for _, fd := range fds {
			// "assigned" is the session's address; any address checks the syntax.
			if _, err := parseFlowDescription(fd, netip.MustParseAddr("10.0.0.1")); err != nil {
				return nil, "", refuse(CauseMandatoryIEIncorrect, ie.PFDContents, "PFDs of %q: %v", app, err)
			}
		}
		apps[app] = fds
	}
	return apps, smf, nil
}

// flowDescriptions reads PFD Contents (§8.2.39) that carry flow descriptions alone: the flags
// and a spare octet, then with FD a length and a flow description, with AFD a length and that
// many octets of length-prefixed flow descriptions; nothing may be left over.
func flowDescriptions(b []byte) ([]string, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%d octets", len(b))
	}
	flags, b := b[0], b[2:]
	next := func() ([]byte, error) {
		if len(b) < 2 || int(binary.BigEndian.Uint16(b))+2 > len(b) {
			return nil, fmt.Errorf("a length runs past the IE")
		}
		n := int(binary.BigEndian.Uint16(b))
		v := b[2 : 2+n]
		b = b[2+n:]
		return v, nil
	}
	var out []string
	if flags&pfdFD != 0 {
		fd, err := next()
		if err != nil {
			return nil, err
		}
		out = append(out, string(fd))
	}
	if flags&pfdAFD != 0 {
		list, err := next()
		if err != nil {
			return nil, err
		}
		rest := b
		for b = list; len(b) > 0; {
			fd, err := next()
			if err != nil {
				return nil, err
			}
			out = append(out, string(fd))
		}
		b = rest
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d octets after the flow descriptions", len(b))
	}
	return out, nil
}

// pfdManagement answers a PFD Management Request from an associated SMF: the applications it
// names get the PFDs it gives (none: theirs are removed), a request that names none removes
// every PFD (§6.2.5). The PFDs are saved in the UPF's status before the answer, and the
// sessions whose PDRs name a changed application take them (resolvePFDs); one that cannot keeps
// what it had, with an event.
func (e *Endpoint) pfdManagement(ctx context.Context, key string, from netip.AddrPort, h *message.Header, ies []*ie.IE, perr error) {
	answer := func(r *Refusal) {
		cause, offending := CauseAccepted, (*ie.IE)(nil)
		if r != nil {
			e.cfg.Log.V(1).Info("N4: refused a PFD Management Request", "from", from, "cause", r.Cause, "why", r.Msg)
			cause, offending = r.Cause, r.offending()
		}
		e.reply(key, from, message.NewPFDManagementResponse(h.SequenceNumber, ie.NewCause(cause), offending, ie.NewNodeIDHeuristic(e.cfg.NodeID)))
	}
	if perr != nil {
		answer(refusalOf(perr))
		return
	}
	apps, smf, err := decodePFDs(ies)
	if err != nil {
		answer(err.(*Refusal))
		return
	}
	// Session requests wait while the PFDs change, so that none resolves against a half-made table.
	e.pfdMu.Lock()
	defer e.pfdMu.Unlock()
	e.mu.Lock()
	associated := false
	for _, a := range e.assocs {
		associated = associated || a.NodeID == smf || (smf == "" && a.Addr == from)
	}
	next := map[string][]string{}
	if apps != nil {
		for app, fds := range e.pfds {
			next[app] = fds
		}
	}
	var changed []string
	for app, fds := range apps {
		if len(fds) == 0 {
			delete(next, app)
		} else {
			next[app] = fds
		}
		changed = append(changed, app)
	}
	if apps == nil {
		for app := range e.pfds {
			changed = append(changed, app)
		}
	}
	size, over := 0, ""
	for app, fds := range next {
		size += len(app)
		if len(app) > junctionv1.MaxApplicationIDLength {
			over = fmt.Sprintf("an Application ID of %d bytes (at most %d)", len(app), junctionv1.MaxApplicationIDLength)
		}
		if len(fds) > junctionv1.MaxPFDFlowDescriptions {
			over = fmt.Sprintf("%d flow descriptions for %q (at most %d)", len(fds), app, junctionv1.MaxPFDFlowDescriptions)
		}
		for _, fd := range fds {
			size += len(fd)
			if len(fd) > junctionv1.MaxFlowDescriptionLength {
				over = fmt.Sprintf("a flow description of %q of %d bytes (at most %d)", app, len(fd), junctionv1.MaxFlowDescriptionLength)
			}
		}
	}
	switch {
	case len(next) > junctionv1.MaxPFDApplications:
		over = fmt.Sprintf("%d applications (at most %d)", len(next), junctionv1.MaxPFDApplications)
	case size > maxPFDBytes:
		over = fmt.Sprintf("%d bytes of PFDs (at most %d)", size, maxPFDBytes)
	}
	e.mu.Unlock()
	switch {
	case !associated:
		answer(refuse(CauseNoAssociation, 0, "no PFCP association with %s (%s)", smf, from))
		return
	case over != "":
		answer(refuse(CauseNoResources, ie.ApplicationIDsPFDs, "the UPF keeps no more PFDs than its status holds: %s", over))
		return
	}
	e.mu.Lock()
	prev := e.pfds
	// dirty as well: a save of the node state already under way may land after this one.
	e.pfds, e.dirty = next, true
	e.mu.Unlock()
	if err := e.store.SaveNode(ctx, e.nodeState()); err != nil {
		e.mu.Lock()
		e.pfds = prev
		e.mu.Unlock()
		answer(refuse(CauseSystemFailure, 0, "saving the PFDs: %v", err))
		return
	}
	answer(nil)
	e.resolvePFDs(ctx, changed)
}

// resolvePFDs gives every session whose PDRs name one of apps the PFDs they have now, as a
// modification would (the caller holds pfdMu). A session the switch cannot take them for keeps
// what it had.
func (e *Endpoint) resolvePFDs(ctx context.Context, apps []string) {
	e.mu.Lock()
	var named []*State
	for _, s := range e.sessions {
		named = append(named, s)
	}
	e.mu.Unlock()
	kept := 0
	for _, s := range named {
		s.mu.Lock()
		e.mu.Lock()
		gone := e.sessions[s.UPSEID] != s // released meanwhile (its SMF lost, its set deleted)
		e.mu.Unlock()
		if r, err := s.Rules.rules(); !gone && err == nil && r.namesAny(apps) {
			if err := e.replanPFDs(ctx, s, r); err != nil {
				kept++
				e.cfg.Log.Error(err, "N4: a session keeps its earlier PFDs", "upSEID", s.UPSEID)
			}
		}
		s.mu.Unlock()
	}
	if kept > 0 {
		e.cfg.Event(true, "N4PFDsNotApplied", fmt.Sprintf("%d sessions keep their earlier PFDs of %v: the switch did not take the new ones (the operator's log says why)", kept, apps))
	}
}

// replanPFDs writes session s with its rules r resolved against the PFDs now (s.mu held).
func (e *Endpoint) replanPFDs(ctx context.Context, s *State, r *Rules) error {
	next := r.clone()
	e.resolveApps(next)
	packed, err := pack(next)
	if err != nil {
		return err
	}
	p, err := makePlan(next, s.TEIDs, s.SUPI, s.Idle, e.cfg.Target)
	if err != nil {
		return err
	}
	// The rules first: the store saves them with the session, for the next leader.
	prevRules := s.Rules
	e.setRules(s, packed)
	if err := e.store.Apply(ctx, s, p); err != nil {
		e.setRules(s, prevRules)
		if prev, perr := makePlan(r, s.TEIDs, s.SUPI, s.Idle, e.cfg.Target); perr == nil {
			if rerr := e.store.Apply(ctx, s, prev); rerr != nil {
				e.cfg.Log.Error(rerr, "putting an N4 session back after refused PFDs", "upSEID", s.UPSEID)
			}
		}
		return err
	}
	return nil
}

// resolveApps gives each PDR of r with an Application ID the flow descriptions the SMFs
// provisioned for it, none if they provisioned none. A PDR that changes is copied: r may share
// it with the rules it was cloned from.
func (e *Endpoint) resolveApps(r *Rules) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, p := range r.PDRs {
		if p.ApplicationID == "" {
			continue
		}
		if fds := e.pfds[p.ApplicationID]; !slices.Equal(fds, p.PFDs) {
			q := *p
			q.PFDs = slices.Clone(fds)
			r.PDRs[id] = &q
		}
	}
}

// namesAny: a PDR of r has one of apps for its Application ID.
func (r *Rules) namesAny(apps []string) bool {
	for _, p := range r.PDRs {
		if p.ApplicationID != "" && slices.Contains(apps, p.ApplicationID) {
			return true
		}
	}
	return false
}
