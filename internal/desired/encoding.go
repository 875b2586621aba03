package desired

// An entry's binary form, for those who keep many entries: one allocation without pointers in
// place of the slices and values of an Entry, which the Go collector walks in every cycle (the
// programmer keeps every entry of every session it writes; docs/operator.md, "N4 (PFCP) sessions").

import (
	"encoding/binary"
	"errors"
)

// AppendBinary appends the entry's binary form to b. Equal entries have equal forms, nil and
// empty values alike (as Key and SameAction see them).
func (e Entry) AppendBinary(b []byte) []byte {
	b = appendString(b, e.Table)
	b = binary.AppendVarint(b, int64(e.Priority))
	b = binary.AppendUvarint(b, uint64(len(e.Match)))
	for _, m := range e.Match {
		b = appendString(b, m.Field)
		b = binary.AppendUvarint(b, uint64(m.Kind))
		b = appendString(b, string(m.Value))
		b = appendString(b, string(m.Mask))
		b = binary.AppendVarint(b, int64(m.PrefixLen))
		b = appendString(b, string(m.Low))
		b = appendString(b, string(m.High))
	}
	b = appendString(b, e.Action)
	b = binary.AppendUvarint(b, uint64(len(e.Params)))
	for _, p := range e.Params {
		b = appendString(b, p.Name)
		b = appendString(b, string(p.Value))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBinary = errors.New("desired: not an entry's binary form")

// ParseEntry is the entry whose binary form is s (AppendBinary). Empty values come back nil.
func ParseEntry(s string) (Entry, error) {
	r := reader{s: s}
	var e Entry
	e.Table = r.string()
	e.Priority = int32(r.varint())
	if n := r.count(); n > 0 {
		e.Match = make([]Match, n)
		for i := range e.Match {
			m := &e.Match[i]
			m.Field = r.string()
			m.Kind = MatchKind(r.uvarint())
			m.Value, m.Mask = r.bytes(), r.bytes()
			m.PrefixLen = int32(r.varint())
			m.Low, m.High = r.bytes(), r.bytes()
		}
	}
	e.Action = r.string()
	if n := r.count(); n > 0 {
		e.Params = make([]Param, n)
		for i := range e.Params {
			e.Params[i] = Param{Name: r.string(), Value: r.bytes()}
		}
	}
	if r.bad || r.s != "" {
		return Entry{}, errBinary
	}
	return e, nil
}

// reader takes a binary form apart; bad records the first thing it could not read.
type reader struct {
	s   string
	bad bool
}

func (r *reader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }
func (r *reader) varint() int64   { return readVarint(r, binary.Varint) }

func readVarint[T any](r *reader, read func([]byte) (T, int)) T {
	v, n := read([]byte(r.s[:min(len(r.s), binary.MaxVarintLen64)]))
	if n <= 0 {
		r.bad, r.s = true, ""
		var zero T
		return zero
	}
	r.s = r.s[n:]
	return v
}

// count is a length that the rest of the form can hold (each element takes a byte at least).
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.s)) {
		r.bad, r.s = true, ""
		return 0
	}
	return int(n)
}

func (r *reader) string() string {
	n := r.count()
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

func (r *reader) bytes() []byte {
	if s := r.string(); s != "" {
		return []byte(s)
	}
	return nil
}
