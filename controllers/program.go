package controllers

// Programming one session on its UPF: indexes, entries, the device's answer. The session
// controller and the N4 endpoint's direct path (n4_direct.go) share it, so that an N4 session
// and a manifest session are allocated and written alike.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wmnsk/go-pfcp/ie"
	"k8s.io/apimachinery/pkg/types"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/n4"
	"github.com/junction-atsss/junction/internal/programmer"
)

// invalidSpecError: the session cannot be programmed as its spec says (InvalidSpec).
// unsupported is set when the spec is sound but asks what the UPF's pipeline does not do
// (NotSupportedByPipeline).
type invalidSpecError struct {
	err         error
	unsupported bool
}

// unsupportedIE is the IE an N4 refusal of an unsupported spec names (76, on the endpoint's direct
// path and on the controller's), by what the check said (msg): what a sound spec asks that a
// pipeline may lack is QoS flows of their own (canHaveQoSFlows: the QFI of the flow's QER),
// indirect forwarding (canForward: the forwarding FAR's Destination Interface), downlink
// buffering (canBuffer: the FAR's Apply Action) or the MBR policer (canPolice: the MBR, or the
// Gate Status of a closed gate).
func unsupportedIE(spec *junctionv1.ATSSSSessionSpec, msg string) uint16 {
	switch {
	case strings.HasPrefix(msg, "spec.qosFlows"):
		return ie.QFI
	case strings.HasPrefix(msg, "accessLegs.threeGPP.indirectForwarding"):
		return ie.DestinationInterface
	case spec.AccessLegs.ThreeGPP.Buffers():
		return ie.ApplyAction
	case spec.Gates.Closed(true) || spec.Gates.Closed(false):
		return ie.GateStatus
	}
	return ie.MBR
}

func (e *invalidSpecError) Error() string { return e.err.Error() }
func (e *invalidSpecError) Unwrap() error { return e.err }

// errIndexesExhausted: the UPF has no index left that the session needs (IndexesExhausted).
var errIndexesExhausted = errors.New("indexes exhausted")

// programResult is what programming a session did.
type programResult struct {
	alloc    sessionAlloc
	acquired bool  // alloc holds the session's indexes (to record in its status)
	entries  int   // the session's own entries
	werr     error // the device's answer for them; nil: written
}

// program acquires the session's indexes, builds its entries with the policies it selects (sel)
// and writes them through the UPF's programmer; once the device took them, the allocation is
// committed (what it no longer uses is freed). Indexes are recorded in the session's status by
// its caller: a restart restores them from there, and a session programmed but not recorded
// before the operator stopped is written again with fresh indexes once the replay removed its
// old entries (docs/operator.md).
func (rt *upfRuntime) program(ctx context.Context, s *junctionv1.ATSSSSession, upf *junctionv1.UserPlaneFunction, sel []desired.Policy) (programResult, error) {
	var out programResult
	key, owner := sessionKey(s.Namespace, s.Name), sessionOwner(s.Namespace, s.Name)
	n, err := sessionNeeds(s, sel)
	if err != nil {
		return out, &invalidSpecError{err: err}
	}
	if _, err := upf.TunnelEndpointIndex(s.Spec.TunnelEndpoint); err != nil {
		return out, &invalidSpecError{err: err}
	}
	if err := rt.canHaveQoSFlows(s); err != nil {
		return out, &invalidSpecError{err: err, unsupported: true}
	}
	a, err := rt.acquire(key, n)
	if err != nil {
		return out, fmt.Errorf("%w: %v", errIndexesExhausted, err)
	}
	out.alloc, out.acquired = a, true
	ds, err := buildSession(s, upf, a, sel)
	if err != nil {
		return out, &invalidSpecError{err: err}
	}
	entries, err := desired.SessionEntries(ds)
	if err != nil {
		return out, &invalidSpecError{err: err}
	}
	out.entries = len(entries)
	meters := desired.SessionMeters(ds)
	if err := rt.canPolice(meters); err != nil {
		return out, &invalidSpecError{err: err, unsupported: true}
	}
	if err := rt.canBuffer(s); err != nil {
		return out, &invalidSpecError{err: err, unsupported: true}
	}
	if err := rt.canForward(s); err != nil {
		return out, &invalidSpecError{err: err, unsupported: true}
	}
	rt.startBuffering(key, s) // before its buffer_downlink entry sends a frame
	owners := []string{}
	var changes []programmer.Change
	if a.gnb != "" {
		changes = append(changes, programmer.Change{Owner: peerOwner(a.gnb), Entries: []desired.Entry{desired.TunnelPeerEntry(a.peer, netip.MustParseAddr(a.gnb))}})
		owners = append(owners, peerOwner(a.gnb))
	}
	changes = append(changes, programmer.Change{Owner: owner, Entries: entries, Meters: meters})
	owners = append(owners, owner)
	res, err := rt.prog.Apply(ctx, changes...)
	if err != nil {
		return out, err
	}
	if out.werr = firstError(res, owners...); out.werr == nil {
		if !s.Spec.AccessLegs.ThreeGPP.Buffers() {
			if s.Spec.Type != junctionv1.SessionSingleAccess && rt.held.Holds(key) {
				rt.openLegs(ctx, a.user, s)
			}
			rt.releaseHeld(key) // after the entry that forwards them
		}
		if err := rt.setForwarding(key, s, upf); err != nil { // after its forward_indirect entry
			rt.log.Error(err, "The session's forwarding tunnel is not relayed", "session", key)
		}
		prev, hadPrev := rt.sessionUser(key)
		peers, users := rt.commit(key, a)
		rt.dropPeers(peers)
		for _, u := range users {
			rt.mon.Forget(u)
		}
		reads, _ := desired.ReadsRTTComparison(ds) // its errors are SessionEntries', checked above
		rt.setReadsComparison(ctx, key, a.user, reads)
		if hadPrev && prev != a.user && !slices.Contains(users, prev) {
			rt.regard(ctx, prev) // the session moved to another UE
		}
	}
	return out, nil
}

