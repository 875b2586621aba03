package dataplane

// Typed fast tables, built from P4Runtime entries the p4rt.Server has already validated:
// exact tables are Go maps keyed by uint32/uint64 (small index domains are arrays), routes are
// one map per prefix length searched longest first, and the ternary/range tables
// (applications, filters) are lists sorted by priority and scanned linearly, which is fine for
// the hundreds of entries they hold. Every table keeps its current default action in the same
// typed form, so SetDefaultAction works on all of them.

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/p4bytes"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

type session struct {
	user     uint32
	teid     uint32
	ue3GPP   uint32
	ueNon3GP uint32
	gwN3     uint32 // gateway_non3gpp: the non-3GPP leg's access gateway on N3; 0: plain IP
	teidN3   uint32 // teid_non3gpp: that leg's downlink TEID
	usage    uint32 // usage_idx: the session's uplink_usage / downlink_usage cell
	peer     uint16
	endpoint uint8
}

// uplinkTunnel is decap_gtpu's parameters, or forward_indirect (forward: none of them).
type uplinkTunnel struct {
	access  contract.Access // the leg the TEID belongs to: non-3GPP over N3, or (any other value) 3GPP
	usage   uint32          // a single-access session's usage cell
	forward bool            // forward_indirect: to the controller, which relays the G-PDU
}

// steering is the set_application / override_steering parameters.
type steering struct {
	threshold uint32
	app       uint16
	mode      contract.Mode
	access    contract.Access
	ratio     uint8
	lossLimit uint8 // loss_limit_pct: 0 none
}

type override struct {
	steering
	seqIndex uint32
}

// dlTunnel is encap_gtpu's parameters, or buffer_downlink (buffer: none of them).
type dlTunnel struct {
	teid     uint32
	usage    uint32 // usage_idx
	peer     uint16
	endpoint uint8
	buffer   bool // buffer_downlink: to the controller, which holds the packet
}

type endpoint struct {
	n3, junction uint32
	ok           bool
}

type peer struct {
	addr uint32
	ok   bool
}

type route struct {
	port     uint32
	src, dst [6]byte
}

// exactTable is an exact-match table with its default action's result.
type exactTable[K intKey, V any] struct {
	m      intTable[K, V]
	def    V
	defHit bool // the default action acts like a hit (e.g. a default set_session)
}

func (t *exactTable[K, V]) lookup(k K) (V, bool) {
	if v, ok := t.m.get(k); ok {
		return v, true
	}
	return t.def, t.defHit
}

// lpmTable keeps one map per prefix length; lens lists the lengths in use, longest first.
type lpmTable struct {
	byLen  [33]map[uint32]route
	lens   []uint8
	def    route
	defHit bool
}

func prefixMask(l uint8) uint32 {
	if l == 0 {
		return 0
	}
	return ^uint32(0) << (32 - l)
}

func (t *lpmTable) lookup(addr uint32) (route, bool) {
	for _, l := range t.lens {
		if r, ok := t.byLen[l][addr&prefixMask(l)]; ok {
			return r, true
		}
	}
	return t.def, t.defHit
}

func (t *lpmTable) set(l uint8, prefix uint32, r route, del bool) {
	if del {
		delete(t.byLen[l], prefix)
		if len(t.byLen[l]) == 0 {
			t.byLen[l] = nil
		}
	} else {
		if t.byLen[l] == nil {
			t.byLen[l] = map[uint32]route{}
		}
		t.byLen[l][prefix] = r
	}
	t.lens = t.lens[:0]
	for l := 32; l >= 0; l-- {
		if len(t.byLen[l]) > 0 {
			t.lens = append(t.lens, uint8(l))
		}
	}
}

// tern is a ternary match on up to 32 bits; rng is an inclusive range on 16 bits.
type tern struct{ v, m uint32 }
type rng struct{ lo, hi uint16 }

func (t tern) match(x uint32) bool { return x&t.m == t.v&t.m }
func (r rng) match(x uint16) bool  { return x >= r.lo && x <= r.hi }

// appKey is an applications entry's identity (match + priority).
type appKey struct {
	prio                  int32
	remote, local         tern
	proto, dscp           tern
	remotePort, localPort rng
}

type appEntry struct {
	key appKey
	act steering
}

type filterKey struct {
	prio             int32
	src, dst, proto  tern
	srcPort, dstPort rng
}

