// Command tofino-report turns bf-p4c's resource logs (bf-p4c -g) into the Markdown tables of
// docs/tofino.md: stages used, resources per stage, and where each P4Runtime table, register,
// meter and counter went. hack/p4-build.sh runs it on build/p4/tna and checks the document against it.
//
//	go run ./hack/tofino-report build/p4/tna
//
// It reads OUT/pipe/logs/resources.json (the compiler's resource map: per stage, which RAMs,
// TCAMs, map RAMs, stateful ALUs, logical table IDs and gateways each object uses),
// OUT/pipe/logs/table_summary.log (stages per gress, the final placement),
// OUT/pipe/logs/phv_allocation_summary_*.log (PHV use), OUT/pipe/context.json (the cycles
// each stage adds to a packet's latency) and OUT/p4info.txtpb for the sizes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

// resources is the part of resources.json (schema 2.x) the report reads.
type resources struct {
	CompilerVersion string `json:"compiler_version"`
	Resources       struct {
		MAU struct {
			NStages int     `json:"nStages"`
			Stages  []stage `json:"mau_stages"`
		} `json:"mau"`
	} `json:"resources"`
}

type usage struct {
	UsedBy  string `json:"used_by"`
	UsedFor string `json:"used_for"`
}

type stage struct {
	Number int `json:"stage_number"`
	RAMs   struct {
		Columns int `json:"nColumns"`
		Rows    int `json:"nRows"`
		SRAMs   []struct {
			Usages []usage `json:"usages"`
		} `json:"srams"`
	} `json:"rams"`
	TCAMs struct {
		Columns int `json:"nColumns"`
		Rows    int `json:"nRows"`
		TCAMs   []struct {
			Usages []usage `json:"usages"`
		} `json:"tcams"`
	} `json:"tcams"`
	MapRAMs struct {
		Rows  int `json:"nRows"`
		Units int `json:"nUnits"`
		Maps  []struct {
			Usages []usage `json:"usages"`
		} `json:"maprams"`
	} `json:"map_rams"`
	MeterALUs struct {
		N      int `json:"nAlus"`
		Meters []struct {
			UsedBy string `json:"used_by"`
		} `json:"meters"`
	} `json:"meter_alus"`
	LogicalTables struct {
		Size int `json:"size"`
		IDs  []struct {
			TableName string `json:"table_name"`
		} `json:"ids"`
	} `json:"logical_tables"`
	Gateways struct {
		Rows     int               `json:"nRows"`
		Units    int               `json:"nUnits"`
		Gateways []json.RawMessage `json:"gateways"`
	} `json:"gateways"`
	VLIW struct {
		Size         int               `json:"size"`
		Instructions []json.RawMessage `json:"instructions"`
	} `json:"vliw"`
}

// object is what one P4Runtime table, register, meter or counter uses, over every stage it spans.
type object struct {
	name                  string
	kind                  string
	size                  int64
	stages                map[int]bool
	srams, tcams, maprams int
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tofino-report OUT (bf-p4c -g output directory)")
		os.Exit(2)
	}
	if err := report(os.Stdout, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "tofino-report:", err)
		os.Exit(1)
	}
}