// canHaveQoSFlows reports whether the UPF's pipeline has QoS flows of their own (qos_flows and
// its flow policers, docs/pipeline.md "QoS flows") when the session has spec.qosFlows. A
// pipeline not known yet is given the benefit of the doubt, as in canPolice.
func (rt *upfRuntime) canHaveQoSFlows(s *junctionv1.ATSSSSession) error {
	sch := rt.pipe.Load().schema
	if sch == nil || len(s.Spec.QoSFlows) == 0 {
		return nil
	}
	if _, err := sch.TableID(desired.TableQoSFlows); err != nil {
		return fmt.Errorf("spec.qosFlows: the UPF's pipeline has no QoS flows of their own (%v; a P4 program may leave them out)", err)
	}
	return nil
}

// canPolice reports whether the UPF's pipeline has the MBR policer a session's cells need: the
// mbr_sessions table and the meter cells (a P4 program may leave the policer out,
// docs/pipeline.md). A pipeline not known yet is given the benefit of the doubt: the
// programmer then reports what it cannot write as the session's error.
func (rt *upfRuntime) canPolice(cells []desired.MeterCell) error {
	sch := rt.pipe.Load().schema
	if sch == nil || len(cells) == 0 {
		return nil
	}
	if _, err := sch.TableID(desired.TableMBRSessions); err != nil {
		return fmt.Errorf("spec.maxBitRate, spec.gates: the UPF's pipeline has no MBR policer to enforce them (%v)", err)
	}
	for _, c := range cells {
		if _, err := sch.MeterUpdate(c.Meter, int64(c.Index), nil); err != nil {
			return fmt.Errorf("spec.maxBitRate, spec.gates: the UPF's pipeline has no MBR policer to enforce them (%v)", err)
		}
	}
	return nil
}

// removeSession removes a session's entries from the UPFs that hold its indexes and frees them,
// and returns the UPFs it removed them from. A device that refuses the deletes keeps the entries
// and the indexes (an index is free only once no entry names it): the error says so, to retry.
// A device that is away deletes them in its replay. With readUsage, the session's usage once its
// entries are gone, and before its cell is freed, is returned: every packet it ever carried
// (nil when it could not be read).
func (f *Fleet) removeSession(ctx context.Context, nn types.NamespacedName, readUsage bool) (from []string, usage *n4.Usage, _ error) {
	key, owner := sessionKey(nn.Namespace, nn.Name), sessionOwner(nn.Namespace, nn.Name)
	for _, rt := range f.runtimesHolding(key) {
		res, err := rt.prog.Apply(ctx, programmer.Change{Owner: owner})
		if err != nil {
			return from, usage, err
		}
		if werr := res[owner]; werr != nil && !errors.Is(werr, programmer.ErrNotSynced) {
			return from, usage, fmt.Errorf("UserPlaneFunction %s: %w", rt.key.Name, werr)
		} else if werr == nil && readUsage {
			if u, err := rt.readUsage(ctx, key); err == nil {
				usage = &u
			} else if !errors.Is(err, errNoUsage) {
				rt.log.Info("Usage of a deleted session not read", "session", key, "err", err.Error())
			}
		}
		rt.dropHeld(key)
		rt.forwarding.set(key, 0, nil)
		user, hadUser := rt.sessionUser(key)
		peers, users := rt.release(key)
		rt.dropPeers(peers)
		for _, u := range users {
			rt.mon.Forget(u)
		}
		if hadUser && !slices.Contains(users, user) {
			rt.regard(ctx, user) // its other sessions may not read the comparison
		}
		from = append(from, rt.key.Name)
	}
	return from, usage, nil
}