type filterEntry struct {
	key  filterKey
	deny bool
}

// qosFlow is a qos_flows hit: the QoS flow of its own a session's user packet is in, its QFI,
// its policer's cell (uplink_flow_mbr, downlink_flow_mbr) and whether it is a GBR flow (outside
// the session's MBR policer).
type qosFlow struct {
	cell uint32
	qfi  uint8
	ok   bool
	gbr  bool
}

// qosFlowKey is a qos_flows entry's identity past its exact fields (the session's UE address
// and the direction, which key the list it is in): the user packet seen from the UE.
type qosFlowKey struct {
	prio                  int32
	remote, proto         tern
	remotePort, localPort rng
}

type qosFlowEntry struct {
	key qosFlowKey
	act qosFlow
}

// qosFlowList is the qos_flows entries of one UE address and direction, priority descending.
// The first two sit in the table's slot (a session's usual pair: a flow of its own and its
// default flow's), so that a lookup reads the slot and no list beside it: that second read
// cost a packet of a session with QoS flows a cache miss more at 10k sessions.
type qosFlowList struct {
	n      int
	inline [2]qosFlowEntry
	more   []qosFlowEntry // from the third on
}

func (l *qosFlowList) at(i int) *qosFlowEntry {
	if i < len(l.inline) {
		return &l.inline[i]
	}
	return &l.more[i-len(l.inline)]
}

// entries is the list as a slice (for a write, not a packet).
func (l *qosFlowList) entries() []qosFlowEntry {
	out := make([]qosFlowEntry, 0, l.n)
	for i := range l.n {
		out = append(out, *l.at(i))
	}
	return out
}

func qosFlowListOf(es []qosFlowEntry) qosFlowList {
	l := qosFlowList{n: len(es)}
	k := copy(l.inline[:], es)
	l.more = slices.Clone(es[k:])
	return l
}

// qosFlowsKey keys the qos_flows entries of one UE address and direction.
func qosFlowsKey(ueAddr uint32, uplink bool) uint64 {
	k := uint64(ueAddr) << 1
	if uplink {
		k |= 1
	}
	return k
}

// flow is what applications and filters match on: the user packet, as parsed.
type flow struct {
	src, dst     uint32
	sport, dport uint16
	proto, dscp  uint8
}

func (k *appKey) match(f *flow) bool {
	// Seen from the UE: the remote side is the downlink source.
	return k.remote.match(f.src) && k.local.match(f.dst) && k.proto.match(uint32(f.proto)) &&
		k.remotePort.match(f.sport) && k.localPort.match(f.dport) && k.dscp.match(uint32(f.dscp))
}

func (k *filterKey) match(f *flow) bool {
	return k.src.match(f.src) && k.dst.match(f.dst) && k.proto.match(uint32(f.proto)) &&
		k.srcPort.match(f.sport) && k.dstPort.match(f.dport)
}

// defaultApplication is set_default_application: app 0, active-standby on 3GPP.
var defaultApplication = steering{app: 0, mode: contract.ModeActiveStandby, access: contract.Access3GPP}

// tables holds every match-action table of one committed pipeline.
type tables struct {
	local      exactTable[uint32, struct{}]
	uplink     exactTable[uint32, uplinkTunnel] // by TEID
	endpoints  [256]endpoint
	endpointDf endpoint
	peers      []peer // indexed by peer_idx, 1<<16 entries
	peerDf     peer
	sessions   exactTable[uint32, session]
	apps       []appEntry // priority descending, insertion order among equals
	appDf      steering
	overrides  exactTable[uint64, override] // session_addr<<16 | app_id
	dlTunnels  exactTable[uint32, dlTunnel]
	tunnelQFIs exactTable[uint64, uint8]     // peer_addr<<32 | teid: the QoS flow of a GTP-U tunnel
	mbr        exactTable[uint32, uint32]    // mbr_sessions: UE address -> the MBR policer's cell
	qosFlows   intTable[uint64, qosFlowList] // qos_flows by qosFlowsKey
	filters    []filterEntry
	filterDeny bool // the default action is deny
	routes     lpmTable
}

