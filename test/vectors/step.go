package vectors

// One step of a case: send, collect for the window, compare.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/junction-atsss/junction/internal/p4schema"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// step runs step i and reports whether the case may go on (false after an error that makes
// later steps meaningless, such as a malformed vector or a failed RPC).
func (cr *caseRun) step(ctx context.Context, i int) bool {
	s := cr.c.Steps[i]
	r := cr.r
	label := fmt.Sprintf("step %d", i+1)
	if s.Name != "" {
		label += " (" + s.Name + ")"
	}
	fail := func(format string, args ...any) { cr.failf(label+": "+format, args...) }

	expected := map[string][]*builtFrame{}
	nFrames := 0
	for _, port := range sortedKeys(s.Expect) {
		if _, ok := r.ports[port]; !ok {
			fail("expect: unknown port %q (the runner was given %s)", port, strings.Join(sortedKeys(r.portNums), ", "))
			return false
		}
		for j, f := range s.Expect[port] {
			b, err := cr.vars.buildFrame(f, true)
			if err != nil {
				fail("expected frame %d on %s: %v", j+1, port, err)
				return false
			}
			expected[port] = append(expected[port], b)
			nFrames++
		}
	}
	var packetIns []*builtFrame
	for j, p := range s.PacketIn {
		if _, err := cr.outPort(p.Port); err != nil { // a logical port, or $cpu (a to_ingress frame)
			fail("packet_in %d: %v", j+1, err)
			return false
		}
		b, err := cr.vars.buildFrame(p.Frame, true)
		if err != nil {
			fail("packet_in %d: %v", j+1, err)
			return false
		}
		packetIns = append(packetIns, b)
	}
	nDigests := 0
	for _, d := range s.Digests {
		nDigests += len(d)
	}

	if err := cr.writeRegisters(ctx, s.SetRegisters); err != nil {
		fail("set_registers: %v", err)
		return false
	}
	if err := cr.writeCounters(ctx, s.SetCounters); err != nil {
		fail("set_counters: %v", err)
		return false
	}
	if err := cr.writeMeters(ctx, s.SetMeters); err != nil {
		fail("set_meters: %v", err)
		return false
	}
	if err := cr.modifyEntries(ctx, s.ModifyEntries); err != nil {
		fail("modify_entries: %v", err)
		return false
	}
	before, err := cr.readDrops(ctx)
	if err != nil {
		fail("%v", err)
		return false
	}
	// Anything that arrived since the previous step (there should be nothing) counts here.
	start := time.Now()
	if s.Send != nil {
		port, ok := r.ports[s.Send.Port]
		if !ok {
			fail("send: unknown port %q (the runner was given %s)", s.Send.Port, strings.Join(sortedKeys(r.portNums), ", "))
			return false
		}
		in, err := cr.vars.buildFrame(s.Send.Frame, false)
		if err != nil {
			fail("send: %v", err)
			return false
		}
		start = time.Now()
		if err := port.Send(in.bytes); err != nil {
			fail("%v", err)
			return false
		}
	}
	if s.PacketOut != nil {
		var num uint32
		if s.PacketOut.Port != "" {
			if num, err = cr.outPort(s.PacketOut.Port); err != nil {
				fail("packet_out: %v", err)
				return false
			}
		}
		out, err := cr.vars.buildFrame(s.PacketOut.Frame, false)
		if err != nil {
			fail("packet_out: %v", err)
			return false
		}
		start = time.Now()
		if err := r.client.packetOut(r.cfg.P4Info, num, s.PacketOut.ToIngress, out.bytes); err != nil {
			fail("packet_out: %v", err)
			return false
		}
	}
	window := r.cfg.Window
	if s.Window != 0 {
		window = time.Duration(s.Window)
	}
	cr.wait(start, window, nFrames, len(packetIns), nDigests)

	frames, rxErrs := r.collector.take()
	events, streamErr := r.client.takeEvents()
	for _, e := range rxErrs {
		fail("%v", e)
	}
	if streamErr != nil {
		fail("stream channel: %v", streamErr)
	}

	// Frames, port by port, in arrival order.
	got := map[string][][]byte{}
	for _, f := range frames {
		got[f.port] = append(got[f.port], f.frame)
	}
	ports := map[string]bool{}
	for p := range expected {
		ports[p] = true
	}
	for p := range got {
		ports[p] = true
	}
	for _, p := range sortedKeys(ports) {
		want, have := expected[p], got[p]
		for j := 0; j < max(len(want), len(have)); j++ {
			switch {
			case j >= len(have):
				fail("port %s: frame %d of %d missing (dropped, or later than the %v window): want %s", p, j+1, len(want), window, summarize(want[j].bytes))
			case j >= len(want):
				fail("port %s: unexpected frame (%d expected): %s", p, len(want), summarize(have[j]))
			default:
				want[j].record(have[j], cr.vars)
				if !want[j].matches(have[j]) {
					fail("port %s: frame %d differs:\n%s", p, j+1, want[j].diff(have[j]))
				}
			}
		}
	}

	var digests []*p4v1.DigestList
	var pins []*p4v1.PacketIn
	for _, e := range events {
		if e.digest != nil {
			digests = append(digests, e.digest)
		}
		if e.packetIn != nil {
			pins = append(pins, e.packetIn)
		}
	}
	cr.comparePacketIns(fail, s.PacketIn, packetIns, pins)
	cr.compareDigests(fail, s.Digests, digests)

	after, err := cr.readDrops(ctx)
	if err != nil {
		fail("%v", err)
		return false
	}
	cr.compareDrops(fail, s.Drops, before, after)

	for _, key := range sortedKeys(s.Registers) {
		reg, idx, err := cr.registerRef(key)
		if err != nil {
			fail("%v", err)
			return false
		}
		m, err := cr.vars.parseMatcher(s.Registers[key], reg.Width)
		if err != nil {
			fail("register %s: %v", key, err)
			return false
		}
		val, err := cr.readRegister(ctx, reg, idx)
		if err != nil {
			fail("register %s: %v", key, err)
			return false
		}
		if !m.check(val, cr.vars) {
			fail("register %s = %d, want %s", key, val, m)
		}
	}
	return cr.compareCounters(ctx, fail, s.Counters)
}

