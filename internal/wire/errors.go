package wire

import (
	"errors"
	"fmt"
)

// Layer names the header a rejection is about.
type Layer uint8

const (
	LayerEthernet Layer = iota + 1
	LayerIPv4
	LayerUDP
	LayerGTPU
	LayerJunction
	LayerControl
	LayerTransport // the user packet's TCP or UDP ports
)

func (l Layer) String() string {
	switch l {
	case LayerEthernet:
		return "ethernet"
	case LayerIPv4:
		return "ipv4"
	case LayerUDP:
		return "udp"
	case LayerGTPU:
		return "gtp-u"
	case LayerJunction:
		return "junction"
	case LayerControl:
		return "junction control"
	case LayerTransport:
		return "transport"
	}
	return fmt.Sprintf("layer(%d)", uint8(l))
}

// ErrTruncated matches (with errors.Is) every *Error about bytes missing from the buffer.
var ErrTruncated = errors.New("truncated")

type errKind uint8

const (
	kindTruncated errKind = iota + 1 // Value bytes present, Limit needed
	kindTooLong                      // Value exceeds the Limit bytes present
	kindMismatch                     // Value differs from Limit, which the field must equal
	kindInvalid                      // Value breaks the rule in Want
)

// Error is a rejected packet: the layer, the field (as the specification names it), the value
// found and the rule it breaks. Parsers return it as *Error.
type Error struct {
	Layer Layer
	Field string
	Value int
	// Limit is the number the rule compares with (bytes needed, bytes present, or the value the
	// field must equal); Want is the rule in words when a number does not say it.
	Limit int
	Want  string
	kind  errKind
	hex   bool
}

func (e *Error) Error() string {
	v := fmt.Sprint(e.Value)
	if e.hex {
		v = fmt.Sprintf("%#02x", e.Value)
	}
	switch e.kind {
	case kindTruncated:
		return fmt.Sprintf("%s: %s truncated: %d bytes, need %d", e.Layer, e.Field, e.Value, e.Limit)
	case kindTooLong:
		return fmt.Sprintf("%s: %s %d exceeds the %d bytes present", e.Layer, e.Field, e.Value, e.Limit)
	case kindMismatch:
		return fmt.Sprintf("%s: %s %d does not match the %d bytes that follow", e.Layer, e.Field, e.Value, e.Limit)
	}
	return fmt.Sprintf("%s: bad %s %s: want %s", e.Layer, e.Field, v, e.Want)
}

// Is makes errors.Is(err, ErrTruncated) true for truncations.
func (e *Error) Is(target error) bool { return target == ErrTruncated && e.kind == kindTruncated }

// LayerOf returns the layer an error from this package is about, 0 for any other error. The
// software UPF uses it to pick a drop reason: a Junction header or control body that is present
// but breaks a rule is BAD_JUNCTION, anything else PARSER_ERROR.
func LayerOf(err error) Layer {
	if e, ok := err.(*Error); ok {
		return e.Layer
	}
	return 0
}

// The constructors below keep the parsers short; they run only on the rejection path.

func truncated(l Layer, field string, have, need int) error {
	return &Error{Layer: l, Field: field, Value: have, Limit: need, kind: kindTruncated}
}

func tooLong(l Layer, field string, value, present int) error {
	return &Error{Layer: l, Field: field, Value: value, Limit: present, kind: kindTooLong}
}

func mismatch(l Layer, field string, value, following int) error {
	return &Error{Layer: l, Field: field, Value: value, Limit: following, kind: kindMismatch}
}

func invalid(l Layer, field string, value int, want string) error {
	return &Error{Layer: l, Field: field, Value: value, Want: want, kind: kindInvalid}
}

func invalidHex(l Layer, field string, value int, want string) error {
	return &Error{Layer: l, Field: field, Value: value, Want: want, kind: kindInvalid, hex: true}
}