func newTables() *tables {
	t := &tables{
		local:      exactTable[uint32, struct{}]{},
		uplink:     exactTable[uint32, uplinkTunnel]{},
		peers:      make([]peer, 1<<16),
		sessions:   exactTable[uint32, session]{},
		appDf:      defaultApplication,
		overrides:  exactTable[uint64, override]{},
		dlTunnels:  exactTable[uint32, dlTunnel]{},
		tunnelQFIs: exactTable[uint64, uint8]{},
		mbr:        exactTable[uint32, uint32]{},
	}
	return t
}

// qosFlow is the QoS flow of its own (qos_flows) that the user packet fl of the session at
// ueAddr is in, looked up as seen from the UE: the remote end is the downlink's source and the
// uplink's destination. The zero qosFlow is the session's own flow.
func (t *tables) qosFlow(ueAddr uint32, uplink bool, fl *flow) qosFlow {
	list := t.qosFlows.ref(qosFlowsKey(ueAddr, uplink))
	if list == nil {
		return qosFlow{}
	}
	remote, remotePort, localPort := fl.src, fl.sport, fl.dport
	if uplink {
		remote, remotePort, localPort = fl.dst, fl.dport, fl.sport
	}
	for i := range list.n {
		e := list.at(i)
		k := &e.key
		if k.remote.match(remote) && k.proto.match(uint32(fl.proto)) && k.remotePort.match(remotePort) && k.localPort.match(localPort) {
			return e.act
		}
	}
	return qosFlow{}
}

func (t *tables) application(f *flow) steering {
	for i := range t.apps {
		if t.apps[i].key.match(f) {
			return t.apps[i].act
		}
	}
	return t.appDf
}

func (t *tables) filtered(f *flow) bool {
	for i := range t.filters {
		if t.filters[i].key.match(f) {
			return t.filters[i].deny
		}
	}
	return t.filterDeny
}

func (t *tables) endpoint(i uint8) endpoint {
	if e := t.endpoints[i]; e.ok {
		return e
	}
	return t.endpointDf
}

// tunnelQFI is the QFI downlink G-PDUs toward peer in tunnel teid carry, 0 for none.
func (t *tables) tunnelQFI(peer, teid uint32) uint8 {
	q, _ := t.tunnelQFIs.lookup(uint64(peer)<<32 | uint64(teid))
	return q
}

// gpduQFI is the QFI of a downlink G-PDU toward peer in tunnel teid: the tunnel's, or the QoS
// flow's (flowQFI, 0 for none) in its place where the tunnel has one; a tunnel without a QFI
// carries no PDU Session Container to put it in.
func (t *tables) gpduQFI(peer, teid uint32, flowQFI uint8) uint8 {
	q := t.tunnelQFI(peer, teid)
	if q != 0 && flowQFI != 0 {
		return flowQFI
	}
	return q
}

func (t *tables) peer(i uint16) peer {
	if p := t.peers[i]; p.ok {
		return p
	}
	return t.peerDf
}

func overrideKey(sessionAddr uint32, app uint16) uint64 { return uint64(sessionAddr)<<16 | uint64(app) }

// ---- decoding P4Runtime entries ----

// entryMatch is a table entry's match fields, by position in the table spec.
type entryMatch [6]*p4v1.FieldMatch

func (s *schema) matches(k tableKind, e *p4v1.TableEntry) (entryMatch, error) {
	var m entryMatch
	for _, fm := range e.GetMatch() {
		pos, ok := s.fieldPos[k][fm.GetFieldId()]
		if !ok {
			return m, fmt.Errorf("table %q has no match field %d", tableSpecs[k].name, fm.GetFieldId())
		}
		m[pos] = fm
	}
	return m, nil
}

func (m *entryMatch) exact(k tableKind, pos int) (uint64, error) {
	fm := m[pos]
	if fm == nil || fm.GetExact() == nil {
		return 0, fmt.Errorf("table %q: exact field %q missing", tableSpecs[k].name, tableSpecs[k].keys[pos].name)
	}
	return p4bytes.DecodeUint(fm.GetExact().GetValue())
}

func (m *entryMatch) ternary(pos int) (tern, error) {
	fm := m[pos]
	if fm == nil {
		return tern{}, nil // don't care
	}
	if fm.GetTernary() == nil {
		return tern{}, fmt.Errorf("field %d is not ternary", fm.GetFieldId())
	}
	v, err := p4bytes.DecodeUint(fm.GetTernary().GetValue())
	if err != nil {
		return tern{}, err
	}
	mk, err := p4bytes.DecodeUint(fm.GetTernary().GetMask())
	return tern{uint32(v), uint32(mk)}, err
}

