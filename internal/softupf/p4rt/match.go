package p4rt

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/junction-atsss/junction/internal/p4bytes"
	"github.com/junction-atsss/junction/internal/p4schema"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// Table entry keys and actions: validation against the P4Info (spec sections 9.1.1, 9.1.2) and
// the compact encodings the store keeps. Validation canonicalizes the request in place (values
// in their shortest form, match fields and params sorted by ID), which is also the form the
// Target receives.
//
// Key encoding, per match field in field-ID order: 0x00 for a don't-care (omitted) field, or
// 0x01 followed by uvarint-length-prefixed canonical values (exact: value; lpm: value, then
// prefix length as uvarint; ternary: value, mask; range: low, high; optional: value); then the
// priority as 4 big-endian bytes for tables that need one. Canonical values make the encoding
// unique, so equal keys are equal strings.

const (
	keyAbsent  = 0
	keyPresent = 1
)

// entryKey checks te's match and priority for table ti, canonicalizes te.Match in place and
// appends the key encoding to buf.
func entryKey(buf []byte, ti *p4schema.Table, te *p4v1.TableEntry) ([]byte, error) {
	if ti.NeedsPriority {
		if te.Priority <= 0 {
			return nil, errf(codes.InvalidArgument, "table %q: priority must be > 0 (the table has ternary, range or optional fields), got %d", ti.Name, te.Priority)
		}
	} else if te.Priority != 0 {
		return nil, errf(codes.InvalidArgument, "table %q: priority must be 0 (no ternary, range or optional fields), got %d", ti.Name, te.Priority)
	}
	buf, err := matchKey(buf, ti, te.Match)
	if err != nil {
		return nil, err
	}
	if ti.NeedsPriority {
		buf = binary.BigEndian.AppendUint32(buf, uint32(te.Priority))
	}
	return buf, nil
}

// matchKey validates and canonicalizes the match fields and appends their encoding.
func matchKey(buf []byte, ti *p4schema.Table, match []*p4v1.FieldMatch) ([]byte, error) {
	for _, fm := range match {
		if fm == nil {
			return nil, errf(codes.InvalidArgument, "table %q: empty match field", ti.Name)
		}
	}
	if len(match) > 1 {
		slices.SortFunc(match, func(a, b *p4v1.FieldMatch) int { return cmp.Compare(a.FieldId, b.FieldId) })
	}
	mi := 0
	for fi := range ti.Fields {
		f := &ti.Fields[fi]
		if mi < len(match) && match[mi].FieldId < f.ID {
			return nil, errf(codes.InvalidArgument, "table %q: unknown match field id %d", ti.Name, match[mi].FieldId)
		}
		if mi == len(match) || match[mi].FieldId != f.ID {
			if f.Kind == p4configv1.MatchField_EXACT {
				return nil, errf(codes.InvalidArgument, "table %q field %q: exact match is missing (exact fields cannot be don't-care)", ti.Name, f.Name)
			}
			buf = append(buf, keyAbsent)
			continue
		}
		fm := match[mi]
		mi++
		if mi < len(match) && match[mi].FieldId == f.ID {
			return nil, errf(codes.InvalidArgument, "table %q field %q: given twice", ti.Name, f.Name)
		}
		var err error
		if buf, err = fieldKey(buf, ti, f, fm); err != nil {
			return nil, err
		}
	}
	if mi < len(match) {
		return nil, errf(codes.InvalidArgument, "table %q: unknown match field id %d", ti.Name, match[mi].FieldId)
	}
	return buf, nil
}

