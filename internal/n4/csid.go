package n4

// Partial failure handling (TS 29.244 §7.4.6, TS 23.007 clause 23 and TS 23.527): an SMF tags
// each session with its FQ-CSID, the node and the Connection Set IDs of the part of the SMF that
// holds it. When that part fails, the SMF (or its set) deletes all of the part's sessions at
// once with a Session Set Deletion Request naming its FQ-CSIDs, rather than one deletion each.
// The UPF answers with an FQ-CSID of its own on every session that came with one: one CSID for
// the whole UPF, which fails as one.

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// upCSID is the UPF's one Connection Set ID.
const upCSID = 1

// FQCSID is an FQ-CSID (§8.2.46): the node that allocated the CSIDs (an IPv4 or IPv6 address,
// or the hex of an MCC/MNC-based ID), and the CSIDs.
type FQCSID struct {
	Node  string   `json:"node"`
	CSIDs []uint16 `json:"csids"`
}

// decodeFQCSID reads an FQ-CSID IE: a node ID of the length its type says, then as many CSIDs
// as it counts, and nothing after.
func decodeFQCSID(x *ie.IE) (*FQCSID, error) {
	b := x.Payload
	if len(b) < 1 {
		return nil, refuse(CauseInvalidLength, ie.FQCSID, "FQ-CSID: empty")
	}
	typ, n := b[0]>>4, int(b[0]&0x0f)
	nodeLen := map[byte]int{0: 4, 1: 16, 2: 4}[typ]
	if nodeLen == 0 {
		return nil, refuse(CauseMandatoryIEIncorrect, ie.FQCSID, "FQ-CSID: node ID type %d", typ)
	}
	if n == 0 {
		return nil, refuse(CauseMandatoryIEIncorrect, ie.FQCSID, "FQ-CSID: no CSID")
	}
	if len(b) != 1+nodeLen+2*n {
		return nil, refuse(CauseInvalidLength, ie.FQCSID, "FQ-CSID: %d octets for a node ID of type %d and %d CSIDs", len(b), typ, n)
	}
	f := &FQCSID{}
	switch node := b[1 : 1+nodeLen]; typ {
	case 0, 1:
		a, _ := netip.AddrFromSlice(node)
		f.Node = a.String()
	default:
		f.Node = hex.EncodeToString(node)
	}
	for i := range n {
		f.CSIDs = append(f.CSIDs, binary.BigEndian.Uint16(b[1+nodeLen+2*i:]))
	}
	return f, nil
}

// names reports whether f names a set s is in: the same node, a CSID in common.
func (f *FQCSID) names(s *FQCSID) bool {
	if s == nil || f.Node != s.Node {
		return false
	}
	for _, c := range f.CSIDs {
		if slices.Contains(s.CSIDs, c) {
			return true
		}
	}
	return false
}

// smfCSID reads the SMF's FQ-CSID of a session request, if it carries one (an N4 request
// carries no other: the SGW-C, MME, ePDG and TWAN ones are for Sxa and Sxb).
func smfCSID(c children) (*FQCSID, error) {
	if x := c.one(ie.FQCSID); x != nil {
		return decodeFQCSID(x)
	}
	return nil, nil
}

// upFQCSID is the UPF's FQ-CSID, answered to a session that came with the SMF's.
func (e *Endpoint) upFQCSID() *ie.IE {
	return ie.NewFQCSID(e.fseidIP.String(), upCSID)
}

// sessionSetDeletion answers a Session Set Deletion Request (§7.4.6): it deletes the sessions of
// the requesting SMF's association whose SMF FQ-CSID the request names (the same node, a CSID
// in common), and sends no usage reports (the part of the SMF that held them is gone). Only the
// SMF's own sets count: the UPF fails as a whole, and knows when it does.
func (e *Endpoint) sessionSetDeletion(ctx context.Context, key string, from netip.AddrPort, h *message.Header, ies []*ie.IE, perr error) {
	nodeID := ie.NewNodeIDHeuristic(e.cfg.NodeID)
	answer := func(r *Refusal) {
		if r == nil {
			e.reply(key, from, message.NewSessionSetDeletionResponse(h.SequenceNumber, nodeID, ie.NewCause(CauseAccepted), nil))
			return
		}
		e.cfg.Log.V(1).Info("N4: refused a Session Set Deletion Request", "from", from, "cause", r.Cause, "why", r.Msg)
		e.reply(key, from, message.NewSessionSetDeletionResponse(h.SequenceNumber, nodeID, ie.NewCause(r.Cause), r.offending()))
	}
	if perr != nil {
		answer(refusalOf(perr))
		return
	}
	sets, smf, err := decodeSetDeletion(ies)
	if err != nil {
		answer(err.(*Refusal))
		return
	}
	e.mu.Lock()
	assoc := e.assocs[smf]
	var named []*State
	for _, s := range e.sessions {
		if s.SMF != smf || s.SMFCSID == nil {
			continue
		}
		for _, f := range sets {
			if f.names(s.SMFCSID) {
				named = append(named, s)
				break
			}
		}
	}
	e.mu.Unlock()
	if assoc == nil {
		answer(refuse(CauseNoAssociation, 0, "no PFCP association with %s", smf))
		return
	}
	deleted := 0
	for _, s := range named {
		s.mu.Lock()
		e.mu.Lock()
		gone := e.sessions[s.UPSEID] != s
		e.mu.Unlock()
		if !gone {
			if _, err := e.store.Remove(ctx, s); err != nil {
				s.mu.Unlock()
				answer(refuse(CauseSystemFailure, 0, "deleting session %#x: %v", s.UPSEID, err))
				return
			}
			e.forget(s)
			deleted++
		}
		s.mu.Unlock()
	}
	answer(nil)
	e.cfg.Event(false, "N4SessionSetDeleted", fmt.Sprintf("SMF %s deleted %d sessions by their FQ-CSIDs", smf, deleted))
}

// decodeSetDeletion reads a Session Set Deletion Request: its Node ID and its FQ-CSIDs, of which
// it needs one.
func decodeSetDeletion(ies []*ie.IE) (sets []*FQCSID, smf string, err error) {
	defer undecodable(&err)
	c, err := messageIEs(ies, ie.FQCSID)
	if err != nil {
		return nil, "", err
	}
	x, err := c.need(ie.NodeID)
	if err != nil {
		return nil, "", err
	}
	if smf, err = x.NodeID(); err != nil || smf == "" {
		return nil, "", refuse(CauseMandatoryIEIncorrect, ie.NodeID, "Node ID: %v", err)
	}
	if err := c.only(ie.NodeID, ie.FQCSID); err != nil {
		return nil, "", err
	}
	for _, x := range c.all(ie.FQCSID) {
		f, err := decodeFQCSID(x)
		if err != nil {
			return nil, "", err
		}
		sets = append(sets, f)
	}
	if len(sets) == 0 {
		return nil, "", refuse(CauseConditionalIEMissing, ie.FQCSID, "a Session Set Deletion Request names no FQ-CSID")
	}
	return sets, smf, nil
}
