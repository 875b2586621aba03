package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// programmedSetup is a namespace with a UPF, two policies and four sessions, all programmed.
type programmedSetup struct {
	ns       string
	upf      *junctionv1.UserPlaneFunction
	sessions []*junctionv1.ATSSSSession
	sch      *upfclient.Schema
}

func setupProgrammed(t *testing.T, u *softUPF, ns string) programmedSetup {
	t.Helper()
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	grantDevice(t, upf)
	create(t, cm, upf,
		loadBalancePolicy(ns, "video", 10, 30, "198.18.10.0/24"),
		activeStandbyPolicy(ns, "voice", 20, "198.18.20.0/24"))
	ss := []*junctionv1.ATSSSSession{
		session(ns, "a1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10", "video"),
		session(ns, "a2", "imsi-001010000000001", "10.60.0.2", "upf", "n", "", "voice"),
		session(ns, "b1", "imsi-001010000000002", "10.60.0.3", "upf", "3n", "198.51.100.10", "voice"),
		session(ns, "c1", "imsi-001010000000003", "10.60.0.4", "upf", "3", "198.51.100.11", "video", "voice"),
	}
	for _, s := range ss {
		create(t, s)
	}
	return programmedSetup{ns: ns, upf: upf, sessions: ss, sch: sch}
}