func (m *entryMatch) rng(pos int) (rng, error) {
	fm := m[pos]
	if fm == nil {
		return rng{0, 0xffff}, nil // don't care
	}
	if fm.GetRange() == nil {
		return rng{}, fmt.Errorf("field %d is not a range", fm.GetFieldId())
	}
	lo, err := p4bytes.DecodeUint(fm.GetRange().GetLow())
	if err != nil {
		return rng{}, err
	}
	hi, err := p4bytes.DecodeUint(fm.GetRange().GetHigh())
	return rng{uint16(lo), uint16(hi)}, err
}

// decodedAction is an action and its params, by position in the action spec.
type decodedAction struct {
	kind   actionKind
	params [9]uint64 // the most any action has (set_session)
}

func (s *schema) action(a *p4v1.Action) (decodedAction, error) {
	var d decodedAction
	if a == nil {
		return d, fmt.Errorf("entry has no direct action (action profiles are not supported)")
	}
	k, ok := s.actions[a.GetActionId()]
	if !ok {
		return d, fmt.Errorf("action %d is not implemented by the software UPF", a.GetActionId())
	}
	d.kind = k
	for _, p := range a.GetParams() {
		pos, ok := s.paramPos[k][p.GetParamId()]
		if !ok {
			return d, fmt.Errorf("action %q has no param %d", actionSpecs[k].name, p.GetParamId())
		}
		v, err := p4bytes.DecodeUint(p.GetValue())
		if err != nil {
			return d, fmt.Errorf("action %q param %q: %w", actionSpecs[k].name, actionSpecs[k].params[pos].name, err)
		}
		d.params[pos] = v
	}
	return d, nil
}

func mac(v uint64) (m [6]byte) {
	for i := 5; i >= 0; i-- {
		m[i] = byte(v)
		v >>= 8
	}
	return m
}

func (d *decodedAction) session() session {
	p := d.params
	return session{user: uint32(p[0]), endpoint: uint8(p[1]), peer: uint16(p[2]), teid: uint32(p[3]),
		ue3GPP: uint32(p[4]), ueNon3GP: uint32(p[5]), gwN3: uint32(p[6]), teidN3: uint32(p[7]), usage: uint32(p[8])}
}

func (d *decodedAction) steering() steering {
	p := d.params
	return steering{app: uint16(p[0]), mode: contract.Mode(p[1]), access: contract.Access(p[2]), ratio: uint8(p[3]),
		threshold: uint32(p[4]), lossLimit: uint8(p[5])}
}

func (d *decodedAction) override() override {
	p := d.params
	return override{steering: steering{mode: contract.Mode(p[0]), access: contract.Access(p[1]), ratio: uint8(p[2]),
		threshold: uint32(p[3]), lossLimit: uint8(p[4])}, seqIndex: uint32(p[5])}
}

func (d *decodedAction) dlTunnel() dlTunnel {
	if d.kind == aBufferDownlink {
		return dlTunnel{buffer: true}
	}
	return dlTunnel{teid: uint32(d.params[0]), peer: uint16(d.params[1]), endpoint: uint8(d.params[2]),
		usage: uint32(d.params[3])}
}

func (d *decodedAction) qfi() uint8 { return uint8(d.params[0]) }

func (d *decodedAction) mbrCell() uint32 { return uint32(d.params[0]) }

func (d *decodedAction) uplinkTunnel() uplinkTunnel {
	if d.kind == aForwardIndirect {
		return uplinkTunnel{forward: true}
	}
	return uplinkTunnel{access: contract.Access(d.params[0]), usage: uint32(d.params[1])}
}

func (d *decodedAction) route() route {
	return route{port: uint32(d.params[0]), src: mac(d.params[1]), dst: mac(d.params[2])}
}

// expect checks that the action is one the table allows.
func (d *decodedAction) expect(k tableKind) error {
	if !slices.Contains(tableSpecs[k].actions, d.kind) {
		return fmt.Errorf("action %q is not an action of table %q", actionSpecs[d.kind].name, tableSpecs[k].name)
	}
	return nil
}

