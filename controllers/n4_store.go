package controllers

// The N4 endpoint's store: PFCP sessions become ATSSSSessions (and the traffic classes of their
// SDF filters SteeringPolicies), written by server-side apply under their own field manager
// (docs/n4.md, "Where N4 sessions live"). A session is programmed on the switch by the endpoint
// itself, with the allocators and programmer the session controller uses (n4_direct.go), and its
// object written after the SMF's answer (n4_writer.go); a session that selects a policy without
// an application ID yet takes the controller's path instead: its object first, answered once
// Programmed. The endpoint's own state of a session (the rules as the SMF sent them, the SEIDs,
// the TEIDs it chose) rides along in an annotation, which is what a new leader reads back; the
// association state and the Recovery Time Stamp live in the UPF's status.n4.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	"github.com/wmnsk/go-pfcp/ie"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/n4"
)

const (
	// labelN4UPF marks the ATSSSSessions of one UPF's N4 endpoint; labelN4SMF names the SMF.
	labelN4UPF = "atsss.junction.dev/n4-upf"
	labelN4SMF = "atsss.junction.dev/n4-smf"
	// labelN4Policy marks SteeringPolicies the N4 endpoint made (traffic classes of SDF filters).
	labelN4Policy = "atsss.junction.dev/n4"
	// annotationN4State holds the endpoint's state of the session (n4.State as JSON).
	annotationN4State = "atsss.junction.dev/n4-session"
	// FieldManagerN4 writes the N4 endpoint's objects.
	FieldManagerN4 = "junction-n4"
)

// n4SessionName is the ATSSSSession of one PFCP session; n4SessionSEID reads the SEID back.
func n4SessionName(upf string, upSEID uint64) string { return fmt.Sprintf("n4-%s-%016x", upf, upSEID) }

func n4SessionSEID(upf, name string) (uint64, bool) {
	hex, ok := strings.CutPrefix(name, "n4-"+upf+"-")
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seid, err := strconv.ParseUint(hex, 16, 64)
	return seid, err == nil
}

// sessionWatch tells the store's waiters when a session changes in the cache.
type sessionWatch struct {
	mu      sync.Mutex
	waiters map[types.NamespacedName][]chan struct{}
}

func (w *sessionWatch) notify(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := obj.(*junctionv1.ATSSSSession)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	w.mu.Lock()
	chs := w.waiters[key]
	w.mu.Unlock()
	for _, ch := range chs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (w *sessionWatch) subscribe(key types.NamespacedName) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.waiters[key] = append(w.waiters[key], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		chs := w.waiters[key]
		for i, c := range chs {
			if c == ch {
				w.waiters[key] = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(w.waiters[key]) == 0 {
			delete(w.waiters, key)
		}
	}
}

// n4Store is the store of one UPF's endpoint.
type n4Store struct {
	c       client.Client // cache-backed reads
	fleet   *Fleet
	upf     types.NamespacedName
	watch   *sessionWatch
	timeout time.Duration // how long a request waits for the UPF to hold its entries
	log     logr.Logger
	writer  *n4Writer
}

var _ n4.Store = (*n4Store)(nil)

func (st *n4Store) Apply(ctx context.Context, s *n4.State, p *n4.Plan) error {
	st.writer.begin()
	defer st.writer.end()
	ns := st.upf.Namespace
	for _, pol := range p.Policies {
		if err := st.ensurePolicy(ctx, pol); err != nil {
			return err
		}
	}
	made := map[string]bool{}
	for _, pol := range p.Policies {
		made[pol.Name] = true
	}
	for _, ps := range p.Spec.PolicySteering {
		if made[ps.Name] {
			continue
		}
		// An Application ID names a SteeringPolicy of the UPF's namespace (the PFDs of Junction).
		var pol junctionv1.SteeringPolicy
		if err := st.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ps.Name}, &pol); apierrors.IsNotFound(err) {
			return &n4.Refusal{Cause: n4.CauseUnknownApplicationID, OffendingIE: ie.ApplicationID, Msg: fmt.Sprintf("no SteeringPolicy %s/%s for Application ID %q", ns, ps.Name, ps.Name)}
		} else if err != nil {
			return err
		}
	}
	state, err := json.Marshal(s)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: ns, Name: n4SessionName(st.upf.Name, s.UPSEID)}
	obj := &junctionv1.ATSSSSession{
		TypeMeta: metav1.TypeMeta{APIVersion: junctionv1.GroupVersion.String(), Kind: "ATSSSSession"},
		ObjectMeta: metav1.ObjectMeta{
			Name: n4SessionName(st.upf.Name, s.UPSEID), Namespace: ns,
			Labels:      map[string]string{labelN4UPF: st.upf.Name},
			Annotations: map[string]string{annotationN4State: string(state)},
		},
		Spec: p.Spec,
	}
	if errs := validation.IsValidLabelValue(s.SMF); len(errs) == 0 {
		obj.Labels[labelN4SMF] = s.SMF
	}
	if p.DropBuffered {
		st.fleet.dropBuffered(sessionKey(key.Namespace, key.Name))
	}
	switch err := st.fleet.programN4(ctx, obj, st.timeout); {
	case err == nil:
		st.sendEndMarkers(ctx, sessionKey(key.Namespace, key.Name), obj, p.EndMarkers)
		// On the switch: the SMF may hear of it once a restart would know it is missing.
		if err := st.writer.setUnsaved(ctx, true); err != nil {
			return fmt.Errorf("marking the UPF's N4 sessions unsaved: %w", err)
		}
		st.writer.put(key, obj)
		return nil
	case !errors.Is(err, errSlowPath):
		return err
	}
	// The controller's path: the object first, then its Programmed condition.
	st.fleet.direct.forget(sessionKey(key.Namespace, key.Name))
	st.writer.cancel(key)
	changed, stop := st.watch.subscribe(key)
	defer stop()
	if err := st.c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManagerN4), client.ForceOwnership); err != nil {
		if apierrors.IsInvalid(err) {
			return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, Msg: fmt.Sprintf("the API server refused the session: %v", err)}
		}
		return err
	}
	if err := st.awaitProgrammed(ctx, key, obj.Generation, changed); err != nil {
		return err
	}
	st.sendEndMarkers(ctx, sessionKey(key.Namespace, key.Name), obj, p.EndMarkers)
	return nil
}

