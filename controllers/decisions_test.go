package controllers

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/alloc"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/programmer"
	"github.com/junction-atsss/junction/internal/upfclient"
)

func policyObj(name string, id *int32, labels map[string]string, mode junctionv1.SteeringModeName) junctionv1.SteeringPolicy {
	m := junctionv1.SteeringMode{Mode: mode}
	switch mode {
	case junctionv1.ModeLoadBalance:
		pct := int32(50)
		m.LoadBalance = &junctionv1.LoadBalance{ThreeGPPPercent: &pct}
	case junctionv1.ModeActiveStandby:
		m.ActiveStandby = &junctionv1.ActiveStandby{Active: junctionv1.Access3GPP}
	}
	return junctionv1.SteeringPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       junctionv1.SteeringPolicySpec{Precedence: 10, Steering: m},
		Status:     junctionv1.SteeringPolicyStatus{ApplicationID: id},
	}
}

func i32(v int32) *int32 { return &v }

func TestSelectPolicies(t *testing.T) {
	all := []junctionv1.SteeringPolicy{
		policyObj("video", i32(1), map[string]string{"tier": "gold"}, junctionv1.ModeLoadBalance),
		policyObj("voice", i32(2), map[string]string{"tier": "gold"}, junctionv1.ModeActiveStandby),
		policyObj("new", nil, nil, junctionv1.ModeSmallestDelay),
	}
	deleting := policyObj("old", i32(3), nil, junctionv1.ModeSmallestDelay)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	all = append(all, deleting)

	names := func(ps []desired.Policy) []string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s:%d", p.Name, p.AppID))
		}
		return out
	}
	for _, tc := range []struct {
		name                  string
		refs                  []string
		selector              *metav1.LabelSelector
		sel, missing, pending []string
	}{
		{"references pick policies by name", []string{"voice"}, nil, []string{"voice:2"}, nil, nil},
		{"a reference to a policy that does not exist is missing", []string{"voice", "gone"}, nil, []string{"voice:2"}, []string{"gone"}, nil},
		{"a policy being deleted counts as missing", []string{"old"}, nil, nil, []string{"old"}, nil},
		{"a policy without an application ID is pending", []string{"new"}, nil, nil, nil, []string{"new"}},
		{"a selector picks by label, sorted by name", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, []string{"video:1", "voice:2"}, nil, nil},
		{"a policy both referenced and selected is taken once", []string{"voice"}, &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, []string{"video:1", "voice:2"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &junctionv1.ATSSSSession{Spec: junctionv1.ATSSSSessionSpec{PolicySelector: tc.selector}}
			for _, r := range tc.refs {
				s.Spec.PolicyRefs = append(s.Spec.PolicyRefs, junctionv1.LocalObjectReference{Name: r})
			}
			sel, missing, pending := desired.SelectPolicies(s, all)
			if got := names(sel); !reflect.DeepEqual(got, tc.sel) {
				t.Errorf("selected %v, want %v", got, tc.sel)
			}
			if !reflect.DeepEqual(missing, tc.missing) || !reflect.DeepEqual(pending, tc.pending) {
				t.Errorf("missing %v pending %v, want %v %v", missing, pending, tc.missing, tc.pending)
			}
		})
	}
}

