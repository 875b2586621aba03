package controllers

// Indirect data forwarding during an N2 handover (docs/n4.md, "Indirect data forwarding"): a
// session whose 3GPP leg has spec.accessLegs.threeGPP.indirectForwarding has a forward_indirect
// entry for the tunnel's TEID, so the pipeline sends what the source gNB forwards on it here as
// packet-ins, and the UPF's runtime sends each G-PDU on to the target gNB's tunnel through the
// pipeline. The operator's leader relays, for the seconds a handover forwards, so that the
// pipeline only gains an action (docs/pipeline.md, "Packet I/O").

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
)

// forwardedFrames is registered with the operator's other metrics (metrics.go).
var forwardedFrames = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "junction_indirect_forwarded_frames_total",
	Help: "G-PDUs and End Markers that arrived on an N2 handover's indirect forwarding tunnel, by what became of them: relayed (sent on to the target gNB), relay_failed (the UPF is away).",
}, []string{"upf", "result"})

// forwardingTarget is where one forwarding tunnel's G-PDUs go.
type forwardingTarget struct {
	session string     // its session's key
	src     netip.Addr // the UPF's N3 address of the session's tunnel endpoint
	gnb     netip.Addr // the target gNB
	gnbTEID uint32
}

// forwardingTunnels are a UPF's forwarding tunnels by TEID (at most one a session).
type forwardingTunnels struct {
	mu     sync.RWMutex
	byTEID map[uint32]forwardingTarget
	teids  map[string]uint32 // session key → its tunnel's TEID
}

// set makes t (nil: none) the forwarding tunnel of session key, on teid.
func (f *forwardingTunnels) set(key string, teid uint32, t *forwardingTarget) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.teids[key]; ok {
		if f.byTEID[old].session == key { // another session may hold the TEID by now
			delete(f.byTEID, old)
		}
		delete(f.teids, key)
	}
	if t == nil {
		return
	}
	if f.byTEID == nil {
		f.byTEID, f.teids = map[uint32]forwardingTarget{}, map[string]uint32{}
	}
	t.session = key
	f.byTEID[teid], f.teids[key] = *t, teid
}

func (f *forwardingTunnels) lookup(teid uint32) (forwardingTarget, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.byTEID[teid]
	return t, ok
}

// setForwarding records where the G-PDUs of session s's forwarding tunnel go, once its
// forward_indirect entry is written (before it, the TEID may still be another session's), or
// forgets its tunnel when it has none.
func (rt *upfRuntime) setForwarding(key string, s *junctionv1.ATSSSSession, upf *junctionv1.UserPlaneFunction) error {
	leg := s.Spec.AccessLegs.ThreeGPP
	if leg == nil || leg.IndirectForwarding == nil {
		rt.forwarding.set(key, 0, nil)
		return nil
	}
	fw := leg.IndirectForwarding
	ep, err := upf.TunnelEndpointIndex(s.Spec.TunnelEndpoint)
	if err != nil {
		return err
	}
	src, err := netip.ParseAddr(string(upf.Spec.TunnelEndpoints[ep].N3Address))
	if err != nil {
		return fmt.Errorf("tunnelEndpoints[%d].n3Address: %w", ep, err)
	}
	gnb, err := netip.ParseAddr(string(fw.GNBAddress))
	if err != nil || !gnb.Is4() {
		return fmt.Errorf("accessLegs.threeGPP.indirectForwarding.gnbAddress: %q is not an IPv4 address", fw.GNBAddress)
	}
	rt.forwarding.set(key, uint32(fw.TEID), &forwardingTarget{src: src, gnb: gnb, gnbTEID: uint32(fw.GNBTEID)})
	return nil
}

// canForward reports whether the UPF's pipeline has forward_indirect when the session has a
// forwarding tunnel. A pipeline not known yet is given the benefit of the doubt, as canBuffer does.
func (rt *upfRuntime) canForward(s *junctionv1.ATSSSSession) error {
	sch := rt.pipe.Load().schema
	if leg := s.Spec.AccessLegs.ThreeGPP; sch == nil || leg == nil || leg.IndirectForwarding == nil {
		return nil
	}
	if !sch.TableTakes("uplink_tunnels", desired.ActionForwardIndirect) || !sch.PacketOutHas(desired.PacketOutToIngress) {
		return fmt.Errorf("accessLegs.threeGPP.indirectForwarding: the UPF's pipeline cannot relay (it needs %s in uplink_tunnels and packet_out.%s, docs/pipeline.md)",
			desired.ActionForwardIndirect, desired.PacketOutToIngress)
	}
	return nil
}

// relay sends a packet-in that is a G-PDU or End Marker on one of the UPF's forwarding tunnels on
// to its target gNB, and reports whether it was one.
func (rt *upfRuntime) relay(frame []byte) bool {
	teid, msg, ok := desired.TunnelMessage(frame)
	if !ok {
		return false
	}
	t, ok := rt.forwarding.lookup(teid)
	if !ok {
		return false // one the pipeline punts for what it carries, or one whose tunnel went meanwhile
	}
	dev := rt.dev.cur.Load()
	if dev == nil || dev.PacketOut(desired.RelayedMessage(msg, t.src, t.gnb, t.gnbTEID), map[string]uint64{desired.PacketOutToIngress: 1}) != nil {
		forwardedFrames.WithLabelValues(rt.key.Name, "relay_failed").Inc()
		return true
	}
	forwardedFrames.WithLabelValues(rt.key.Name, "relayed").Inc()
	return true
}