// ensurePolicy creates a traffic class the plan needs unless it exists with the same spec.
func (st *n4Store) ensurePolicy(ctx context.Context, pol n4.Policy) error {
	var cur junctionv1.SteeringPolicy
	err := st.c.Get(ctx, types.NamespacedName{Namespace: st.upf.Namespace, Name: pol.Name}, &cur)
	if err == nil {
		if !equalJSON(cur.Spec, pol.Spec) {
			return fmt.Errorf("SteeringPolicy %s/%s was changed by someone else; delete it and the N4 endpoint makes it again", st.upf.Namespace, pol.Name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	obj := &junctionv1.SteeringPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: pol.Name, Namespace: st.upf.Namespace, Labels: map[string]string{labelN4Policy: "true"}},
		Spec:       pol.Spec,
	}
	if err := st.c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsInvalid(err) {
			return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, OffendingIE: ie.SDFFilter, Msg: fmt.Sprintf("the API server refused the SDF filter's traffic class: %v", err)}
		}
		return err
	}
	return nil
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// awaitProgrammed waits until the session's Programmed condition describes generation gen.
// Waiting on something that may still come (a policy's application ID, a device that is
// replaying) goes on until the timeout; a refusal the SMF can act on returns at once.
func (st *n4Store) awaitProgrammed(ctx context.Context, key types.NamespacedName, gen int64, changed <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, st.timeout)
	defer cancel()
	last := "the operator has not reconciled it yet"
	for {
		var s junctionv1.ATSSSSession
		if err := st.c.Get(ctx, key, &s); err != nil && !apierrors.IsNotFound(err) {
			return err
		} else if err == nil {
			if c := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionProgrammed); c != nil && c.ObservedGeneration >= gen {
				if c.Status == metav1.ConditionTrue {
					return nil
				}
				last = c.Reason + ": " + c.Message
				switch c.Reason {
				case ReasonTableFull, ReasonIndexesExhausted:
					return &n4.Refusal{Cause: n4.CauseNoResources, Msg: c.Message}
				case ReasonConflict:
					off := ie.UEIPAddress
					if strings.Contains(c.Message, "uplink_tunnels") {
						off = ie.FTEID
					}
					return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, OffendingIE: off, Msg: c.Message}
				case ReasonInvalidSpec:
					return &n4.Refusal{Cause: n4.CauseMandatoryIEIncorrect, Msg: c.Message}
				case ReasonNotSupportedByPipeline:
					return &n4.Refusal{Cause: n4.CauseServiceNotSupported, OffendingIE: unsupportedIE(&s.Spec, c.Message), Msg: c.Message}
				}
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return &n4.Refusal{Cause: n4.CauseSystemFailure, Msg: fmt.Sprintf("the UPF did not take the session within %s (%s)", st.timeout, last)}
		}
	}
}

