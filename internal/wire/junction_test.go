package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// The hex in these tables is written by hand from docs/junction-header.md, field by field, so a
// swapped or misplaced field fails them even when encoder and decoder agree with each other.
var headerCases = []struct {
	name string
	h    wire.Header
	hex  string // type|marks  proto  length  sequence
}{
	{"a downlink DATA packet has type 0, no marks, proto 4, the user packet's length and the session's sequence number",
		wire.Header{Type: wire.TypeData, Proto: 4, Length: 1400, Seq: 0x01020304}, "00 04 0578 01020304"},
	{"an unsequenced downlink DATA packet carries sequence 0",
		wire.Header{Type: wire.TypeData, Proto: 4, Length: 20}, "00 04 0014 00000000"},
	{"uplink data on the new path carries CURRENT_PATH and the reorder timeout in microseconds",
		wire.Header{Type: wire.TypeData, Marks: wire.MarkCurrentPath, Proto: 4, Length: 60, Seq: 25000}, "02 04 003c 000061a8"},
	{"uplink data on the new path of epoch 1 also carries the EPOCH bit",
		wire.Header{Type: wire.TypeData, Marks: wire.MarkCurrentPath | wire.MarkEpoch, Proto: 4, Length: 60, Seq: 25000}, "06 04 003c 000061a8"},
	{"the EX-PATH marker of epoch 0 is DATA with EX_PATH, proto 0 and nothing after it",
		wire.Header{Type: wire.TypeData, Marks: wire.MarkExPath}, "01 00 0000 00000000"},
	{"the EX-PATH marker of epoch 1 also carries the EPOCH bit",
		wire.Header{Type: wire.TypeData, Marks: wire.MarkExPath | wire.MarkEpoch}, "05 00 0000 00000000"},
	{"a PROBE is type 1 with a 16-byte body",
		wire.Header{Type: wire.TypeProbe, Length: 16}, "10 00 0010 00000000"},
	{"a PROBE_REPLY is type 2 with a 16-byte body",
		wire.Header{Type: wire.TypeProbeReply, Length: 16}, "20 00 0010 00000000"},
	{"a PROBE_ACK is type 3 with a 16-byte body",
		wire.Header{Type: wire.TypeProbeAck, Length: 16}, "30 00 0010 00000000"},
	{"a LINK_DOWN is type 4 with a 16-byte body",
		wire.Header{Type: wire.TypeLinkDown, Length: 16}, "40 00 0010 00000000"},
	{"a LINK_UP is type 5 with a 16-byte body",
		wire.Header{Type: wire.TypeLinkUp, Length: 16}, "50 00 0010 00000000"},
	{"the largest DATA packet has length 65535 and the sequence number wraps at 2^32",
		wire.Header{Type: wire.TypeData, Proto: 4, Length: 0xffff, Seq: 0xffffffff}, "00 04 ffff ffffffff"},
}

func TestHeaderBytes(t *testing.T) {
	for _, tc := range headerCases {
		t.Run(tc.name, func(t *testing.T) {
			want := wiretest.Hex(tc.hex)
			got := make([]byte, wire.HeaderLen)
			tc.h.Put(got)
			if !bytes.Equal(got, want) {
				t.Errorf("Put = % x, want % x", got, want)
			}
			if a := tc.h.Append([]byte{0xee}); !bytes.Equal(a[1:], want) || a[0] != 0xee {
				t.Errorf("Append = % x, want ee % x", a, want)
			}
			h, err := wire.ParseHeader(want)
			if err != nil {
				t.Fatalf("ParseHeader: %v", err)
			}
			if h != tc.h {
				t.Errorf("ParseHeader = %+v, want %+v", h, tc.h)
			}
		})
	}
}

