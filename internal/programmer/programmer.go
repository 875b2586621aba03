// Package programmer writes one UPF's table entries and registers: the desired state by owner
// (a session, a policy, the UPF itself), a mirror of the device, rounds that write the
// difference, replays onto a new primary stream, and each table's room. The session, policy
// and UPF controllers and the N4 endpoint all feed it; it is the device's one writer.
package programmer

// The programmer of one UPF. Its way:
//
//	reconcile ─> Apply(owner → entries) ─> desired (by owner) ─> dirty ─┐
//	                                                                    ├─> run loop: a round at once,
//	reconcile ─> Apply(...) ───────────────────────────────────────────-┘   or a window after the last
//	                                                                        round's start:
//	        plan (diff against the mirror; owners whose inserts do not fit are left out whole)
//	        ─> Write (deletes, then registers + inserts/modifies)
//	        ─> mirror updated from the per-update results ─> each waiter gets its owners' errors
//	new primary generation ─> replay: read every table back, mirror := what is there,
//	        write the difference to the whole desired state (nothing when nothing changed)
//
// One goroutine (run) does every device write, so plans never race each other; reconciles of
// many objects share WriteRequests. Built and mirrored entries are kept encoded (entry.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"

	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// Device is what the programmer needs from a upfclient.Device.
type Device interface {
	Schema() *upfclient.Schema
	Write(ctx context.Context, updates []*p4v1.Update) []error
	ReadTable(ctx context.Context, table string) ([]*p4v1.TableEntry, error)
}

var (
	// ErrNotSynced: the device is not primary or not replayed yet. The desired state is kept
	// and written by the replay of the next primary generation.
	ErrNotSynced = errors.New("the UPF is not connected as primary")
	// ErrStopped: the UPF's runtime was stopped.
	ErrStopped = errors.New("the UPF runtime stopped")
)

// TableFullError says an object's entries do not fit in Table: the room its P4Info size leaves
// is less than they need (none of them was written), or the device refused one
// (RESOURCE_EXHAUSTED; those it took were rolled back).
type TableFullError struct {
	Table string
	Err   error
}

func (e *TableFullError) Error() string { return fmt.Sprintf("table %s is full: %v", e.Table, e.Err) }
func (e *TableFullError) Unwrap() error { return e.Err }

// PathStateError says the device refused to reset a user's path state (a register write), so
// the user may inherit an earlier user's path state.
type PathStateError struct {
	Register string
	User     uint32
	Err      error
}

func (e *PathStateError) Error() string {
	return fmt.Sprintf("the device refused to reset %s[%d] for this new user: %v", e.Register, e.User, e.Err)
}
func (e *PathStateError) Unwrap() error { return e.Err }

// ConflictError says an entry is already owned by another object (e.g. two sessions with one
// session address on one UPF).
type ConflictError struct {
	Table, Owner string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("a %s entry with the same key belongs to %s", e.Table, e.Owner)
}

// Change sets everything one owner wants on the device; nil Entries and Meters remove the owner.
type Change struct {
	Owner   string
	Entries []desired.Entry
	Meters  []desired.MeterCell
}

// builtEntry is a desired entry resolved against the device's P4Info. Both are kept as
// encodings without pointers (entry.go): the collector walks none of their parts.
type builtEntry struct {
	table string // the desired entry's
	spec  string // the desired entry's binary form (desired.Entry.AppendBinary)
	built entry  // valid if key != ""
	key   string // upfclient.EntryKey of the built entry; "" before it is built
	err   error  // the entry cannot be built (a name or value the P4Info refuses)
	// fresh is the entry as built, kept for its first write (which then decodes nothing);
	// planning drops it, and what stays is the encoding (entry.go).
	fresh *p4v1.TableEntry
}

type waiter struct {
	owners map[string]struct{}
	errs   map[string]error
	done   chan struct{}
}

type progMode int