func report(w io.Writer, out string) error {
	logs := filepath.Join(out, "pipe", "logs")
	var res resources
	data, err := os.ReadFile(filepath.Join(logs, "resources.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("resources.json: %v", err)
	}
	stages, err := finalStages(filepath.Join(logs, "table_summary.log"))
	if err != nil {
		return err
	}
	phv, err := phvUsage(logs)
	if err != nil {
		return err
	}
	objects, err := p4runtimeObjects(filepath.Join(out, "p4info.txtpb"))
	if err != nil {
		return err
	}
	cycles, err := latencyCycles(filepath.Join(out, "pipe", "context.json"))
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "bf-p4c %s, Tofino 2, the sizes of `p4/include/size.p4` as the TNA program sets them.\n\n",
		res.CompilerVersion)
	fmt.Fprintf(w, "| pipeline | used |\n| --- | --- |\n")
	fmt.Fprintf(w, "| ingress stages | %d of %d |\n", stages["ingress"], res.Resources.MAU.NStages)
	fmt.Fprintf(w, "| egress stages | %d of %d |\n", stages["egress"], res.Resources.MAU.NStages)
	fmt.Fprintf(w, "| match-action latency, ingress | %d clock cycles |\n", cycles["ingress"])
	fmt.Fprintf(w, "| match-action latency, egress | %d clock cycles |\n", cycles["egress"])
	fmt.Fprintf(w, "| PHV containers (ingress and egress) | %s |\n\n", phv)

	fmt.Fprintf(w, "Per stage (ingress and egress share a stage's resources; a stage no table uses is left out):\n\n")
	fmt.Fprintf(w, "| stage | SRAM blocks | TCAM blocks | map RAMs | stateful ALUs | logical tables | gateways | VLIW instructions |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	// The columns of the table, used and available, per stage and in all.
	var total, totalCap [7]int
	for _, s := range res.Resources.MAU.Stages {
		capacity := [7]int{s.RAMs.Columns * s.RAMs.Rows, s.TCAMs.Columns * s.TCAMs.Rows,
			s.MapRAMs.Rows * s.MapRAMs.Units, s.MeterALUs.N, s.LogicalTables.Size,
			s.Gateways.Rows * s.Gateways.Units, s.VLIW.Size}
		for i := range capacity {
			totalCap[i] += capacity[i]
		}
		if len(s.LogicalTables.IDs) == 0 {
			continue
		}
		used := [7]int{len(s.RAMs.SRAMs), len(s.TCAMs.TCAMs), len(s.MapRAMs.Maps), len(s.MeterALUs.Meters),
			len(s.LogicalTables.IDs), len(s.Gateways.Gateways), len(s.VLIW.Instructions)}
		cells := make([]string, len(used))
		for i := range used {
			total[i] += used[i]
			cells[i] = fmt.Sprintf("%d/%d", used[i], capacity[i])
		}
		fmt.Fprintf(w, "| %d | %s |\n", s.Number, strings.Join(cells, " | "))
		for _, r := range s.RAMs.SRAMs {
			credit(objects, s.Number, r.Usages, func(o *object) { o.srams++ })
		}
		for _, t := range s.TCAMs.TCAMs {
			credit(objects, s.Number, t.Usages, func(o *object) { o.tcams++ })
		}
		for _, m := range s.MapRAMs.Maps {
			credit(objects, s.Number, m.Usages, func(o *object) { o.maprams++ })
		}
	}
	cells := make([]string, len(total))
	for i := range total {
		cells[i] = fmt.Sprintf("%d (%.1f%%)", total[i], 100*float64(total[i])/float64(totalCap[i]))
	}
	fmt.Fprintf(w, "| all | %s |\n\n", strings.Join(cells, " | "))

	fmt.Fprintf(w, "Per P4Runtime table, register, meter and counter (SRAM: match, action data, register, meter and counter RAMs, 128 Kbit each; TCAM: 512 x 44 bit each):\n\n")
	fmt.Fprintf(w, "| object | kind | entries | stages | SRAM blocks | TCAM blocks | map RAMs |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- |\n")
	names := make([]string, 0, len(objects))
	for n := range objects {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := objects[names[i]], objects[names[j]]
		if a.kind != b.kind {
			return a.kind > b.kind // tables, registers, meters, counters
		}
		return a.name < b.name
	})
	for _, n := range names {
		o := objects[n]
		fmt.Fprintf(w, "| `%s` | %s | %d | %s | %d | %d | %d |\n",
			o.name, o.kind, o.size, stageList(o.stages), o.srams, o.tcams, o.maprams)
	}
	return nil
}