// compareCounters reads each counter cell named and checks its packets and bytes; it reports
// false when a name or value of the vector is wrong (a malformed vector).
func (cr *caseRun) compareCounters(ctx context.Context, fail func(string, ...any), want map[string]CounterCell) bool {
	for _, key := range sortedKeys(want) {
		c, idx, err := cr.counterRef(key)
		if err != nil {
			fail("%v", err)
			return false
		}
		packets, err := cr.vars.parseMatcher(want[key].Packets, 63)
		if err != nil {
			fail("counter %s packets: %v", key, err)
			return false
		}
		bytes, err := cr.vars.parseMatcher(want[key].Bytes, 63)
		if err != nil {
			fail("counter %s bytes: %v", key, err)
			return false
		}
		got, err := cr.readCounters(ctx, c, idx)
		if err != nil {
			fail("counter %s: %v", key, err)
			return false
		}
		okP, okB := packets.check(got[idx].packets, cr.vars), bytes.check(got[idx].bytes, cr.vars)
		if !okP || !okB {
			fail("counter %s = %d packets, %d bytes; want %s packets, %s bytes", key, got[idx].packets, got[idx].bytes, packets, bytes)
		}
	}
	return true
}

// cellCount is one counter cell as read.
type cellCount struct{ packets, bytes uint64 }

// readCounters reads cells idxs of counter c in one P4Runtime read.
func (cr *caseRun) readCounters(ctx context.Context, c *p4schema.Counter, idxs ...int64) (map[int64]cellCount, error) {
	var filters []*p4v1.Entity
	for _, i := range idxs {
		filters = append(filters, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
			CounterId: c.ID, Index: &p4v1.Index{Index: i},
		}}})
	}
	ents, err := cr.r.client.read(ctx, filters...)
	if err != nil {
		return nil, fmt.Errorf("read counter %s: %w", c.Name, err)
	}
	out := map[int64]cellCount{}
	for _, e := range ents {
		if ce := e.GetCounterEntry(); ce != nil && ce.GetCounterId() == c.ID {
			out[ce.GetIndex().GetIndex()] = cellCount{uint64(ce.GetData().GetPacketCount()), uint64(ce.GetData().GetByteCount())}
		}
	}
	for _, i := range idxs {
		if _, ok := out[i]; !ok {
			return nil, fmt.Errorf("read counter %s returned no entry for index %d", c.Name, i)
		}
	}
	return out, nil
}

