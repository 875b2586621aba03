package p4rt

import (
	"fmt"
	"sync"
	"sync/atomic"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
)

// Client arbitration (P4Runtime spec section 5). For each role the primary is the live
// controller whose election ID equals the highest one the server has ever seen for that role;
// when the primary leaves, the role has no primary until a controller sends an election ID at
// least as high. Roles are opaque: a named role's config is stored and echoed, and every role
// has full pipeline access.

type u128 struct{ hi, lo uint64 }

func fromProto(x *p4v1.Uint128) u128 { return u128{x.GetHigh(), x.GetLow()} }
func (a u128) less(b u128) bool      { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }
func (a u128) proto() *p4v1.Uint128  { return &p4v1.Uint128{High: a.hi, Low: a.lo} }
func (a u128) String() string {
	if a.hi == 0 {
		return fmt.Sprint(a.lo)
	}
	return fmt.Sprintf("{high:%d low:%d}", a.hi, a.lo)
}

// controller is one StreamChannel.
type controller struct {
	ctrlQ chan *p4v1.StreamMessageResponse // arbitration notices, stream errors
	dataQ chan *p4v1.StreamMessageResponse // packet-ins, digest lists

	// Guarded by arbiter.mu.
	arbitrated bool
	role       string
	eid        u128
	hasEID     bool
}

type roleState struct {
	name       string
	config     *anypb.Any // from the most recent primary
	highest    u128
	hasHighest bool
	primary    *controller
	members    map[*controller]struct{}
}

type arbiter struct {
	s  *Server
	mu sync.Mutex
	// roles persist once created, so the highest election ID survives disconnections.
	roles map[string]*roleState
	// defaultPrimary is the default role's primary: the destination of packet-ins and digests.
	defaultPrimary atomic.Pointer[controller]
}

func newArbiter(s *Server) *arbiter {
	return &arbiter{s: s, roles: map[string]*roleState{
		"": {members: map[*controller]struct{}{}},
	}}
}

func (a *arbiter) newController() *controller {
	return &controller{
		ctrlQ: make(chan *p4v1.StreamMessageResponse, controlQueue),
		dataQ: make(chan *p4v1.StreamMessageResponse, a.s.opts.StreamQueue),
	}
}

// arbitrate applies a MasterArbitrationUpdate from c. An error ends the stream with its code.
func (a *arbiter) arbitrate(c *controller, u *p4v1.MasterArbitrationUpdate) error {
	name := u.GetRole().GetName()
	cfg := u.GetRole().GetConfig()
	if u.GetRole().GetId() != 0 && name == "" {
		return errf(codes.InvalidArgument, "role.id is deprecated and not supported: name the role")
	}
	if cfg != nil && name == "" {
		return errf(codes.InvalidArgument, "role.config is set for the default role: name the role")
	}

	a.mu.Lock()
	if !c.arbitrated {
		if u.DeviceId != a.s.opts.DeviceID {
			a.mu.Unlock()
			return errf(codes.NotFound, "device_id %d is not served here (this device is %d)", u.DeviceId, a.s.opts.DeviceID)
		}
	} else {
		if u.DeviceId != a.s.opts.DeviceID {
			a.mu.Unlock()
			return errf(codes.FailedPrecondition, "device_id %d differs from this stream's %d", u.DeviceId, a.s.opts.DeviceID)
		}
		if name != c.role {
			a.mu.Unlock()
			return errf(codes.FailedPrecondition, "role %q differs from this stream's role %q: open a new stream to change roles", name, c.role)
		}
	}
	rs := a.roles[name]
	if rs == nil {
		rs = &roleState{name: name, members: map[*controller]struct{}{}}
	}
	eid, hasEID := fromProto(u.ElectionId), u.ElectionId != nil
	if hasEID {
		for o := range rs.members {
			if o != c && o.hasEID && o.eid == eid {
				a.mu.Unlock()
				return errf(codes.InvalidArgument, "election_id %v is already used by another controller of role %q", eid, name)
			}
		}
	}
	if !c.arbitrated {
		if len(rs.members) >= maxControllersPerRole {
			a.mu.Unlock()
			return errf(codes.ResourceExhausted, "role %q already has %d controllers", name, len(rs.members))
		}
		a.roles[name] = rs
		rs.members[c] = struct{}{}
		c.arbitrated, c.role = true, name
	}
	c.eid, c.hasEID = eid, hasEID

	wasPrimary := rs.primary == c
	if hasEID && (!rs.hasHighest || !eid.less(rs.highest)) {
		changed := rs.primary != c
		rs.primary, rs.highest, rs.hasHighest, rs.config = c, eid, true, cfg
		a.setDefaultPrimary(rs)
		for o := range rs.members {
			if o != c {
				a.notify(rs, o)
			}
		}
		a.mu.Unlock()
		a.s.log.Info("primary elected", "role", name, "electionID", eid.String(), "new", changed)
		if changed && name == "" {
			a.s.digests.primaryChanged()
		}
		// Spec 5.3: Writes already accepted from the previous primary finish before the new
		// primary hears that it is primary.
		a.s.state.Lock()
		a.s.state.Unlock() //nolint:staticcheck // an empty critical section waits for in-flight writes
		a.mu.Lock()
		if rs.primary == c {
			a.notify(rs, c)
		}
		a.mu.Unlock()
		return nil
	}

	if wasPrimary {
		// The primary downgraded itself: the role has no primary now; everyone hears it.
		rs.primary = nil
		a.setDefaultPrimary(rs)
		for o := range rs.members {
			a.notify(rs, o)
		}
		a.mu.Unlock()
		if name == "" {
			a.s.digests.primaryChanged()
		}
		return nil
	}
	a.notify(rs, c)
	a.mu.Unlock()
	return nil
}