func fieldKey(buf []byte, ti *p4schema.Table, f *p4schema.Field, fm *p4v1.FieldMatch) ([]byte, error) {
	what := "table " + quote(ti.Name) + " field " + quote(f.Name)
	wrongKind := func(got string) error {
		return errf(codes.InvalidArgument, "%s: %s field given a %s match", what, p4bytes.MatchKindName(f.Kind), got)
	}
	buf = append(buf, keyPresent)
	switch m := fm.FieldMatchType.(type) {
	case *p4v1.FieldMatch_Exact_:
		if f.Kind != p4configv1.MatchField_EXACT {
			return nil, wrongKind("exact")
		}
		v, err := canonical(m.Exact.GetValue(), f.Width, what)
		if err != nil {
			return nil, err
		}
		m.Exact.Value = v
		return appendBytes(buf, v), nil

	case *p4v1.FieldMatch_Lpm:
		if f.Kind != p4configv1.MatchField_LPM {
			return nil, wrongKind("lpm")
		}
		plen := int(m.Lpm.GetPrefixLen())
		if plen == 0 {
			return nil, errf(codes.InvalidArgument, "%s: prefix_len 0 is a don't-care match: omit the field", what)
		}
		if plen < 0 || plen > f.Width {
			return nil, errf(codes.InvalidArgument, "%s: prefix_len %d outside 1..%d", what, plen, f.Width)
		}
		v, err := canonical(m.Lpm.GetValue(), f.Width, what)
		if err != nil {
			return nil, err
		}
		if trailingZeroBits(v, f.Width) < f.Width-plen {
			return nil, errf(codes.InvalidArgument, "%s: value 0x%x has bits set beyond prefix_len %d", what, v, plen)
		}
		m.Lpm.Value = v
		return binary.AppendUvarint(appendBytes(buf, v), uint64(plen)), nil

	case *p4v1.FieldMatch_Ternary_:
		if f.Kind != p4configv1.MatchField_TERNARY {
			return nil, wrongKind("ternary")
		}
		v, err := canonical(m.Ternary.GetValue(), f.Width, what+" value")
		if err != nil {
			return nil, err
		}
		mask, err := canonical(m.Ternary.GetMask(), f.Width, what+" mask")
		if err != nil {
			return nil, err
		}
		if isZero(mask) {
			return nil, errf(codes.InvalidArgument, "%s: mask 0 is a don't-care match: omit the field", what)
		}
		if !maskedZero(v, mask) {
			return nil, errf(codes.InvalidArgument, "%s: value 0x%x has bits outside mask 0x%x", what, v, mask)
		}
		m.Ternary.Value, m.Ternary.Mask = v, mask
		return appendBytes(appendBytes(buf, v), mask), nil

	case *p4v1.FieldMatch_Range_:
		if f.Kind != p4configv1.MatchField_RANGE {
			return nil, wrongKind("range")
		}
		lo, err := canonical(m.Range.GetLow(), f.Width, what+" low")
		if err != nil {
			return nil, err
		}
		hi, err := canonical(m.Range.GetHigh(), f.Width, what+" high")
		if err != nil {
			return nil, err
		}
		if compareCanonical(lo, hi) > 0 {
			return nil, errf(codes.InvalidArgument, "%s: low 0x%x is above high 0x%x", what, lo, hi)
		}
		if isZero(lo) && compareCanonical(hi, p4bytes.MaxValue(f.Width)) == 0 {
			return nil, errf(codes.InvalidArgument, "%s: the full range is a don't-care match: omit the field", what)
		}
		m.Range.Low, m.Range.High = lo, hi
		return appendBytes(appendBytes(buf, lo), hi), nil

	case *p4v1.FieldMatch_Optional_:
		if f.Kind != p4configv1.MatchField_OPTIONAL {
			return nil, wrongKind("optional")
		}
		v, err := canonical(m.Optional.GetValue(), f.Width, what)
		if err != nil {
			return nil, err
		}
		m.Optional.Value = v
		return appendBytes(buf, v), nil

	case nil:
		return nil, errf(codes.InvalidArgument, "%s: no match value set", what)
	default:
		return nil, errf(codes.InvalidArgument, "%s: unsupported match type %T", what, m)
	}
}

// maskedZero reports value & ^mask == 0 for canonical value and mask.
func maskedZero(v, mask []byte) bool {
	if len(v) > len(mask) {
		return false // v has a set bit above the mask's most significant byte
	}
	off := len(mask) - len(v)
	for i := range v {
		if v[i]&^mask[off+i] != 0 {
			return false
		}
	}
	return true
}

