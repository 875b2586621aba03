package pathmon

import (
	"time"

	"github.com/junction-atsss/junction/internal/contract"
)

// Config tunes flip-flop detection.
type Config struct {
	// MaxSwitches is how many active-access changes within Window are tolerated; one more
	// suspends the user's in-data-plane path updates.
	MaxSwitches int
	// Window is the span over which switches are counted.
	Window time.Duration
	// Settle is how long the would-be active access must stay the same before updates resume.
	Settle time.Duration
	// Reassert is how long after suspending a report may still say "not suspended" (digests
	// already in flight) before the suspension is written again (the device lost it, e.g. it
	// restarted).
	Reassert time.Duration
	// Refresh is how long the smoothed RTTs must contradict a suspended user's frozen choice
	// before it is frozen anew at them: a damped switch, at most one per Refresh, rather than
	// none until the paths settle (0: never).
	Refresh time.Duration
	// MaxRefresh bounds the damping of refreshes: each refresh of a suspension doubles the
	// contradiction the next one needs, from Refresh up to MaxRefresh, and, from the second
	// refresh on, stretches it by a per-user factor in [1, 1.5) so that users that share a cell,
	// and were suspended together, do not all move together (0: every refresh after Refresh).
	// A user that has not been refreshed for twice MaxRefresh starts from Refresh again.
	MaxRefresh time.Duration
}

// DefaultConfig: a UE probes each leg once a second while idle, so 4 switches in 30 s is a path
// that changes its mind every few probes. While data flows it probes every 100 ms, and a
// download whose queue drives the RTTs across each other gets there within a second: the frozen
// RTTs then hold smallest-delay on one access (autonomous load balance follows the UE's share,
// which a suspension does not freeze: docs/pipeline.md). A minute of calm is enough to
// trust the path again. Two seconds of smoothed RTTs that disagree with the frozen choice (some
// 20 probes while data flows, each folded in at 1/8) is a lasting change, not the flip-flop: the
// choice follows it. A bulk download makes its own access look the slower one wherever it is
// (its queue is where it is), so such a user would move every 2 s: the waits double to 32 s
// (docs/pipeline.md, "Damped, staggered refreshes"), a few moves a minute at most.
func DefaultConfig() Config {
	return Config{MaxSwitches: 4, Window: 30 * time.Second, Settle: 60 * time.Second, Reassert: 5 * time.Second, Refresh: 2 * time.Second, MaxRefresh: 32 * time.Second}
}

// RefreshWait is how long the smoothed RTTs must contradict the frozen choice of a suspended
// user before its next refresh, after refreshes refreshes of its suspension: Refresh for the
// first; then doubled per refresh up to MaxRefresh and stretched by the user's stagger,
// (16 + k)/16 with k in 0..7 from a hash of the user index.
func RefreshWait(cfg Config, user uint32, refreshes int) time.Duration {
	if refreshes == 0 || cfg.MaxRefresh <= cfg.Refresh {
		return cfg.Refresh
	}
	d := cfg.MaxRefresh
	if refreshes < 16 && cfg.Refresh<<refreshes < cfg.MaxRefresh {
		d = cfg.Refresh << refreshes
	}
	k := time.Duration(user*2654435761>>29) & 7 // Knuth's multiplicative hash, top 3 bits
	return d * (16 + k) / 16
}

// UserState is what the operator knows about one user's two paths. The zero value is a user
// with no report yet.
type UserState struct {
	// RTT is the last RTT per access (index slot(Access)); Up says the access is available.
	RTT [2]time.Duration
	Up  [2]bool
	// SRTT is each access's smoothed RTT (an EWMA of its reports, gain 1/8 as TCP's SRTT):
	// what a suspension freezes the RTTs at.
	SRTT [2]time.Duration
	// Loss is the loss per access (percent) as the device holds it, where LossKnown.
	Loss      [2]uint8
	LossKnown [2]bool
	// Seen says a report arrived for the access (an access never reported is not "down").
	Seen [2]bool
	// Active is the access smallest-delay steering would pick now (contract.AccessNone: neither is up).
	Active contract.Access
	// LastSwitch is when Active last changed from one access to another.
	LastSwitch time.Time
	// Switches are the times of Active's changes within the current window.
	Switches []time.Time
	// Suspended says the operator has suspended the data plane's path updates for the user;
	// SuspendedAt is when, LastChange the last time Active changed (or suspension began).
	Suspended   bool
	SuspendedAt time.Time
	LastChange  time.Time
	// Frozen is the access the frozen RTTs choose; Contradicted is since when the smoothed RTTs
	// have chosen another (zero: they agree). Refreshes counts the refreshes of this
	// suspension (RefreshWait), LastRefresh is when the last was.
	Frozen       contract.Access
	Contradicted time.Time
	Refreshes    int
	LastRefresh  time.Time
	// Guarded says one of the user's steering modes reads the RTT comparison
	// (desired.Steering.ReadsRTTComparison): only then do flip-flops count toward a suspension.
	// An unguarded user is never suspended; a suspension the device holds for it is lifted.
	Guarded bool
	// Lifted is when a suspension the device held for an unguarded user was last lifted.
	Lifted time.Time
}

