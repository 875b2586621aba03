package p4

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

const (
	v1modelProgram = "v1model/junction_upf.p4"
	tnaProgram     = "tna/junction_upf.p4"
)

// tnaPrivate are the objects only the Tofino build has: the reorder queue
// allocator of the pausable-queue reorder, and bf-p4c's port metadata. The operator
// never touches them.
var tnaPrivate = map[string]string{
	"reorder_queues_a": "register",
	"reorder_queues_b": "register",
}

// v1modelPrivate are the objects only the v1model build has: the ticket queue of its
// recirculation-loop reorder (@hidden; the operator never touches it) and the policed
// counters, the session's and its QoS flows', which bf-p4c 9.13.4 fails to place in the Tofino 2
// egress (docs/tofino.md, "The MBR policer on Tofino 2"; the operator reads them where a
// pipeline has them).
var v1modelPrivate = map[string]string{
	"reorder_tickets":       "register",
	"uplink_policed":        "counter",
	"downlink_policed":      "counter",
	"uplink_flow_policed":   "counter",
	"downlink_flow_policed": "counter",
}

// P4Info ID prefixes (p4/config/v1/p4info.proto, P4Ids.Prefix).
const (
	prefixAction           = uint32(p4configv1.P4Ids_ACTION)
	prefixTable            = uint32(p4configv1.P4Ids_TABLE)
	prefixControllerHeader = uint32(p4configv1.P4Ids_CONTROLLER_HEADER)
	prefixCounter          = uint32(p4configv1.P4Ids_COUNTER)
	prefixMeter            = uint32(p4configv1.P4Ids_METER)
	prefixRegister         = uint32(p4configv1.P4Ids_REGISTER)
	prefixDigest           = uint32(p4configv1.P4Ids_DIGEST)
)

// jenkinsOneAtATime is p4c's hash for IDs that carry no @id annotation
// (P4RuntimeSymbolTable::jenkinsOneAtATimeHash).
func jenkinsOneAtATime(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

func hashedID(prefix uint32, name string) uint32 {
	return prefix<<24 | jenkinsOneAtATime(name)&0xffffff
}

// idProblems reports duplicate IDs and IDs whose prefix byte does not match
// the kind of object.
func idProblems(info *p4configv1.P4Info) []string {
	var out []string
	owner := map[uint32]string{}
	check := func(kind string, prefix uint32, pre *p4configv1.Preamble) {
		if pre == nil {
			out = append(out, fmt.Sprintf("%s without a preamble", kind))
			return
		}
		if pre.Id>>24 != prefix {
			out = append(out, fmt.Sprintf("%s %s: ID 0x%08x should start with 0x%02x", kind, pre.Name, pre.Id, prefix))
		}
		if prev, dup := owner[pre.Id]; dup {
			out = append(out, fmt.Sprintf("%s %s: ID 0x%08x is also used by %s", kind, pre.Name, pre.Id, prev))
		}
		owner[pre.Id] = kind + " " + pre.Name
	}
	for _, t := range info.GetTables() {
		check("table", prefixTable, t.GetPreamble())
	}
	for _, a := range info.GetActions() {
		check("action", prefixAction, a.GetPreamble())
	}
	for _, r := range info.GetRegisters() {
		check("register", prefixRegister, r.GetPreamble())
	}
	for _, c := range info.GetCounters() {
		check("counter", prefixCounter, c.GetPreamble())
	}
	for _, m := range info.GetMeters() {
		check("meter", prefixMeter, m.GetPreamble())
	}
	for _, d := range info.GetDigests() {
		check("digest", prefixDigest, d.GetPreamble())
	}
	for _, c := range info.GetControllerPacketMetadata() {
		check("controller header", prefixControllerHeader, c.GetPreamble())
	}
	return out
}

func bitstring(width int) *p4configv1.P4DataTypeSpec {
	return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{
		Bitstring: &p4configv1.P4BitstringLikeTypeSpec{TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{
			Bit: &p4configv1.P4BitTypeSpec{Bitwidth: int32(width)}}}}}
}

