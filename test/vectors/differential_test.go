//go:build linux

package vectors

// The differential test: the software UPF and BMv2 (the P4 program as p4c compiles it) get the
// same setups and the same frames — every vector's frames and mutations of them — and must
// agree on everything observable: the frames out, port by port and byte for byte, packet-ins,
// digests, the drops counter, the usage counters' cells of the case's sessions (packets and
// bytes) and the path-state and sequence registers. A disagreement is a bug
// in one of them; each one found is pinned by a vector.
//
// What depends on the clock is compared by class, not by value: a PROBE_REPLY's upf_ts, a
// PROBE_ACK's measured RTT (digest and register). Frames that the reorder would hold
// (CURRENT_PATH data) are left to the reorder vectors: their timing is each target's own.
//
// About one frame in four goes in as a to_ingress packet-out instead of on its port (a frame
// from the CPU port, with the packet_out bytes BMv2 counts), every case whose setup has
// encap_gtpu entries runs a second time with buffer_downlink in their place, and every one with
// decap_gtpu entries with forward_indirect in theirs.

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/test/netns"
)

// mutationsPerFrame is how many mutated frames each vector frame adds to the corpus.
const mutationsPerFrame = 24

func TestSoftUPFAgreesWithBMv2(t *testing.T) {
	netns.Require(t)
	n := mutationsPerFrame
	if s := os.Getenv("JUNCTION_DIFF_MUTATIONS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// One software UPF per port kind, each compared with BMv2 (the last runner).
	var runners []*Runner
	for _, kind := range portKinds {
		soft, err := NewRunner(ctx, startSoftUPF(t, kind))
		if err != nil {
			t.Fatal(err)
		}
		defer soft.Close()
		runners = append(runners, soft)
	}
	bm, err := NewRunner(ctx, startBMv2(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bm.Close()
	runners = append(runners, bm)
	cases, err := LoadCases("cases", nil)
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, slices.Concat(variants(cases, "downlink_tunnels", "encap_gtpu", "buffer_downlink", "buffered"),
		variants(cases, "uplink_tunnels", "decap_gtpu", "forward_indirect", "forwarded"))...)

	rng := rand.New(rand.NewPCG(2026, 11))
	var frames, skipped, disagreements, toIngressFrames int
	for _, c := range cases {
		if strings.HasPrefix(c.Name, "reorder-") {
			continue // held packets: their timing is each target's own
		}
		runs := make([]*caseRun, len(runners))
		for j, r := range runners {
			runs[j] = newCaseRun(r, c)
		}
		last := len(runs) - 1
		for _, cr := range runs {
			if err := cr.setup(ctx); err != nil {
				t.Fatalf("%s: setup on %s: %v", c.Name, cr.r.cfg.Target, err)
			}
		}
		cells := comparedCells(c)
		usage, err := usageCells(runs[0], c.origin())
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for i, s := range c.Steps {
			for _, cr := range runs {
				if err := cr.modifyEntries(ctx, s.ModifyEntries); err != nil {
					t.Fatalf("%s step %d on %s: modify_entries: %v", c.Name, i+1, cr.r.cfg.Target, err)
				}
			}
			in := s.Send
			if in == nil {
				in = s.PacketOut
			}
			if in == nil {
				continue
			}
			base, err := buildWithoutCaptures(runs[0].vars, in.Frame)
			if err != nil {
				t.Fatalf("%s step %d: %v", c.Name, i+1, err)
			}
			state := map[string]any{}
			for k, v := range c.Setup.Registers {
				state[k] = v
			}
			for k, v := range s.SetRegisters {
				state[k] = v
			}
			for k := 0; k <= n; k++ {
				frame, how := base.bytes, "as in the vector"
				if k > 0 {
					frame, how = mutate(rng, base.bytes)
				}
				if heldForReorder(frame) {
					skipped++
					continue
				}
				// A packet-out goes to its step's port, the CPU port or a port no target has,
				// in turn (docs/pipeline.md: the last two are dropped); a to_ingress one goes
				// into the pipeline whatever its port, as does one frame in four of the others.
				send, where := func(cr *caseRun) error { return cr.r.ports[in.Port].Send(frame) }, "sent on "+in.Port
				switch {
				case s.PacketOut != nil:
					var own uint32
					if in.Port != "" {
						if own, err = runs[0].outPort(in.Port); err != nil {
							t.Fatalf("%s step %d: %v", c.Name, i+1, err)
						}
					}
					port, toIngress := []uint32{own, runs[0].r.cfg.CPUPort, unmappedPort}[k%3], in.ToIngress
					send = func(cr *caseRun) error { return cr.r.client.packetOut(cr.r.cfg.P4Info, port, toIngress, frame) }
					where = fmt.Sprintf("a packet-out to port %d, to_ingress %t", port, toIngress)
					if toIngress {
						toIngressFrames++
					}
				case k%4 == 3:
					send = func(cr *caseRun) error { return cr.r.client.packetOut(cr.r.cfg.P4Info, 0, true, frame) }
					where = "a to_ingress packet-out"
					toIngressFrames++
				case droppedByTheKernel(frame):
					skipped++ // no packet socket sees it: BMv2 never does, AF_XDP does
					continue
				}
				outs := make([]outcome, len(runs))
				errs := make([]error, len(runs))
				var wg sync.WaitGroup
				for j, cr := range runs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if errs[j] = cr.writeRegisters(ctx, state); errs[j] == nil {
							outs[j], errs[j] = cr.observe(ctx, func() error { return send(cr) }, frame, cells, usage)
						}
					}()
				}
				wg.Wait()
				for j, err := range errs {
					if err != nil {
						t.Fatalf("%s step %d on %s: %v", c.Name, i+1, runs[j].r.cfg.Target, err)
					}
				}
				frames++
				if !slices.ContainsFunc(outs, func(o outcome) bool { return !o.silent() }) {
					skipped++ // none did anything visible in time (a hold): nothing to compare
					continue
				}
				for j, kind := range portKinds {
					if d := outs[j].diff(outs[last]); d != "" {
						disagreements++
						if disagreements <= reportLimit() {
							t.Errorf("%s step %d, frame %s, %s, software UPF on %s ports:\n  %s\n%s", c.Name, i+1, how, where, kind, hex.EncodeToString(frame), d)
						}
					}
				}
			}
		}
		for _, cr := range runs {
			if err := cr.cleanup(ctx); err != nil {
				t.Fatalf("%s: cleanup on %s: %v", c.Name, cr.r.cfg.Target, err)
			}
		}
	}
	t.Logf("differential: %d frames through every target (software UPF on %v ports, BMv2), %d of them to_ingress packet-outs, %d skipped (held, or dropped by the kernel), %d disagreements", frames, portKinds, toIngressFrames, skipped, disagreements)
	if frames < 1000 && n >= mutationsPerFrame {
		t.Errorf("only %d frames compared: the corpus shrank", frames)
	}
}