// write applies one validated update to the tables.
func (t *tables) write(s *schema, op p4v1.Update_Type, e *p4v1.TableEntry) error {
	k, ok := s.tables[e.GetTableId()]
	if !ok {
		return fmt.Errorf("table %d is not implemented by the software UPF", e.GetTableId())
	}
	name := tableSpecs[k].name
	m, err := s.matches(k, e)
	if err != nil {
		return err
	}
	del := op == p4v1.Update_DELETE
	var act decodedAction
	if !del {
		if act, err = s.action(e.GetAction().GetAction()); err != nil {
			return fmt.Errorf("table %q: %w", name, err)
		}
		if err := act.expect(k); err != nil {
			return err
		}
	}
	switch k {
	case tApplications, tFilters:
		return t.writeTernary(k, op, e.GetPriority(), &m, &act)
	case tQoSFlows:
		return t.writeQoSFlow(op, e.GetPriority(), &m, &act)
	case tRoutes:
		// P4Runtime omits an LPM field of prefix length 0 (spec 9.1.1): a default route.
		var v uint64
		var l int32
		if fm := m[0]; fm != nil {
			if fm.GetLpm() == nil {
				return fmt.Errorf("table %q: field %q is not lpm", name, "dst_addr")
			}
			var err error
			if v, err = p4bytes.DecodeUint(fm.GetLpm().GetValue()); err != nil {
				return err
			}
			l = fm.GetLpm().GetPrefixLen()
		}
		if l < 0 || l > 32 {
			return fmt.Errorf("table %q: prefix length %d", name, l)
		}
		if !del && act.kind != aRoute {
			return fmt.Errorf("table %q: entries must use %q", name, "route")
		}
		t.routes.set(uint8(l), uint32(v)&prefixMask(uint8(l)), act.route(), del)
		return nil
	}

	key, err := m.exact(k, 0)
	if err != nil {
		return err
	}
	switch k {
	case tLocalAddresses:
		return writeFlag(&t.local, uint32(key), del, act.kind == aAcceptLocal)
	case tUplinkTunnels:
		writeValue(&t.uplink, uint32(key), del, act.kind == aDecapGTPU || act.kind == aForwardIndirect, act.uplinkTunnel)
	case tTunnelEndpoints:
		if del || act.kind != aSetTunnelEndpoint {
			t.endpoints[uint8(key)] = endpoint{}
		} else {
			t.endpoints[uint8(key)] = endpoint{n3: uint32(act.params[0]), junction: uint32(act.params[1]), ok: true}
		}
	case tTunnelPeers:
		if del || act.kind != aSetTunnelPeer {
			t.peers[uint16(key)] = peer{}
		} else {
			t.peers[uint16(key)] = peer{addr: uint32(act.params[0]), ok: true}
		}
	case tSessions:
		writeValue(&t.sessions, uint32(key), del, act.kind == aSetSession, act.session)
	case tSessionOverrides:
		app, err := m.exact(k, 1)
		if err != nil {
			return err
		}
		writeValue(&t.overrides, overrideKey(uint32(key), uint16(app)), del, act.kind == aOverrideSteering, act.override)
	case tDownlinkTunnels:
		writeValue(&t.dlTunnels, uint32(key), del, act.kind == aEncapGTPU || act.kind == aBufferDownlink, act.dlTunnel)
	case tTunnelQFIs:
		teid, err := m.exact(k, 1)
		if err != nil {
			return err
		}
		writeValue(&t.tunnelQFIs, key<<32|teid, del, act.kind == aSetQFI, act.qfi)
	case tMBRSessions:
		writeValue(&t.mbr, uint32(key), del, act.kind == aPolice, act.mbrCell)
	}
	return nil
}

// writeFlag stores a key whose hit action has no params; an entry that uses the miss action
// is stored as absent, which behaves the same (writeValue likewise).
func writeFlag(t *exactTable[uint32, struct{}], key uint32, del, hit bool) error {
	if del || !hit {
		t.m.del(key)
	} else {
		t.m.set(key, struct{}{})
	}
	return nil
}

func writeValue[K intKey, V any](t *exactTable[K, V], key K, del, hit bool, val func() V) {
	if del || !hit {
		t.m.del(key)
		return
	}
	t.m.set(key, val())
}

// matchReader reads an entry's ternary and range fields, keeping the first error.
type matchReader struct {
	m   *entryMatch
	err error
}