// wait returns when the window is over, or a quiet time after everything expected arrived.
func (cr *caseRun) wait(start time.Time, window time.Duration, frames, packetIns, digests int) {
	r := cr.r
	deadline := start.Add(window)
	var quietUntil time.Time
	for {
		now := time.Now()
		if quietUntil.IsZero() && (frames+packetIns+digests) > 0 {
			nf := r.collector.count()
			nd, np := r.client.counts()
			if nf >= frames && np >= packetIns && nd >= digests {
				quietUntil = now.Add(r.cfg.Quiet)
			}
		}
		end := deadline
		if !quietUntil.IsZero() && quietUntil.Before(end) {
			end = quietUntil
		}
		if !now.Before(end) {
			return
		}
		timer := time.NewTimer(end.Sub(now))
		select {
		case <-timer.C:
		case <-r.collector.notify:
		case <-r.client.notify:
		}
		timer.Stop()
	}
}

func (cr *caseRun) comparePacketIns(fail func(string, ...any), specs []PacketIn, want []*builtFrame, got []*p4v1.PacketIn) {
	portID := uint32(0)
	for _, m := range cr.r.cfg.P4Info.ControllerPacketMetadata {
		if m.Preamble.Name == "packet_in" || m.Preamble.Alias == "packet_in" {
			for _, md := range m.Metadata {
				if md.Name == "ingress_port" {
					portID = md.Id
				}
			}
		}
	}
	for j := 0; j < max(len(want), len(got)); j++ {
		switch {
		case j >= len(got):
			fail("packet-in %d of %d missing: want %s from %s", j+1, len(want), summarize(want[j].bytes), specs[j].Port)
		case j >= len(want):
			fail("unexpected packet-in (%d expected): %s", len(want), summarize(got[j].Payload))
		default:
			var ingress uint64
			found := false
			for _, md := range got[j].Metadata {
				if md.MetadataId == portID {
					ingress, found = fromBytestring(md.Value), true
				}
			}
			if wantPort, _ := cr.outPort(specs[j].Port); !found || uint32(ingress) != wantPort {
				fail("packet-in %d: ingress_port %d (found: %v), want %d (%s)", j+1, ingress, found, wantPort, specs[j].Port)
			}
			want[j].record(got[j].Payload, cr.vars)
			if !want[j].matches(got[j].Payload) {
				fail("packet-in %d differs:\n%s", j+1, want[j].diff(got[j].Payload))
			}
		}
	}
}

func (cr *caseRun) compareDigests(fail func(string, ...any), want map[string][]map[string]any, got []*p4v1.DigestList) {
	gotData := map[uint32][]*p4v1.P4Data{}
	for _, l := range got {
		gotData[l.DigestId] = append(gotData[l.DigestId], l.Data...)
	}
	seen := map[uint32]bool{}
	for _, name := range sortedKeys(want) {
		d, err := cr.r.schema.Digest(name)
		if err != nil {
			fail("%v", err)
			continue
		}
		seen[d.ID] = true
		members := d.Members
		exp, have := want[name], gotData[d.ID]
		for j := 0; j < max(len(exp), len(have)); j++ {
			switch {
			case j >= len(have):
				fail("digest %s %d of %d missing", name, j+1, len(exp))
			case j >= len(exp):
				fail("unexpected digest %s (%d expected): %s", name, len(exp), formatDigest(members, have[j]))
			default:
				cr.compareDigest(fail, name, j, members, exp[j], have[j])
			}
		}
	}
	for id, data := range gotData {
		if !seen[id] {
			name, members := fmt.Sprint(id), []p4schema.Member(nil)
			if d, ok := cr.r.schema.DigestByID(id); ok {
				name, members = d.Name, d.Members
			}
			for _, x := range data {
				fail("unexpected digest %s: %s", name, formatDigest(members, x))
			}
		}
	}
}

func (cr *caseRun) compareDigest(fail func(string, ...any), name string, j int, members []p4schema.Member, want map[string]any, got *p4v1.P4Data) {
	vals := digestValues(members, got)
	known := map[string]bool{}
	var bad []string
	for i, m := range members {
		known[m.Name] = true
		x, ok := want[m.Name]
		if !ok {
			fail("digest %s %d: expectation lacks member %s (use \"*\" for don't care)", name, j+1, m.Name)
			continue
		}
		matcher, err := cr.vars.parseMatcher(x, m.Width)
		if err != nil {
			fail("digest %s %d member %s: %v", name, j+1, m.Name, err)
			continue
		}
		if i >= len(vals) {
			bad = append(bad, fmt.Sprintf("%s missing", m.Name))
			continue
		}
		if !matcher.check(vals[i], cr.vars) {
			bad = append(bad, fmt.Sprintf("%s = %d, want %s", m.Name, vals[i], matcher))
		}
	}
	for k := range want {
		if !known[k] {
			fail("digest %s has no member %q", name, k)
		}
	}
	if len(bad) > 0 {
		fail("digest %s %d: %s (got %s)", name, j+1, strings.Join(bad, "; "), formatDigest(members, got))
	}
}

