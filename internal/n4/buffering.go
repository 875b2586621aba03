package n4

import (
	"slices"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// DownlinkData reports to the SMF that the first downlink packet of session upSEID arrived while
// its FAR buffers (TS 29.244 §5.2.3.1, §7.5.8.2: a Session Report Request, Report Type DLDR, with
// a Downlink Data Report naming the PDR that matched), when the FAR asks for it (NOCP). The SMF
// pages the UE and modifies the FAR to forward. The operator calls it once per buffering
// period, for the period's first packet (internal/dlbuffer).
func (e *Endpoint) DownlinkData(upSEID uint64) {
	e.mu.Lock()
	s := e.sessions[upSEID]
	var assoc *Association
	if s != nil {
		assoc = e.assocs[s.SMF]
	}
	e.mu.Unlock()
	if s == nil || assoc == nil {
		return
	}
	s.mu.Lock()
	r, err := s.Rules.rules()
	cpSEID, to := s.CPSEID, reportAddr(s, assoc)
	s.mu.Unlock()
	if err != nil {
		e.cfg.Log.Error(err, "N4: no downlink data report", "upSEID", upSEID)
		return
	}
	pdr := notifyingPDR(r)
	if pdr == nil {
		return // BUFF without NOCP: held, not reported
	}
	e.cfg.Log.V(1).Info("N4: downlink data for an idle UE", "upSEID", upSEID, "pdr", pdr.ID)
	e.requestTries(to, 3, func(seq uint32) marshaler {
		return message.NewSessionReportRequest(0, 0, cpSEID, seq, 0,
			ie.NewReportType(0, 0, 0, 1), ie.NewDownlinkDataReport(ie.NewPDRID(pdr.ID)))
	}, func(h *message.Header) {
		if cause := responseCause(h); cause != CauseAccepted {
			e.cfg.Log.Info("N4: the SMF refused a downlink data report", "upSEID", upSEID, "cause", cause)
		}
		// PFCPSRRsp-Flags DROBU (§8.2.59): drop what the session holds, whatever the Cause
		// (SD-Core's SMF sends it with cause 64 when the AMF cannot reach the UE). The FAR still
		// buffers: the next packet starts a new period and a new report.
		if reportFlags(h)&srRspDROBU != 0 {
			e.cfg.Log.Info("N4: the SMF asked to drop the buffered downlink", "upSEID", upSEID)
			e.store.DropBuffered(s)
		}
	}, func() {
		e.cfg.Log.Info("N4: the SMF did not answer a downlink data report", "upSEID", upSEID)
	})
}

// srRspDROBU is PFCPSRRsp-Flags' DROBU (TS 29.244 §8.2.59): drop the buffered packets.
const srRspDROBU = 0x01

// reportFlags are the PFCPSRRsp-Flags of a Session Report Response (0 without the IE).
func reportFlags(h *message.Header) uint8 {
	if x := responseIE(h, ie.PFCPSRRspFlags); x != nil && len(x.Payload) > 0 {
		return x.Payload[0]
	}
	return 0
}

// notifyingPDR is the downlink PDR (Source Interface Core) of highest precedence (lowest value)
// whose FAR buffers and notifies (BUFF and NOCP), or, in an MA PDU session, whose MAR names such
// a FAR (the 3GPP access's: the only one Junction holds for, docs/n4.md "An access not
// active"); nil when none does.
func notifyingPDR(r *Rules) *PDR {
	notifies := func(id uint32) bool {
		f := r.FARs[id]
		return f != nil && f.Action&(actBuff|actNocp) == actBuff|actNocp
	}
	var best *PDR
	for _, id := range sortedKeys(r.PDRs) {
		p := r.PDRs[id]
		if p.Source != ifaceCore && p.Source != ifaceN6LAN {
			continue
		}
		switch {
		case p.FARID != nil:
			if !notifies(*p.FARID) {
				continue
			}
		case p.MARID != nil && r.MARs[*p.MARID] != nil:
			m := r.MARs[*p.MARID]
			if !slices.ContainsFunc(m.AFAI[:], func(a *AFAI) bool { return a != nil && notifies(a.FARID) }) {
				continue
			}
		default:
			continue
		}
		if best == nil || p.Precedence < best.Precedence {
			best = p
		}
	}
	return best
}
