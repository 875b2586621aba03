package controllers

// The N4 endpoint's direct path: the endpoint programs an N4 session on its UPF itself, through
// the same allocators and programmer as the session controller (program.go), and answers the
// SMF once the switch holds it; the session's ATSSSSession is written after, off the SMF's way
// (n4Writer). The API server then no longer sets the pace of N4 (docs/n4.md, "Where N4 sessions
// live").
//
// The session controller still reconciles the object once it is written (its status, policy
// changes, replays), but for a session of the direct path it programs the spec the endpoint
// programmed last, not the object of its cache, which may be older; and it leaves a session the
// endpoint deleted alone until its object is gone.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/n4"
	"github.com/junction-atsss/junction/internal/programmer"
)

// directSessions are the sessions the N4 endpoints of this process program themselves.
type directSessions struct {
	mu sync.Mutex
	m  map[string]directSession
	// locks serialize, per session, the endpoint's programming and removal with the session
	// controller's reconcile: a reconcile that read the endpoint's spec before a deletion (or a
	// modification) and wrote it after would put back entries the SMF was told are gone, with
	// indexes the deletion freed.
	locks map[string]*sessionLock
}

type sessionLock struct {
	mu      sync.Mutex
	holders int // holding or waiting
}

// lock takes session key's lock; the returned unlock may be called more than once.
func (d *directSessions) lock(key string) (unlock func()) {
	d.mu.Lock()
	if d.locks == nil {
		d.locks = map[string]*sessionLock{}
	}
	l := d.locks[key]
	if l == nil {
		l = &sessionLock{}
		d.locks[key] = l
	}
	l.holders++
	d.mu.Unlock()
	l.mu.Lock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Unlock()
			d.mu.Lock()
			if l.holders--; l.holders == 0 {
				delete(d.locks, key)
			}
			d.mu.Unlock()
		})
	}
}

// directSession is the spec the endpoint programmed last; nil once deleted (a tombstone, kept
// for tombstoneTTL: long after the object is gone from every cache).
type directSession struct {
	spec    *junctionv1.ATSSSSessionSpec
	deleted time.Time
}

const tombstoneTTL = 5 * time.Minute

func (d *directSessions) set(key string, spec *junctionv1.ATSSSSessionSpec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]directSession{}
	}
	if spec == nil {
		now := time.Now()
		for k, v := range d.m {
			if v.spec == nil && now.Sub(v.deleted) > tombstoneTTL {
				delete(d.m, k)
			}
		}
		d.m[key] = directSession{deleted: now}
		return
	}
	d.m[key] = directSession{spec: spec}
}

// forget hands a session back to the controller (it is programmed from its object again).
func (d *directSessions) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, key)
}

// get returns the session's direct spec (nil: deleted) and whether the endpoint programs it.
func (d *directSessions) get(key string) (*junctionv1.ATSSSSessionSpec, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[key]
	return v.spec, ok
}

// selects reports whether a session of namespace ns programmed directly names policy name.
func (d *directSessions) selects(ns, name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, v := range d.m {
		if v.spec == nil || splitKey(k).Namespace != ns {
			continue
		}
		for _, ref := range v.spec.PolicyRefs {
			if ref.Name == name {
				return true
			}
		}
	}
	return false
}

// errSlowPath: the session cannot take the direct path now (a policy it selects has no
// application ID yet, the UPF is not ready): its object is written and the controller programs
// it, as for a manifest.
var errSlowPath = errors.New("the session takes the controller's path")

// programN4 programs session s (its object not written yet) on its UPF, waiting up to timeout
// for a device that is not connected. A refusal is an *n4.Refusal with the cause for the SMF.
func (f *Fleet) programN4(ctx context.Context, s *junctionv1.ATSSSSession, timeout time.Duration) error {
	var upf junctionv1.UserPlaneFunction
	if err := f.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.UPFRef.Name}, &upf); err != nil {
		return err
	}
	rt := f.current(&upf)
	if rt == nil {
		var err error
		if rt, err = f.runtime(ctx, &upf); err != nil {
			return errSlowPath // the controller's path says why, in the session's status, in time
		}
	}
	if err := f.checkAddresses(ctx, s); isRefused(err) {
		return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, OffendingIE: ie.UEIPAddress, Msg: err.Error()}
	} else if err != nil {
		return err
	}
	var policies junctionv1.SteeringPolicyList
	if err := f.Client.List(ctx, &policies, client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy); err != nil { // read only
		return err
	}
	sel, missing, pending := desired.SelectPolicies(s, policies.Items)
	if len(missing)+len(pending) > 0 {
		return errSlowPath
	}
	key, spec := sessionKey(s.Namespace, s.Name), s.Spec // the spec alone outlives the request
	defer f.direct.lock(key)()
	f.direct.set(key, &spec)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if st := rt.state(); st.deposed {
			return &n4.Refusal{Cause: n4.CauseSystemFailure, Msg: "this operator is no longer the leader"}
		}
		p, err := rt.program(ctx, s, &upf, sel)
		var specErr *invalidSpecError
		switch {
		case errors.As(err, &specErr) && specErr.unsupported:
			return &n4.Refusal{Cause: n4.CauseServiceNotSupported, OffendingIE: unsupportedIE(&s.Spec, err.Error()), Msg: err.Error()}
		case errors.As(err, &specErr):
			return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, Msg: err.Error()}
		case errors.Is(err, errIndexesExhausted):
			return &n4.Refusal{Cause: n4.CauseNoResources, Msg: err.Error()}
		case err != nil:
			return err
		}
		var conflict *programmer.ConflictError
		switch reason := reasonOf(p.werr); {
		case reason == ReasonProgrammed:
			return nil
		case reason == ReasonTableFull:
			return &n4.Refusal{Cause: n4.CauseNoResources, Msg: p.werr.Error()}
		case errors.As(p.werr, &conflict):
			off := uint16(ie.UEIPAddress)
			if conflict.Table == "uplink_tunnels" {
				off = ie.FTEID
			}
			return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, OffendingIE: off, Msg: p.werr.Error()}
		case reason != ReasonUPFNotConnected:
			return &n4.Refusal{Cause: n4.CauseSystemFailure, Msg: p.werr.Error()}
		}
		// Not connected or replaying: the entries wait in the programmer; so does the SMF, a while.
		select {
		case <-ctx.Done():
			return &n4.Refusal{Cause: n4.CauseSystemFailure, Msg: fmt.Sprintf("the UPF did not take the session within %s (%v)", timeout, p.werr)}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// removeN4 removes an N4 session from its UPF (whether the endpoint or the controller programmed
// it) and returns the usage it carried (nil when unread); its object goes after (n4Writer).
func (f *Fleet) removeN4(ctx context.Context, nn types.NamespacedName) (*n4.Usage, error) {
	key := sessionKey(nn.Namespace, nn.Name)
	defer f.direct.lock(key)()
	f.direct.set(key, nil)
	_, usage, err := f.removeSession(ctx, nn, true)
	return usage, err
}