func TestSessionNeedsAndCompleteAllocations(t *testing.T) {
	lb := desired.Policy{Name: "video", AppID: 1, Spec: policyObj("video", i32(1), nil, junctionv1.ModeLoadBalance).Spec}
	as := desired.Policy{Name: "voice", AppID: 2, Spec: policyObj("voice", i32(2), nil, junctionv1.ModeActiveStandby).Spec}
	s := &junctionv1.ATSSSSession{Spec: junctionv1.ATSSSSessionSpec{
		UE:         junctionv1.UE{SUPI: "imsi-001010000000001"},
		AccessLegs: junctionv1.AccessLegs{ThreeGPP: &junctionv1.ThreeGPPLeg{GNBAddress: "198.51.100.10"}},
	}}
	t.Run("a session with a load-balance policy needs a sequence index and its gNB's peer", func(t *testing.T) {
		n, err := sessionNeeds(s, []desired.Policy{lb})
		if err != nil || !n.exception || n.gnb != "198.51.100.10" || n.supi != "imsi-001010000000001" {
			t.Fatalf("%+v %v", n, err)
		}
		seq := uint32(4)
		if (sessionAlloc{supi: n.supi, gnb: n.gnb, peer: 1}).complete(n) {
			t.Error("an allocation without a sequence index is complete for an exception")
		}
		if !(sessionAlloc{supi: n.supi, gnb: n.gnb, peer: 1, seq: &seq}).complete(n) {
			t.Error("a full allocation is not complete")
		}
	})
	t.Run("an active-standby session is summarized", func(t *testing.T) {
		n, err := sessionNeeds(s, []desired.Policy{as})
		if err != nil || n.exception {
			t.Fatalf("%+v %v", n, err)
		}
	})
	t.Run("an allocation for another SUPI is not complete", func(t *testing.T) {
		n, _ := sessionNeeds(s, nil)
		if (sessionAlloc{supi: "imsi-001010000000009", gnb: n.gnb, peer: 1}).complete(n) {
			t.Error("complete for another SUPI")
		}
	})
	t.Run("a gNB address that is not IPv4 names the field", func(t *testing.T) {
		bad := s.DeepCopy()
		bad.Spec.AccessLegs.ThreeGPP.GNBAddress = "2001:db8::1"
		if _, err := sessionNeeds(bad, nil); err == nil || !strings.Contains(err.Error(), "accessLegs.threeGPP.gnbAddress") {
			t.Errorf("error %v", err)
		}
	})
}

func TestRecordAllocation(t *testing.T) {
	seq := uint32(3)
	var st junctionv1.ATSSSSessionStatus
	if !recordAllocation(&st, sessionAlloc{supi: "x", user: 5, gnb: "198.51.100.1", peer: 2, seq: &seq}) {
		t.Fatal("a first allocation is not a change")
	}
	if *st.UserIndex != 5 || *st.TunnelPeerIndex != 2 || *st.SequenceIndex != 3 {
		t.Fatalf("status %+v", st)
	}
	if recordAllocation(&st, sessionAlloc{supi: "x", user: 5, gnb: "198.51.100.1", peer: 2, seq: &seq}) {
		t.Error("the same allocation is a change")
	}
	if !recordAllocation(&st, sessionAlloc{supi: "x", user: 5}) || st.TunnelPeerIndex != nil || st.SequenceIndex != nil {
		t.Errorf("dropping the 3GPP leg and the exception: %+v", st)
	}
}