// decodeKey rebuilds the match fields and priority of a stored key.
func decodeKey(ti *p4schema.Table, key string) ([]*p4v1.FieldMatch, int32) {
	b := []byte(key)
	var out []*p4v1.FieldMatch
	for i := range ti.Fields {
		f := &ti.Fields[i]
		present := b[0]
		b = b[1:]
		if present == keyAbsent {
			continue
		}
		fm := &p4v1.FieldMatch{FieldId: f.ID}
		var v1, v2 []byte
		switch f.Kind {
		case p4configv1.MatchField_EXACT:
			v1, b = readBytes(b)
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v1}}
		case p4configv1.MatchField_LPM:
			v1, b = readBytes(b)
			plen, n := binary.Uvarint(b)
			b = b[n:]
			fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v1, PrefixLen: int32(plen)}}
		case p4configv1.MatchField_TERNARY:
			v1, b = readBytes(b)
			v2, b = readBytes(b)
			fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v1, Mask: v2}}
		case p4configv1.MatchField_RANGE:
			v1, b = readBytes(b)
			v2, b = readBytes(b)
			fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: v1, High: v2}}
		case p4configv1.MatchField_OPTIONAL:
			v1, b = readBytes(b)
			fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v1}}
		}
		out = append(out, fm)
	}
	var prio int32
	if ti.NeedsPriority {
		prio = int32(binary.BigEndian.Uint32(b))
	}
	return out, prio
}

// checkAction validates an action for table ti (as the default action when asDefault) and
// canonicalizes its params in place (sorted by ID).
func (s *schema) checkAction(ti *p4schema.Table, a *p4v1.Action, asDefault bool) error {
	scope, ok := ti.Actions[a.ActionId]
	ai, known := s.ActionByID(a.ActionId)
	if !ok || !known {
		return errf(codes.InvalidArgument, "table %q: action id %d is not one of the table's actions", ti.Name, a.ActionId)
	}
	if asDefault && scope == p4configv1.ActionRef_TABLE_ONLY {
		return errf(codes.PermissionDenied, "table %q: action %q is @tableonly and cannot be the default action", ti.Name, ai.Name)
	}
	if !asDefault && scope == p4configv1.ActionRef_DEFAULT_ONLY {
		return errf(codes.PermissionDenied, "table %q: action %q is @defaultonly and cannot be used in entries", ti.Name, ai.Name)
	}
	for _, p := range a.Params {
		if p == nil {
			return errf(codes.InvalidArgument, "action %q: empty param", ai.Name)
		}
	}
	if len(a.Params) > 1 {
		slices.SortFunc(a.Params, func(x, y *p4v1.Action_Param) int { return cmp.Compare(x.ParamId, y.ParamId) })
	}
	pi := 0
	for i := range ai.Params {
		p := &ai.Params[i]
		if pi < len(a.Params) && a.Params[pi].ParamId < p.ID {
			return errf(codes.InvalidArgument, "action %q: unknown param id %d", ai.Name, a.Params[pi].ParamId)
		}
		if pi == len(a.Params) || a.Params[pi].ParamId != p.ID {
			return errf(codes.InvalidArgument, "action %q: param %q is missing", ai.Name, p.Name)
		}
		ap := a.Params[pi]
		pi++
		if pi < len(a.Params) && a.Params[pi].ParamId == p.ID {
			return errf(codes.InvalidArgument, "action %q: param %q given twice", ai.Name, p.Name)
		}
		v, err := canonical(ap.Value, p.Width, "action "+quote(ai.Name)+" param "+quote(p.Name))
		if err != nil {
			return err
		}
		ap.Value = v
	}
	if pi < len(a.Params) {
		return errf(codes.InvalidArgument, "action %q: unknown param id %d", ai.Name, a.Params[pi].ParamId)
	}
	return nil
}

// unpackParams rebuilds the params of action ai from writer.packParams' encoding.
func unpackParams(ai *p4schema.Action, packed string) []*p4v1.Action_Param {
	if len(ai.Params) == 0 {
		return nil
	}
	b := []byte(packed)
	out := make([]*p4v1.Action_Param, len(ai.Params))
	for i := range ai.Params {
		var v []byte
		v, b = readBytes(b)
		out[i] = &p4v1.Action_Param{ParamId: ai.Params[i].ID, Value: v}
	}
	return out
}

func appendBytes(buf, v []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(v)))
	return append(buf, v...)
}

func readBytes(b []byte) (v, rest []byte) {
	n, k := binary.Uvarint(b)
	return b[k : k+int(n) : k+int(n)], b[k+int(n):]
}

func quote(s string) string { return "\"" + s + "\"" }