// waitProgrammed waits for every session to be programmed with all its policies and the UPF to
// hold exactly what the objects call for. Programmed alone is not enough: a session is programmed
// without a policy that has no application ID yet (Ready=False PolicyPending), and a snapshot
// taken then lacks that policy's entries.
func (p programmedSetup) waitProgrammed(t *testing.T, u *softUPF, timeout time.Duration) {
	t.Helper()
	for _, s := range p.sessions {
		waitCondition(t, timeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
		waitCondition(t, timeout, s, junctionv1.ConditionReady, metav1.ConditionTrue, "Ready")
	}
	eventually(t, timeout, "UPF entries match the objects", func() error { return sameEntries(u, p.sch, p.ns, "upf") })
}

// resourceVersions records the sessions' and policies' resource versions (to prove that nothing
// wrote to them).
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var ss junctionv1.ATSSSSessionList
	var ps junctionv1.SteeringPolicyList
	if err := k8s.List(context.Background(), &ss, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(context.Background(), &ps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss.Items {
		out["session/"+s.Name] = s.ResourceVersion
		if os.Getenv("JUNCTION_TEST_DUMP") != "" {
			b, _ := json.Marshal(s.Status)
			t.Logf("session %s %s: %s", s.Name, s.ResourceVersion, b)
		}
	}
	for _, p := range ps.Items {
		out["policy/"+p.Name] = p.ResourceVersion
		if os.Getenv("JUNCTION_TEST_DUMP") != "" {
			b, _ := json.Marshal(p.Status)
			t.Logf("policy %s %s: %s", p.Name, p.ResourceVersion, b)
		}
	}
	return out
}

func upfStatus(t *testing.T, upf *junctionv1.UserPlaneFunction) junctionv1.UserPlaneFunctionStatus {
	t.Helper()
	var got junctionv1.UserPlaneFunction
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(upf), &got); err != nil {
		t.Fatal(err)
	}
	return got.Status
}

// TestTargetRestartReplaysEverything stops the software UPF, starts a fresh one (empty) on the
// same address, and expects the operator to reconnect, push the pipeline and write everything.
func TestTargetRestartReplaysEverything(t *testing.T) {
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	p := setupProgrammed(t, u, ns)
	startOperator(t, ns, operatorOptions{})
	p.waitProgrammed(t, u, programTimeout)
	before := mustEntries(t, u, p.sch)

	u.stop()
	waitCondition(t, replayTimeout, p.upf, junctionv1.ConditionConnected, metav1.ConditionFalse, "Disconnected")
	fresh := startSoftUPF(t, u.addr)
	eventually(t, replayTimeout, "the fresh UPF holds everything again", func() error {
		got, err := fresh.entries(p.sch) // FAILED_PRECONDITION until the pipeline is pushed
		if err != nil {
			return err
		}
		return diffLists(got, before)
	})
	waitCondition(t, replayTimeout, p.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	for _, s := range p.sessions {
		waitCondition(t, replayTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	}
	// The path state of every user starts again at 0 (unavailable until the UE reports the access).
	var a1 junctionv1.ATSSSSession
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p.sessions[0]), &a1); err != nil {
		t.Fatal(err)
	}
	for _, reg := range []string{"rtt_3gpp", "rtt_non3gpp"} {
		if v, err := fresh.register(p.sch, reg, int64(*a1.Status.UserIndex)); err != nil || v != 0 {
			t.Errorf("after the restart %s[%d] = %d (%v), want 0", reg, *a1.Status.UserIndex, v, err)
		}
	}
}

// TestOperatorRestartWithNothingChangedWritesNothing restarts the operator: it restores its
// indexes from the API server, reconnects, replays, and writes nothing to the UPF (and nothing
// to the sessions and policies) because nothing changed. A session created afterwards gets
// indexes that collide with none.
func TestOperatorRestartWithNothingChangedWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	p := setupProgrammed(t, u, ns)
	op := startOperator(t, ns, operatorOptions{leaseName: "junction"})
	p.waitProgrammed(t, u, programTimeout)
	time.Sleep(settleTime) // let the first operator finish whatever it does
	firstID := upfStatus(t, p.upf).ElectionID
	writes := u.writes()
	versions := resourceVersions(t, ns)

	op.stop()
	startOperator(t, ns, operatorOptions{leaseName: "junction"})
	eventually(t, replayTimeout, "the new operator is primary and has replayed", func() error {
		st := upfStatus(t, p.upf)
		c, _ := condition(p.upf, junctionv1.ConditionReady)
		if st.ElectionID == firstID || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("election ID %s (first operator %s), Ready %s %s", st.ElectionID, firstID, c.Status, c.Message)
		}
		return nil
	})
	time.Sleep(settleTime)
	if got := u.writes(); got != writes {
		t.Errorf("the restarted operator sent %d Write RPCs with nothing changed, want 0", got-writes)
	}
	if got := resourceVersions(t, ns); fmt.Sprint(got) != fmt.Sprint(versions) {
		t.Errorf("sessions or policies were written by the restarted operator:\n before %v\n after  %v", versions, got)
	}
	if err := sameEntries(u, p.sch, ns, "upf"); err != nil {
		t.Error(err)
	}

	// The restarted operator found the pipeline in place, so it cannot know which user indexes
	// an earlier user left state in: it resets a new user's path state (docs/pipeline.md). Leave
	// such state (RTTs and losses measured for both legs, a suspension, a moved autonomous share) in the unused indexes the
	// new user may get.
	inUse := map[int64]bool{}
	var list junctionv1.ATSSSSessionList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		inUse[int64(*s.Status.UserIndex)] = true
	}
	stale := map[string]uint64{"rtt_3gpp": 12000, "rtt_non3gpp": 4000, "loss_3gpp": 30, "loss_non3gpp": 60, "path_updates_suspended": 1,
		"autonomous_share": 20}
	const staleUpTo = 64
	for idx := int64(0); idx < staleUpTo; idx++ {
		for reg, v := range stale {
			id, err := p.sch.RegisterID(reg)
			if err == nil && !inUse[idx] {
				err = u.dp.WriteRegister(id, uint32(idx), v)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	d1 := session(ns, "d1", "imsi-001010000000004", "10.60.0.9", "upf", "3n", "198.51.100.12", "video")
	create(t, d1)
	waitCondition(t, programTimeout, d1, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries with the new session", func() error { return sameEntries(u, p.sch, ns, "upf") })
	assertDistinctIndexes(t, ns)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d1), d1); err != nil {
		t.Fatal(err)
	}
	user := int64(*d1.Status.UserIndex)
	if user >= staleUpTo {
		t.Fatalf("d1 got user index %d, beyond the %d indexes given stale state", user, staleUpTo)
	}
	for reg := range stale {
		if v, err := u.register(p.sch, reg, user); err != nil || v != 0 {
			t.Errorf("%s[%d] = %d (%v) for a new user, want 0: the earlier user's state was not reset", reg, user, v, err)
		}
	}
}

// assertDistinctIndexes checks that SUPIs, gNBs and exception sessions never share an index.
func assertDistinctIndexes(t *testing.T, ns string) {
	t.Helper()
	var list junctionv1.ATSSSSessionList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	users, seqs, peers := map[int32]string{}, map[int32]string{}, map[int32]string{}
	for _, s := range list.Items {
		if s.Status.UserIndex == nil {
			t.Errorf("session %s has no user index", s.Name)
			continue
		}
		if o, ok := users[*s.Status.UserIndex]; ok && o != s.Spec.UE.SUPI {
			t.Errorf("user index %d held by %s and %s", *s.Status.UserIndex, o, s.Spec.UE.SUPI)
		}
		users[*s.Status.UserIndex] = s.Spec.UE.SUPI
		if s.Status.SequenceIndex != nil {
			if o, ok := seqs[*s.Status.SequenceIndex]; ok {
				t.Errorf("sequence index %d held by %s and %s", *s.Status.SequenceIndex, o, s.Name)
			}
			seqs[*s.Status.SequenceIndex] = s.Name
		}
		if s.Status.TunnelPeerIndex != nil {
			g := string(s.Spec.AccessLegs.ThreeGPP.GNBAddress)
			if o, ok := peers[*s.Status.TunnelPeerIndex]; ok && o != g {
				t.Errorf("tunnel peer index %d held by gNBs %s and %s", *s.Status.TunnelPeerIndex, o, g)
			}
			peers[*s.Status.TunnelPeerIndex] = g
		}
	}
}

// TestTwoManagersOnePrimaryTheOtherTakesOver runs two operators sharing a leader-election lease:
// only the leader programs the UPF; when it stops, the other takes over with a higher election
// ID, finds the UPF as it wants it (no duplicate, nothing rewritten) and goes on programming.
func TestTwoManagersOnePrimaryTheOtherTakesOver(t *testing.T) {
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	p := setupProgrammed(t, u, ns)
	a := startOperator(t, ns, operatorOptions{leaseName: "junction"})
	b := startOperator(t, ns, operatorOptions{leaseName: "junction"})
	p.waitProgrammed(t, u, programTimeout)

	elected := func(o *operator) bool {
		select {
		case <-o.mgr.Elected():
			return true
		default:
			return false
		}
	}
	leader, standby := a, b
	if elected(b) {
		leader, standby = b, a
	}
	if !elected(leader) || elected(standby) {
		t.Fatalf("leaders: a %v, b %v; want exactly one", elected(a), elected(b))
	}
	firstID := upfStatus(t, p.upf).ElectionID
	time.Sleep(settleTime)
	writes := u.writes()
	before := mustEntries(t, u, p.sch)

	// Watch the UPF's Connected condition through the takeover: neither leader may report the
	// device disconnected (it never was), the old one on its way out nor the new one before its
	// first connection.
	stopWatch := watchBadStatus(p.upf, nil)
	leader.stop()
	eventually(t, takeoverTimeout, "the standby leads", func() error {
		if !elected(standby) {
			return fmt.Errorf("not elected yet")
		}
		return nil
	})
	eventually(t, takeoverTimeout, "the new leader is primary with a higher election ID", func() error {
		st := upfStatus(t, p.upf)
		c, _ := condition(p.upf, junctionv1.ConditionReady)
		if st.ElectionID == firstID || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("election ID %s (first leader %s), Ready %s %s", st.ElectionID, firstID, c.Status, c.Message)
		}
		return nil
	})
	time.Sleep(settleTime)
	if bad := stopWatch(); len(bad) > 0 {
		t.Errorf("Connected=False seen %d times during the takeover, first: %s", len(bad), bad[0])
	}
	if err := findEvent(ns, p.upf.Name, "Warning", "Disconnected"); err == nil {
		t.Error("a Warning Disconnected event for a takeover: the device was never disconnected")
	}
	if got := u.writes(); got != writes {
		t.Errorf("the new leader sent %d Write RPCs to a UPF that held everything, want 0", got-writes)
	}
	if err := diffLists(mustEntries(t, u, p.sch), before); err != nil {
		t.Errorf("the takeover changed the UPF: %v", err)
	}

	d1 := session(ns, "d1", "imsi-001010000000004", "10.60.0.9", "upf", "3n", "198.51.100.10", "video")
	create(t, d1)
	waitCondition(t, programTimeout, d1, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "entries with the new session", func() error { return sameEntries(u, p.sch, ns, "upf") })
	assertDistinctIndexes(t, ns)
}