func TestSteeringSummary(t *testing.T) {
	video := desired.Policy{Name: "video", Spec: policyObj("video", i32(1), nil, junctionv1.ModeLoadBalance).Spec}
	voice := desired.Policy{Name: "voice", Spec: policyObj("voice", i32(2), nil, junctionv1.ModeActiveStandby).Spec}
	voice.Spec.Precedence = 5
	for _, tc := range []struct {
		name     string
		override *junctionv1.SteeringMode
		own      []junctionv1.PolicySteering
		policies []desired.Policy
		want     string
	}{
		{"without policies the default application's mode shows", nil, nil, nil, "ActiveStandby"},
		{"policies show by precedence, lowest first", nil, nil, []desired.Policy{video, voice}, "ActiveStandby,LoadBalance"},
		{"an override replaces them", &junctionv1.SteeringMode{Mode: junctionv1.ModeRedundant}, nil, []desired.Policy{video}, "Redundant"},
		{"the session's own steering of a policy shows in its place, ahead of the override",
			&junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay},
			[]junctionv1.PolicySteering{{Name: "voice", Steering: junctionv1.SteeringMode{Mode: junctionv1.ModeRedundant}}},
			[]desired.Policy{video, voice}, "Redundant,SmallestDelay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &junctionv1.ATSSSSession{Spec: junctionv1.ATSSSSessionSpec{ModeOverride: tc.override, PolicySteering: tc.own}}
			if got := steeringSummary(s, tc.policies); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// docs/pipeline.md: smallest-delay and redundant read no threshold; the other modes read both.
func TestThresholdsUnread(t *testing.T) {
	loss := &junctionv1.Thresholds{PacketLossPercent: i32(5)}
	for _, tc := range []struct {
		name   string
		mode   junctionv1.SteeringModeName
		th     *junctionv1.Thresholds
		unread bool
	}{
		{"a policy without thresholds has nothing to say", junctionv1.ModeSmallestDelay, nil, false},
		{"smallest-delay reads no threshold", junctionv1.ModeSmallestDelay, loss, true},
		{"redundant reads no threshold", junctionv1.ModeRedundant, &junctionv1.Thresholds{RTT: "20ms"}, true},
		{"active-standby reads the loss threshold", junctionv1.ModeActiveStandby, loss, false},
		{"priority-based reads the loss threshold", junctionv1.ModePriorityBased, loss, false},
		{"load-balance reads the loss threshold", junctionv1.ModeLoadBalance, loss, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := junctionv1.SteeringPolicySpec{Steering: junctionv1.SteeringMode{Mode: tc.mode}, Thresholds: tc.th}
			got := thresholdsUnread(spec)
			if (got != "") != tc.unread || (tc.unread && !strings.Contains(got, string(tc.mode))) {
				t.Errorf("thresholdsUnread = %q, want a note naming the mode: %v", got, tc.unread)
			}
		})
	}
}

func TestReasonOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no error is programmed", nil, ReasonProgrammed},
		{"a full table is TableFull", fmt.Errorf("x: %w", &programmer.TableFullError{Table: "sessions", Err: errors.New("full")}), ReasonTableFull},
		{"an entry owned by another object is a conflict", &programmer.ConflictError{Table: "sessions", Owner: "session/a/b"}, ReasonConflict},
		{"a device that is away is UPFNotConnected", fmt.Errorf("%w: lost", programmer.ErrNotSynced), ReasonUPFNotConnected},
		{"anything else is WriteFailed", errors.New("boom"), ReasonWriteFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reasonOf(tc.err); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseOwner(t *testing.T) {
	for _, tc := range []struct {
		owner, kind, key string
		ok               bool
	}{
		{"session/ns/a", "session", "ns/a", true},
		{"policy/ns/video", "policy", "ns/video", true},
		{"upf", "upf", "/", true},
		{"peer/198.51.100.1", "", "/", false},
	} {
		kind, key, ok := parseOwner(tc.owner)
		if kind != tc.kind || key.String() != tc.key || ok != tc.ok {
			t.Errorf("parseOwner(%q) = %q %q %v", tc.owner, kind, key, ok)
		}
	}
}

// Reconciling and Stalled follow Ready as kstatus reads them (api/v1alpha1/common_types.go).
func TestProgressConditions(t *testing.T) {
	ready := func(st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: junctionv1.ConditionReady, Status: st, Reason: reason, Message: "m"}
	}
	for _, tc := range []struct {
		name        string
		conds       []metav1.Condition
		reconciling string // reason of Reconciling=True, "" when absent
		stalled     string // reason of Stalled=True, "" when absent
	}{
		{"an object not decided yet is reconciling", nil, "Progressing", ""},
		{"a ready object is neither reconciling nor stalled, and earlier ones are cleared",
			[]metav1.Condition{ready(metav1.ConditionTrue, "Programmed"), {Type: junctionv1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "TableFull"},
				{Type: junctionv1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "Replaying"}}, "", ""},
		{"a full table stalls", []metav1.Condition{ready(metav1.ConditionFalse, "TableFull")}, "", "TableFull"},
		// A reference may yet appear (the same GitOps sync applies it next): waiting, not failed.
		{"a missing UPF is reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "UPFNotFound")}, "UPFNotFound", ""},
		{"a missing policy is reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "PolicyNotFound")}, "PolicyNotFound", ""},
		{"a missing pipeline ConfigMap is reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "ConfigMapNotFound")}, "ConfigMapNotFound", ""},
		{"a missing TLS Secret is reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "SecretNotFound")}, "SecretNotFound", ""},
		{"an invalid pipeline stalls", []metav1.Condition{ready(metav1.ConditionFalse, "InvalidPipeline")}, "", "InvalidPipeline"},
		{"an address conflict stalls", []metav1.Condition{ready(metav1.ConditionFalse, "AddressConflict")}, "", "AddressConflict"},
		{"a device that refuses register writes stalls", []metav1.Condition{ready(metav1.ConditionFalse, "RegisterWriteRefused")}, "", "RegisterWriteRefused"},
		{"a UPF not connected yet is reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "UPFNotConnected")}, "UPFNotConnected", ""},
		{"a replay in progress is reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "Replaying")}, "Replaying", ""},
		{"a failed write is retried, so reconciling", []metav1.Condition{ready(metav1.ConditionFalse, "WriteFailed")}, "WriteFailed", ""},
		{"a stalled object that becomes transient is reconciling, not stalled",
			[]metav1.Condition{ready(metav1.ConditionFalse, "UPFNotReady"), {Type: junctionv1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "TableFull"}}, "UPFNotReady", ""},
		{"Ready Unknown is reconciling", []metav1.Condition{ready(metav1.ConditionUnknown, "TableFull")}, "TableFull", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.conds...)
			setProgressConditions(&conds, 3)
			for typ, want := range map[string]string{junctionv1.ConditionReconciling: tc.reconciling, junctionv1.ConditionStalled: tc.stalled} {
				c := meta.FindStatusCondition(conds, typ)
				switch {
				case want == "" && c != nil:
					t.Errorf("%s present: %+v", typ, *c)
				case want != "" && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != want || c.ObservedGeneration != 3):
					t.Errorf("%s = %+v, want True for %s at generation 3", typ, c, want)
				}
			}
		})
	}
}

// A new policy never gets an application ID that an override still names.
func TestAcquireUnnamedPassesOverNamedIDs(t *testing.T) {
	pool := alloc.NewPool("application ID", 1, 8)
	named := map[uint32]bool{1: true, 2: true}
	id, err := acquireUnnamed(pool, "policy/ns/new", func(i uint32) bool { return named[i] })
	if err != nil || id != 3 {
		t.Fatalf("got %d, %v; want 3, the first ID no override names", id, err)
	}
	// The IDs passed over are free again for later, once nothing names them.
	delete(named, 1)
	if id, err := acquireUnnamed(pool, "policy/ns/later", func(i uint32) bool { return named[i] }); err != nil || id != 4 {
		t.Fatalf("next allocation: %d, %v; want 4 (round-robin goes on)", id, err)
	}
	if got := pool.Used(); got != 2 {
		t.Errorf("%d IDs in use, want 2: the passed-over ones are not kept", got)
	}
	t.Run("every free ID named is exhaustion, not a loop", func(t *testing.T) {
		if _, err := acquireUnnamed(pool, "policy/ns/x", func(uint32) bool { return true }); err == nil {
			t.Fatal("no error with every ID named")
		}
	})
}

// A session event requeues the policies that count the session, not every policy of its namespace.
func TestPoliciesCountingASession(t *testing.T) {
	policy := func(name string, labels map[string]string) junctionv1.SteeringPolicy {
		return junctionv1.SteeringPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}}
	}
	all := []junctionv1.SteeringPolicy{
		policy("video", map[string]string{"class": "streaming"}),
		policy("music", map[string]string{"class": "streaming"}),
		policy("voice", map[string]string{"class": "realtime"}),
		policy("backup", nil),
	}
	names := func(s *junctionv1.ATSSSSession) string {
		var out []string
		for _, r := range policiesCounting(s, all) {
			out = append(out, r.Name)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name string
		spec junctionv1.ATSSSSessionSpec
		want string
	}{
		{"a session with references requeues those names, existing or not",
			junctionv1.ATSSSSessionSpec{PolicyRefs: []junctionv1.LocalObjectReference{{Name: "voice"}, {Name: "later"}}}, "later,voice"},
		{"a selector requeues only the policies it matches",
			junctionv1.ATSSSSessionSpec{PolicySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"class": "streaming"}}}, "music,video"},
		{"references and a selector together, each policy once",
			junctionv1.ATSSSSessionSpec{PolicyRefs: []junctionv1.LocalObjectReference{{Name: "video"}},
				PolicySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"class": "streaming"}}}, "music,video"},
		{"a session selecting nothing requeues nothing", junctionv1.ATSSSSessionSpec{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &junctionv1.ATSSSSession{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Spec: tc.spec}
			if got := names(s); got != tc.want {
				t.Errorf("requeued %q, want %q", got, tc.want)
			}
		})
	}
}

