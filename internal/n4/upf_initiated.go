package n4

// The association procedures the UPF starts (docs/n4.md, "Procedures"): it sets up an
// association with each SMF of Config.AssociateWith (TS 29.244 §6.2.6.3), and when it leaves N4
// it asks its SMFs to release their associations (§6.2.7.3, an Association Update Request with
// the PFCP Association Release Request IE) before it releases what is left itself.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// associate sends an Association Setup Request to each SMF of Config.AssociateWith the UPF has no
// association at: at once, then again every heartbeat interval while the SMF does not answer or
// refuses. A name is resolved (IPv4) at each attempt, so an SMF behind a Service or DNS name that
// moves is found again. An SMF that restarted (a new Recovery Time Stamp in its heartbeats) no
// longer knows the association: peerAlive drops it, and the next round sets it up again.
// Housekeeping runs it in a goroutine of its own (name resolution may wait), one round at a time.
func (e *Endpoint) associate(ctx context.Context, now time.Time) {
	if e.leaving.Load() || !e.associating.CompareAndSwap(false, true) {
		return
	}
	defer e.associating.Store(false)
	nodeID := ie.NewNodeIDHeuristic(e.cfg.NodeID)
	for _, target := range e.cfg.AssociateWith {
		e.mu.Lock()
		last, due := e.smfAddrs[target], !now.Before(e.setupAfter[target])
		if !due || last.IsValid() && e.associatedAtLocked(last) {
			e.mu.Unlock()
			continue
		}
		e.setupAfter[target] = now.Add(e.retryInterval())
		e.mu.Unlock()
		to, err := resolveSMF(ctx, target)
		if err != nil {
			e.setupFailed(target, err.Error())
			continue
		}
		e.mu.Lock()
		e.smfAddrs[target] = to
		already := e.associatedAtLocked(to)
		e.mu.Unlock()
		if already {
			continue
		}
		e.request(to, func(seq uint32) marshaler {
			return message.NewAssociationSetupRequest(seq, nodeID, ie.NewRecoveryTimeStamp(e.recovery), ie.New(ie.UPFunctionFeatures, upFeatures))
		}, func(h *message.Header) { e.setupAnswered(ctx, target, to, h) })
	}
}

// resolveSMF turns host:port into an address: the host as it is when it is an IPv4 address, else
// its first IPv4 address in DNS.
func resolveSMF(ctx context.Context, target string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(target); err == nil {
		return a, nil
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return netip.AddrPort{}, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q: %v", port, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolving %s: %v", host, err)
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s has no IPv4 address", host)
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(p)), nil
}

// retryInterval is how long the UPF waits for an answer to its requests, and between its
// attempts to set up an association.
func (e *Endpoint) retryInterval() time.Duration {
	if e.cfg.Heartbeat > 0 {
		return e.cfg.Heartbeat
	}
	return 3 * time.Second
}

func (e *Endpoint) associatedAtLocked(to netip.AddrPort) bool {
	for _, a := range e.assocs {
		if a.Addr == to {
			return true
		}
	}
	return false
}

// configuredSMF says whether addr is where an SMF of Config.AssociateWith was last found.
func (e *Endpoint) configuredSMF(addr netip.AddrPort) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range e.smfAddrs {
		if a == addr {
			return true
		}
	}
	return false
}

// setupFailed says why an attempt to associate with target failed: in the log, and in a Warning
// event once per reason.
func (e *Endpoint) setupFailed(target, why string) {
	e.mu.Lock()
	again := e.setupRefusal[target] == why
	e.setupRefusal[target] = why
	e.mu.Unlock()
	e.cfg.Log.V(1).Info("N4: the UPF's Association Setup Request failed", "smf", target, "why", why)
	if !again {
		e.cfg.Event(true, "SMFAssociationRefused", fmt.Sprintf("SMF %s: %s; the UPF tries again every %s", target, why, e.retryInterval()))
	}
}