func embedded(t *testing.T) *p4configv1.P4Info {
	t.Helper()
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func embeddedTNA(t *testing.T) *p4configv1.P4Info {
	t.Helper()
	info, err := TNAP4Info()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestEmbeddedP4InfoParses(t *testing.T) {
	info := embedded(t)
	if got := info.GetPkgInfo().GetArch(); got != "v1model" {
		t.Errorf("pkg_info.arch = %q, want v1model", got)
	}
	file, err := os.ReadFile("p4info.txtpb")
	if err != nil {
		t.Fatal(err)
	}
	text := P4InfoText()
	if !bytes.Equal(text, file) {
		t.Error("P4InfoText() differs from p4info.txtpb")
	}
	text[0] ^= 0xff
	if !bytes.Equal(P4InfoText(), file) {
		t.Error("changing the slice P4InfoText returned changed the embedded P4Info")
	}
	again := embedded(t)
	again.Tables[0].Preamble.Name = "changed"
	if embedded(t).Tables[0].Preamble.Name == "changed" {
		t.Error("P4Info() returned a shared message")
	}
}

func TestP4InfoIDsAreUniqueWithTheirPrefix(t *testing.T) {
	info := embedded(t)
	for _, p := range idProblems(info) {
		t.Error(p)
	}
	counts := map[string]int{
		"tables": len(info.GetTables()), "actions": len(info.GetActions()),
		"registers": len(info.GetRegisters()), "counters": len(info.GetCounters()), "meters": len(info.GetMeters()),
		"digests": len(info.GetDigests()), "controller headers": len(info.GetControllerPacketMetadata()),
	}
	for kind, n := range counts {
		if n == 0 {
			t.Errorf("the P4Info has no %s", kind)
		}
	}
	// v1model cannot annotate a digest() call with @id: p4c hashes its name, and
	// the TNA build's @id must be that same number.
	for _, d := range info.GetDigests() {
		if want := hashedID(prefixDigest, d.GetPreamble().GetName()); d.GetPreamble().GetId() != want {
			t.Errorf("digest %s: ID 0x%08x, p4c assigns 0x%08x", d.GetPreamble().GetName(), d.GetPreamble().GetId(), want)
		}
	}
}

// bf-p4c's P4Info of the TNA program (tna/p4info.txtpb, checked in and kept
// current by hack/p4-build.sh) exposes what p4c's of the v1model program does: the
// same tables, match fields, actions and parameters with the same names, widths
// and IDs; registers, counters, the digest and the controller headers with the same
// names, widths and sizes. Only the IDs of the externs differ (bf-p4c hashes
// their names and ignores @id): the operator resolves every name against the
// UPF's own P4Info, from its pipeline ConfigMap, so a Tofino UPF loads this one.
func TestTNAP4InfoAgreesWithV1model(t *testing.T) {
	v1, tna := comparableP4Infos(embedded(t), embeddedTNA(t), tofinoSizes(t))
	for _, d := range diffP4Info(v1, tna, "v1model (p4c)", "tna (bf-p4c)") {
		t.Error(d)
	}
}

// Only the profile's sizes are forgiven: any other size the TNA build has is reported.
func TestTNASizeOutsideTheProfileIsReported(t *testing.T) {
	tna := proto.Clone(embeddedTNA(t)).(*p4configv1.P4Info)
	for _, tt := range tna.Tables {
		if tt.GetPreamble().GetName() == "sessions" {
			tt.Size = 7
		}
	}
	v1, got := comparableP4Infos(embedded(t), tna, tofinoSizes(t))
	diffs := diffP4Info(v1, got, "p4c", "bf-p4c")
	if len(diffs) != 1 || !strings.Contains(diffs[0], "tables[sessions].size") {
		t.Errorf("a sessions table of 7 entries: got %q, want one difference in tables[sessions].size", diffs)
	}

	tna = proto.Clone(embeddedTNA(t)).(*p4configv1.P4Info)
	for _, c := range tna.Counters {
		if c.GetPreamble().GetName() == "uplink_usage" {
			c.Size = 7
		}
	}
	v1, got = comparableP4Infos(embedded(t), tna, tofinoSizes(t))
	diffs = diffP4Info(v1, got, "p4c", "bf-p4c")
	if len(diffs) != 1 || !strings.Contains(diffs[0], "counters[uplink_usage].size") {
		t.Errorf("an uplink_usage counter of 7 cells: got %q, want one difference in counters[uplink_usage].size", diffs)
	}
}

// tofinoSizes reads the Tofino profile from the sources: each capacity of size.p4 that
// the TNA program defines otherwise, as design point -> Tofino size.
func tofinoSizes(t *testing.T) map[int64][]int64 {
	t.Helper()
	v1, err := parseProgram(v1modelProgram)
	if err != nil {
		t.Fatal(err)
	}
	tna, err := parseProgram(tnaProgram)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int64][]int64{}
	for name := range v1.defines {
		if !strings.HasPrefix(name, "MAX_") {
			continue
		}
		tok := []token{{kind: tIdent, text: name}}
		design, err := v1.eval(tok)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tofino, err := tna.eval(tok)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tofino != design {
			sizes[design] = append(sizes[design], tofino)
		}
	}
	if len(sizes) == 0 {
		t.Fatalf("%s overrides no capacity of size.p4; docs/tofino.md says it does", tnaProgram)
	}
	return sizes
}

// comparableP4Infos strips what the two builds are allowed to differ in: each one's
// private objects, bf-p4c's port metadata extern, the architecture, the IDs of
// externs, and the sizes of the Tofino profile (tofino: a design-point size and what
// the TNA program makes of it), which it sets back to the design point. It fails
// nothing: a private object that went missing shows up in the comparison of the other.
func comparableP4Infos(v1, tna *p4configv1.P4Info, tofino map[int64][]int64) (*p4configv1.P4Info, *p4configv1.P4Info) {
	v1 = proto.Clone(v1).(*p4configv1.P4Info)
	tna = proto.Clone(tna).(*p4configv1.P4Info)
	v1.Registers = withoutPrivate(v1.Registers, v1modelPrivate, "register")
	tna.Registers = withoutPrivate(tna.Registers, tnaPrivate, "register")
	v1.Counters = withoutPrivate(v1.Counters, v1modelPrivate, "counter")
	v1.Tables = withoutPrivate(v1.Tables, v1modelPrivate, "table")
	v1.Actions = withoutPrivate(v1.Actions, v1modelPrivate, "action")
	v1.Meters = withoutPrivate(v1.Meters, v1modelPrivate, "meter")
	tna.Externs = nil
	// A size of the Tofino profile where the v1model object has the design point's.
	design := func(tnaSize, v1Size int64) int64 {
		for _, s := range tofino[v1Size] {
			if s == tnaSize {
				return v1Size
			}
		}
		return tnaSize
	}
	for _, tt := range tna.Tables {
		for _, v := range v1.Tables {
			if v.GetPreamble().GetName() == tt.GetPreamble().GetName() {
				tt.Size = design(tt.Size, v.Size)
			}
		}
		// A stage pin (TNA_STAGE) is bf-p4c's placement, which its P4Info repeats; not the contract.
		anns := tt.GetPreamble().GetAnnotations()[:0]
		for _, a := range tt.GetPreamble().GetAnnotations() {
			if !strings.HasPrefix(a, "@stage(") {
				anns = append(anns, a)
			}
		}
		tt.Preamble.Annotations = anns
	}
	for _, r := range tna.Registers {
		for _, v := range v1.Registers {
			if v.GetPreamble().GetName() == r.GetPreamble().GetName() {
				r.Size = int32(design(int64(r.Size), int64(v.Size)))
			}
		}
	}
	for _, c := range tna.Counters {
		for _, v := range v1.Counters {
			if v.GetPreamble().GetName() == c.GetPreamble().GetName() {
				c.Size = design(c.Size, v.Size)
			}
		}
	}
	for _, m := range tna.Meters {
		for _, v := range v1.Meters {
			if v.GetPreamble().GetName() == m.GetPreamble().GetName() {
				m.Size = design(m.Size, v.Size)
			}
		}
	}
	tna.PkgInfo.Arch = v1.GetPkgInfo().GetArch()
	for _, info := range []*p4configv1.P4Info{v1, tna} {
		for _, r := range info.Registers {
			r.Preamble.Id = 0
		}
		for _, c := range info.Counters {
			c.Preamble.Id = 0
		}
		for _, m := range info.Meters {
			m.Preamble.Id = 0
		}
		for _, d := range info.Digests {
			d.Preamble.Id = 0
		}
	}
	return v1, tna
}

// withoutPrivate drops the objects that private names as kind.
func withoutPrivate[T interface{ GetPreamble() *p4configv1.Preamble }](objs []T, private map[string]string, kind string) []T {
	return slices.DeleteFunc(objs, func(o T) bool { return private[o.GetPreamble().GetName()] == kind })
}

// The comparison is only worth something if it fails: every mutation of a
// copy of the checked-in P4Info must be reported, at the right place.
func TestComparisonReportsEveryMutation(t *testing.T) {
	source := embedded(t)
	table := func(info *p4configv1.P4Info, name string) *p4configv1.Table {
		for _, tb := range info.Tables {
			if tb.Preamble.Name == name {
				return tb
			}
		}
		t.Fatalf("no table %s", name)
		return nil
	}
	action := func(info *p4configv1.P4Info, name string) *p4configv1.Action {
		for _, a := range info.Actions {
			if a.Preamble.Name == name {
				return a
			}
		}
		t.Fatalf("no action %s", name)
		return nil
	}
	register := func(info *p4configv1.P4Info, name string) *p4configv1.Register {
		for _, r := range info.Registers {
			if r.Preamble.Name == name {
				return r
			}
		}
		t.Fatalf("no register %s", name)
		return nil
	}
	cases := []struct {
		name   string
		mutate func(*p4configv1.P4Info)
		want   string
	}{
		{"a match field's width", func(i *p4configv1.P4Info) {
			table(i, "sessions").MatchFields[0].Bitwidth = 16
		}, "tables[sessions].match_fields[session_addr].bitwidth: p4c has 32, mutated has 16"},
		{"a match field's name", func(i *p4configv1.P4Info) {
			table(i, "routes").MatchFields[0].Name = "dst"
		}, "tables[routes].match_fields[dst_addr]: in p4c, missing from mutated"},
		{"a match kind", func(i *p4configv1.P4Info) {
			table(i, "applications").MatchFields[3].Match = &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT}
		}, "tables[applications].match_fields[remote_port].match_type: p4c has RANGE, mutated has EXACT"},
		{"a match field's ID", func(i *p4configv1.P4Info) {
			table(i, "session_overrides").MatchFields[1].Id = 3
		}, "tables[session_overrides].match_fields[app_id].id: p4c has 2, mutated has 3"},
		{"a table size", func(i *p4configv1.P4Info) {
			table(i, "sessions").Size = 1024
		}, "tables[sessions].size: p4c has 524288, mutated has 1024"},
		{"a table ID", func(i *p4configv1.P4Info) {
			table(i, "filters").Preamble.Id = 0x02000077
		}, "tables[filters].preamble.id: p4c has 0x02000009, mutated has 0x02000077"},
		{"a const default action", func(i *p4configv1.P4Info) {
			table(i, "routes").ConstDefaultActionId = 0
		}, "tables[routes].const_default_action_id: p4c has 0x01000014"},
		{"a default-only scope", func(i *p4configv1.P4Info) {
			tb := table(i, "local_addresses")
			tb.ActionRefs[1].Scope = p4configv1.ActionRef_TABLE_AND_DEFAULT
		}, "tables[local_addresses].action_refs[0x01000002].scope: p4c has DEFAULT_ONLY, mutated has TABLE_AND_DEFAULT"},
		{"a table's action list", func(i *p4configv1.P4Info) {
			tb := table(i, "filters")
			tb.ActionRefs = tb.ActionRefs[:1]
		}, "tables[filters].action_refs[0x01000012]: in p4c, missing from mutated"},
		{"an action parameter's width", func(i *p4configv1.P4Info) {
			action(i, "route").Params[0].Bitwidth = 16
		}, "actions[route].params[port].bitwidth: p4c has 9, mutated has 16"},
		{"an action parameter's name", func(i *p4configv1.P4Info) {
			action(i, "set_session").Params[3].Name = "tunnel_id"
		}, "actions[set_session].params[tunnel_id]: in mutated, not in p4c"},
		{"an action parameter's ID", func(i *p4configv1.P4Info) {
			action(i, "set_application").Params[1].Id = 9
		}, "actions[set_application].params[mode].id: p4c has 2, mutated has 9"},
		{"a missing action", func(i *p4configv1.P4Info) {
			i.Actions = slices.DeleteFunc(i.Actions, func(a *p4configv1.Action) bool { return a.GetPreamble().GetName() == "drop_no_route" })
		}, "actions[drop_no_route]: in p4c, missing from mutated"},
		{"an extra table", func(i *p4configv1.P4Info) {
			extra := proto.Clone(table(i, "routes")).(*p4configv1.Table)
			extra.Preamble.Name = "routes_v6"
			i.Tables = append(i.Tables, extra)
		}, "tables[routes_v6]: in mutated, not in p4c"},
		{"a register's width", func(i *p4configv1.P4Info) {
			register(i, "reorder_state").TypeSpec = bitstring(16)
		}, "registers[reorder_state].type_spec.bitstring.bit.bitwidth: p4c has 8, mutated has 16"},
		{"a register's size", func(i *p4configv1.P4Info) {
			register(i, "session_seq").Size = 1
		}, "registers[session_seq].size: p4c has 524288, mutated has 1"},
		{"the counter's unit", func(i *p4configv1.P4Info) {
			i.Counters[0].Spec.Unit = p4configv1.CounterSpec_PACKETS
		}, "counters[drops].spec.unit: p4c has BOTH, mutated has PACKETS"},
		{"the counter's size", func(i *p4configv1.P4Info) {
			i.Counters[0].Size = 16
		}, "counters[drops].size: p4c has 32, mutated has 16"},
		{"a digest member's width", func(i *p4configv1.P4Info) {
			i.TypeInfo.Structs["probe_reports"].Members[2].TypeSpec = bitstring(16)
		}, "type_info.structs[probe_reports].members[access].type_spec.bitstring.bit.bitwidth: p4c has 8, mutated has 16"},
		{"a missing digest member", func(i *p4configv1.P4Info) {
			s := i.TypeInfo.Structs["probe_reports"]
			s.Members = s.Members[:5]
		}, "type_info.structs[probe_reports].members[suspended]: in p4c, missing from mutated"},
		{"a digest's struct", func(i *p4configv1.P4Info) {
			i.Digests[0].TypeSpec.GetStruct().Name = "probe_report_t"
		}, `digests[probe_reports].type_spec.struct.name: p4c has "probe_reports", mutated has "probe_report_t"`},
		{"a controller header field", func(i *p4configv1.P4Info) {
			i.ControllerPacketMetadata[0].Metadata[0].Bitwidth = 16
		}, "controller_packet_metadata[packet_in].metadata[ingress_port].bitwidth: p4c has 9, mutated has 16"},
		{"the architecture", func(i *p4configv1.P4Info) {
			i.PkgInfo.Arch = "psa"
		}, `pkg_info.arch: p4c has "v1model", mutated has "psa"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mutated := embedded(t)
			tc.mutate(mutated)
			diffs := diffP4Info(source, mutated, "p4c", "mutated")
			found := false
			for _, d := range diffs {
				found = found || strings.Contains(d, tc.want)
			}
			if !found {
				t.Errorf("the comparison did not report %q; it reported:\n%s", tc.want, strings.Join(diffs, "\n"))
			}
		})
	}
}

func TestIDCheckReportsMistakes(t *testing.T) {
	dup := embedded(t)
	dup.Actions[1].Preamble.Id = dup.Actions[0].Preamble.Id
	wrongPrefix := embedded(t)
	wrongPrefix.Registers[0].Preamble.Id = 0x12000005
	for name, tc := range map[string]struct {
		info *p4configv1.P4Info
		want string
	}{
		"duplicate": {dup, "action not_local: ID 0x01000001 is also used by action accept_local"},
		"prefix":    {wrongPrefix, "register " + wrongPrefix.Registers[0].GetPreamble().GetName() + ": ID 0x12000005 should start with 0x16"},
	} {
		problems := idProblems(tc.info)
		if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
			t.Errorf("%s: want %q, got %q", name, tc.want, problems)
		}
	}
}