const (
	modeDown      progMode = iota // not primary: Apply records and returns ErrNotSynced
	modeReplaying                 // a replay is due or running: Apply queues behind it
	modeSynced                    // the mirror is the device: Apply queues for the next round
)

// Programmer keeps one UPF's desired entries by owner and a mirror of its device, and is the
// device's one writer: the session, policy and UPF controllers and the N4 endpoint all feed it.
type Programmer struct {
	dev    Device
	log    logr.Logger
	window time.Duration
	// OnRoom is told the owners that failed for a full table once entries of that table were
	// deleted, and the owners refused for a conflict once the key they wanted was released.
	OnRoom   func(owners []string)
	OnSynced func()
	// OnStatus is told when what Status shows changed outside a replay: table usage, refused
	// deletes, refused path-state resets. It only queues (the UPF's status write is rate-limited).
	OnStatus func()
	// OnReplayFailed is told a generation whose replay failed (to set it up again later).
	OnReplayFailed func(gen uint64)
	// Extras puts the device's other state in place (the digest configuration and the clone
	// session: upfRuntime.ensureExtras) and reports what failed. The programmer runs it first in
	// every replay and again every SetupRetry while it fails, between its rounds: it is the
	// device's one writer.
	Extras func(ctx context.Context) error
	// extrasRetry is the wait before running a failed extras again (default SetupRetry).
	extrasRetry time.Duration

	kick     chan struct{}
	replayCh chan uint64

	mu     sync.Mutex
	mode   progMode
	gen    uint64 // the generation being replayed or synced
	sch    *upfclient.Schema
	owners map[string]map[string]*builtEntry // owner → desired.Entry.Key() → entry
	claims map[string]string                 // desired key → owner
	want   map[string]*builtEntry            // upfclient.EntryKey → the entry an owner wants
	mirror map[string]entry                  // upfclient.EntryKey → entry on the device
	legs   map[uint32]legCount               // users' legs, from the mirror's sessions entries
	// usageRefs counts the mirror's entries naming each usage cell; zeroPending are the cells
	// to zero before entries start counting into them (usageZeroLocked), with their owner.
	usageRefs   map[cell]int
	zeroPending map[cell]string
	// Meter cells (meter.go): what owners want, the cells of each owner, what the device holds
	// as far as this programmer wrote it, and the cells to reset, with the owner to tell.
	meterWant   map[meterKey]meterWant
	ownerMeters map[string][]meterKey
	meterOn     map[meterKey]desired.MeterConfig
	meterReset  map[meterKey]string
	// used are the user indices that have had a sessions entry since this programmer saw the
	// pipeline pushed (usedKnown); their registers may hold state. counted are the usage cells
	// an entry has named since then; the others still hold the push's zeros. Without usedKnown
	// (the pipeline was there already) every index and cell may hold something.
	used      map[uint32]struct{}
	counted   map[cell]struct{}
	usedKnown bool
	// resetPending are users whose path-state reset the device refused, with the owner told;
	// resetErr the last refusal.
	resetPending map[uint32]string
	resetErr     error
	usage        map[string]int        // table → entries on the device
	dirty        map[string]struct{}   // owners changed since the last round
	stale        map[string]staleEntry // keys owners dropped, to delete if on the device
	// staleRefused are the entries nobody wants whose delete the device refused (kept in stale
	// and retried every staleRetry); staleErr the last refusal.
	staleRefused map[string]struct{}
	staleErr     error
	staleArmed   bool // a retry of stale deletes is scheduled
	waiters      []*waiter
	scratch      []byte // for desired entries' binary forms
	// registers are path monitoring's register writes for the next round (WriteRegister).
	registers []registerRequest
	failed    map[string]error  // owner → why its last write failed
	full      map[string]string // owner → the table that was full
	// blocked are the owners refused a key another owner claims (ConflictError), woken through
	// OnRoom as soon as the claim is released; freed collects them, and owners whose refused
	// deletes went through, until the lock is released.
	blocked   map[string]map[string]struct{} // desired key → owners
	freed     []string
	lastSync  time.Time
	writes    uint64 // updates written since start (tests and status)
	replayErr error
}