func (r *matchReader) tern(pos int) tern {
	v, err := r.m.ternary(pos)
	r.err = cmp.Or(r.err, err)
	return v
}

func (r *matchReader) rng(pos int) rng {
	v, err := r.m.rng(pos)
	r.err = cmp.Or(r.err, err)
	return v
}

func (t *tables) writeTernary(k tableKind, op p4v1.Update_Type, prio int32, m *entryMatch, act *decodedAction) error {
	mr := &matchReader{m: m}
	if k == tApplications {
		key := appKey{prio: prio, remote: mr.tern(0), local: mr.tern(1), proto: mr.tern(2), remotePort: mr.rng(3),
			localPort: mr.rng(4), dscp: mr.tern(5)}
		if err := mr.err; err != nil {
			return fmt.Errorf("table %q: %w", tableSpecs[k].name, err)
		}
		val := defaultApplication
		if act.kind == aSetApplication {
			val = act.steering()
		}
		t.apps = upsertTernary(t.apps, op, appEntry{key: key, act: val},
			func(e *appEntry) appKey { return e.key }, func(e *appEntry) int32 { return e.key.prio })
		return nil
	}
	key := filterKey{prio: prio, src: mr.tern(0), dst: mr.tern(1), proto: mr.tern(2), srcPort: mr.rng(3), dstPort: mr.rng(4)}
	if err := mr.err; err != nil {
		return fmt.Errorf("table %q: %w", tableSpecs[k].name, err)
	}
	t.filters = upsertTernary(t.filters, op, filterEntry{key: key, deny: act.kind == aDeny},
		func(e *filterEntry) filterKey { return e.key }, func(e *filterEntry) int32 { return e.key.prio })
	return nil
}

// writeQoSFlow applies a qos_flows update: its exact fields pick the list, the rest is the
// entry's identity in it.
func (t *tables) writeQoSFlow(op p4v1.Update_Type, prio int32, m *entryMatch, act *decodedAction) error {
	ue, err := m.exact(tQoSFlows, 0)
	if err != nil {
		return err
	}
	up, err := m.exact(tQoSFlows, 1)
	if err != nil {
		return err
	}
	mr := &matchReader{m: m}
	key := qosFlowKey{prio: prio, remote: mr.tern(2), proto: mr.tern(3), remotePort: mr.rng(4), localPort: mr.rng(5)}
	if err := mr.err; err != nil {
		return fmt.Errorf("table %q: %w", tableSpecs[tQoSFlows].name, err)
	}
	var val qosFlow
	if act.kind == aSetQoSFlow {
		val = qosFlow{qfi: uint8(act.params[0]), cell: uint32(act.params[1]), ok: true, gbr: act.params[2] == 1}
	}
	lk := qosFlowsKey(uint32(ue), up == 1)
	cur, _ := t.qosFlows.get(lk)
	list := upsertTernary(cur.entries(), op, qosFlowEntry{key: key, act: val},
		func(e *qosFlowEntry) qosFlowKey { return e.key }, func(e *qosFlowEntry) int32 { return e.key.prio })
	if len(list) == 0 {
		t.qosFlows.del(lk)
	} else {
		t.qosFlows.set(lk, qosFlowListOf(list))
	}
	return nil
}

// upsertTernary inserts, modifies or deletes an entry in a list kept in priority order
// (highest first; an entry goes after those of equal priority, so the oldest wins ties).
func upsertTernary[E any, K comparable](list []E, op p4v1.Update_Type, e E, key func(*E) K, prio func(*E) int32) []E {
	k := key(&e)
	i := slices.IndexFunc(list, func(x E) bool { return key(&x) == k })
	switch {
	case op == p4v1.Update_DELETE:
		if i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
	case i >= 0:
		list[i] = e
	default:
		p := prio(&e)
		at := len(list)
		for j := range list {
			if prio(&list[j]) < p {
				at = j
				break
			}
		}
		list = slices.Insert(list, at, e)
	}
	return list
}