// TestADeposedLeaderLeavesTheStatusToTheNewOne: a leader that lost its lease without knowing it
// yet (a paused process, one cut off from the API server until its renewal gives up) finds a
// newer leader primary on the device. It must not report the UPF disconnected or its sessions
// UPFNotPrimary over the new leader's status, and it stops (cmd/manager exits) at once. The two
// managers run without leader election and with fixed epochs: what the switch sees is the same.
func TestADeposedLeaderLeavesTheStatusToTheNewOne(t *testing.T) {
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	p := setupProgrammed(t, u, ns)
	deposed := make(chan types.NamespacedName, 4)
	old := startOperator(t, ns, operatorOptions{epoch: 1, onDeposed: func(k types.NamespacedName) { deposed <- k }})
	p.waitProgrammed(t, u, programTimeout)
	waitCondition(t, programTimeout, p.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")

	// Watch the UPF's Connected and the sessions' Programmed from now on.
	stopWatch := watchBadStatus(p.upf, p.sessions)
	startOperator(t, ns, operatorOptions{epoch: 2})
	select {
	case k := <-deposed:
		if k.Name != p.upf.Name {
			t.Errorf("deposed on %s, want %s", k, p.upf.Name)
		}
	case <-time.After(takeoverTimeout):
		t.Fatal("the old leader never noticed the newer one on the device")
	}
	time.Sleep(settleTime) // the old manager still runs: it must stay quiet
	old.stop()
	if bad := stopWatch(); len(bad) > 0 {
		t.Errorf("stale status written %d times after the newer leader took the device, first: %s", len(bad), bad[0])
	}
	eventually(t, programTimeout, "the UPF's status is the new leader's (epoch 2)", func() error {
		_, low, _ := strings.Cut(upfStatus(t, p.upf).ElectionID, ":")
		if n, err := strconv.ParseUint(low, 10, 64); err != nil || n>>32 != 2 {
			return fmt.Errorf("election ID %q", upfStatus(t, p.upf).ElectionID)
		}
		return nil
	})
}

// watchBadStatus polls every 20 ms until stopped, and collects every sight of the UPF's
// Connected=False and of a session not Programmed.
func watchBadStatus(upf *junctionv1.UserPlaneFunction, sessions []*junctionv1.ATSSSSession) (stop func() []string) {
	done, seen := make(chan struct{}), make(chan []string, 1)
	go func() {
		var bad []string
		defer func() { seen <- bad }()
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			cur := &junctionv1.UserPlaneFunction{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(upf), cur); err == nil {
				if c := meta.FindStatusCondition(cur.Status.Conditions, junctionv1.ConditionConnected); c != nil && c.Status == metav1.ConditionFalse {
					bad = append(bad, "UPF "+c.Reason+": "+c.Message)
				}
			}
			for _, s := range sessions {
				cur := &junctionv1.ATSSSSession{}
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), cur); err == nil {
					if c := meta.FindStatusCondition(cur.Status.Conditions, junctionv1.ConditionProgrammed); c != nil && c.Status != metav1.ConditionTrue {
						bad = append(bad, "session "+s.Name+" "+c.Reason+": "+c.Message)
					}
				}
			}
		}
	}()
	return func() []string { close(done); return <-seen }
}

