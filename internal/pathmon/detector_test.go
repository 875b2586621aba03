package pathmon

import (
	"context"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func rtt(a contract.Access, ms int) Report {
	return Report{User: 7, Access: a, Kind: contract.ReportRTT, RTT: time.Duration(ms) * time.Millisecond}
}

func TestActiveAccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   [2]bool
		rtt  [2]time.Duration
		want contract.Access
	}{
		{"no available access gives none", [2]bool{}, [2]time.Duration{}, contract.AccessNone},
		{"the only available access wins whatever its RTT", [2]bool{false, true}, [2]time.Duration{time.Millisecond, time.Second}, contract.AccessNon3GPP},
		{"the smaller RTT wins", [2]bool{true, true}, [2]time.Duration{30 * time.Millisecond, 10 * time.Millisecond}, contract.AccessNon3GPP},
		{"a tie goes to 3GPP", [2]bool{true, true}, [2]time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, contract.Access3GPP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ActiveAccess(tc.up, tc.rtt); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	cfg := Config{MaxSwitches: 2, Window: 10 * time.Second, Settle: 20 * time.Second, Reassert: 5 * time.Second}

	t.Run("the first measurements set the active access without counting a switch", func(t *testing.T) {
		var st UserState
		d := Observe(&st, rtt(contract.Access3GPP, 30), t0, cfg)
		if d.Switched || st.Active != contract.Access3GPP || !d.Changed {
			t.Fatalf("decision %+v state %+v", d, st)
		}
		d = Observe(&st, rtt(contract.AccessNon3GPP, 40), t0.Add(time.Second), cfg)
		if d.Switched || st.Active != contract.Access3GPP {
			t.Fatalf("decision %+v state %+v", d, st)
		}
	})

	t.Run("suspending freezes each available access at its smoothed RTT, not its last sample", func(t *testing.T) {
		// 3GPP steady at 20 ms; non-3GPP at 40 ms with dips to 10 ms, each dip a switch. Its
		// SRTT (gain 1/8): 40; 40 - 30/8 = 36.25; 36.25 + 3.75/8 = 36.71875;
		// 36.71875 - 26.71875/8 = 33.378907 ms (ns truncated): 33378 µs. The third switch
		// (MaxSwitches 2) suspends, on a dip: frozen at the last samples non-3GPP (10 ms) would
		// keep the traffic; at the smoothed RTTs 3GPP (20 ms) does.
		st := UserState{Guarded: true}
		var d Decision
		for i, r := range []Report{rtt(contract.Access3GPP, 20), rtt(contract.AccessNon3GPP, 40), rtt(contract.AccessNon3GPP, 10), rtt(contract.AccessNon3GPP, 40), rtt(contract.AccessNon3GPP, 10)} {
			d = Observe(&st, r, t0.Add(time.Duration(i)*time.Second), cfg)
		}
		want := []PathWrite{{Access: contract.Access3GPP, Value: 20000}, {Access: contract.AccessNon3GPP, Value: 33378}}
		if !d.Suspend || !reflect.DeepEqual(d.Writes, want) {
			t.Fatalf("decision %+v: want a suspension writing %+v", d, want)
		}

		// Then non-3GPP reports 1 ms every 100 ms from t0+5.1s. Its SRTT: 29.33, 25.79, 22.69,
		// 19.98 ms: below 3GPP's 20 at the 4th (t0+5.4s), contradicting the frozen 3GPP. With
		// Refresh 2 s the choice is frozen anew at the first report from t0+7.4s, at the
		// smoothed RTTs, and not before.
		cfg := cfg
		cfg.Refresh = 2 * time.Second
		refreezeAt := t0.Add(7400 * time.Millisecond)
		for k := 1; k <= 30; k++ {
			at := t0.Add(5*time.Second + time.Duration(k)*100*time.Millisecond)
			d := Observe(&st, rtt(contract.AccessNon3GPP, 1), at, cfg)
			switch {
			case at.Before(refreezeAt) && len(d.Writes) > 0:
				t.Fatalf("at %v: wrote %+v before the smoothed RTTs had disagreed for 2 s", at.Sub(t0), d.Writes)
			case at.Equal(refreezeAt):
				if len(d.Writes) != 2 || d.Writes[0] != (PathWrite{Access: contract.Access3GPP, Value: 20000}) ||
					d.Writes[1].Access != contract.AccessNon3GPP || d.Writes[1].Value >= 20000 || st.Frozen != contract.AccessNon3GPP {
					t.Fatalf("at %v: writes %+v, frozen %v: want both smoothed RTTs, non-3GPP now the smaller", at.Sub(t0), d.Writes, st.Frozen)
				}
			case at.After(refreezeAt) && len(d.Writes) > 0:
				t.Fatalf("at %v: wrote %+v again: the frozen choice now agrees", at.Sub(t0), d.Writes)
			}
		}
		if st.Frozen != contract.AccessNon3GPP || !st.Suspended {
			t.Fatalf("after the reports: frozen %v, suspended %v; want non-3GPP frozen anew, still suspended", st.Frozen, st.Suspended)
		}
	})

	t.Run("a faster other access is a switch", func(t *testing.T) {
		var st UserState
		Observe(&st, rtt(contract.Access3GPP, 30), t0, cfg)
		Observe(&st, rtt(contract.AccessNon3GPP, 40), t0, cfg)
		d := Observe(&st, rtt(contract.Access3GPP, 50), t0.Add(time.Second), cfg)
		if !d.Switched || st.Active != contract.AccessNon3GPP || !st.LastSwitch.Equal(t0.Add(time.Second)) {
			t.Fatalf("decision %+v state %+v", d, st)
		}
	})

	t.Run("more switches than allowed within the window suspend the user once", func(t *testing.T) {
		st := UserState{Guarded: true}
		Observe(&st, rtt(contract.Access3GPP, 30), t0, cfg)
		Observe(&st, rtt(contract.AccessNon3GPP, 40), t0, cfg)
		suspends := 0
		for i := 1; i <= 6; i++ {
			ms := 50
			if i%2 == 0 {
				ms = 20
			}
			if d := Observe(&st, rtt(contract.Access3GPP, ms), t0.Add(time.Duration(i)*time.Second), cfg); d.Suspend {
				suspends++
				if i != 3 {
					t.Errorf("suspended at switch %d, want at the 3rd (MaxSwitches 2)", i)
				}
			}
		}
		if suspends != 1 || !st.Suspended {
			t.Fatalf("%d suspensions, state %+v", suspends, st)
		}
	})

	t.Run("switches spread wider than the window do not suspend", func(t *testing.T) {
		var st UserState
		Observe(&st, rtt(contract.Access3GPP, 30), t0, cfg)
		Observe(&st, rtt(contract.AccessNon3GPP, 40), t0, cfg)
		for i := 1; i <= 10; i++ {
			ms := 50
			if i%2 == 0 {
				ms = 20
			}
			if d := Observe(&st, rtt(contract.Access3GPP, ms), t0.Add(time.Duration(i)*6*time.Second), cfg); d.Suspend {
				t.Fatalf("suspended at switch %d", i)
			}
		}
		if len(st.Switches) > 2 {
			t.Errorf("switches outside the window were kept: %v", st.Switches)
		}
	})

	t.Run("a link down while suspended is written by the operator", func(t *testing.T) {
		st := UserState{Suspended: true, SuspendedAt: t0, Up: [2]bool{true, true}, RTT: [2]time.Duration{time.Millisecond, 2 * time.Millisecond},
			LossKnown: [2]bool{true, true}, Active: contract.Access3GPP}
		d := Observe(&st, Report{User: 7, Access: contract.Access3GPP, Kind: contract.ReportLinkDown, Suspended: true}, t0.Add(time.Second), cfg)
		if len(d.Writes) != 1 || d.Writes[0] != (PathWrite{Access: contract.Access3GPP, Value: 0}) {
			t.Fatalf("writes %+v", d.Writes)
		}
		if st.Active != contract.AccessNon3GPP {
			t.Errorf("active %v after 3GPP went down", st.Active)
		}
		d = Observe(&st, Report{User: 7, Access: contract.Access3GPP, Kind: contract.ReportLinkUp, RTT: 15 * time.Millisecond, Suspended: true}, t0.Add(2*time.Second), cfg)
		if len(d.Writes) != 1 || d.Writes[0] != (PathWrite{Access: contract.Access3GPP, Value: 15000}) {
			t.Fatalf("writes %+v", d.Writes)
		}
	})

	t.Run("while suspended an RTT report brings back an access whose LINK_UP was lost", func(t *testing.T) {
		st := UserState{Suspended: true, SuspendedAt: t0, Up: [2]bool{true, false}, RTT: [2]time.Duration{time.Millisecond, 2 * time.Millisecond},
			LossKnown: [2]bool{true, true}, Active: contract.Access3GPP}
		r := Report{User: 7, Access: contract.AccessNon3GPP, Kind: contract.ReportRTT, RTT: 9 * time.Millisecond, Suspended: true}
		if d := Observe(&st, r, t0.Add(time.Second), cfg); len(d.Writes) != 1 || d.Writes[0] != (PathWrite{Access: contract.AccessNon3GPP, Value: 9000}) {
			t.Fatalf("writes %+v, want rtt_non3gpp = 9000", d.Writes)
		}
		r.RTT = 3 * time.Millisecond
		if d := Observe(&st, r, t0.Add(2*time.Second), cfg); len(d.Writes) != 0 {
			t.Fatalf("the next report on the access, up now: writes %+v, want none (the RTT stays frozen)", d.Writes)
		}
	})

	// docs/pipeline.md: during a suspension the RTTs stay frozen, the loss follows the reports.
	t.Run("while suspended the operator writes the loss the reports carry, not their RTT", func(t *testing.T) {
		st := UserState{Suspended: true, SuspendedAt: t0, Up: [2]bool{true, true}, RTT: [2]time.Duration{time.Millisecond, 2 * time.Millisecond},
			Loss: [2]uint8{0, 5}, LossKnown: [2]bool{true, true}, Active: contract.Access3GPP}
		ack := func(loss uint8, suspended bool) Decision {
			return Observe(&st, Report{User: 7, Access: contract.AccessNon3GPP, Kind: contract.ReportRTT, RTT: 9 * time.Millisecond, Loss: loss, Suspended: suspended}, t0.Add(time.Second), cfg)
		}
		if d := ack(30, true); len(d.Writes) != 1 || d.Writes[0] != (PathWrite{Access: contract.AccessNon3GPP, Loss: true, Value: 30}) {
			t.Fatalf("a new loss: writes %+v, want loss_non3gpp = 30 only", d.Writes)
		}
		if d := ack(30, true); len(d.Writes) != 0 {
			t.Fatalf("the same loss again: writes %+v, want none", d.Writes)
		}
		if d := ack(10, false); len(d.Writes) != 0 {
			t.Fatalf("a report the device sent unsuspended (it wrote the loss itself): writes %+v, want none", d.Writes)
		}
		d := Observe(&st, Report{User: 7, Access: contract.AccessNon3GPP, Kind: contract.ReportLinkDown, Suspended: true}, t0.Add(2*time.Second), cfg)
		if want := []PathWrite{{Access: contract.AccessNon3GPP}, {Access: contract.AccessNon3GPP, Loss: true}}; !slices.Equal(d.Writes, want) {
			t.Fatalf("a link down: writes %+v, want %+v (both registers to 0, as the data plane would)", d.Writes, want)
		}
	})

	t.Run("an adopted suspension writes the first loss of each access, whatever it is", func(t *testing.T) {
		var st UserState
		d := Observe(&st, Report{User: 7, Access: contract.Access3GPP, Kind: contract.ReportRTT, RTT: time.Millisecond, Suspended: true}, t0, cfg)
		if len(d.Writes) != 1 || d.Writes[0] != (PathWrite{Access: contract.Access3GPP, Loss: true, Value: 0}) {
			t.Fatalf("writes %+v, want loss_3gpp = 0 (the device's value is unknown)", d.Writes)
		}
	})

	t.Run("a link down while not suspended is left to the data plane", func(t *testing.T) {
		var st UserState
		Observe(&st, rtt(contract.Access3GPP, 30), t0, cfg)
		if d := Observe(&st, Report{User: 7, Access: contract.Access3GPP, Kind: contract.ReportLinkDown}, t0, cfg); len(d.Writes) != 0 {
			t.Fatalf("writes %+v", d.Writes)
		}
		if st.Active != contract.AccessNone {
			t.Errorf("active %v with no access up", st.Active)
		}
	})

	t.Run("a suspension found on the device is adopted", func(t *testing.T) {
		st := UserState{Guarded: true}
		r := rtt(contract.Access3GPP, 30)
		r.Suspended = true
		d := Observe(&st, r, t0, cfg)
		if !st.Suspended || d.Suspend || !d.Changed {
			t.Fatalf("decision %+v state %+v", d, st)
		}
	})

	t.Run("a suspension the device lost is written again after the grace period only", func(t *testing.T) {
		st := UserState{Suspended: true, SuspendedAt: t0}
		if d := Observe(&st, rtt(contract.Access3GPP, 30), t0.Add(time.Second), cfg); d.Suspend {
			t.Fatal("re-suspended while reports from before the write may still arrive")
		}
		if d := Observe(&st, rtt(contract.Access3GPP, 30), t0.Add(6*time.Second), cfg); !d.Suspend {
			t.Fatal("not re-suspended after the grace period")
		}
	})

	t.Run("an unchanged RTT report changes nothing", func(t *testing.T) {
		var st UserState
		Observe(&st, rtt(contract.Access3GPP, 30), t0, cfg)
		if d := Observe(&st, rtt(contract.Access3GPP, 30), t0.Add(time.Second), cfg); d.Changed {
			t.Fatalf("decision %+v", d)
		}
	})
}

// The flip-flop guard by mode (docs/pipeline.md): flip-flops count only for a user whose modes
// read the RTT comparison (Guarded); any other user is never suspended, and a suspension the
// device holds for one is lifted.
func TestGuardByMode(t *testing.T) {
	cfg := Config{MaxSwitches: 2, Window: 10 * time.Second, Settle: 20 * time.Second, Reassert: 5 * time.Second}
	// flipFlop: 3GPP's RTT alternates 50 and 20 ms against non-3GPP's 40, once a second: a
	// switch per report, 6 in 6 s (more than MaxSwitches 2 within the 10 s window).
	flipFlop := func(st *UserState, suspendedOnDevice bool) (suspends, resumes int) {
		Observe(st, rtt(contract.Access3GPP, 30), t0, cfg)
		Observe(st, rtt(contract.AccessNon3GPP, 40), t0, cfg)
		for i := 1; i <= 6; i++ {
			r := rtt(contract.Access3GPP, 50)
			if i%2 == 0 {
				r = rtt(contract.Access3GPP, 20)
			}
			r.Suspended = suspendedOnDevice
			d := Observe(st, r, t0.Add(time.Duration(i)*time.Second), cfg)
			suspends += btoi(d.Suspend)
			resumes += btoi(d.Resume)
		}
		return suspends, resumes
	}
	for _, tc := range []struct {
		name              string
		guarded, onDevice bool
		suspended         bool
		suspends, resumes int
	}{
		{name: "a user whose modes read the comparison is suspended once when its paths flip-flop", guarded: true, suspended: true, suspends: 1},
		{name: "a user whose modes read no comparison is never suspended, however its paths flip-flop"},
		{name: "a suspension the device holds for an unguarded user is lifted, once per grace period", onDevice: true, resumes: 2},
		{name: "a suspension the device holds for a guarded user is adopted", guarded: true, onDevice: true, suspended: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := UserState{Guarded: tc.guarded}
			suspends, resumes := flipFlop(&st, tc.onDevice)
			if st.Suspended != tc.suspended || suspends != tc.suspends || resumes != tc.resumes {
				t.Fatalf("suspended %v after %d suspensions and %d resumptions; want %v, %d, %d", st.Suspended, suspends, resumes, tc.suspended, tc.suspends, tc.resumes)
			}
			if len(st.Switches) != 6 {
				t.Errorf("%d switches recorded, want 6: the status counts them whatever the mode", len(st.Switches))
			}
		})
	}

	t.Run("a suspended user whose modes stop reading the comparison is resumed at once", func(t *testing.T) {
		st := UserState{Guarded: true}
		flipFlop(&st, false)
		d := SetGuarded(&st, false, t0.Add(7*time.Second))
		if !d.Resume || st.Suspended || len(st.Switches) != 0 {
			t.Fatalf("decision %+v, state %+v: want resumed, switches forgotten", d, st)
		}
		if d := SetGuarded(&st, false, t0.Add(8*time.Second)); d.Resume || d.Changed {
			t.Fatalf("again: decision %+v, want nothing", d)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTick(t *testing.T) {
	cfg := Config{MaxSwitches: 2, Window: 10 * time.Second, Settle: 20 * time.Second, Reassert: 5 * time.Second}
	t.Run("a suspended user resumes once its active access has held for the settle period", func(t *testing.T) {
		st := UserState{Suspended: true, SuspendedAt: t0, LastChange: t0.Add(5 * time.Second)}
		if d := Tick(&st, t0.Add(24*time.Second), cfg); d.Resume {
			t.Fatal("resumed before settling")
		}
		if d := Tick(&st, t0.Add(25*time.Second), cfg); !d.Resume || st.Suspended {
			t.Fatalf("not resumed: %+v", st)
		}
	})
	t.Run("a user that is not suspended is never resumed", func(t *testing.T) {
		st := UserState{}
		if d := Tick(&st, t0.Add(time.Hour), cfg); d.Resume {
			t.Fatal("resumed a user that was not suspended")
		}
	})
}

func members(addr, user, access, kind, rtt, loss, susp []byte) map[string][]byte {
	return map[string][]byte{"session_addr": addr, "user_idx": user, "access": access, "kind": kind, "rtt_us": rtt, "loss_pct": loss, "suspended": susp}
}

func TestDecodeReport(t *testing.T) {
	r, err := DecodeReport(members([]byte{10, 0, 0, 1}, []byte{0x01, 0x02}, []byte{2}, []byte{1}, []byte{0x27, 0x10}, []byte{35}, []byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	want := Report{SessionAddr: netip.MustParseAddr("10.0.0.1"), User: 258, Access: contract.AccessNon3GPP, Kind: contract.ReportRTT, RTT: 10 * time.Millisecond, Loss: 35, Suspended: true}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	one := []byte{1}
	for _, tc := range []struct {
		name    string
		members map[string][]byte
		want    string
	}{
		{"a missing member is named", map[string][]byte{"session_addr": one}, "member user_idx is missing"},
		{"an access of 3 is rejected naming the member", members(one, one, []byte{3}, one, one, one, one), "member access"},
		{"an unknown kind is rejected naming the member", members(one, one, one, []byte{9}, one, one, one), "member kind"},
		{"a loss wider than 8 bits is rejected naming the member", members(one, one, one, one, one, []byte{1, 0}, one), "member loss_pct"},
		{"a too wide user index is rejected naming the member", members(one, []byte{1, 0, 0, 0, 0}, one, one, one, one, one), "member user_idx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeReport(tc.members); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// recordingActuator records writes and, like a device, remembers the suspension so that
// later reports carry it.
type recordingActuator struct {
	mu        sync.Mutex
	writes    []string
	suspended bool
}

func (a *recordingActuator) SetSuspended(_ context.Context, user uint32, s bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.suspended = s
	if s {
		a.writes = append(a.writes, "suspend")
	} else {
		a.writes = append(a.writes, "resume")
	}
	return nil
}

func (a *recordingActuator) WriteRTT(_ context.Context, user uint32, access contract.Access, v uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writes = append(a.writes, "rtt")
	return nil
}

func (a *recordingActuator) WriteLoss(_ context.Context, user uint32, access contract.Access, v uint8) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writes = append(a.writes, "loss")
	return nil
}

func (a *recordingActuator) report(r Report) Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	r.Suspended = a.suspended
	return r
}

func TestMonitorSuspendsResumesAndNotifiesAtABoundedRate(t *testing.T) {
	act := &recordingActuator{}
	var notified [][]uint32
	m := NewMonitor(Options{UPF: "test", Act: act, Config: Config{MaxSwitches: 2, Window: 10 * time.Second, Settle: 20 * time.Second, Reassert: 5 * time.Second},
		Notify: func(u []uint32) { notified = append(notified, u) }})
	ctx := context.Background()
	now := t0
	m.SetGuarded(ctx, 7, true) // smallest delay, say: a mode that reads the RTT comparison
	m.Observe(ctx, rtt(contract.Access3GPP, 30), now)
	m.Observe(ctx, rtt(contract.AccessNon3GPP, 40), now)
	for i := 1; i <= 20; i++ { // a probe pair every second, the faster access alternating
		now = now.Add(time.Second)
		ms := 50
		if i%2 == 0 {
			ms = 20
		}
		m.Observe(ctx, act.report(rtt(contract.Access3GPP, ms)), now)
	}
	if s, _ := m.Summary(7); !s.Suspended {
		t.Fatalf("not suspended: %+v", s)
	}
	m.Flush()
	m.Flush()
	if len(notified) != 1 || len(notified[0]) != 1 || notified[0][0] != 7 {
		t.Fatalf("notified %v: want user 7 once for many reports", notified)
	}
	// The paths calm down: 3GPP stays faster.
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		m.Observe(ctx, act.report(rtt(contract.Access3GPP, 20)), now)
		m.Tick(ctx, now)
	}
	if s, _ := m.Summary(7); s.Suspended {
		t.Fatalf("still suspended after settling: %+v", s)
	}
	// Suspending freezes both RTTs at their smoothed values (TestObserve has the values).
	if got := strings.Join(act.writes, ","); got != "suspend,rtt,rtt,resume" {
		t.Errorf("device writes %s, want suspend,rtt,rtt,resume", got)
	}
}

// Reports about a user index no session holds (a late digest after the user was forgotten) are
// dropped: the monitor keeps state only for users that exist, and its map does not grow.
func TestMonitorKeepsOnlyKnownUsers(t *testing.T) {
	known := map[uint32]bool{7: true}
	m := NewMonitor(Options{UPF: "test-known", Known: func(u uint32) bool { return known[u] }})
	ctx := context.Background()
	m.Observe(ctx, rtt(contract.Access3GPP, 30), t0) // user 7
	if _, ok := m.Summary(7); !ok {
		t.Fatal("no state for a known user")
	}
	m.Forget(7)
	delete(known, 7)
	m.Observe(ctx, rtt(contract.Access3GPP, 30), t0.Add(time.Second)) // late, after Forget
	if s, ok := m.Summary(7); ok {
		t.Errorf("state for a forgotten user came back: %+v", s)
	}
	if got := testutil.ToFloat64(reportsDropped.WithLabelValues("test-known")); got != 1 {
		t.Errorf("%v reports counted dropped, want the late one", got)
	}
}

// docs/pipeline.md, "Damped, staggered refreshes".
func TestRefreshWait(t *testing.T) {
	cfg := Config{Refresh: 2 * time.Second, MaxRefresh: 32 * time.Second}
	for _, tc := range []struct {
		name      string
		cfg       Config
		user      uint32
		refreshes int
		want      time.Duration
	}{
		{"the first refresh of a suspension waits Refresh, whoever the user", cfg, 7, 0, 2 * time.Second},
		// Knuth's hash of user 0 is 0: no stagger.
		{"each refresh doubles the next wait", cfg, 0, 1, 4 * time.Second},
		{"the doubling stops at MaxRefresh", cfg, 0, 9, 32 * time.Second},
		// 1 × 2654435761 >> 29 = 4: a stretch of 20/16.
		{"user 1's waits are stretched by a quarter", cfg, 1, 2, 10 * time.Second},
		// 2 × 2654435761 mod 2^32 = 1013904226, >> 29 = 1: 17/16.
		{"user 2's by a sixteenth", cfg, 2, 5, 34 * time.Second},
		{"without MaxRefresh every refresh waits Refresh", Config{Refresh: 2 * time.Second}, 1, 5, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RefreshWait(tc.cfg, tc.user, tc.refreshes); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A suspended user whose own bulk download makes whichever access it is on the slower one (its
// queue goes where it goes) has its frozen choice contradicted again after every refresh. The
// waits double from 2 s to 32 s, stretched by at most half: in the first minute at most 2 + 4
// + 8 + 16 s (× 1.5 from the second) fit, 4 moves; in the second at most two.
func TestRefreshesOfASelfLoadedUserAreDamped(t *testing.T) {
	cfg := DefaultConfig()
	for _, user := range []uint32{0, 1, 2, 3, 7, 1000} {
		st := UserState{Guarded: true, Suspended: true, SuspendedAt: t0, Up: [2]bool{true, true}, RTT: [2]time.Duration{20 * time.Millisecond, 20 * time.Millisecond},
			SRTT: [2]time.Duration{80 * time.Millisecond, 20 * time.Millisecond}, Seen: [2]bool{true, true}, LossKnown: [2]bool{true, true},
			Active: contract.Access3GPP, Frozen: contract.Access3GPP}
		var moves []time.Duration
		for at := 100 * time.Millisecond; at <= 120*time.Second; at += 100 * time.Millisecond {
			busy, idle := st.Frozen, st.Frozen.Other()
			for _, r := range []Report{rtt(busy, 80), rtt(idle, 20)} {
				r.User, r.Suspended = user, true
				if d := Observe(&st, r, t0.Add(at), cfg); len(d.Writes) > 0 {
					moves = append(moves, at)
				}
			}
		}
		first, second := 0, 0
		for _, m := range moves {
			if m <= time.Minute {
				first++
			} else {
				second++
			}
		}
		if first > 4 || second > 2 || first < 2 {
			t.Errorf("user %d moved at %v: %d in the first minute, %d in the second; want 2..4 and at most 2", user, moves, first, second)
		}
	}
}