// The outcomes follow cluster-api's semantics: a failed write is an error (back-off, counted,
// generation unobserved); waiting for room or for another object is a requeue; a UPF that is away
// is the replay's business.
func TestSessionWriteOutcome(t *testing.T) {
	full := fmt.Errorf("write: %w", &programmer.TableFullError{Table: "sessions", Err: errors.New("no room")})
	away := fmt.Errorf("%w: stream lost", programmer.ErrNotSynced)
	for _, tc := range []struct {
		name                    string
		werr                    error
		wasProgrammed, observed bool
		reason                  string
		requeueAfter            time.Duration
		fails                   bool
	}{
		{"a full table waits for room, not an error", full, false, true, ReasonTableFull, requeueTableFull, false},
		{"an entry another object owns waits for it", &programmer.ConflictError{Table: "sessions", Owner: "session/ns/other"}, false, true, ReasonConflict, requeueWaiting, false},
		{"a new session on a UPF that is away says so and waits for the replay", away, false, false, ReasonUPFNotConnected, 0, false},
		{"a changed session on a UPF that is away says so", away, true, false, ReasonUPFNotConnected, 0, false},
		{"a programmed unchanged session stays Programmed while its UPF is away", away, true, true, "", 0, false},
		{"a write the device refused fails the reconcile", errors.New("INVALID_ARGUMENT: bad entry"), true, true, ReasonWriteFailed, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := sessionWriteOutcome("upf-1", tc.werr, tc.wasProgrammed, tc.observed)
			if o.reason != tc.reason || o.requeueAfter != tc.requeueAfter || (o.err != nil) != tc.fails {
				t.Errorf("got reason %q, requeue after %v, error %v; want %q, %v, error %v", o.reason, o.requeueAfter, o.err, tc.reason, tc.requeueAfter, tc.fails)
			}
			if o.reason != "" && !strings.Contains(o.msg, "upf-1") {
				t.Errorf("message %q does not name the UserPlaneFunction", o.msg)
			}
			if tc.fails && !strings.Contains(o.err.Error(), "bad entry") {
				t.Errorf("error %q loses the device's answer", o.err)
			}
		})
	}
}