// TestSlowRestoreBlocksNoOtherUPF: a runtime's restore lists every session of its namespace
// from the API server (seconds at 100k sessions). While one UPF's restore is stalled, another
// UPF is connected and Ready: the restore does not hold the lock every reconcile needs.
func TestSlowRestoreBlocksNoOtherUPF(t *testing.T) {
	ns := newNamespace(t)
	cm, _ := pipelineConfigMap(t, ns, "pipeline", nil)
	a := newUPF(ns, "a", startSoftUPF(t, "127.0.0.1:0").addr, "pipeline")
	b := newUPF(ns, "b", startSoftUPF(t, "127.0.0.1:0").addr, "pipeline")
	grantDevice(t, a, b)
	create(t, cm, a, b)
	const stall = 6 * time.Second
	start := time.Now()
	startOperator(t, ns, operatorOptions{slowFirstRestore: stall})
	eventually(t, stall, "one UPF Ready while the other's restore is stalled", func() error {
		for _, u := range []*junctionv1.UserPlaneFunction{a, b} {
			if c, err := condition(u, junctionv1.ConditionReady); err == nil && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("neither is Ready")
	})
	if took := time.Since(start); took >= stall {
		t.Fatalf("the first UPF was Ready after %s, behind the stalled restore", took)
	}
	waitCondition(t, programTimeout, a, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, programTimeout, b, junctionv1.ConditionReady, metav1.ConditionTrue, "")
}