// credit adds a RAM's use to the P4Runtime object it serves: used_by names the table or
// register, with a suffix ($action, $salu, ...) for the memories attached to it.
func credit(objects map[string]*object, stage int, usages []usage, add func(*object)) {
	seen := map[string]bool{}
	for _, u := range usages {
		name := strings.TrimPrefix(u.UsedBy, ".")
		if i := strings.IndexByte(name, '$'); i >= 0 {
			name = name[:i]
		}
		o, ok := objects[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		o.stages[stage] = true
		add(o)
	}
}

func stageList(stages map[int]bool) string {
	var s []int
	for n := range stages {
		s = append(s, n)
	}
	sort.Ints(s)
	if len(s) == 0 {
		return "-"
	}
	out := make([]string, len(s))
	for i, n := range s {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ", ")
}

// p4runtimeObjects lists the tables, registers, meters and counters of the P4Info, with their sizes.
func p4runtimeObjects(path string) (map[string]*object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(data, info); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	objects := map[string]*object{}
	for _, t := range info.GetTables() {
		objects[t.GetPreamble().GetName()] = &object{name: t.GetPreamble().GetName(), kind: "table",
			size: t.GetSize(), stages: map[int]bool{}}
	}
	for _, r := range info.GetRegisters() {
		objects[r.GetPreamble().GetName()] = &object{name: r.GetPreamble().GetName(), kind: "register",
			size: int64(r.GetSize()), stages: map[int]bool{}}
	}
	for _, c := range info.GetCounters() {
		objects[c.GetPreamble().GetName()] = &object{name: c.GetPreamble().GetName(), kind: "counter",
			size: c.GetSize(), stages: map[int]bool{}}
	}
	for _, m := range info.GetMeters() {
		objects[m.GetPreamble().GetName()] = &object{name: m.GetPreamble().GetName(), kind: "meter",
			size: m.GetSize(), stages: map[int]bool{}}
	}
	return objects, nil
}

var stagesLine = regexp.MustCompile(`^\s*Number of stages for (ingress|egress) table allocation: (\d+)`)

// finalStages reads the stages per gress of the last table allocation in table_summary.log
// (the compiler allocates several times; the last is what it emits).
func finalStages(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := stagesLine.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("%s: no stage counts", path)
	}
	return out, sc.Err()
}

var phvLine = regexp.MustCompile(`^\|\s*Overall PHV Usage\s*\|\s*(\d+)\s*\(\s*([\d.]+)\s*%\)\s*\|\s*(\d+)\s*\(\s*([\d.]+)\s*%\)`)

// phvUsage reads the "Overall PHV Usage" row of the last PHV allocation summary: containers
// and bits used.
func phvUsage(logs string) (string, error) {
	files, err := filepath.Glob(filepath.Join(logs, "phv_allocation_summary_*.log"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("%s: no phv_allocation_summary_*.log", logs)
	}
	sort.Slice(files, func(i, j int) bool { return summaryRound(files[i]) < summaryRound(files[j]) })
	data, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		return "", err
	}
	var found string
	for _, line := range strings.Split(string(data), "\n") {
		if m := phvLine.FindStringSubmatch(line); m != nil {
			found = fmt.Sprintf("%s (%s%%), %s bits (%s%%)", m[1], m[2], m[3], m[4])
		}
	}
	if found == "" {
		return "", fmt.Errorf("%s: no Overall PHV Usage row", files[len(files)-1])
	}
	return found, nil
}

func summaryRound(path string) int {
	base := strings.TrimSuffix(filepath.Base(path), ".log")
	n, _ := strconv.Atoi(base[strings.LastIndexByte(base, '_')+1:])
	return n
}

// latencyCycles adds up, per gress, the clock cycles each stage contributes to a packet's
// latency through the match-action stages (context.json, mau_stage_characteristics).
func latencyCycles(path string) (map[string]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ctx struct {
		Stages []struct {
			Gress  string `json:"gress"`
			Cycles int    `json:"cycles_contribute_to_latency"`
		} `json:"mau_stage_characteristics"`
	}
	if err := json.Unmarshal(data, &ctx); err != nil {
		return nil, fmt.Errorf("context.json: %v", err)
	}
	if len(ctx.Stages) == 0 {
		return nil, fmt.Errorf("context.json: no mau_stage_characteristics")
	}
	cycles := map[string]int{}
	for _, s := range ctx.Stages {
		cycles[s.Gress] += s.Cycles
	}
	return cycles, nil
}