// Remove takes the session off the switch (a device that is away deletes its entries at its
// replay) and reads its last usage there; its object goes after.
func (st *n4Store) Remove(ctx context.Context, s *n4.State) (*n4.Usage, error) {
	st.writer.begin()
	defer st.writer.end()
	key := types.NamespacedName{Namespace: st.upf.Namespace, Name: n4SessionName(st.upf.Name, s.UPSEID)}
	usage, err := st.fleet.removeN4(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := st.writer.setUnsaved(ctx, true); err != nil {
		return usage, fmt.Errorf("marking the UPF's N4 sessions unsaved: %w", err)
	}
	st.writer.put(key, nil)
	return usage, nil
}

// awaitRecorded waits until the session's status holds its indexes for generation gen (the
// session controller records them), so that a restart restores them; after the timeout it
// gives up waiting (the object is written; a controller that cannot program the session says
// why in its status).
func (st *n4Store) awaitRecorded(ctx context.Context, key types.NamespacedName, gen int64, changed <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, st.timeout)
	defer cancel()
	for {
		if spec, direct := st.fleet.direct.get(sessionKey(key.Namespace, key.Name)); direct && spec == nil {
			return nil // deleted meanwhile: nothing to record, its deletion comes next
		}
		var s junctionv1.ATSSSSession
		if err := st.c.Get(ctx, key, &s); err == nil && s.Status.UsageIndex != nil && s.Status.ObservedGeneration >= gen {
			return nil
		} else if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			st.log.V(1).Info("An N4 session's indexes are not in its status yet", "session", key)
			return nil
		}
	}
}

func (st *n4Store) Usage(ctx context.Context, s *n4.State) (n4.Usage, error) {
	return st.fleet.SessionUsage(ctx, st.upf.Namespace, n4SessionName(st.upf.Name, s.UPSEID))
}

func (st *n4Store) Load(ctx context.Context) ([]*n4.State, n4.NodeState, error) {
	var node n4.NodeState
	var upf junctionv1.UserPlaneFunction
	if err := st.c.Get(ctx, st.upf, &upf); err != nil {
		return nil, node, err
	}
	if s := upf.Status.N4; s != nil {
		if s.RecoveryTimeStamp != nil {
			node.RecoveryTime = s.RecoveryTimeStamp.Time
		}
		node.Unsaved = s.UnsavedSince != nil
		st.writer.mark.Lock()
		st.writer.marked = node.Unsaved // what the API server holds
		st.writer.mark.Unlock()
		for _, p := range s.PFDs {
			if node.PFDs == nil {
				node.PFDs = map[string][]string{}
			}
			node.PFDs[p.ApplicationID] = p.FlowDescriptions
		}
		for _, a := range s.Associations {
			n := n4.Association{NodeID: a.NodeID, Since: a.Since.Time, RecoveryTime: a.SMFRecoveryTimeStamp.Time}
			if ap, err := netip.ParseAddrPort(a.Address); err == nil {
				n.Addr = ap
			}
			node.Associations = append(node.Associations, n)
		}
	}
	var list junctionv1.ATSSSSessionList
	if err := st.c.List(ctx, &list, client.InNamespace(st.upf.Namespace), client.MatchingLabels{labelN4UPF: st.upf.Name}); err != nil {
		return nil, node, err
	}
	var out []*n4.State
	for i := range list.Items {
		o := &list.Items[i]
		if o.DeletionTimestamp != nil {
			continue
		}
		var s n4.State
		if err := json.Unmarshal([]byte(o.Annotations[annotationN4State]), &s); err != nil {
			return nil, node, fmt.Errorf("ATSSSSession %s/%s: annotation %s: %v", o.Namespace, o.Name, annotationN4State, err)
		}
		if !s.HasRules() {
			return nil, node, fmt.Errorf("ATSSSSession %s/%s: annotation %s has no rules", o.Namespace, o.Name, annotationN4State)
		}
		out = append(out, &s)
	}
	return out, node, nil
}

// DropBuffered drops what session s's downlink holds on its UPF.
func (st *n4Store) DropBuffered(s *n4.State) {
	st.fleet.dropBuffered(sessionKey(st.upf.Namespace, n4SessionName(st.upf.Name, s.UPSEID)))
}

func (st *n4Store) SaveNode(ctx context.Context, n n4.NodeState) error {
	assocs := []junctionv1.N4Association{}
	for _, a := range n.Associations {
		assocs = append(assocs, junctionv1.N4Association{
			NodeID: a.NodeID, Address: a.Addr.String(), Since: metav1.NewTime(a.Since), SMFRecoveryTimeStamp: metav1.NewTime(a.RecoveryTime),
		})
	}
	pfds := []junctionv1.N4ApplicationPFDs{}
	for _, app := range slices.Sorted(maps.Keys(n.PFDs)) {
		pfds = append(pfds, junctionv1.N4ApplicationPFDs{ApplicationID: app, FlowDescriptions: n.PFDs[app]})
	}
	// Every key written, empty ones too: a merge patch leaves the keys it does not name.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"n4": map[string]any{
		"recoveryTimeStamp": metav1.NewTime(n.RecoveryTime), "associations": assocs, "sessions": n.Sessions, "pfds": pfds,
	}}})
	if err != nil {
		return err
	}
	upf := &junctionv1.UserPlaneFunction{ObjectMeta: metav1.ObjectMeta{Name: st.upf.Name, Namespace: st.upf.Namespace}}
	return st.c.Status().Patch(ctx, upf, client.RawPatch(types.MergePatchType, patch))
}
