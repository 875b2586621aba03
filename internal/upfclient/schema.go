package upfclient

import (
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/p4schema"
)

// Schema resolves P4Info names to IDs and widths (internal/p4schema, which the software UPF and
// the packet vectors share). The P4Info names are the API between the operator and every target
// (docs/pipeline.md); IDs are never hard-coded, so a recompiled program with new IDs needs no
// code change. A Schema is immutable and safe to share.
//
// p4runtime-go-client resolves names with a linear scan that returns 0 for an unknown name and
// numbers match fields and params by position; this one uses maps, the P4Info's own IDs, and
// errors that name what is missing.
type Schema struct {
	ps *p4schema.Schema
}

// NewSchema compiles a P4Info. Objects are found by their full name and, when it differs, by
// their alias.
func NewSchema(info *p4configv1.P4Info) (*Schema, error) {
	ps, err := p4schema.Compile(info)
	if err != nil {
		return nil, err
	}
	return &Schema{ps: ps}, nil
}

// P4Info returns the P4Info the schema was built from. Do not modify it.
func (s *Schema) P4Info() *p4configv1.P4Info { return s.ps.Info }

// TableID resolves a table name.
func (s *Schema) TableID(name string) (uint32, error) {
	t, err := s.ps.Table(name)
	if err != nil {
		return 0, err
	}
	return t.ID, nil
}

// MatchFieldID resolves a match field of a table.
func (s *Schema) MatchFieldID(table, field string) (uint32, error) {
	t, err := s.ps.Table(table)
	if err != nil {
		return 0, err
	}
	f, err := t.Field(field)
	if err != nil {
		return 0, err
	}
	return f.ID, nil
}

// TableSize is the table's capacity from the P4Info (0 when unknown).
func (s *Schema) TableSize(name string) (int64, error) {
	t, err := s.ps.Table(name)
	if err != nil {
		return 0, err
	}
	return t.Size, nil
}

// TableName names a table ID ("" when unknown).
func (s *Schema) TableName(id uint32) string {
	if t, ok := s.ps.TableByID(id); ok {
		return t.Name
	}
	return ""
}

// ParamNames lists an action's parameters in ID order (p4c numbers them as declared).
func (s *Schema) ParamNames(action string) ([]string, error) {
	a, err := s.ps.Action(action)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(a.Params))
	for i, p := range a.Params {
		out[i] = p.Name
	}
	return out, nil
}

// RegisterID resolves a register name.
func (s *Schema) RegisterID(name string) (uint32, error) {
	r, err := s.ps.Register(name)
	if err != nil {
		return 0, err
	}
	return r.ID, nil
}

// ActionName is the name of the action with that ID ("" when unknown).
func (s *Schema) ActionName(id uint32) string {
	if a, ok := s.ps.ActionByID(id); ok {
		return a.Name
	}
	return ""
}

// ActionParam is the value of a's parameter called name as a number, if a has one. It builds
// nothing, for callers that ask every entry (a programmer's mirror).
func (s *Schema) ActionParam(a *p4v1.Action, name string) (uint64, bool) {
	id, ok := s.ParamID(a.GetActionId(), name)
	if !ok {
		return 0, false
	}
	for _, prm := range a.GetParams() {
		if prm.GetParamId() == id {
			v, err := DecodeUint(prm.GetValue())
			return v, err == nil
		}
	}
	return 0, false
}

// ParamID is the ID of an action's parameter, if the action has one of that name.
func (s *Schema) ParamID(action uint32, name string) (uint32, bool) {
	a, ok := s.ps.ActionByID(action)
	if !ok {
		return 0, false
	}
	p, ok := a.LookupParam(name)
	if !ok {
		return 0, false
	}
	return p.ID, true
}

// CounterID resolves a counter name.
func (s *Schema) CounterID(name string) (uint32, error) {
	c, err := s.ps.Counter(name)
	if err != nil {
		return 0, err
	}
	return c.ID, nil
}

// CounterSize is the number of cells of an indirect counter.
func (s *Schema) CounterSize(name string) (int64, error) {
	c, err := s.ps.Counter(name)
	if err != nil {
		return 0, err
	}
	return c.Size, nil
}

// MeterSize is the number of cells of an indirect meter.
func (s *Schema) MeterSize(name string) (int64, error) {
	m, err := s.ps.Meter(name)
	if err != nil {
		return 0, err
	}
	return m.Size, nil
}

// RegisterSize is the number of cells of a register.
func (s *Schema) RegisterSize(name string) (int64, error) {
	r, err := s.ps.Register(name)
	if err != nil {
		return 0, err
	}
	return r.Size, nil
}

// DigestID resolves a digest name.
func (s *Schema) DigestID(name string) (uint32, error) {
	d, err := s.ps.Digest(name)
	if err != nil {
		return 0, err
	}
	return d.ID, nil
}

// packetInHeader is the packet_in controller header, nil without a schema or header.
func (s *Schema) packetInHeader() *p4schema.ControllerHeader {
	if s == nil {
		return nil
	}
	return s.ps.PacketIn
}