// setDefault replaces a table's default action; nil restores the P4 default (the miss action).
func (t *tables) setDefault(s *schema, tableID uint32, a *p4v1.Action) error {
	k, ok := s.tables[tableID]
	if !ok {
		return fmt.Errorf("table %d is not implemented by the software UPF", tableID)
	}
	act := decodedAction{kind: tableSpecs[k].p4Default()}
	if a != nil {
		var err error
		if act, err = s.action(a); err != nil {
			return fmt.Errorf("table %q default action: %w", tableSpecs[k].name, err)
		}
		if err := act.expect(k); err != nil {
			return err
		}
	}
	hit := act.kind == tableSpecs[k].actions[0]
	switch k {
	case tLocalAddresses:
		t.local.defHit = hit
	case tUplinkTunnels:
		t.uplink.def, t.uplink.defHit = act.uplinkTunnel(), hit
	case tTunnelEndpoints:
		t.endpointDf = endpoint{n3: uint32(act.params[0]), junction: uint32(act.params[1]), ok: hit}
	case tTunnelPeers:
		t.peerDf = peer{addr: uint32(act.params[0]), ok: hit}
	case tSessions:
		t.sessions.def, t.sessions.defHit = act.session(), hit
	case tApplications:
		t.appDf = defaultApplication
		if hit {
			t.appDf = act.steering()
		}
	case tSessionOverrides:
		t.overrides.def, t.overrides.defHit = act.override(), hit
	case tDownlinkTunnels:
		t.dlTunnels.def, t.dlTunnels.defHit = act.dlTunnel(), hit || act.kind == aBufferDownlink
	case tTunnelQFIs:
		t.tunnelQFIs.def, t.tunnelQFIs.defHit = act.qfi(), hit
	case tMBRSessions:
		t.mbr.def, t.mbr.defHit = act.mbrCell(), hit
	case tQoSFlows:
		// Its default is no_qos_flow, const in the P4 program: the P4Runtime server refuses another.
	case tFilters:
		t.filterDeny = act.kind == aDeny
	case tRoutes:
		t.routes.def, t.routes.defHit = act.route(), hit
	}
	return nil
}

// ---- registers and counters ----

// register is one register array; cells are atomics so the packet path needs no lock.
//
// Registers of one size share their storage, interleaved: cell i of the register at offset o
// is cells[i*stride+o], so a user's path state (both RTTs, both losses and the autonomous
// share, which every downlink packet reads) is one cache line, not a line in each of five
// arrays. With 100,000 users the lines a packet needs are no longer in the CPU's caches, and
// each one it touches is a miss (docs/softupf.md).
type register struct {
	name           string
	mask           uint32
	size           uint32
	stride, offset uint32
	cells          []atomic.Uint32 // shared with the registers interleaved with it
}

// newRegisters makes the registers of specs, with sizes, interleaving those of equal size.
func newRegisters(specs []paramSpec, sizes []int) []*register {
	out := make([]*register, len(specs))
	for k := range specs {
		if out[k] != nil {
			continue
		}
		var group []int // the registers of this size, k first
		for j := k; j < len(specs); j++ {
			if sizes[j] == sizes[k] {
				group = append(group, j)
			}
		}
		// A power of two: a user's cells never straddle a cache line while a size has at most
		// 16 registers.
		stride := 1
		for stride < len(group) {
			stride *= 2
		}
		cells := make([]atomic.Uint32, sizes[k]*stride)
		for o, j := range group {
			out[j] = &register{name: specs[j].name, mask: uint32(uint64(1)<<specs[j].bits - 1),
				size: uint32(sizes[j]), stride: uint32(stride), offset: uint32(o), cells: cells}
		}
	}
	return out
}

// cell is cell i, which must be below size.
func (r *register) cell(i uint32) *atomic.Uint32 {
	return &r.cells[uint64(i)*uint64(r.stride)+uint64(r.offset)]
}

// load reads a cell; an index out of range reads 0, as an unavailable path.
func (r *register) load(i uint32) uint32 {
	if i >= r.size {
		return 0
	}
	return r.cell(i).Load()
}

func (r *register) store(i, v uint32) {
	if i < r.size {
		r.cell(i).Store(v & r.mask)
	}
}

// update replaces a cell with f of its value atomically, as a P4 target's read-modify-write
// within one packet is.
func (r *register) update(i uint32, f func(uint32) uint32) {
	if i >= r.size {
		return
	}
	c := r.cell(i)
	for {
		old := c.Load()
		if c.CompareAndSwap(old, f(old)&r.mask) {
			return
		}
	}
}

type counterCell struct {
	packets, bytes atomic.Uint64
}
