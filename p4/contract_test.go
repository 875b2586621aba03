package p4

// docs/pipeline.md is the contract the operator, the software UPF and the
// packet vectors are written against. These tests read its tables and lists
// and check them against the checked-in P4Info and the P4 constants, so that
// the document cannot drift from the program.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

const contractPath = "../docs/pipeline.md"

func readContract(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(contractPath)
	if err != nil {
		t.Fatalf("read the contract: %v", err)
	}
	return string(data)
}

// markdownTable returns the body rows (cells trimmed) of the first table
// after the line that starts with heading.
func markdownTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), heading) {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s: no section %q", contractPath, heading)
	}
	var rows [][]string
	inTable := false
	for _, l := range lines[start+1:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable { // the header row
			inTable = true
			continue
		}
		if strings.HasPrefix(l, "| ---") || strings.HasPrefix(l, "|---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: section %q has no table", contractPath, heading)
	}
	return rows
}

var (
	codeRe   = regexp.MustCompile("`([^`]*)`")
	keyRe    = regexp.MustCompile("`(\\w+)`: (\\w+) (\\d+)")
	actionRe = regexp.MustCompile("`(\\w+)\\(([^)]*)\\)`")
	paramRe  = regexp.MustCompile("(\\w+): (\\d+)")
)

func firstCode(cell string) string {
	if m := codeRe.FindStringSubmatch(cell); m != nil {
		return m[1]
	}
	return ""
}

type named interface{ GetPreamble() *p4configv1.Preamble }

func byName[T named](list []T) map[string]T {
	out := map[string]T{}
	for _, x := range list {
		out[x.GetPreamble().GetName()] = x
	}
	return out
}