// SetupRetry is the wait before a failed device setup is tried again: the programmer's Extras,
// and the operator's pipeline setup on the same stream.
const SetupRetry = 5 * time.Second

// New makes the programmer of device dev; its rounds start at least window apart.
// Set the On* hooks and Extras before Run.
func New(dev Device, log logr.Logger, window time.Duration) *Programmer {
	return &Programmer{
		dev: dev, log: log, window: window, OnRoom: func([]string) {}, OnSynced: func() {}, OnStatus: func() {}, OnReplayFailed: func(uint64) {},
		kick: make(chan struct{}, 1), replayCh: make(chan uint64, 1),
		owners: map[string]map[string]*builtEntry{}, claims: map[string]string{}, want: map[string]*builtEntry{},
		mirror: map[string]entry{}, legs: map[uint32]legCount{}, usage: map[string]int{},
		used: map[uint32]struct{}{}, counted: map[cell]struct{}{}, resetPending: map[uint32]string{}, usageRefs: map[cell]int{}, zeroPending: map[cell]string{},
		dirty: map[string]struct{}{}, stale: map[string]staleEntry{}, staleRefused: map[string]struct{}{},
		failed: map[string]error{}, full: map[string]string{}, blocked: map[string]map[string]struct{}{},
		meterWant: map[meterKey]meterWant{}, ownerMeters: map[string][]meterKey{}, meterOn: map[meterKey]desired.MeterConfig{}, meterReset: map[meterKey]string{},
	}
}

// Seed records owners' desired entries without writing (the state restored at start, which the
// first replay writes). It fails for an entry another owner claims.
func (p *Programmer) Seed(changes ...Change) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, c := range changes {
		if _, err := p.setLocked(c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Owner, err))
		}
	}
	return errors.Join(errs...)
}