// wantError checks that err is a *wire.Error about layer and field with the offending value,
// and that its message names both.
func wantError(t *testing.T, err error, layer wire.Layer, field string, value int) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error = %v, want a *wire.Error about %s %s", err, layer, field)
	}
	if we.Layer != layer || we.Field != field || we.Value != value {
		t.Errorf("error = {%s %q %d}, want {%s %q %d}: %v", we.Layer, we.Field, we.Value, layer, field, value, err)
	}
	if msg := err.Error(); !strings.Contains(msg, field) || !strings.HasPrefix(msg, layer.String()+": ") {
		t.Errorf("message %q does not name %s and %q", msg, layer, field)
	}
	if wire.LayerOf(err) != layer {
		t.Errorf("LayerOf = %s, want %s", wire.LayerOf(err), layer)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hex   string
		field string
		value int
	}{
		{"type 6 is not a message type", "60 00 0010 00000000", "type", 6},
		{"type 15 is not a message type", "f0 00 0010 00000000", "type", 15},
		{"the reserved mark 0x8 must be 0", "08 04 0014 00000000", "marks", 0x8},
		{"the reserved mark 0x8 must be 0 next to valid marks", "0e 04 0014 00000000", "marks", 0xe},
		{"EPOCH alone is not a DATA mark combination", "04 04 0014 00000000", "marks", 0x4},
		{"EX_PATH and CURRENT_PATH together are not a DATA mark combination", "03 04 0014 00000000", "marks", 0x3},
		{"a PROBE carries no marks", "12 00 0010 00000000", "marks", 0x2},
		{"a LINK_DOWN carries no EPOCH", "44 00 0010 00000000", "marks", 0x4},
		{"DATA with a payload must say proto 4", "00 11 0014 00000000", "proto", 17},
		{"DATA with a payload must say proto 4, not 0", "02 00 0014 00000000", "proto", 0},
		{"DATA shorter than an IPv4 header is malformed", "00 04 0013 00000000", "length", 19},
		{"DATA without a payload that is not an EX-PATH marker is malformed", "00 04 0000 00000000", "length", 0},
		{"the EX-PATH marker says proto 0", "01 04 0000 00000000", "proto", 4},
		{"the EX-PATH marker has no payload", "05 00 0014 00000000", "length", 20},
		{"a PROBE_REPLY says proto 0", "20 04 0010 00000000", "proto", 4},
		{"a PROBE_ACK is exactly 16 bytes long", "30 00 0011 00000000", "length", 17},
		{"a LINK_UP is exactly 16 bytes long", "50 00 0000 00000000", "length", 0},
		{"seven bytes are a truncated header", "00 04 0014 000000", "header", 7},
		{"no bytes are a truncated header", "", "header", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseHeader(wiretest.Hex(tc.hex))
			wantError(t, err, wire.LayerJunction, tc.field, tc.value)
			if tc.field == "header" && !errors.Is(err, wire.ErrTruncated) {
				t.Errorf("errors.Is(%v, ErrTruncated) = false", err)
			}
			if tc.field != "header" && errors.Is(err, wire.ErrTruncated) {
				t.Errorf("errors.Is(%v, ErrTruncated) = true for a rule violation", err)
			}
		})
	}
}

func TestHeaderErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		name, hex, want string
	}{
		{"a bad type names the field, the value and the valid types", "70 00 0010 00000000",
			"junction: bad type 7: want 0..5 (DATA, PROBE, PROBE_REPLY, PROBE_ACK, LINK_DOWN, LINK_UP)"},
		{"bad marks are shown in hex", "03 04 0014 00000000",
			"junction: bad marks 0x03: want none, CURRENT_PATH[|EPOCH] or EX_PATH[|EPOCH] on DATA"},
		{"a control message with a payload protocol says which type", "40 04 0010 00000000",
			"junction: bad proto 4: want 0 on LINK_DOWN"},
		{"a truncated header says how many bytes there are and are needed", "00 04",
			"junction: header truncated: 2 bytes, need 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseHeader(wiretest.Hex(tc.hex))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseJunction(t *testing.T) {
	user := wiretest.Build(wire.IPv4{Src: wiretest.IP("10.45.0.7"), Dst: wiretest.IP("1.1.1.1"), Proto: 253}, wiretest.Payload(12))
	data := wire.Header{Type: wire.TypeData, Proto: 4, Length: uint16(len(user)), Seq: 9}.Append(nil)

	t.Run("a DATA header whose length matches the user packet returns the packet", func(t *testing.T) {
		h, body, err := wire.ParseJunction(append(data, user...))
		if err != nil {
			t.Fatal(err)
		}
		if h.Seq != 9 || !bytes.Equal(body, user) {
			t.Errorf("got %+v % x", h, body)
		}
	})
	t.Run("the EX-PATH marker alone in the UDP payload parses with an empty body", func(t *testing.T) {
		h, body, err := wire.ParseJunction(wiretest.Hex("05 00 0000 00000000"))
		if err != nil || !h.IsExPathMarker() || h.Marks.Epoch() != 1 || len(body) != 0 {
			t.Errorf("got %+v % x %v", h, body, err)
		}
	})
	t.Run("a length longer than the bytes that follow is a mismatch", func(t *testing.T) {
		_, _, err := wire.ParseJunction(append(data, user[:len(user)-1]...))
		wantError(t, err, wire.LayerJunction, "length", len(user))
		if want := "junction: length 32 does not match the 31 bytes that follow"; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	})
	t.Run("a length shorter than the bytes that follow is a mismatch", func(t *testing.T) {
		_, _, err := wire.ParseJunction(append(append(data, user...), 0))
		wantError(t, err, wire.LayerJunction, "length", len(user))
	})
	t.Run("CheckLength compares with the bytes that follow the header", func(t *testing.T) {
		h := wire.Header{Type: wire.TypeProbe, Length: 16}
		if h.CheckLength(16) != nil || h.CheckLength(24) == nil {
			t.Error("CheckLength does not compare Length with the count")
		}
	})
	t.Run("a broken rule is reported before the length", func(t *testing.T) {
		_, _, err := wire.ParseJunction(wiretest.Hex("60 00 0010 00000000"))
		wantError(t, err, wire.LayerJunction, "type", 6)
	})
}

func TestHeaderPrependFillsTheLength(t *testing.T) {
	buf := make([]byte, 8+20)
	copy(buf[8:], wiretest.Build(wire.IPv4{Proto: 253}))
	off := wire.Header{Type: wire.TypeData, Proto: 4, Length: 999, Seq: 7}.Prepend(buf, 8)
	if off != 0 {
		t.Fatalf("Prepend returned %d, want 0", off)
	}
	if want := wiretest.Hex("00 04 0014 00000007"); !bytes.Equal(buf[:8], want) {
		t.Errorf("header % x, want % x", buf[:8], want)
	}
}

var controlCases = []struct {
	name string
	c    wire.Control
	hex  string // session address | access loss_pct share reserved | ue_ts / rtt_us | upf_ts
}{
	{"a PROBE body carries the session address, the leg and the UE's send time, upf_ts 0",
		wire.Control{Session: [4]byte{10, 45, 0, 7}, Access: contract.AccessNon3GPP, UETime: 0x01020304},
		"0a2d0007 02 00 0000 01020304 00000000"},
	{"a PROBE_REPLY body echoes the probe and adds the UPF's time",
		wire.Control{Session: [4]byte{10, 45, 0, 7}, Access: contract.Access3GPP, UETime: 0x01020304, UPFTime: 0xa0b0c0d0},
		"0a2d0007 01 00 0000 01020304 a0b0c0d0"},
	{"a PROBE_ACK body carries the loss the UE measured on the leg in its sixth byte",
		wire.Control{Session: [4]byte{10, 45, 0, 7}, Access: contract.AccessNon3GPP, LossPercent: 35, UETime: 0x01020304, UPFTime: 0xa0b0c0d0},
		"0a2d0007 02 23 0000 01020304 a0b0c0d0"},
	{"a PROBE_ACK body carries the UE's autonomous share in the low 7 bits of its seventh byte",
		wire.Control{Session: [4]byte{10, 45, 0, 7}, Access: contract.Access3GPP, Share: 127, UETime: 0x01020304, UPFTime: 0xa0b0c0d0},
		"0a2d0007 01 00 7f00 01020304 a0b0c0d0"},
	{"a LINK_UP body carries the access that came up and the UE's RTT and loss for it",
		wire.Control{Session: [4]byte{192, 0, 2, 255}, Access: contract.Access3GPP, LossPercent: 100, UETime: 15000},
		"c00002ff 01 64 0000 00003a98 00000000"},
}

func TestControlBytes(t *testing.T) {
	for _, tc := range controlCases {
		t.Run(tc.name, func(t *testing.T) {
			want := wiretest.Hex(tc.hex)
			got := make([]byte, wire.ControlLen)
			for i := range got {
				got[i] = 0xee // Put must write every byte, reserved ones included
			}
			tc.c.Put(got)
			if !bytes.Equal(got, want) {
				t.Errorf("Put = % x, want % x", got, want)
			}
			if a := tc.c.Append(nil); !bytes.Equal(a, want) {
				t.Errorf("Append = % x, want % x", a, want)
			}
			c, err := wire.ParseControl(want)
			if err != nil {
				t.Fatal(err)
			}
			if c != tc.c {
				t.Errorf("ParseControl = %+v, want %+v", c, tc.c)
			}
		})
	}
}

func TestParseControl(t *testing.T) {
	t.Run("reserved bits are ignored on receipt", func(t *testing.T) {
		c, err := wire.ParseControl(wiretest.Hex("0a2d0007 02 05 9aff 00000001 00000002"))
		want := wire.Control{Session: [4]byte{10, 45, 0, 7}, Access: contract.AccessNon3GPP, LossPercent: 5, Share: 26, UETime: 1, UPFTime: 2}
		if err != nil || c != want {
			t.Errorf("got %+v %v, want %+v", c, err, want)
		}
	})
	for _, tc := range []struct {
		name  string
		hex   string
		field string
		value int
	}{
		{"access 0 names no access", "0a2d0007 00 000000 00000000 00000000", "access", 0},
		{"access 3 is not an access", "0a2d0007 03 000000 00000000 00000000", "access", 3},
		{"fifteen bytes are a truncated body", "0a2d0007 01 000000 00000000 000000", "body", 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseControl(wiretest.Hex(tc.hex))
			wantError(t, err, wire.LayerControl, tc.field, tc.value)
		})
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{wire.TypeProbeAck.String(), "PROBE_ACK"},
		{wire.Type(9).String(), "Type(9)"},
		{(wire.MarkCurrentPath | wire.MarkEpoch).String(), "CURRENT_PATH|EPOCH"},
		{wire.Marks(0).String(), "none"},
		{wire.Marks(0x9).String(), "EX_PATH|RESERVED"},
		{contract.AccessNon3GPP.String(), "non-3GPP"},
		{contract.Access3GPP.Other().String(), "non-3GPP"},
		{contract.AccessNone.Other().String(), "none"},
		{wire.LayerGTPU.String(), "gtp-u"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if wire.TypeData.IsControl() || !wire.TypeLinkUp.IsControl() || wire.Type(6).IsControl() {
		t.Error("IsControl is wrong")
	}
}