func contractProgram(t *testing.T) *program {
	t.Helper()
	prog, err := parseProgram(v1modelProgram)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func constValue(t *testing.T, prog *program, name string) int64 {
	t.Helper()
	toks, ok := prog.consts[name]
	if !ok {
		if _, ok := prog.defines[name]; !ok {
			t.Errorf("the P4 source has no constant %s", name)
			return -1
		}
		toks = []token{{kind: tIdent, text: name}}
	}
	v, err := prog.eval(toks)
	if err != nil {
		t.Errorf("constant %s: %v", name, err)
	}
	return v
}

func TestContractTables(t *testing.T) {
	doc := readContract(t)
	prog := contractProgram(t)
	info := embedded(t)
	tables := byName(info.GetTables())
	actions := byName(info.GetActions())
	actionName := map[uint32]string{}
	for _, a := range info.GetActions() {
		actionName[a.GetPreamble().GetId()] = a.GetPreamble().GetName()
	}

	documented := map[string]bool{}
	for _, row := range markdownTable(t, doc, "### Tables") {
		if len(row) != 5 {
			t.Errorf("pipeline.md table row %q: want 5 cells", strings.Join(row, " | "))
			continue
		}
		name := firstCode(row[0])
		documented[name] = true
		tbl, ok := tables[name]
		if !ok {
			t.Errorf("pipeline.md documents table %s; the P4Info has no such table", name)
			continue
		}
		// Keys, in order.
		var docKeys, infoKeys []string
		for _, m := range keyRe.FindAllStringSubmatch(row[1], -1) {
			docKeys = append(docKeys, fmt.Sprintf("%s: %s %s", m[1], m[2], m[3]))
		}
		for _, mf := range tbl.GetMatchFields() {
			infoKeys = append(infoKeys, fmt.Sprintf("%s: %s %d", mf.GetName(),
				strings.ToLower(mf.GetMatchType().String()), mf.GetBitwidth()))
		}
		if strings.Join(docKeys, ", ") != strings.Join(infoKeys, ", ") {
			t.Errorf("table %s keys: pipeline.md says [%s], the P4Info has [%s]",
				name, strings.Join(docKeys, ", "), strings.Join(infoKeys, ", "))
		}
		// Actions: the ones listed plus the default.
		want := map[string]bool{}
		for _, m := range actionRe.FindAllStringSubmatch(row[2], -1) {
			want[m[1]] = true
			act, ok := actions[m[1]]
			if !ok {
				t.Errorf("table %s: pipeline.md lists action %s; the P4Info has no such action", name, m[1])
				continue
			}
			var docParams, infoParams []string
			for _, p := range paramRe.FindAllStringSubmatch(m[2], -1) {
				docParams = append(docParams, p[1]+": "+p[2])
			}
			for _, p := range act.GetParams() {
				infoParams = append(infoParams, fmt.Sprintf("%s: %d", p.GetName(), p.GetBitwidth()))
			}
			if strings.Join(docParams, ", ") != strings.Join(infoParams, ", ") {
				t.Errorf("action %s parameters: pipeline.md says (%s), the P4Info has (%s)",
					m[1], strings.Join(docParams, ", "), strings.Join(infoParams, ", "))
			}
		}
		def := firstCode(row[3])
		want[def] = true
		if got := actionName[tbl.GetConstDefaultActionId()]; got != def {
			t.Errorf("table %s: pipeline.md says the default action is %s, the P4Info's const default is %q", name, def, got)
		}
		for _, ref := range tbl.GetActionRefs() {
			n := actionName[ref.GetId()]
			if !want[n] {
				t.Errorf("table %s: the P4Info has action %s, pipeline.md does not list it", name, n)
			}
			delete(want, n)
		}
		for n := range want {
			t.Errorf("table %s: pipeline.md lists action %s, the P4Info table does not have it", name, n)
		}
		// Size: a size.p4 constant.
		sizeName := firstCode(row[4])
		if size := constValue(t, prog, sizeName); size != tbl.GetSize() {
			t.Errorf("table %s: %s is %d, the P4Info size is %d", name, sizeName, size, tbl.GetSize())
		}
	}
	for name := range tables {
		if !documented[name] {
			t.Errorf("table %s is in the P4Info but not documented in pipeline.md", name)
		}
	}
}

func TestContractExterns(t *testing.T) {
	doc := readContract(t)
	prog := contractProgram(t)
	info := embedded(t)
	registers := byName(info.GetRegisters())
	counters := byName(info.GetCounters())
	meters := byName(info.GetMeters())
	digests := byName(info.GetDigests())
	headers := byName(info.GetControllerPacketMetadata())
	documented := map[string]bool{}
	bitRe := regexp.MustCompile(`bit<(\d+)>`)

	for _, row := range markdownTable(t, doc, "### Registers, counters, digest, packet I/O") {
		if len(row) != 4 {
			t.Errorf("pipeline.md row %q: want 4 cells", strings.Join(row, " | "))
			continue
		}
		name, kind := firstCode(row[0]), row[1]
		documented[name] = true
		switch {
		case kind == "register":
			r, ok := registers[name]
			if !ok {
				t.Errorf("pipeline.md documents register %s; the P4Info has none", name)
				continue
			}
			m := bitRe.FindStringSubmatch(row[2])
			w := r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()
			if m == nil || m[1] != strconv.Itoa(int(w)) {
				t.Errorf("register %s: pipeline.md says %q, the P4Info element is bit<%d>", name, row[2], w)
			}
			if size := constValue(t, prog, firstCode(row[3])); size != int64(r.GetSize()) {
				t.Errorf("register %s: %s is %d, the P4Info size is %d", name, firstCode(row[3]), size, r.GetSize())
			}
		case strings.HasPrefix(kind, "counter"):
			c, ok := counters[name]
			if !ok {
				t.Errorf("pipeline.md documents counter %s; the P4Info has none", name)
				continue
			}
			if strings.Contains(kind, "packets and bytes") != (c.GetSpec().GetUnit() == p4configv1.CounterSpec_BOTH) {
				t.Errorf("counter %s: pipeline.md says %q, the P4Info unit is %s", name, kind, c.GetSpec().GetUnit())
			}
			// A size.p4 constant (`MAX_USAGE_RECORDS`) or a number.
			size, err := strconv.ParseInt(row[3], 10, 64)
			if sizeName := firstCode(row[3]); sizeName != "" {
				size, err = constValue(t, prog, sizeName), nil
			}
			if err != nil || size != c.GetSize() {
				t.Errorf("counter %s: pipeline.md says size %s, the P4Info has %d", name, row[3], c.GetSize())
			}
		case strings.HasPrefix(kind, "meter"):
			m, ok := meters[name]
			if !ok {
				t.Errorf("pipeline.md documents meter %s; the P4Info has none", name)
				continue
			}
			if strings.Contains(kind, "bytes") != (m.GetSpec().GetUnit() == p4configv1.MeterSpec_BYTES) {
				t.Errorf("meter %s: pipeline.md says %q, the P4Info unit is %s", name, kind, m.GetSpec().GetUnit())
			}
			if size := constValue(t, prog, firstCode(row[3])); size != m.GetSize() {
				t.Errorf("meter %s: %s is %d, the P4Info size is %d", name, firstCode(row[3]), size, m.GetSize())
			}
		case kind == "digest":
			d, ok := digests[name]
			if !ok {
				t.Errorf("pipeline.md documents digest %s; the P4Info has none", name)
				continue
			}
			var docMembers, infoMembers []string
			for _, p := range paramRe.FindAllStringSubmatch(row[2], -1) {
				docMembers = append(docMembers, p[1]+": "+p[2])
			}
			for _, m := range info.GetTypeInfo().GetStructs()[d.GetTypeSpec().GetStruct().GetName()].GetMembers() {
				infoMembers = append(infoMembers, fmt.Sprintf("%s: %d", m.GetName(), m.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()))
			}
			if strings.Join(docMembers, ", ") != strings.Join(infoMembers, ", ") {
				t.Errorf("digest %s: pipeline.md says {%s}, the P4Info has {%s}", name,
					strings.Join(docMembers, ", "), strings.Join(infoMembers, ", "))
			}
		case kind == "controller header":
			h, ok := headers[name]
			if !ok {
				t.Errorf("pipeline.md documents controller header %s; the P4Info has none", name)
				continue
			}
			var docFields, infoFields []string
			for _, p := range paramRe.FindAllStringSubmatch(row[2], -1) {
				docFields = append(docFields, p[1]+": "+p[2])
			}
			for _, m := range h.GetMetadata() {
				infoFields = append(infoFields, fmt.Sprintf("%s: %d", m.GetName(), m.GetBitwidth()))
			}
			if strings.Join(docFields, ", ") != strings.Join(infoFields, ", ") {
				t.Errorf("controller header %s: pipeline.md says %s, the P4Info has %s", name,
					strings.Join(docFields, ", "), strings.Join(infoFields, ", "))
			}
		default:
			t.Errorf("pipeline.md row %s: unknown kind %q", name, kind)
		}
	}
	for _, names := range []map[string]bool{keys(registers), keys(counters), keys(meters), keys(digests), keys(headers)} {
		for name := range names {
			if !documented[name] {
				t.Errorf("%s is in the P4Info but not documented in pipeline.md", name)
			}
		}
	}
}

func keys[T any](m map[string]T) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func TestContractSizes(t *testing.T) {
	doc := readContract(t)
	prog := contractProgram(t)
	for _, row := range markdownTable(t, doc, "## Sizes") {
		name := firstCode(row[0])
		want, err := strconv.ParseInt(row[1], 10, 64)
		if err != nil {
			t.Errorf("pipeline.md size %s: %q is not a number", name, row[1])
			continue
		}
		if got := constValue(t, prog, name); got != want {
			t.Errorf("%s: pipeline.md says %d, size.p4 has %d", name, want, got)
		}
	}
}

func TestContractEncodings(t *testing.T) {
	doc := readContract(t)
	prog := contractProgram(t)

	// Drop reasons, as listed after "Drop reasons (index into `drops`):".
	i := strings.Index(doc, "Drop reasons (index into `drops`)")
	if i < 0 {
		t.Fatal("pipeline.md has no drop reason list")
	}
	para := doc[i:]
	if j := strings.Index(para, "\n\n"); j > 0 {
		para = para[:j]
	}
	reasons := regexp.MustCompile("(\\d+) `([A-Z_]+)`").FindAllStringSubmatch(para, -1)
	if len(reasons) == 0 {
		t.Error("pipeline.md lists no drop reasons")
	}
	for _, m := range reasons {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		if got := constValue(t, prog, "DROP_"+m[2]); got != n {
			t.Errorf("drop reason %s: pipeline.md says %d, define.p4 has %d", m[2], n, got)
		}
	}
	if size := constValue(t, prog, "DROP_REASON_COUNT"); int64(len(reasons)) >= size {
		t.Errorf("%d drop reasons do not fit the %d cells of drops", len(reasons), size)
	}

	// Accesses and steering modes, from the encodings table.
	for _, row := range markdownTable(t, doc, "## Encodings shared by every part") {
		switch row[0] {
		case "access":
			for _, m := range regexp.MustCompile("`(\\d+)` = ([A-Za-z0-9-]+)").FindAllStringSubmatch(row[1], -1) {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				name := "ACCESS_" + strings.ToUpper(strings.ReplaceAll(m[2], "-", ""))
				if got := constValue(t, prog, name); got != n {
					t.Errorf("access %s: pipeline.md says %d, define.p4 %s is %d", m[2], n, name, got)
				}
			}
		case "steering mode":
			for _, m := range regexp.MustCompile("`(\\d+)` ([a-z -]+)").FindAllStringSubmatch(row[1], -1) {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				name := "MODE_" + strings.ToUpper(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(m[2])))
				if got := constValue(t, prog, name); got != n {
					t.Errorf("steering mode %s: pipeline.md says %d, define.p4 %s is %d", m[2], n, name, got)
				}
			}
		}
	}

	// Facts stated in prose.
	for _, c := range []struct {
		text, constant string
	}{
		{"clone session `REDUNDANT_CLONE_SESSION` (100)", "REDUNDANT_CLONE_SESSION"},
		{"UDP port **2153**", "JUNCTION_UDP_PORT"},
	} {
		if !strings.Contains(doc, c.text) {
			t.Errorf("pipeline.md no longer says %q; update this test with it", c.text)
			continue
		}
		numbers := regexp.MustCompile(`\d+`).FindAllString(c.text, -1)
		n, _ := strconv.ParseInt(numbers[len(numbers)-1], 10, 64)
		if got := constValue(t, prog, c.constant); got != n {
			t.Errorf("%s: pipeline.md says %d, the P4 source has %d", c.constant, n, got)
		}
	}
}