// variants are the cases whose setup has entries of table with action from, again with action
// to (which takes no parameters) in their place, named name+"/"+suffix: buffer_downlink for
// encap_gtpu (the downlink they would tunnel goes to the controller instead), forward_indirect
// for decap_gtpu (the G-PDUs they would take apart go to the controller as they came).
func variants(cases []*Case, table, from, to, suffix string) []*Case {
	var out []*Case
	for _, c := range cases {
		v := *c
		v.Name, v.from = c.Name+"/"+suffix, c
		v.Setup.Entries = slices.Clone(c.Setup.Entries)
		n := 0
		for i, e := range v.Setup.Entries {
			if e.Table == table && e.Action == from {
				v.Setup.Entries[i].Action, v.Setup.Entries[i].Params = to, nil
				n++
			}
		}
		if n > 0 {
			out = append(out, &v)
		}
	}
	return out
}

// buildWithoutCaptures builds a frame whose fields may name values a vector captures from an
// earlier expected frame (a PROBE_ACK echoing upf_ts): here they are a fixed 1000, since only
// the two targets' agreement counts.
func buildWithoutCaptures(v vars, f Frame) (*builtFrame, error) {
	for {
		b, err := v.buildFrame(f, false)
		if err == nil {
			return b, nil
		}
		_, rest, found := strings.Cut(err.Error(), "unknown name $")
		name, _, _ := strings.Cut(rest, " ")
		if !found || name == "" {
			return nil, err
		}
		if _, seen := v[name]; seen {
			return nil, err
		}
		v[name] = 1000
	}
}

