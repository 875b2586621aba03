package vectors

// The vector format (README.md describes it for people). One YAML or JSON file is one case:
// what to install by P4Info name, then steps of "send this frame on this logical port, expect
// these frames, register values, counter cells, drop-counter deltas, digests and packet-ins". Vectors name
// logical ports only; the runner maps them to port numbers and interfaces.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Case is one vector file.
type Case struct {
	// Name identifies the case in results and in --run; it defaults to the file name.
	Name        string `json:"name"`
	Description string `json:"description"`
	// Definitions is free space for YAML anchors (&frame) that steps refer to (*frame).
	Definitions any    `json:"definitions,omitempty"`
	Setup       Setup  `json:"setup"`
	Steps       []Step `json:"steps"`

	file string
	from *Case // the case this one varies (differential_test.go), if any
}

// origin is the case c varies, or c.
func (c *Case) origin() *Case {
	if c.from != nil {
		return c.from
	}
	return c
}

// Setup is written before the first step, in this order: clone sessions, registers, counter
// cells, meter cells, table entries, default actions.
type Setup struct {
	// Include names setup fragments (files of the Setup shape, relative to the case's file)
	// written first; the case's own registers win over theirs.
	Include  []string        `json:"include"`
	Entries  []Entry         `json:"entries"`
	Defaults []DefaultAction `json:"defaults"`
	// Registers maps "name[index]" to the value to write. A case writes every register it
	// relies on: registers keep their values from one case to the next.
	Registers map[string]any `json:"registers"`
	// Counters maps "name[index]" to the packets and bytes to write into that cell (MODIFY).
	// Counters, like registers, keep their values from one case to the next: a case that
	// checks a cell writes it first.
	Counters map[string]CounterCell `json:"counters"`
	// Meters maps "name[index]" to the configuration to write into that cell (MeterEntry
	// MODIFY). Unlike registers and counters, the runner resets every cell a case configured
	// when the case ends.
	Meters        map[string]*MeterConfig `json:"meters"`
	CloneSessions []CloneSession          `json:"clone_sessions"`
}

// MeterConfig is one meter cell's configuration (P4Runtime MeterConfig: rates in units per
// second, bursts in units, of the meter's unit); null resets the cell, every packet green.
type MeterConfig struct {
	CIR    any `json:"cir"`
	CBurst any `json:"cburst"`
	PIR    any `json:"pir"`
	PBurst any `json:"pburst"`
}

// CounterCell is one cell of a packets-and-bytes counter: numbers to write, or expectations
// (a number, "*", "lo-hi", "!0" or "?x") to check. Both must be given.
type CounterCell struct {
	Packets any `json:"packets"`
	Bytes   any `json:"bytes"`
}

// Entry is a table entry by name, with human values.
type Entry struct {
	Table  string         `json:"table"`
	Match  map[string]any `json:"match"`
	Action string         `json:"action"`
	Params map[string]any `json:"params"`
	// Priority is required by tables with ternary, range or optional keys (higher wins).
	Priority int32 `json:"priority"`
}

// DefaultAction replaces a table's default action for the case.
type DefaultAction struct {
	Table  string         `json:"table"`
	Action string         `json:"action"`
	Params map[string]any `json:"params"`
}

// CloneSession programs a clone session. Ports are logical names; with none, the runner uses
// the CPU port (the redundant mode's clone is recirculated, so its port is a target fact).
type CloneSession struct {
	ID    uint32   `json:"id"`
	Ports []string `json:"ports"`
}

// Step sends at most one frame and checks what follows within the collection window.
type Step struct {
	Name string `json:"name"`
	Send *Send  `json:"send"`
	// PacketOut sends a frame from the controller, to leave unchanged on the named port or,
	// with to_ingress, to go through the pipeline as a frame from the CPU port.
	PacketOut *Send `json:"packet_out"`
	// SetRegisters are written before the frame is sent ("name[index]": value).
	SetRegisters map[string]any `json:"set_registers"`
	// SetCounters are written before the frame is sent ("name[index]": {packets, bytes}).
	SetCounters map[string]CounterCell `json:"set_counters"`
	// SetMeters are written before the frame is sent ("name[index]": config, or null).
	SetMeters map[string]*MeterConfig `json:"set_meters"`
	// ModifyEntries are entries the case installed, written again (MODIFY) with their action
	// and params before the frame is sent: an SMF changing a FAR.
	ModifyEntries []Entry `json:"modify_entries"`
	// Window overrides the runner's collection window for this step ("2s", "500ms").
	Window Duration `json:"window"`
	// Expect maps a logical port to the frames expected on it, in order, or "none". A port
	// that is not listed must stay silent too.
	Expect map[string]FrameList `json:"expect"`
	// PacketIn lists frames expected at the controller, in order.
	PacketIn []PacketIn `json:"packet_in"`
	// Registers maps "name[index]" to an expected value: a number, "*", "lo-hi", "!0" or "?x".
	Registers map[string]any `json:"registers"`
	// Counters maps "name[index]" to the cell's expected packets and bytes, read after the
	// window (absolute values, not deltas: the case writes the cell in its setup or an earlier
	// step).
	Counters map[string]CounterCell `json:"counters"`
	// Drops maps drop reasons (PARSER_ERROR, NO_ROUTE...) to the expected increase of the
	// `drops` packet counter; every reason not listed must not move.
	Drops map[string]uint64 `json:"drops"`
	// Digests maps a digest name to the digests expected, in order, member by member.
	Digests map[string][]map[string]any `json:"digests"`
}