// remove forgets a closed stream; if it was the primary, the others learn that there is none.
func (a *arbiter) remove(c *controller) {
	a.mu.Lock()
	if !c.arbitrated {
		a.mu.Unlock()
		return
	}
	rs := a.roles[c.role]
	delete(rs.members, c)
	lostPrimary := rs.primary == c
	if lostPrimary {
		rs.primary = nil
		a.setDefaultPrimary(rs)
		for o := range rs.members {
			a.notify(rs, o)
		}
	}
	a.mu.Unlock()
	if lostPrimary {
		a.s.log.Info("primary disconnected", "role", c.role)
		if c.role == "" {
			a.s.digests.primaryChanged()
		}
	}
}

func (a *arbiter) setDefaultPrimary(rs *roleState) {
	if rs.name == "" {
		a.defaultPrimary.Store(rs.primary)
	}
}

// notify queues the arbitration notice of rs for controller to (spec 5.4). Called with mu held.
func (a *arbiter) notify(rs *roleState, to *controller) {
	m := &p4v1.MasterArbitrationUpdate{DeviceId: a.s.opts.DeviceID}
	if rs.name != "" {
		m.Role = &p4v1.Role{Name: rs.name, Config: rs.config}
	}
	if rs.hasHighest {
		m.ElectionId = rs.highest.proto()
	}
	switch {
	case rs.primary == to:
		m.Status = &spb.Status{Code: int32(codes.OK), Message: "you are the primary"}
	case rs.primary != nil:
		m.Status = &spb.Status{Code: int32(codes.AlreadyExists), Message: "you are a backup: another controller is the primary"}
	default:
		m.Status = &spb.Status{Code: int32(codes.NotFound), Message: "you are a backup: there is no primary"}
	}
	a.s.sendControl(to, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: m}})
}

// checkPrimary applies the checks of spec 12 (Write) and 15 (SetForwardingPipelineConfig):
// device, role, then whether electionID is the role's primary.
func (a *arbiter) checkPrimary(deviceID uint64, role string, electionID *p4v1.Uint128) error {
	if err := a.s.checkDevice(deviceID); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rs := a.roles[role]
	if rs == nil {
		return errf(codes.NotFound, "role %q is unknown: no controller has arbitrated for it", role)
	}
	if electionID == nil {
		return errf(codes.PermissionDenied, "election_id is unset: only the primary of role %q may change state", role)
	}
	if rs.primary == nil {
		return errf(codes.PermissionDenied, "role %q has no primary: send a MasterArbitrationUpdate with the highest election_id first", role)
	}
	if rs.primary.eid != fromProto(electionID) {
		return errf(codes.PermissionDenied, "election_id %v is not the primary's (%v) for role %q", fromProto(electionID), rs.primary.eid, role)
	}
	return nil
}

// isPrimary reports whether the stream c is its role's primary.
func (a *arbiter) isPrimary(c *controller) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return c.arbitrated && a.roles[c.role].primary == c
}