// Set records owners' desired entries and schedules their writing without waiting (for
// changes that must be ordered against allocations, made under the caller's lock).
func (p *Programmer) Set(changes ...Change) {
	p.mu.Lock()
	for _, c := range changes {
		if _, err := p.setLocked(c); err != nil {
			p.log.Error(err, "Desired entries not recorded", "owner", c.Owner)
			continue
		}
		if p.mode != modeDown {
			p.dirty[c.Owner] = struct{}{}
		}
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Apply makes the device hold exactly the given entries for each owner and returns per owner
// nil or why it does not (ErrNotSynced, *TableFullError, *ConflictError, a device error). It
// waits for the round that writes the change; with nothing to write it returns at once.
func (p *Programmer) Apply(ctx context.Context, changes ...Change) (map[string]error, error) {
	out := make(map[string]error, len(changes))
	w := &waiter{owners: map[string]struct{}{}, done: make(chan struct{})}
	p.mu.Lock()
	for _, c := range changes {
		dropped, err := p.setLocked(c)
		if err != nil {
			out[c.Owner] = err
			continue
		}
		if p.mode == modeSynced && !dropped && p.inSyncLocked(c.Owner) {
			out[c.Owner] = nil
			continue
		}
		if p.mode == modeDown {
			out[c.Owner] = ErrNotSynced
			continue
		}
		p.dirty[c.Owner] = struct{}{}
		w.owners[c.Owner] = struct{}{}
	}
	freed := p.freed
	p.freed = nil
	if len(w.owners) > 0 {
		p.waiters = append(p.waiters, w)
	}
	p.mu.Unlock()
	if len(freed) > 0 {
		sort.Strings(freed)
		p.OnRoom(freed) // woken now, as TableFull waiters are, not by a requeue a minute later
	}
	if len(w.owners) == 0 {
		return out, nil
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for o, err := range w.errs {
		out[o] = err
	}
	return out, nil
}

// setLocked replaces an owner's desired entries. Entries it no longer wants (or wants with
// other action data) leave the wanted set; those no longer wanted at all become stale, to be
// deleted. It reports whether any entry was dropped.
func (p *Programmer) setLocked(c Change) (dropped bool, err error) {
	next := make(map[string]*builtEntry, len(c.Entries))
	for _, e := range c.Entries {
		k := e.Key()
		if o, taken := p.claims[k]; taken && o != c.Owner {
			if p.blocked[k] == nil {
				p.blocked[k] = map[string]struct{}{}
			}
			p.blocked[k][c.Owner] = struct{}{}
			return false, &ConflictError{Table: e.Table, Owner: o}
		}
		next[k] = nil
	}
	prev := p.owners[c.Owner]
	for k, be := range prev {
		if _, keep := next[k]; keep {
			continue
		}
		delete(p.claims, k)
		for o := range p.blocked[k] {
			p.freed = append(p.freed, o)
		}
		delete(p.blocked, k)
		p.unwantLocked(be)
		if be.key != "" {
			p.stale[be.key] = staleEntry{be.built, c.Owner}
		}
		dropped = true
	}
	for _, e := range c.Entries {
		k := e.Key()
		old := prev[k]
		p.scratch = e.AppendBinary(p.scratch[:0])
		if old != nil && old.spec == string(p.scratch) {
			next[k] = old
			continue
		}
		if old != nil {
			p.unwantLocked(old)
		}
		be := &builtEntry{table: e.Table, spec: string(p.scratch)}
		p.buildFrom(be, e)
		next[k] = be
		p.claims[k] = c.Owner
	}
	if p.setMetersLocked(c.Owner, c.Meters) {
		dropped = true
	}
	if len(c.Entries) == 0 {
		delete(p.owners, c.Owner)
		delete(p.failed, c.Owner)
		delete(p.full, c.Owner)
	} else {
		p.owners[c.Owner] = next
	}
	return dropped, nil
}

func (p *Programmer) unwantLocked(be *builtEntry) {
	if be.key != "" && p.want[be.key] == be {
		delete(p.want, be.key)
	}
}

// build resolves an entry against the current schema (lazily: before the first connection
// there is none and the replay builds everything).
func (p *Programmer) build(be *builtEntry) {
	e, err := desired.ParseEntry(be.spec)
	if err != nil { // not reached: spec is AppendBinary's
		p.unwantLocked(be)
		be.built, be.key, be.err, be.fresh = entry{}, "", err, nil
		return
	}
	p.buildFrom(be, e)
}

// buildFrom is build with the desired entry at hand.
func (p *Programmer) buildFrom(be *builtEntry, e desired.Entry) {
	if p.sch == nil {
		return
	}
	p.unwantLocked(be)
	te, err := p.sch.Build(e.Client())
	be.built, be.key, be.err, be.fresh = entry{}, "", err, nil
	if err == nil {
		be.built, be.key, be.fresh = packEntry(p.sch, te), upfclient.EntryKey(te), te
		p.want[be.key] = be
	}
}

// inSyncLocked: every entry of the owner is on the device as wanted and nothing it dropped
// waits for deletion.
func (p *Programmer) inSyncLocked(owner string) bool {
	if _, d := p.dirty[owner]; d {
		return false
	}
	if _, f := p.failed[owner]; f {
		return false
	}
	if len(p.owners[owner]) == 0 {
		for _, st := range p.stale { // a removed owner whose entries are still on the device
			if st.owner == owner {
				return false
			}
		}
	}
	for _, be := range p.owners[owner] {
		if be == nil || be.key == "" {
			return false
		}
		have, ok := p.mirror[be.key]
		if !ok || !sameEntry(have, be.built) {
			return false
		}
	}
	return p.metersInSyncLocked(owner)
}

// Down marks the device unreachable: queued and future Applies get ErrNotSynced until the
// next replay.
func (p *Programmer) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == modeDown {
		return
	}
	p.mode = modeDown
	p.releaseWaitersLocked(ErrNotSynced)
}

// registerRequest is one register cell path monitoring wants written, and where its answer goes.
type registerRequest struct {
	u     *p4v1.Update
	name  string
	index uint32
	reply chan error
}

// WriteRegister writes one register cell in the next round, after that round's table writes and
// path-state resets, and returns the device's answer: path monitoring writes the device through
// the programmer like everyone else, so that nothing reaches the device out of order with a
// round or during a replay (one during a replay waits for the round after it). Down:
// ErrNotSynced, nothing written.
func (p *Programmer) WriteRegister(ctx context.Context, name string, index uint32, value uint64) error {
	p.mu.Lock()
	if p.mode == modeDown || p.sch == nil {
		p.mu.Unlock()
		return ErrNotSynced
	}
	u, err := p.sch.RegisterUpdate(name, int64(index), value)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	r := registerRequest{u: u, name: name, index: index, reply: make(chan error, 1)}
	p.registers = append(p.registers, r)
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
	select {
	case err := <-r.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RequestReplay asks the run loop to replay the whole desired state for generation gen (the
// pipeline is in place; pushed: this operator just pushed it, so every register and counter is
// 0). Applies queue behind it.
func (p *Programmer) RequestReplay(gen uint64, pushed bool) {
	p.mu.Lock()
	p.mode, p.gen = modeReplaying, gen
	p.used, p.counted, p.usedKnown = map[uint32]struct{}{}, map[cell]struct{}{}, pushed
	p.mu.Unlock()
	select {
	case <-p.replayCh:
	default:
	}
	p.replayCh <- gen
}

func (p *Programmer) releaseWaitersLocked(err error) {
	for _, r := range p.registers {
		r.reply <- err
	}
	p.registers = nil
	for _, w := range p.waiters {
		w.errs = map[string]error{}
		for o := range w.owners {
			w.errs[o] = err
		}
		close(w.done)
	}
	p.waiters = nil
	clear(p.dirty)
}

// run does every write until ctx ends.
func (p *Programmer) Run(ctx context.Context) {
	defer func() {
		p.mu.Lock()
		p.mode = modeDown
		p.releaseWaitersLocked(ErrStopped)
		p.mu.Unlock()
	}()
	var extrasRetry <-chan time.Time
	var lastRound time.Time // when the last coalesced round started
	retryAfter := p.extrasRetry
	if retryAfter == 0 {
		retryAfter = SetupRetry
	}
	for {
		select {
		case <-ctx.Done():
			return
		case gen := <-p.replayCh:
			extrasRetry = nil
			if !p.replay(ctx, gen) {
				extrasRetry = time.After(retryAfter)
			}
			p.round(ctx) // whatever changed while the replay read the device
		case <-extrasRetry:
			extrasRetry = nil
			p.mu.Lock()
			synced := p.mode == modeSynced
			p.mu.Unlock()
			if synced && p.Extras != nil && p.Extras(ctx) != nil {
				extrasRetry = time.After(retryAfter)
			}
		case <-p.kick:
			// Coalesce: rounds start at least a window apart, and what arrives meanwhile joins the
			// next. A change after a quiet spell is written at once: under load the writes
			// still gather (everything that came during one write goes in the next), and
			// alone a change does not wait out a window for company that is not coming.
			if wait := p.window - time.Since(lastRound); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case gen := <-p.replayCh:
					t.Stop()
					extrasRetry = nil
					if !p.replay(ctx, gen) {
						extrasRetry = time.After(retryAfter)
					}
				case <-t.C:
				}
			}
			lastRound = time.Now()
			p.round(ctx)
		}
	}
}

// sortedKeys returns a map's keys in order, for deterministic writes.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pendingUpdate is one planned write and whom it is for.
type pendingUpdate struct {
	u     *p4v1.Update
	key   string // "" for a path-state register
	ent   entry  // the table entry u writes
	table string
	owner string // for a stale delete, the owner that dropped it ("" found on the device); for a register, the owner of the sessions entry
	stale bool   // a delete of an entry nobody wants
	user  uint32 // a register's user; a usage counter's index
	// counter: a counted cell's zeroing (usageZeroLocked: zero), not a path-state register.
	counter bool
	zero    cell
	// meter: a meter cell's write (meter.go), table its meter, user its index; meterCfg what
	// it configures, nil for a reset.
	meter    bool
	meterCfg *desired.MeterConfig
	// monitor receives the result of a path monitoring register write (not settled here).
	monitor chan error
}

// round writes the difference for every dirty owner.
func (p *Programmer) round(ctx context.Context) {
	p.mu.Lock()
	if p.mode != modeSynced || (len(p.dirty) == 0 && len(p.waiters) == 0 && len(p.stale) == 0 && len(p.registers) == 0 && len(p.zeroPending) == 0 && len(p.meterReset) == 0) {
		p.mu.Unlock()
		return
	}
	owners := p.dirty
	p.dirty = map[string]struct{}{}
	waiters := p.waiters
	p.waiters = nil
	ownerErr := map[string]error{}
	var dels, ups []pendingUpdate
	for _, o := range sortedKeys(owners) {
		for _, k := range sortedKeys(p.owners[o]) {
			be := p.owners[o][k]
			if be.key == "" && be.err == nil {
				p.build(be)
			}
			if be.err != nil {
				ownerErr[o] = be.err
				continue
			}
			if pu, ok := p.planEntryLocked(be, o); ok {
				ups = append(ups, pu)
			}
		}
		delete(p.failed, o)
	}
	for _, key := range sortedKeys(p.stale) {
		st := p.stale[key]
		if _, onDev := p.mirror[key]; onDev && p.want[key] == nil {
			dels = append(dels, pendingUpdate{u: upfclient.Delete(st.ent.tableEntry()), key: key, ent: st.ent, table: p.sch.TableName(st.ent.table), owner: st.owner, stale: true})
		}
	}
	clear(p.stale)
	// Owners whose inserts do not fit are not written at all (capacity.go).
	ups, refused := p.fitLocked(ups, dels)
	p.refuseLocked(refused, ownerErr)
	zeroed := p.usageZeroLocked(ups, dels)
	regs := append(append(p.pathInitLocked(ups, dels), zeroed...), p.meterPlanLocked(sortedKeys(owners), zeroed, ownerErr)...)
	monitored := p.registers
	p.registers = nil
	p.mu.Unlock()

	results := p.write(ctx, dels, regs, ups, monitored)
	p.rollbackFull(ctx, results)

	p.mu.Lock()
	hadRefused, hadResets, usage := len(p.staleRefused) > 0, len(p.resetPending), maps.Clone(p.usage)
	p.settleLocked(results, ownerErr)
	for _, w := range waiters {
		w.errs = map[string]error{}
		for o := range w.owners {
			if _, done := owners[o]; done {
				w.errs[o] = ownerErr[o]
			} else {
				w.errs[o] = ErrNotSynced // dropped by Down before this round
			}
		}
		close(w.done)
	}
	room := append(p.roomAfterLocked(results, refused), p.freed...)
	p.freed = nil
	statusChanged := (len(p.staleRefused) > 0) != hadRefused || len(p.resetPending) != hadResets || !maps.Equal(usage, p.usage)
	p.mu.Unlock()
	if len(room) > 0 {
		p.OnRoom(room)
	}
	if statusChanged {
		p.OnStatus()
	}
}

// planEntryLocked returns the insert or modify that puts be on the device, if one is needed.
func (p *Programmer) planEntryLocked(be *builtEntry, owner string) (pendingUpdate, bool) {
	te := be.fresh
	be.fresh = nil
	have, ok := p.mirror[be.key]
	if ok && sameEntry(have, be.built) {
		return pendingUpdate{}, false
	}
	if te == nil {
		te = be.built.tableEntry()
	}
	write := upfclient.Modify
	if !ok {
		write = upfclient.Insert
	}
	return pendingUpdate{u: write(te), key: be.key, ent: be.built, table: be.table, owner: owner}, true
}

type writeResult struct {
	pu  pendingUpdate
	err error
}

// write sends deletes first (so that they make room), then path-state resets, the inserts and
// modifies, and path monitoring's register writes last (newer than any reset), and returns every
// table or reset update's result; the monitored writes get theirs on their reply channel.
func (p *Programmer) write(ctx context.Context, dels, regs, ups []pendingUpdate, monitored []registerRequest) []writeResult {
	var out []writeResult
	second := append(regs, ups...)
	for _, r := range monitored {
		second = append(second, pendingUpdate{u: r.u, table: r.name, user: r.index, monitor: r.reply})
	}
	for _, batch := range [][]pendingUpdate{dels, second} {
		if len(batch) == 0 {
			continue
		}
		updates := make([]*p4v1.Update, len(batch))
		for i, pu := range batch {
			updates[i] = pu.u
		}
		errs := p.dev.Write(ctx, updates)
		for i, pu := range batch {
			var err error
			if errs != nil {
				err = errs[i]
			}
			if pu.monitor != nil {
				pu.monitor <- err
				continue
			}
			out = append(out, writeResult{pu: pu, err: err})
		}
		p.mu.Lock()
		p.writes += uint64(len(batch))
		p.mu.Unlock()
	}
	return out
}

// settleLocked applies write results to the mirror and the owners' errors.
func (p *Programmer) settleLocked(results []writeResult, ownerErr map[string]error) {
	for _, r := range results {
		pu, err := r.pu, r.err
		if pu.meter {
			p.settleMeterLocked(pu, err, ownerErr)
			continue
		}
		if pu.counter {
			if err == nil {
				delete(p.zeroPending, pu.zero)
				continue
			}
			p.log.Error(err, "Usage cell not zeroed", "counter", pu.table, "index", pu.user)
			if pu.owner != "" {
				err = fmt.Errorf("zeroing %s[%d]: %w", pu.table, pu.user, err)
				if ownerErr[pu.owner] == nil {
					ownerErr[pu.owner] = err
				}
				p.failed[pu.owner] = err
			}
			continue
		}
		if pu.key == "" { // a path-state reset
			if err == nil {
				delete(p.resetPending, pu.user)
				if len(p.resetPending) == 0 {
					p.resetErr = nil
				}
				continue
			}
			p.log.Error(err, "Path state not reset", "register", pu.table, "user", pu.user)
			p.resetPending[pu.user] = pu.owner
			p.resetErr = &PathStateError{Register: pu.table, User: pu.user, Err: err}
			if pu.owner != "" {
				err = &PathStateError{Register: pu.table, User: pu.user, Err: err}
				if ownerErr[pu.owner] == nil {
					ownerErr[pu.owner] = err
				}
				p.failed[pu.owner] = err
			}
			continue
		}
		code := upfclient.Code(err)
		switch pu.u.GetType() {
		case p4v1.Update_DELETE:
			if err == nil || code == codes.NotFound {
				p.delMirrorLocked(pu.key)
				err = nil
			}
		case p4v1.Update_INSERT:
			switch {
			case err == nil:
				p.setMirrorLocked(pu.key, pu.ent)
			case code == codes.AlreadyExists:
				// Someone else wrote it: make the next round modify it.
				p.setMirrorLocked(pu.key, placeholder(pu.ent.table))
			}
		case p4v1.Update_MODIFY:
			switch {
			case err == nil:
				p.setMirrorLocked(pu.key, pu.ent)
			case code == codes.NotFound:
				p.delMirrorLocked(pu.key)
			}
		}
		if err == errRolledBack {
			continue
		}
		if pu.stale {
			p.settleStaleLocked(pu, err)
			if err == nil || pu.owner == "" {
				continue
			}
		} else if err == nil {
			continue
		}
		if code == codes.ResourceExhausted {
			err = &TableFullError{Table: pu.table, Err: err}
			p.full[pu.owner] = pu.table
		} else if code == codes.Unavailable || code == codes.PermissionDenied {
			err = fmt.Errorf("%w: %v", ErrNotSynced, err)
		}
		if ownerErr[pu.owner] == nil {
			ownerErr[pu.owner] = err
		}
		p.failed[pu.owner] = err
	}
}

// AppIDInUse reports whether a session_overrides entry an owner wants, or one the device still
// holds, names application ID id: a policy's ID is freed only once none does, or a new policy
// given the same ID would inherit the old one's overrides.
func (p *Programmer) AppIDInUse(id uint16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, entries := range p.owners {
		for _, be := range entries {
			if be.table != tableOverrides {
				continue
			}
			if be.key != "" {
				if be.built.hasApp && be.built.app == uint64(id) {
					return true
				}
				continue
			}
			e, _ := desired.ParseEntry(be.spec) // not built: no schema yet, or refused by it
			for _, m := range e.Match {
				if m.Field == fieldAppID && bigEndian(m.Value) == uint64(id) {
					return true
				}
			}
		}
	}
	for _, e := range p.mirror {
		if e.hasApp && e.app == uint64(id) {
			return true
		}
	}
	return false
}

func bigEndian(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// staleEntry is an entry its owner dropped ("" for one only the device had), to be deleted.
type staleEntry struct {
	ent   entry
	owner string
}

// staleRetry is the wait before deleting again entries the device refused to delete.
const staleRetry = 5 * time.Second

// settleStaleLocked keeps a refused delete of an entry nobody wants for the next round, and
// schedules that round: the entry may steer traffic nobody asked for, so it is never forgotten.
func (p *Programmer) settleStaleLocked(pu pendingUpdate, err error) {
	if err == nil {
		if _, refused := p.staleRefused[pu.key]; refused {
			delete(p.staleRefused, pu.key)
			if pu.owner != "" {
				p.freed = append(p.freed, pu.owner) // its deletion can finish now
			}
		}
		if len(p.staleRefused) == 0 {
			p.staleErr = nil
		}
		return
	}
	p.log.Error(err, "Entry nobody wants not deleted; retrying", "table", pu.table, "owner", pu.owner)
	if p.want[pu.key] == nil {
		p.stale[pu.key] = staleEntry{pu.ent, pu.owner}
		p.staleRefused[pu.key] = struct{}{}
	}
	p.staleErr = fmt.Errorf("the device refused to delete a %s entry nobody wants: %w", pu.table, err)
	if !p.staleArmed {
		p.staleArmed = true
		time.AfterFunc(staleRetry, func() {
			p.mu.Lock()
			p.staleArmed = false
			p.mu.Unlock()
			select {
			case p.kick <- struct{}{}:
			default:
			}
		})
	}
}

// Status is what the UPF status shows of the programmer.
type Status struct {
	Synced    bool
	LastSync  time.Time
	ReplayErr error
	Usage     map[string]int
	Writes    uint64
	// ResetPending users whose path-state reset the device refused; ResetErr the last refusal.
	ResetPending int
	ResetErr     error
	// StaleErr is the last refused delete of entries nobody wants, while any is pending.
	StaleErr error
}

func (p *Programmer) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := make(map[string]int, len(p.usage))
	for k, v := range p.usage {
		u[k] = v
	}
	var staleErr error
	if len(p.staleRefused) > 0 {
		staleErr = p.staleErr
	}
	return Status{Synced: p.mode == modeSynced, LastSync: p.lastSync, ReplayErr: p.replayErr, Usage: u, Writes: p.writes,
		ResetPending: len(p.resetPending), ResetErr: p.resetErr, StaleErr: staleErr}
}