// setupAnswered records the association an SMF accepted (Cause, Node ID and Recovery Time Stamp
// are mandatory, TS 29.244 §7.4.4.2), as an SMF-initiated setup does.
func (e *Endpoint) setupAnswered(ctx context.Context, target string, to netip.AddrPort, h *message.Header) {
	refused := func(why string) { e.setupFailed(target, why) }
	if h.Type != message.MsgTypeAssociationSetupResponse {
		refused(fmt.Sprintf("answered with a message of type %d", h.Type))
		return
	}
	ies, err := ie.ParseMultiIEs(h.Payload)
	if err != nil {
		refused(fmt.Sprintf("undecodable Association Setup Response: %v", err))
		return
	}
	c, err := messageIEs(ies, ie.UserPlaneIPResourceInformation, ie.AlternativeSMFIPAddress, ie.SMFSetID)
	var cause uint8
	var smf string
	var ts time.Time
	if err == nil {
		err = func() error {
			for _, t := range []uint16{ie.Cause, ie.NodeID, ie.RecoveryTimeStamp} {
				x, err := c.need(t)
				if err != nil {
					return err
				}
				switch t {
				case ie.Cause:
					cause, err = x.Cause()
				case ie.NodeID:
					smf, err = x.NodeID()
				default:
					ts, err = x.RecoveryTimeStamp()
				}
				if err != nil {
					return fmt.Errorf("%s: %v", ieName(t), err)
				}
			}
			return nil
		}()
	}
	switch {
	case err != nil:
		refused(fmt.Sprintf("malformed Association Setup Response: %v", err))
		return
	case cause != CauseAccepted:
		refused(fmt.Sprintf("refused with cause %d", cause))
		return
	case smf == "":
		refused("Association Setup Response with an empty Node ID")
		return
	}
	e.mu.Lock()
	delete(e.setupRefusal, target)
	e.mu.Unlock()
	e.recordAssociation(ctx, smf, to, ts)
	e.cfg.Event(false, "SMFAssociated", fmt.Sprintf("SMF %s associated at %s (the UPF's Association Setup Request)", smf, to))
}

// Release ends every association when the UPF leaves N4 for good (not when the operator merely
// stops). It asks each SMF to release its association (an Association Update Request with SARR,
// TS 29.244 §6.2.7.3), so that the SMF deletes its sessions and sends the Association Release
// Request, which Serve answers. Of an SMF still associated after wait (one that ignores SARR), the
// UPF deletes the sessions itself, as a released association's go (§6.2.8), and sends its own
// Association Release Request.
func (e *Endpoint) Release(ctx context.Context, wait time.Duration) {
	e.leaving.Store(true) // no association set up again meanwhile
	nodeID := ie.NewNodeIDHeuristic(e.cfg.NodeID)
	for _, addr := range e.associated() {
		e.request(addr, func(seq uint32) marshaler {
			// The PFCP Association Release Request IE with SARR (§8.2.77): the UPF asks for the release.
			return message.NewAssociationUpdateRequest(seq, nodeID, ie.NewPFCPAssociationReleaseRequest(1, 0))
		}, func(*message.Header) {})
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for len(e.associated()) > 0 {
		select {
		case <-ctx.Done():
			break wait
		case <-deadline.C:
			break wait
		case <-tick.C:
		}
	}
	e.mu.Lock()
	left := e.assocs
	e.assocs, e.dirty = map[string]*Association{}, true
	e.mu.Unlock()
	for smf, a := range left {
		e.releaseSessionsOf(ctx, smf)
		e.request(a.Addr, func(seq uint32) marshaler { return message.NewAssociationReleaseRequest(seq, nodeID) }, func(*message.Header) {})
	}
}

// associated is the addresses of the SMFs the UPF has an association with.
func (e *Endpoint) associated() []netip.AddrPort {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []netip.AddrPort
	for _, a := range e.assocs {
		out = append(out, a.Addr)
	}
	return out
}