// PathWrite is a path-state register write the operator must do itself while the user's
// in-data-plane updates are suspended: link notifications must still take effect, and the loss
// keeps following the reports (the RTTs stay frozen: that is what stops the flip-flop).
type PathWrite struct {
	Access contract.Access
	// Loss says the register is loss_<access> (Value in percent); otherwise rtt_<access> (Value
	// 0 unavailable, otherwise the RTT in microseconds).
	Loss  bool
	Value uint32
}

// Decision is what a report or the passing of time asks the operator to do.
type Decision struct {
	// Switched: the active access changed (count it, refresh the status summary).
	Switched bool
	// Suspend / Resume: write path_updates_suspended[user] = 1 / 0.
	Suspend, Resume bool
	// Writes are path-state writes that the suspended data plane would have done, and the
	// smoothed RTTs a suspension freezes (on suspending, and on a refresh).
	Writes []PathWrite
	// Changed: the summary differs from before (the status should be refreshed).
	Changed bool
}

// ActiveAccess is the access smallest-delay steering picks from a user's path state: the
// available access with the smaller RTT, a tie going to 3GPP (docs/pipeline.md). It is the
// access whose changes the detector counts, for a user whose modes read the RTT comparison
// (UserState.Guarded): it is the one that moves when the measured paths compete.
func ActiveAccess(up [2]bool, rtt [2]time.Duration) contract.Access {
	switch {
	case up[0] && up[1]:
		if rtt[1] < rtt[0] {
			return contract.AccessNon3GPP
		}
		return contract.Access3GPP
	case up[0]:
		return contract.Access3GPP
	case up[1]:
		return contract.AccessNon3GPP
	}
	return contract.AccessNone
}

// Observe applies one report to the user's state and decides what to do. It never blocks and
// does no I/O.
func Observe(st *UserState, r Report, now time.Time, cfg Config) Decision {
	var d Decision
	if !r.Access.Valid() {
		return d
	}
	i := slot(r.Access)
	before := *st
	st.Seen[i] = true
	switch r.Kind {
	case contract.ReportRTT:
		wasUp := st.Up[i]
		st.RTT[i], st.Up[i] = atLeastMicro(r.RTT), true
		smooth(st, i)
		if st.Suspended && !wasUp {
			// The access is back without a LINK_UP (lost: it is sent once, on the leg that
			// just recovered): the register still says unavailable, and only the operator
			// writes it until the suspension lifts.
			d.Writes = append(d.Writes, PathWrite{Access: r.Access, Value: micros(st.RTT[i])})
		}
	case contract.ReportLinkDown:
		st.Up[i] = false
		if st.Suspended {
			d.Writes = append(d.Writes, PathWrite{Access: r.Access, Value: 0})
		}
	case contract.ReportLinkUp:
		st.RTT[i], st.Up[i] = atLeastMicro(r.RTT), true
		smooth(st, i)
		if st.Suspended {
			d.Writes = append(d.Writes, PathWrite{Access: r.Access, Value: micros(st.RTT[i])})
		}
	}
	// The data plane wrote the report's loss unless it was suspended; then the operator writes
	// it, when it differs from what the device holds or that is not known (a suspension adopted
	// from an earlier operator).
	if r.Suspended && (r.Loss != st.Loss[i] || !st.LossKnown[i]) {
		d.Writes = append(d.Writes, PathWrite{Access: r.Access, Loss: true, Value: uint32(r.Loss)})
	}
	st.Loss[i], st.LossKnown[i] = r.Loss, true

	switch {
	case r.Suspended && !st.Suspended && !st.Guarded:
		// The device holds a suspension for a user no flip-flop can harm (an earlier operator
		// decided it, or the user's modes changed): lift it, once per Reassert while reports
		// decided before the write are still in flight.
		if st.Lifted.IsZero() || now.Sub(st.Lifted) >= cfg.Reassert {
			d.Resume, d.Changed = true, true
			st.Lifted = now
		}
	case r.Suspended && !st.Suspended:
		// The device holds a suspension this operator did not decide (an earlier operator
		// instance did): adopt it, so that it is lifted once the paths settle.
		st.Suspended, st.SuspendedAt, st.LastChange = true, now, now
		d.Changed = true
	case !r.Suspended && st.Suspended && now.Sub(st.SuspendedAt) >= cfg.Reassert:
		d.Suspend = true
		st.SuspendedAt = now
	}

	active := ActiveAccess(st.Up, st.RTT)
	if active != st.Active {
		if st.Active != contract.AccessNone && active != contract.AccessNone {
			d.Switched = true
			st.LastSwitch = now
			st.Switches = append(st.Switches, now)
		}
		st.Active = active
		st.LastChange = now
	}
	st.Switches = prune(st.Switches, now.Add(-cfg.Window))
	if st.Guarded && !st.Suspended && len(st.Switches) > cfg.MaxSwitches {
		st.Suspended, st.SuspendedAt, st.Refreshes = true, now, 0
		d.Suspend = true
	}
	switch smoothed := ActiveAccess(st.Up, st.SRTT); {
	case d.Suspend:
		// Freeze the available accesses at their smoothed RTTs, not wherever the last samples
		// of the flip-flop left them: the access that is faster on the whole keeps the traffic.
		d.Writes = append(d.Writes, freeze(st, smoothed)...)
	case !st.Suspended || smoothed == st.Frozen || cfg.Refresh <= 0:
		st.Contradicted = time.Time{}
	case st.Contradicted.IsZero():
		st.Contradicted = now
	case now.Sub(st.Contradicted) >= RefreshWait(cfg, r.User, st.refreshesAt(now, cfg)):
		d.Writes = append(d.Writes, freeze(st, smoothed)...)
		d.Changed = true
		st.Refreshes, st.LastRefresh = st.refreshesAt(now, cfg)+1, now
	}
	d.Changed = d.Changed || d.Suspend || st.Active != before.Active || st.Up != before.Up || st.RTT != before.RTT
	return d
}