// comparedCells are the register cells a case sets up, but not the reorder deadline (a time).
func comparedCells(c *Case) []string {
	var out []string
	for k := range c.Setup.Registers {
		if !strings.HasPrefix(k, "reorder_deadline") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// usageCells are the cells of uplink_usage and downlink_usage that a case's entries name
// (the usage_idx of set_session, encap_gtpu and decap_gtpu, defaults included), by counter.
func usageCells(cr *caseRun, c *Case) (map[string][]int64, error) {
	idxs := map[int64]bool{}
	add := func(params map[string]any) error {
		x, ok := params["usage_idx"]
		if !ok {
			return nil
		}
		n, err := cr.vars.number(x, 32)
		idxs[int64(n)] = true
		return err
	}
	for _, e := range c.Setup.Entries {
		if err := add(e.Params); err != nil {
			return nil, err
		}
	}
	for _, d := range c.Setup.Defaults {
		if err := add(d.Params); err != nil {
			return nil, err
		}
	}
	out := map[string][]int64{}
	for _, name := range []string{"uplink_usage", "downlink_usage"} {
		for i := range idxs {
			out[name] = append(out[name], i)
		}
		slices.Sort(out[name])
	}
	return out, nil
}

// readUsage reads the cells of each counter in usage.
func (cr *caseRun) readUsage(ctx context.Context, usage map[string][]int64) (map[string]cellCount, error) {
	out := map[string]cellCount{}
	for _, name := range sortedKeys(usage) {
		if len(usage[name]) == 0 {
			continue
		}
		c, err := cr.r.schema.Counter(name)
		if err != nil {
			return nil, err
		}
		cells, err := cr.readCounters(ctx, c, usage[name]...)
		if err != nil {
			return nil, err
		}
		for i, v := range cells {
			out[fmt.Sprintf("%s[%d]", name, i)] = v
		}
	}
	return out, nil
}

// outcome is what one frame did on one target.
type outcome struct {
	frames    []string // "port hex", by port, in arrival order
	packetIns []string
	digests   []string
	drops     map[int64]int64   // counter index -> packets added
	usage     map[string]string // "uplink_usage[i]" -> "+packets/+bytes", cells that moved
	regs      map[string]uint64
	probeAck  bool // the frame was a PROBE_ACK: RTTs are the target's clock
}

func (o outcome) silent() bool {
	if len(o.frames)+len(o.packetIns)+len(o.digests)+len(o.usage) > 0 {
		return false
	}
	for _, d := range o.drops {
		if d != 0 {
			return false
		}
	}
	return true
}

func (o outcome) diff(b outcome) string {
	var out []string
	list := func(what string, x, y []string) {
		if strings.Join(x, "\n") != strings.Join(y, "\n") {
			out = append(out, fmt.Sprintf("  %s: software UPF %v\n  %s: BMv2         %v", what, x, what, y))
		}
	}
	list("frames", o.frames, b.frames)
	list("packet-ins", o.packetIns, b.packetIns)
	list("digests", o.digests, b.digests)
	if fmt.Sprint(o.drops) != fmt.Sprint(b.drops) {
		out = append(out, fmt.Sprintf("  drops: software UPF %v, BMv2 %v", dropNames(o.drops), dropNames(b.drops)))
	}
	if fmt.Sprint(o.usage) != fmt.Sprint(b.usage) {
		out = append(out, fmt.Sprintf("  usage: software UPF %v, BMv2 %v", o.usage, b.usage))
	}
	for _, k := range sortedKeys(o.regs) {
		x, y := o.regs[k], b.regs[k]
		if o.probeAck && strings.HasPrefix(k, "rtt_") {
			x, y = rttClass(x), rttClass(y)
		}
		if x != y {
			out = append(out, fmt.Sprintf("  register %s: software UPF %d, BMv2 %d", k, o.regs[k], b.regs[k]))
		}
	}
	return strings.Join(out, "\n")
}

// rttClass is what a measured RTT can be compared by across clocks: 0 (unavailable) or measured.
func rttClass(v uint64) uint64 {
	return min(v, 1)
}

func dropNames(d map[int64]int64) string {
	var parts []string
	for i, n := range d {
		name := fmt.Sprint(i)
		for k, v := range DropReasons {
			if int64(v) == i {
				name = k
			}
		}
		parts = append(parts, fmt.Sprintf("%s+%d", name, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// observe sends frame on port and collects what it did: output until 10 ms after the first sign
// of it (frames, stream messages or a drops count), at most 300 ms.
func (cr *caseRun) observe(ctx context.Context, send func() error, frame []byte, cells []string, usage map[string][]int64) (outcome, error) {
	r := cr.r
	r.collector.take()
	r.client.takeEvents()
	before, err := cr.readDrops(ctx)
	if err != nil {
		return outcome{}, err
	}
	usageBefore, err := cr.readUsage(ctx, usage)
	if err != nil {
		return outcome{}, err
	}
	if err := send(); err != nil {
		return outcome{}, err
	}
	var after map[int64]int64
	deadline := time.Now().Add(300 * time.Millisecond)
	lastDrops := time.Now()
	for {
		nd, np := r.client.counts()
		seen := r.collector.count()+nd+np > 0
		if !seen && time.Since(lastDrops) >= 10*time.Millisecond {
			if after, err = cr.readDrops(ctx); err != nil {
				return outcome{}, err
			}
			seen = fmt.Sprint(after) != fmt.Sprint(before)
			lastDrops = time.Now()
		}
		if seen || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // a second copy, a count after a frame
	if after, err = cr.readDrops(ctx); err != nil {
		return outcome{}, err
	}

	usageAfter, err := cr.readUsage(ctx, usage)
	if err != nil {
		return outcome{}, err
	}

	o := outcome{drops: map[int64]int64{}, usage: map[string]string{}, regs: map[string]uint64{}, probeAck: isProbeAck(frame)}
	for i, n := range after {
		if d := n - before[i]; d != 0 {
			o.drops[i] = d
		}
	}
	for k, a := range usageAfter {
		if b := usageBefore[k]; a != b {
			o.usage[k] = fmt.Sprintf("+%d/+%d", int64(a.packets-b.packets), int64(a.bytes-b.bytes))
		}
	}
	got, rxErrs := r.collector.take()
	if len(rxErrs) > 0 {
		return outcome{}, rxErrs[0]
	}
	sort.SliceStable(got, func(i, j int) bool { return got[i].port < got[j].port })
	for _, f := range got {
		o.frames = append(o.frames, f.port+" "+hex.EncodeToString(maskClock(f.frame)))
	}
	events, err := r.client.takeEvents()
	if err != nil {
		return outcome{}, err
	}
	for _, e := range events {
		if e.packetIn != nil {
			o.packetIns = append(o.packetIns, describePacketIn(e.packetIn))
		}
		if e.digest != nil {
			for _, m := range e.digest.GetData() {
				o.digests = append(o.digests, describeReport(m, o.probeAck))
			}
		}
	}
	for _, key := range cells {
		reg, idx, err := cr.registerRef(key)
		if err != nil {
			return outcome{}, err
		}
		v, err := cr.readRegister(ctx, reg, idx)
		if err != nil {
			return outcome{}, err
		}
		o.regs[key] = v
	}
	return o, nil
}

func describePacketIn(p *p4v1.PacketIn) string {
	var meta []string
	for _, m := range p.GetMetadata() {
		meta = append(meta, fmt.Sprintf("%d=%x", m.GetMetadataId(), m.GetValue()))
	}
	return strings.Join(meta, ",") + " " + hex.EncodeToString(p.GetPayload())
}

// describeReport renders a probe_reports member list; a PROBE_ACK's rtt_us (the fifth member)
// is the target's clock, so it is rendered by class.
func describeReport(m *p4v1.P4Data, probeAck bool) string {
	var parts []string
	for i, mem := range m.GetStruct().GetMembers() {
		v := fromBytestring(mem.GetBitstring())
		if i == 4 && probeAck {
			v = rttClass(v)
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ",")
}

// heldForReorder says whether the reorder would hold frame: Junction DATA marked CURRENT_PATH.
// droppedByTheKernel reports a VLAN-tagged frame too short for the tag and the type after it
// (20 bytes): Linux drops it when it takes the tag off (skb_vlan_untag), before any packet
// socket, so BMv2 and an AF_PACKET port never see it; an AF_XDP port reads it before that.
func droppedByTheKernel(frame []byte) bool {
	if len(frame) < 14 || len(frame) >= 20 {
		return false
	}
	t := uint16(frame[12])<<8 | uint16(frame[13])
	return t == 0x8100 || t == 0x88a8
}

func heldForReorder(frame []byte) bool {
	var f wire.Frame
	f.Parse(frame)
	return f.Has&wire.HasJunction != 0 && f.Junction.Type == wire.TypeData && f.Junction.Marks&wire.MarkCurrentPath != 0
}

func isProbeAck(frame []byte) bool {
	var f wire.Frame
	return f.Parse(frame) == nil && f.Has&wire.HasJunction != 0 && f.Junction.Type == wire.TypeProbeAck
}

// maskClock zeroes a PROBE_REPLY's upf_ts, the target's clock.
func maskClock(frame []byte) []byte {
	var f wire.Frame
	if f.Parse(frame) != nil || f.Has&wire.HasControl == 0 || f.Junction.Type != wire.TypeProbeReply {
		return frame
	}
	out := append([]byte(nil), frame...)
	off := f.JunctionOff + wire.HeaderLen + 12
	copy(out[off:off+4], []byte{0, 0, 0, 0})
	return out
}

// unmappedPort is a port number neither target has an interface for.
const unmappedPort = 77

// mutate returns a copy of frame changed the way broken or hostile traffic is: a byte of the
// headers changed, a length field set to a neighbouring value, the frame cut short, bytes
// appended, or an 802.1Q or 802.1ad tag put after the MAC addresses.
func mutate(rng *rand.Rand, frame []byte) ([]byte, string) {
	out := append([]byte(nil), frame...)
	headers := min(len(out), 90)
	switch rng.IntN(6) {
	case 5:
		if len(out) < 14 {
			return out, "unchanged (no room for a tag)"
		}
		tpid, tci := []uint16{0x8100, 0x88a8}[rng.IntN(2)], uint16(rng.IntN(1<<16))
		tagged := append(append(out[:12:12], byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci)), out[12:]...)
		return tagged, fmt.Sprintf("with a VLAN tag %#04x/%#04x", tpid, tci)
	case 0, 1:
		i := rng.IntN(headers)
		out[i] ^= byte(1 << rng.IntN(8))
		return out, fmt.Sprintf("with bit flipped in byte %d", i)
	case 2:
		var f wire.Frame
		f.Parse(frame)
		var fields []int // offsets of 16-bit length fields
		if f.Has&wire.HasIPv4 != 0 {
			fields = append(fields, f.IPv4Off+2)
		}
		if f.Has&wire.HasUDP != 0 {
			fields = append(fields, f.IPv4Off+wire.IPv4HeaderLen+4)
		}
		if f.Has&wire.HasGTPU != 0 {
			fields = append(fields, f.IPv4Off+wire.IPv4HeaderLen+wire.UDPHeaderLen+2)
		}
		if f.Has&wire.HasInnerIPv4 != 0 {
			fields = append(fields, f.InnerOff+2)
		}
		if f.Has&wire.HasJunction != 0 {
			fields = append(fields, f.JunctionOff+2)
		}
		if len(fields) == 0 {
			return out, "unchanged (no length field)"
		}
		off := fields[rng.IntN(len(fields))]
		v := int(out[off])<<8 | int(out[off+1])
		v += []int{-21, -9, -1, 1, 4, 9, 100}[rng.IntN(7)]
		out[off], out[off+1] = byte(v>>8), byte(v)
		return out, fmt.Sprintf("with the length field at byte %d set to %d", off, v&0xffff)
	case 3:
		if len(out) <= 14 { // a frame too short for Ethernet already: shorter still
			n := rng.IntN(len(out) + 1)
			return out[:n], fmt.Sprintf("cut to %d bytes", n)
		}
		n := 14 + rng.IntN(len(out)-14)
		return out[:n], fmt.Sprintf("cut to %d bytes", n)
	default:
		n := 1 + rng.IntN(40)
		for range n {
			out = append(out, byte(rng.IntN(256)))
		}
		return out, fmt.Sprintf("with %d bytes appended", n)
	}
}

// reportLimit is how many disagreements are printed in full (JUNCTION_DIFF_REPORT, default 20).
func reportLimit() int {
	if n, err := strconv.Atoi(os.Getenv("JUNCTION_DIFF_REPORT")); err == nil {
		return n
	}
	return 20
}
