package vectors

// Name resolution against the P4Info: vectors name tables, fields, actions, params, registers,
// counters and digests as docs/pipeline.md does, and the runner finds their IDs and bit widths at
// run time, exactly as the operator must. A vector that names something the P4Info lacks fails
// with an error that says which name and where.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

type schema struct {
	info      *p4configv1.P4Info
	tables    map[string]*p4configv1.Table
	tableByID map[uint32]*p4configv1.Table
	actions   map[string]*p4configv1.Action
	actByID   map[uint32]*p4configv1.Action
	registers map[string]*p4configv1.Register
	counters  map[string]*p4configv1.Counter
	digests   map[string]*p4configv1.Digest
	digByID   map[uint32]*p4configv1.Digest
}

// LoadP4Info reads a P4Info file in text (.txt, .txtpb, .pb.txt), JSON (.json) or binary form.
func LoadP4Info(path string) (*p4configv1.P4Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info := &p4configv1.P4Info{}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		err = protojson.Unmarshal(data, info)
	case ".bin", ".pb":
		err = proto.Unmarshal(data, info)
	default:
		err = prototext.Unmarshal(data, info)
	}
	if err != nil {
		return nil, fmt.Errorf("parse P4Info %s: %w", path, err)
	}
	return info, nil
}

func newSchema(info *p4configv1.P4Info) *schema {
	s := &schema{
		info:      info,
		tables:    map[string]*p4configv1.Table{},
		tableByID: map[uint32]*p4configv1.Table{},
		actions:   map[string]*p4configv1.Action{},
		actByID:   map[uint32]*p4configv1.Action{},
		registers: map[string]*p4configv1.Register{},
		counters:  map[string]*p4configv1.Counter{},
		digests:   map[string]*p4configv1.Digest{},
		digByID:   map[uint32]*p4configv1.Digest{},
	}
	for _, t := range info.Tables {
		addNames(s.tables, t.Preamble, t)
		s.tableByID[t.Preamble.Id] = t
	}
	for _, a := range info.Actions {
		addNames(s.actions, a.Preamble, a)
		s.actByID[a.Preamble.Id] = a
	}
	for _, r := range info.Registers {
		addNames(s.registers, r.Preamble, r)
	}
	for _, c := range info.Counters {
		addNames(s.counters, c.Preamble, c)
	}
	for _, d := range info.Digests {
		addNames(s.digests, d.Preamble, d)
		s.digByID[d.Preamble.Id] = d
	}
	return s
}

// addNames indexes an object by its name, its alias and its name without a leading dot; the
// first object to claim a name keeps it.
func addNames[T any](m map[string]T, p *p4configv1.Preamble, v T) {
	for _, n := range []string{p.Name, strings.TrimPrefix(p.Name, "."), p.Alias} {
		if _, taken := m[n]; n != "" && !taken {
			m[n] = v
		}
	}
}

func (s *schema) table(name string) (*p4configv1.Table, error) {
	if t, ok := s.tables[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("no table %q in the P4Info (have %s)", name, names(s.info.Tables, func(t *p4configv1.Table) string { return t.Preamble.Name }))
}

func (s *schema) action(table *p4configv1.Table, name string) (*p4configv1.Action, error) {
	a, ok := s.actions[name]
	if !ok {
		return nil, fmt.Errorf("no action %q in the P4Info", name)
	}
	if table != nil {
		for _, ref := range table.ActionRefs {
			if ref.Id == a.Preamble.Id {
				return a, nil
			}
		}
		return nil, fmt.Errorf("action %q is not an action of table %s", name, table.Preamble.Name)
	}
	return a, nil
}

func (s *schema) register(name string) (*p4configv1.Register, error) {
	if r, ok := s.registers[name]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("no register %q in the P4Info (have %s)", name, names(s.info.Registers, func(r *p4configv1.Register) string { return r.Preamble.Name }))
}

func (s *schema) counter(name string) (*p4configv1.Counter, error) {
	if c, ok := s.counters[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("no counter %q in the P4Info", name)
}

func (s *schema) digest(name string) (*p4configv1.Digest, error) {
	if d, ok := s.digests[name]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("no digest %q in the P4Info", name)
}

func registerWidth(r *p4configv1.Register) int {
	return int(r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth())
}

// digestMember is one member of a digest's struct.
type digestMember struct {
	name string
	bits int
}

// digestMembers lists a digest's struct members in order.
func (s *schema) digestMembers(d *p4configv1.Digest) ([]digestMember, error) {
	sname := d.GetTypeSpec().GetStruct().GetName()
	st, ok := s.info.GetTypeInfo().GetStructs()[sname]
	if !ok {
		if bw := d.GetTypeSpec().GetBitstring().GetBit().GetBitwidth(); bw > 0 {
			return []digestMember{{name: d.Preamble.Name, bits: int(bw)}}, nil
		}
		return nil, fmt.Errorf("digest %s: struct %q not in type_info", d.Preamble.Name, sname)
	}
	var out []digestMember
	for _, m := range st.Members {
		out = append(out, digestMember{name: m.Name, bits: int(m.GetTypeSpec().GetBitstring().GetBit().GetBitwidth())})
	}
	return out, nil
}

func names[T any](xs []T, name func(T) string) string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
