package pathmon

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/junction-atsss/junction/internal/contract"
)

// Actuator writes the registers path monitoring owns on one device.
type Actuator interface {
	// SetSuspended writes path_updates_suspended[user].
	SetSuspended(ctx context.Context, user uint32, suspended bool) error
	// WriteRTT writes rtt_3gpp[user] or rtt_non3gpp[user] (0: unavailable).
	WriteRTT(ctx context.Context, user uint32, access contract.Access, value uint32) error
	// WriteLoss writes loss_3gpp[user] or loss_non3gpp[user] (percent).
	WriteLoss(ctx context.Context, user uint32, access contract.Access, percent uint8) error
}

// Summary is a user's paths as the ATSSSSession status shows them.
type Summary struct {
	Active     contract.Access
	Up         [2]bool
	Seen       [2]bool
	RTT        [2]time.Duration
	Suspended  bool
	LastSwitch time.Time
}

// Path returns the availability and last RTT of one access, and whether any report about it
// arrived.
func (s Summary) Path(a contract.Access) (up bool, rtt time.Duration, seen bool) {
	if !a.Valid() {
		return false, 0, false
	}
	return s.Up[slot(a)], s.RTT[slot(a)], s.Seen[slot(a)]
}

// Monitor consumes one UPF's probe reports. Create it with NewMonitor, feed it with Report
// (from the digest loop) and run it with Run.
type Monitor struct {
	upf    string
	cfg    Config
	act    Actuator
	notify func(users []uint32)
	every  time.Duration
	now    func() time.Time
	log    logr.Logger
	known  func(user uint32) bool

	in chan Report

	mu        sync.Mutex
	users     map[uint32]*UserState
	guarded   map[uint32]bool // SetGuarded's word, kept for users with no report yet
	suspended map[uint32]struct{}
	dirty     map[uint32]struct{}
}

// Options configure a Monitor.
type Options struct {
	// UPF names the device in metrics and logs.
	UPF    string
	Config Config
	Act    Actuator
	// Notify receives the users whose summary changed, at most once per Interval, so that the
	// status of their sessions is refreshed at a bounded rate (never once per probe).
	Notify   func(users []uint32)
	Interval time.Duration // default 10s
	Queue    int           // reports buffered between the digest loop and Run; default 4096
	Now      func() time.Time
	Log      logr.Logger
	// Known says whether a user index belongs to a session now; reports about others (late
	// digests of a user just forgotten) are dropped and counted, so the user map holds only
	// users that exist. Default: every user is known.
	Known func(user uint32) bool
}

// NewMonitor returns a monitor with no users.
func NewMonitor(o Options) *Monitor {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Config == (Config{}) {
		o.Config = DefaultConfig()
	}
	if o.Notify == nil {
		o.Notify = func([]uint32) {}
	}
	if o.Known == nil {
		o.Known = func(uint32) bool { return true }
	}
	return &Monitor{
		upf: o.UPF, cfg: o.Config, act: o.Act, notify: o.Notify, every: o.Interval, now: o.Now, log: o.Log, known: o.Known,
		in: make(chan Report, o.Queue), users: map[uint32]*UserState{}, guarded: map[uint32]bool{},
		suspended: map[uint32]struct{}{}, dirty: map[uint32]struct{}{},
	}
}

// Report queues one report without blocking; it is dropped (and counted) when the queue is full.
func (m *Monitor) Report(r Report) {
	select {
	case m.in <- r:
	default:
		reportsDropped.WithLabelValues(m.upf).Inc()
	}
}

// Dropped counts a digest message that could not be decoded.
func (m *Monitor) Dropped() { reportsDropped.WithLabelValues(m.upf).Inc() }

// Run handles reports, resumes settled users and hands out changed summaries until ctx ends.
func (m *Monitor) Run(ctx context.Context) error {
	defer forgetMetrics(m.upf)
	tick := time.NewTicker(time.Second) // resumption resolution: settle periods are tens of seconds
	defer tick.Stop()
	flush := time.NewTicker(m.every)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-m.in:
			m.Observe(ctx, r, m.now())
		case <-tick.C:
			m.Tick(ctx, m.now())
		case <-flush.C:
			m.Flush()
		}
	}
}

// Observe handles one report at time now (Run calls it; tests call it with their own clock).
func (m *Monitor) Observe(ctx context.Context, r Report, now time.Time) {
	reportsTotal.WithLabelValues(m.upf, r.Kind.String()).Inc()
	if r.Kind == contract.ReportRTT {
		rttSeconds.WithLabelValues(m.upf, r.Access.Label()).Observe(r.RTT.Seconds())
	}
	m.mu.Lock()
	st := m.users[r.User]
	if st == nil {
		if !m.known(r.User) {
			m.mu.Unlock()
			reportsDropped.WithLabelValues(m.upf).Inc()
			return
		}
		st = &UserState{Guarded: m.guarded[r.User]}
		m.users[r.User] = st
	}
	d := Observe(st, r, now, m.cfg)
	m.record(r.User, st, d)
	m.mu.Unlock()
	m.carryOut(ctx, r.User, d)
}