func digestValues(members []p4schema.Member, d *p4v1.P4Data) []uint64 {
	if s := d.GetStruct(); s != nil {
		var out []uint64
		for _, m := range s.Members {
			out = append(out, fromBytestring(m.GetBitstring()))
		}
		return out
	}
	return []uint64{fromBytestring(d.GetBitstring())}
}

func formatDigest(members []p4schema.Member, d *p4v1.P4Data) string {
	vals := digestValues(members, d)
	var parts []string
	for i, v := range vals {
		name := fmt.Sprintf("member%d", i)
		if i < len(members) {
			name = members[i].Name
		}
		if i < len(members) && members[i].Width == 32 && strings.HasSuffix(name, "_addr") {
			parts = append(parts, fmt.Sprintf("%s=%d.%d.%d.%d", name, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%d", name, v))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// readDrops returns the packet count of every `drops` cell.
func (cr *caseRun) readDrops(ctx context.Context) (map[int64]int64, error) {
	c, err := cr.r.schema.Counter(dropsCounter)
	if err != nil {
		return nil, err
	}
	ents, err := cr.r.client.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: c.ID}}})
	if err != nil {
		return nil, fmt.Errorf("read counter %s: %w", dropsCounter, err)
	}
	out := map[int64]int64{}
	for _, e := range ents {
		ce := e.GetCounterEntry()
		if ce == nil {
			continue
		}
		out[ce.GetIndex().GetIndex()] = ce.GetData().GetPacketCount()
	}
	return out, nil
}

func (cr *caseRun) compareDrops(fail func(string, ...any), want map[string]uint64, before, after map[int64]int64) {
	names := map[int64]string{}
	wantByIdx := map[int64]int64{}
	for name, idx := range DropReasons {
		names[int64(idx)] = name
	}
	for name, n := range want {
		idx, ok := DropReasons[name]
		if !ok {
			fail("drops: unknown reason %q (have %s)", name, strings.Join(sortedKeys(DropReasons), ", "))
			continue
		}
		wantByIdx[int64(idx)] = int64(n)
	}
	idxs := map[int64]bool{}
	for i := range after {
		idxs[i] = true
	}
	for i := range wantByIdx {
		idxs[i] = true
	}
	var sorted []int64
	for i := range idxs {
		sorted = append(sorted, i)
	}
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	var bad []string
	for _, i := range sorted {
		delta := after[i] - before[i]
		if delta != wantByIdx[i] {
			name := names[i]
			if name == "" {
				name = fmt.Sprintf("index %d", i)
			}
			bad = append(bad, fmt.Sprintf("%s +%d, want +%d", name, delta, wantByIdx[i]))
		}
	}
	if len(bad) > 0 {
		fail("drops: %s", strings.Join(bad, "; "))
	}
}

func (cr *caseRun) readRegister(ctx context.Context, reg *p4schema.Register, idx int64) (uint64, error) {
	if ra := cr.r.cfg.Registers; ra != nil {
		return ra.RegisterRead(reg.Name, uint32(idx))
	}
	ents, err := cr.r.client.read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: reg.ID, Index: &p4v1.Index{Index: idx},
	}}})
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		if re := e.GetRegisterEntry(); re != nil && re.GetIndex().GetIndex() == idx {
			return fromBytestring(re.GetData().GetBitstring()), nil
		}
	}
	return 0, fmt.Errorf("read returned no entry for index %d", idx)
}

// outPort is a packet-out's egress port: a port of the topology by name, or a number ($cpu, or
// a port the target does not have).
func (cr *caseRun) outPort(name string) (uint32, error) {
	if num, ok := cr.r.portNums[name]; ok {
		return num, nil
	}
	n, err := cr.vars.number(name, 9)
	if err != nil {
		return 0, fmt.Errorf("port %q: not a port of the topology, and %w", name, err)
	}
	return uint32(n), nil
}