// Send is an input frame on a logical port.
type Send struct {
	Port string `json:"port"`
	// ToIngress (packet_out only) sets packet_out's to_ingress: the pipeline processes the
	// frame as one from the CPU port, and Port, optional then, only fills egress_port.
	ToIngress bool  `json:"to_ingress"`
	Frame     Frame `json:"frame"`
}

// PacketIn is a frame expected at the controller, with the logical port it arrived on.
type PacketIn struct {
	Port  string `json:"port"`
	Frame Frame  `json:"frame"`
}

// Frame is a list of layers, outermost first: each item is a one-key map such as
// {ipv4: {src: 10.0.0.1, dst: 10.0.0.2}}; {truncate: N} cuts the finished frame to N bytes and
// {packet: [layers]} splices a list of layers in place (a YAML alias to a user packet).
type Frame []map[string]any

// FrameList is a list of frames, or the string "none".
type FrameList []Frame

func (l *FrameList) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s != "none" {
			return fmt.Errorf("expected frames or \"none\", got %q", s)
		}
		*l = FrameList{}
		return nil
	}
	var frames []Frame
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&frames); err != nil {
		return err
	}
	*l = frames
	return nil
}

// Duration is a time.Duration written as "500ms".
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"500ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// LoadCases reads every *.yaml, *.yml and *.json file in dir, sorted by name, keeping the cases
// whose name matches run (nil: all).
func LoadCases(dir string, run *regexp.Regexp) ([]*Case, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(files)
	var cases []*Case
	seen := map[string]string{}
	for _, f := range files {
		c, err := LoadCase(f)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c.Name]; dup {
			return nil, fmt.Errorf("%s: case name %q already used by %s", f, c.Name, prev)
		}
		seen[c.Name] = f
		if run == nil || run.MatchString(c.Name) {
			cases = append(cases, c)
		}
	}
	return cases, nil
}

// LoadCase reads one vector file.
func LoadCase(path string) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Case{}
	useNumber := func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }
	if err := yaml.UnmarshalStrict(data, c, useNumber); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.file = path
	if err := c.Setup.include(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if c.Description == "" {
		return nil, fmt.Errorf("%s: case %s has no description", path, c.Name)
	}
	if len(c.Steps) == 0 {
		return nil, fmt.Errorf("%s: case %s has no steps", path, c.Name)
	}
	for i, s := range c.Steps {
		if s.Send != nil && (s.Send.Port == "" || len(s.Send.Frame) == 0) {
			return nil, fmt.Errorf("%s: step %d: send needs a port and a frame", path, i+1)
		}
		if s.PacketOut != nil && ((s.PacketOut.Port == "" && !s.PacketOut.ToIngress) || len(s.PacketOut.Frame) == 0) {
			return nil, fmt.Errorf("%s: step %d: packet_out needs a port (unless to_ingress) and a frame", path, i+1)
		}
		if s.Send != nil && s.Send.ToIngress {
			return nil, fmt.Errorf("%s: step %d: to_ingress belongs to packet_out, not send", path, i+1)
		}
		if s.Send != nil && s.PacketOut != nil {
			return nil, fmt.Errorf("%s: step %d: send and packet_out in one step; use two steps", path, i+1)
		}
		for _, cells := range []map[string]CounterCell{s.SetCounters, s.Counters} {
			if err := checkCells(cells); err != nil {
				return nil, fmt.Errorf("%s: step %d: %w", path, i+1, err)
			}
		}
	}
	if err := checkCells(c.Setup.Counters); err != nil {
		return nil, fmt.Errorf("%s: setup: %w", path, err)
	}
	return c, nil
}

// checkCells requires packets and bytes of every counter cell.
func checkCells(cells map[string]CounterCell) error {
	for _, key := range sortedKeys(cells) {
		if c := cells[key]; c.Packets == nil || c.Bytes == nil {
			return fmt.Errorf("counter %s: give both packets and bytes (\"*\" for don't care)", key)
		}
	}
	return nil
}

// include merges the setup fragments named in Include into s.
func (s *Setup) include(dir string) error {
	var merged Setup
	for _, name := range s.Include {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("include: %w", err)
		}
		var frag Setup
		useNumber := func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }
		if err := yaml.UnmarshalStrict(data, &frag, useNumber); err != nil {
			return fmt.Errorf("include %s: %w", name, err)
		}
		if len(frag.Include) > 0 {
			return fmt.Errorf("include %s: fragments cannot include others", name)
		}
		merged.Entries = append(merged.Entries, frag.Entries...)
		merged.Defaults = append(merged.Defaults, frag.Defaults...)
		merged.CloneSessions = append(merged.CloneSessions, frag.CloneSessions...)
		for k, v := range frag.Registers {
			if merged.Registers == nil {
				merged.Registers = map[string]any{}
			}
			merged.Registers[k] = v
		}
		for k, v := range frag.Counters {
			if merged.Counters == nil {
				merged.Counters = map[string]CounterCell{}
			}
			merged.Counters[k] = v
		}
	}
	if len(s.Include) == 0 {
		return nil
	}
	s.Entries = append(merged.Entries, s.Entries...)
	s.Defaults = append(merged.Defaults, s.Defaults...)
	s.CloneSessions = append(merged.CloneSessions, s.CloneSessions...)
	for k, v := range s.Registers {
		if merged.Registers == nil {
			merged.Registers = map[string]any{}
		}
		merged.Registers[k] = v
	}
	s.Registers = merged.Registers
	for k, v := range s.Counters {
		if merged.Counters == nil {
			merged.Counters = map[string]CounterCell{}
		}
		merged.Counters[k] = v
	}
	s.Counters = merged.Counters
	return nil
}