// SetGuarded says whether the user's steering reads the RTT comparison, the only case in which
// its flip-flops suspend its path updates (UserState.Guarded); the operator calls it whenever
// the user's sessions or their policies change. A suspended user that is no longer guarded is
// resumed.
func (m *Monitor) SetGuarded(ctx context.Context, user uint32, guarded bool) {
	m.mu.Lock()
	if m.guarded[user] == guarded && (m.users[user] == nil || m.users[user].Guarded == guarded) {
		m.mu.Unlock()
		return
	}
	if guarded {
		m.guarded[user] = true
	} else {
		delete(m.guarded, user)
	}
	st := m.users[user]
	if st == nil {
		m.mu.Unlock()
		return
	}
	d := SetGuarded(st, guarded, m.now())
	m.record(user, st, d)
	m.mu.Unlock()
	m.carryOut(ctx, user, d)
}

// Tick resumes users whose paths have settled.
func (m *Monitor) Tick(ctx context.Context, now time.Time) {
	type todo struct {
		user uint32
		d    Decision
	}
	var do []todo
	m.mu.Lock()
	for u := range m.suspended {
		st := m.users[u]
		if st == nil {
			delete(m.suspended, u)
			continue
		}
		if d := Tick(st, now, m.cfg); d.Resume || d.Changed {
			m.record(u, st, d)
			do = append(do, todo{u, d})
		}
	}
	m.mu.Unlock()
	for _, t := range do {
		m.carryOut(ctx, t.user, t.d)
	}
}

// Flush hands the users whose summary changed since the last flush to Notify.
func (m *Monitor) Flush() {
	m.mu.Lock()
	if len(m.dirty) == 0 {
		m.mu.Unlock()
		return
	}
	users := make([]uint32, 0, len(m.dirty))
	for u := range m.dirty {
		users = append(users, u)
	}
	clear(m.dirty)
	m.mu.Unlock()
	sort.Slice(users, func(i, j int) bool { return users[i] < users[j] })
	m.notify(users)
}

// record updates the bookkeeping of a decision; m.mu is held.
func (m *Monitor) record(user uint32, st *UserState, d Decision) {
	if d.Switched {
		switchesTotal.WithLabelValues(m.upf).Inc()
	}
	if d.Suspend {
		if _, was := m.suspended[user]; !was {
			suspensionsTotal.WithLabelValues(m.upf).Inc()
		}
	}
	if st.Suspended {
		m.suspended[user] = struct{}{}
	} else {
		delete(m.suspended, user)
	}
	usersSuspended.WithLabelValues(m.upf).Set(float64(len(m.suspended)))
	if d.Changed {
		m.dirty[user] = struct{}{}
	}
}

// carryOut writes what a decision asks for; failures are logged and counted (the next report
// or tick decides again).
func (m *Monitor) carryOut(ctx context.Context, user uint32, d Decision) {
	if m.act == nil {
		return
	}
	if d.Suspend {
		m.log.Info("Suspending path updates of a flip-flopping user", "user", user)
		if err := m.act.SetSuspended(ctx, user, true); err != nil {
			m.fail(err, "write path_updates_suspended", user)
		}
	}
	for _, w := range d.Writes {
		var err error
		if w.Loss {
			err = m.act.WriteLoss(ctx, user, w.Access, uint8(w.Value))
		} else {
			err = m.act.WriteRTT(ctx, user, w.Access, w.Value)
		}
		if err != nil {
			m.fail(err, "write path state", user)
		}
	}
	if d.Resume {
		m.log.Info("Resuming path updates of a settled user", "user", user)
		if err := m.act.SetSuspended(ctx, user, false); err != nil {
			m.fail(err, "write path_updates_suspended", user)
		}
	}
}

func (m *Monitor) fail(err error, what string, user uint32) {
	actuationErrors.WithLabelValues(m.upf).Inc()
	m.log.Error(err, "Path monitoring write failed", "write", what, "user", user)
}

// Summary returns the user's paths; false when no report has arrived for the user.
func (m *Monitor) Summary(user uint32) (Summary, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.users[user]
	if st == nil {
		return Summary{}, false
	}
	return Summary{Active: st.Active, Up: st.Up, Seen: st.Seen, RTT: st.RTT, Suspended: st.Suspended, LastSwitch: st.LastSwitch}, true
}

// Forget drops a user whose index was freed (its last session is gone). A suspension still on
// the device is left to the next owner of the index: its first report adopts it.
func (m *Monitor) Forget(user uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, user)
	delete(m.guarded, user)
	delete(m.suspended, user)
	delete(m.dirty, user)
	usersSuspended.WithLabelValues(m.upf).Set(float64(len(m.suspended)))
}