// SetGuarded records whether the user's steering reads the RTT comparison. A suspended user
// that no longer does is resumed at once: its modes gain nothing from frozen RTTs.
func SetGuarded(st *UserState, guarded bool, now time.Time) Decision {
	var d Decision
	st.Guarded = guarded
	if !guarded && st.Suspended {
		st.Suspended, st.Switches, st.Contradicted = false, nil, time.Time{}
		st.Lifted = now
		d.Resume, d.Changed = true, true
	}
	return d
}

// refreshesAt is the refreshes that count toward the next wait at now: none once the last is
// twice MaxRefresh old.
func (st *UserState) refreshesAt(now time.Time, cfg Config) int {
	if st.Refreshes > 0 && now.Sub(st.LastRefresh) >= 2*cfg.MaxRefresh {
		return 0
	}
	return st.Refreshes
}

// Tick decides what the passing of time asks for: resume a suspended user whose would-be
// active access has not changed for cfg.Settle.
func Tick(st *UserState, now time.Time, cfg Config) Decision {
	var d Decision
	st.Switches = prune(st.Switches, now.Add(-cfg.Window))
	if st.Suspended && now.Sub(st.LastChange) >= cfg.Settle {
		st.Suspended = false
		st.Switches = nil
		d.Resume, d.Changed = true, true
	}
	return d
}

// prune drops the times before since (the slice is in time order) without reallocating.
func prune(ts []time.Time, since time.Time) []time.Time {
	n := 0
	for n < len(ts) && ts[n].Before(since) {
		n++
	}
	if n == 0 {
		return ts
	}
	return append(ts[:0], ts[n:]...)
}

// freeze returns the writes of the available accesses' smoothed RTTs, which choose access.
func freeze(st *UserState, access contract.Access) []PathWrite {
	st.Frozen, st.Contradicted = access, time.Time{}
	var w []PathWrite
	for j, a := range [2]contract.Access{contract.Access3GPP, contract.AccessNon3GPP} {
		if st.Up[j] && st.SRTT[j] > 0 {
			w = append(w, PathWrite{Access: a, Value: micros(st.SRTT[j])})
		}
	}
	return w
}

// smooth folds access slot i's new RTT into its SRTT (the first sample starts it).
func smooth(st *UserState, i int) {
	if st.SRTT[i] == 0 {
		st.SRTT[i] = st.RTT[i]
		return
	}
	st.SRTT[i] += (st.RTT[i] - st.SRTT[i]) / 8
}

// atLeastMicro keeps a measured RTT nonzero: 0 means "unavailable" in the registers.
func atLeastMicro(d time.Duration) time.Duration {
	if d < time.Microsecond {
		return time.Microsecond
	}
	return d
}

func micros(d time.Duration) uint32 {
	us := d / time.Microsecond
	switch {
	case us < 1:
		return 1
	case us > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(us)
}
