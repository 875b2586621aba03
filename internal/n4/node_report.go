package n4

// Node Reports (TS 29.244 §7.4.5.1): the UPF tells its SMFs when its user plane is lost and when
// it is back. Junction's user plane is a switch; when the operator loses it (the P4Runtime
// stream is down), every GTP-U path through it is down with it, so the endpoint reports a User
// Plane Path Failure (Node Report Type UPFR) naming the remote GTP-U peers of each SMF's
// sessions (the gNBs and access gateways of its FARs' Outer Header Creation); once the switch
// holds the sessions again (replayed), a User Plane Path Recovery (UPRR, Rel-16) names the same
// peers. What the SMF does with them is its business (TS 23.527 §4.6: release or keep the
// sessions; Junction keeps them and replays them either way).

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// Node Report Type flags (TS 29.244 §8.2.69).
const (
	nodeReportUPFR uint8 = 1 << 0 // User Plane Path Failure Report
	nodeReportUPRR uint8 = 1 << 1 // User Plane Path Recovery Report
)

// nodeReportAttempts is how many times a Node Report Request is sent while unanswered (the first
// and N1 = 2 retransmissions, §6.4), each waiting the heartbeat interval.
const nodeReportAttempts = 3

// userPlane is what the endpoint last heard of its switch.
type userPlane uint8

const (
	planeUnknown userPlane = iota
	planeUp
	planeDown
)

// UserPlane tells the endpoint whether its switch holds the UPF's sessions (up: connected and
// replayed) or is lost (down). A loss is reported to every associated SMF, as is the recovery
// after a reported loss; a repeated state is nothing new.
func (e *Endpoint) UserPlane(up bool) {
	state := planeDown
	if up {
		state = planeUp
	}
	e.mu.Lock()
	was := e.plane
	e.plane = state
	if was == state || (was == planeUnknown && state == planeUp) {
		e.mu.Unlock()
		return
	}
	flag, kind := nodeReportUPFR, "failure"
	if state == planeUp {
		flag, kind = nodeReportUPRR, "recovery"
	}
	peers := e.peersBySMFLocked()
	var told []string
	var reports []func()
	for nodeID, a := range e.assocs {
		if len(peers[nodeID]) == 0 {
			continue // an SMF with no GTP-U session: no path of its is affected
		}
		told = append(told, nodeID)
		addr, list := a.Addr, peers[nodeID] // read under e.mu: the association may change after
		reports = append(reports, func() { e.nodeReport(addr, flag, list) })
	}
	e.mu.Unlock()
	for _, send := range reports {
		send()
	}
	if len(told) > 0 {
		slices.Sort(told)
		e.cfg.Event(state == planeDown, "N4NodeReport", fmt.Sprintf("told SMFs %v of the user plane path %s (Node Report Request)", told, kind))
	}
}

// peersBySMFLocked returns, per SMF Node ID, the remote GTP-U peers of its sessions: the
// addresses of every GTP-U Outer Header Creation toward the access side, in order, once each.
func (e *Endpoint) peersBySMFLocked() map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, s := range e.sessions {
		for _, a := range s.Rules.peers {
			if !slices.Contains(out[s.SMF], a) {
				out[s.SMF] = append(out[s.SMF], a)
			}
		}
	}
	for smf := range out {
		slices.SortFunc(out[smf], func(a, b netip.Addr) int { return a.Compare(b) })
	}
	return out
}

// nodeReport sends one Node Report Request of type flag naming peers (retransmitted while it
// goes unanswered).
func (e *Endpoint) nodeReport(to netip.AddrPort, flag uint8, peers []netip.Addr) {
	remote := make([]*ie.IE, len(peers))
	for i, p := range peers {
		// V4 and DI: the peer's IPv4 address, reached on the Access interface.
		remote[i] = ie.NewRemoteGTPUPeer(0x06, p.String(), "", ie.DstInterfaceAccess, "")
	}
	report := ie.NewGroupedIE(ie.UserPlanePathFailureReport, remote...)
	if flag == nodeReportUPRR {
		report = ie.NewGroupedIE(ie.UserPlanePathRecoveryReport, remote...)
	}
	nodeID := ie.NewNodeIDHeuristic(e.cfg.NodeID)
	e.requestTries(to, nodeReportAttempts, func(seq uint32) marshaler {
		return message.NewNodeReportRequest(seq, nodeID, ie.NewNodeReportType(flag), report)
	}, func(*message.Header) {}, func() {
		e.cfg.Log.Info("N4: an SMF answered none of a Node Report Request's transmissions", "smf", to, "nodeReportType", flag)
	})
}