func TestPolicyWriteOutcome(t *testing.T) {
	for _, tc := range []struct {
		name                string
		written             int
		problems            map[string][]string
		full                []string
		wasReady, observed  bool
		ready               bool
		reason, msgContains string
		requeueAfter        time.Duration
		fails               bool
	}{
		{"written on every UPF is Ready and Programmed", 2, nil, nil, false, false, true, ReasonProgrammed, "on 2 UserPlaneFunctions", 0, false},
		{"no UPF in the namespace is Ready: each new one gets the entries", 0, nil, nil, false, false, true, ReasonNoUPF, "no UserPlaneFunction", 0, false},
		{"a full table on one UPF waits for room", 1, map[string][]string{ReasonTableFull: {"b"}}, []string{"b: no room"}, true, true, false, ReasonTableFull, "b: no room", requeueTableFull, false},
		{"a ready unchanged policy stays Ready while a UPF is away", 1, map[string][]string{ReasonUPFNotConnected: {"b"}}, nil, true, true, false, "", "", 0, false},
		{"a changed policy on a UPF that is away is not Ready and waits for the replay", 1, map[string][]string{ReasonUPFNotConnected: {"b"}}, nil, true, false, false, ReasonUPFNotConnected, "UPFNotConnected on b", 0, false},
		{"a refused write fails the reconcile and names every problem", 0, map[string][]string{ReasonWriteFailed: {"a"}, ReasonUPFNotReady: {"b"}}, nil, true, true, false, ReasonUPFNotReady, "UPFNotReady on b; WriteFailed on a", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, o := policyWriteOutcome(7, 3, tc.written, tc.problems, tc.full, tc.wasReady, tc.observed)
			if o.reason != tc.reason || o.requeueAfter != tc.requeueAfter || (o.err != nil) != tc.fails {
				t.Errorf("got reason %q, requeue after %v, error %v; want %q, %v, error %v", o.reason, o.requeueAfter, o.err, tc.reason, tc.requeueAfter, tc.fails)
			}
			if o.reason != "" && ready != tc.ready {
				t.Errorf("Ready %v, want %v", ready, tc.ready)
			}
			if !strings.Contains(o.msg, tc.msgContains) {
				t.Errorf("message %q does not say %q", o.msg, tc.msgContains)
			}
		})
	}
}

func TestWarningEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string
		warn   bool
	}{
		{"a full table needs the operator's attention", ReasonTableFull, true},
		{"a refused write needs it", ReasonWriteFailed, true},
		{"a missing UPF needs it", ReasonUPFNotFound, true},
		{"a UPF that is away is told by the UPF's own condition, not once per session", ReasonUPFNotConnected, false},
		{"being programmed is no warning", ReasonProgrammed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := warnable(tc.reason); got != tc.warn {
				t.Errorf("warnable(%s) = %v, want %v", tc.reason, got, tc.warn)
			}
		})
	}
}

func TestDeposedBy(t *testing.T) {
	id := func(high, epoch uint64) *p4v1.Uint128 { return &p4v1.Uint128{High: high, Low: epoch<<32 | 7} }
	for _, tc := range []struct {
		name string
		st   upfclient.State
		want bool
	}{
		{"a backup under a newer leader of this operator is deposed", upfclient.State{Connected: true, ElectionID: id(5, 3), Highest: id(5, 4)}, true},
		{"the primary is not", upfclient.State{Connected: true, Primary: true, ElectionID: id(5, 3), Highest: id(5, 3)}, false},
		{"a backup under another controller (another electionIDHigh) is not", upfclient.State{Connected: true, ElectionID: id(5, 3), Highest: id(9, 1)}, false},
		{"a backup under an older leader's half-dead stream is not", upfclient.State{Connected: true, ElectionID: id(5, 3), Highest: id(5, 3)}, false},
		{"a disconnected device says nothing", upfclient.State{ElectionID: id(5, 3), Highest: id(5, 4)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deposedBy(tc.st, 3); got != tc.want {
				t.Errorf("deposedBy = %v, want %v", got, tc.want)
			}
		})
	}
}

// The N4 endpoint reports a user plane lost only when the operator lost the switch, and back only
// once the switch holds the sessions again (docs/n4.md, "Node Reports").
func TestUserPlaneOf(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	primary := cond(junctionv1.ConditionConnected, metav1.ConditionTrue, "Primary")
	pipeline := cond(junctionv1.ConditionPipelineReady, metav1.ConditionTrue, "PipelineInstalled")
	for _, tc := range []struct {
		name      string
		conds     []metav1.Condition
		up, known bool
	}{
		{"a new UPF with no status says nothing", nil, false, false},
		{"a stream that is down is a lost user plane", []metav1.Condition{cond(junctionv1.ConditionConnected, metav1.ConditionFalse, "Disconnected")}, false, true},
		{"connecting is not yet an outage", []metav1.Condition{cond(junctionv1.ConditionConnected, metav1.ConditionUnknown, "Connecting")}, false, false},
		{"a backup controller leaves the switch's entries in place", []metav1.Condition{cond(junctionv1.ConditionConnected, metav1.ConditionFalse, "Backup")}, false, false},
		{"primary without the pipeline holds no sessions yet", []metav1.Condition{primary}, false, false},
		{"a replay in progress is not yet a recovery", []metav1.Condition{primary, pipeline, cond(junctionv1.ConditionReady, metav1.ConditionFalse, "Replaying")}, false, false},
		{"primary, the pipeline and the replay done is the user plane back", []metav1.Condition{primary, pipeline, cond(junctionv1.ConditionReady, metav1.ConditionTrue, "Ready")}, true, true},
		{"a refused register write does not take the user plane away", []metav1.Condition{primary, pipeline, cond(junctionv1.ConditionReady, metav1.ConditionFalse, "RegisterWriteRefused")}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &junctionv1.UserPlaneFunction{Status: junctionv1.UserPlaneFunctionStatus{Conditions: tc.conds}}
			if up, known := userPlaneOf(u); up != tc.up || known != tc.known {
				t.Errorf("userPlaneOf = up %v known %v, want up %v known %v", up, known, tc.up, tc.known)
			}
		})
	}
}
