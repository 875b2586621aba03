package wire_test

import (
	"bytes"
	"testing"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// tpdu is a 16-byte stand-in for the T-PDU after the GTP-U header.
var tpdu = wiretest.Payload(16)

func TestGTPUBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		g         wire.GTPU
		hex       string // flags type length TEID | seq N-PDU next | extension
		headerLen int
	}{
		{"the pipeline's header is flags 0x30, G-PDU, the T-PDU length and the TEID",
			wire.GTPU{Flags: 0x30, Type: 0xff, Length: 16, TEID: 0x01020304},
			"30 ff 0010 01020304", 8},
		{"a sequence number adds the 4 option bytes, counted in the length",
			wire.GTPU{Flags: 0x32, Type: 0xff, Length: 20, TEID: 1, Seq: 0x0007},
			"32 ff 0014 00000001 | 0007 00 00", 12},
		{"an N-PDU number alone also adds the option bytes",
			wire.GTPU{Flags: 0x31, Type: 0xff, Length: 20, TEID: 1, NPDU: 0x42},
			"31 ff 0014 00000001 | 0000 42 00", 12},
		{"an uplink PDU Session Container with QFI 9 follows the options as 4 bytes of length 1",
			wire.GTPU{Flags: 0x34, Type: 0xff, Length: 24, TEID: 0xabcd, NextExt: 0x85, PSC: [2]byte{0x10, 0x09}},
			"34 ff 0018 0000abcd | 0000 00 85 | 01 10 09 00", 16},
		{"E set with no next extension carries only the options",
			wire.GTPU{Flags: 0x34, Type: 0xff, Length: 20, TEID: 2},
			"34 ff 0014 00000002 | 0000 00 00", 12},
		{"an Echo Request carries the sequence number its response returns, with TEID 0",
			wire.GTPU{Flags: 0x32, Type: 0x01, Length: 4, Seq: 0x1234},
			"32 01 0004 00000000 | 1234 00 00", 12},
		{"an End Marker is a header alone (TS 29.281 §7.3.2), on the tunnel it ends",
			wire.GTPU{Flags: 0x30, Type: 0xfe, TEID: 0x0701},
			"30 fe 0000 00000701", 8},
		{"the spare bit is kept as found",
			wire.GTPU{Flags: 0x38, Type: 0xff, Length: 16, TEID: 3},
			"38 ff 0010 00000003", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := wiretest.Hex(tc.hex)
			if tc.g.HeaderLen() != tc.headerLen || len(want) != tc.headerLen {
				t.Fatalf("HeaderLen = %d, hex %d bytes, want %d", tc.g.HeaderLen(), len(want), tc.headerLen)
			}
			got := make([]byte, tc.headerLen)
			tc.g.Put(got)
			if !bytes.Equal(got, want) {
				t.Errorf("Put = % x, want % x", got, want)
			}
			g, err := wire.ParseGTPU(append(want, tpdu...))
			if err != nil {
				t.Fatal(err)
			}
			if g != tc.g {
				t.Errorf("ParseGTPU = %+v, want %+v", g, tc.g)
			}
		})
	}
	t.Run("QFI is the low 6 bits of the container's second byte", func(t *testing.T) {
		g := wire.GTPU{Flags: 0x34, NextExt: 0x85, PSC: [2]byte{0x10, 0xc9}}
		if g.QFI() != 9 || (wire.GTPU{Flags: 0x30, PSC: [2]byte{0, 9}}).QFI() != 0 {
			t.Errorf("QFI = %d", g.QFI())
		}
	})
}

func TestGTPUPrepend(t *testing.T) {
	t.Run("the pipeline's header counts the T-PDU in its length", func(t *testing.T) {
		buf := append(make([]byte, 8), tpdu...)
		off := wire.TunnelGTPU(0x01020304).Prepend(buf, 8)
		if want := wiretest.Hex("30 ff 0010 01020304"); off != 0 || !bytes.Equal(buf[:8], want) {
			t.Errorf("Prepend = %d % x, want 0 % x", off, buf[:8], want)
		}
	})
	t.Run("a header with a container counts options and container in its length", func(t *testing.T) {
		buf := append(make([]byte, 20), tpdu...)
		g := wire.GTPU{Flags: 0x34, Type: 0xff, TEID: 0xabcd, NextExt: 0x85, PSC: [2]byte{0x10, 0x09}}
		off := g.Prepend(buf, 20)
		want := wiretest.Hex("34 ff 0018 0000abcd | 0000 00 85 | 01 10 09 00")
		if off != 4 || !bytes.Equal(buf[4:20], want) {
			t.Errorf("Prepend = %d % x, want 4 % x", off, buf[4:20], want)
		}
	})
}

func TestParseGTPURejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hex   string
		field string
		value int
	}{
		{"seven bytes are a truncated header", "30 ff 0000 000001", "header", 7},
		{"version 2 is not GTP-U v1", "50 ff 0000 00000001", "version", 2},
		{"protocol type 0 is GTP', not GTP", "20 ff 0000 00000001", "protocol type", 0},
		{"an Error Indication is not for the UPF to parse", "30 1a 0000 00000000", "message type", 0x1a},
		{"an End Marker's announced options must fit in its length", "32 fe 0002 00000001 | 0000", "length", 2},
		{"an Echo Response is not for the UPF to parse", "32 02 0006 00000000 | 0001 00 00 | 0e 00", "message type", 0x02},
		{"an Echo Request without a sequence number breaks §7.2.1", "30 01 0000 00000000", "flags", 0x30},
		{"an Echo Request with an extension header breaks §7.2.1", "36 01 0004 00000000 | 0001 00 00", "flags", 0x36},
		{"a length past the datagram is truncation", "30 ff 0011 00000001" + " 00000000 00000000 00000000 00000000", "length", 17},
		{"options announced by S must fit in the length", "32 ff 0002 00000001 | 0000", "length", 2},
		{"an extension other than the PDU Session Container is rejected", "34 ff 0008 00000001 | 0000 00 c0 | 01 00 00 00", "extension header type", 0xc0},
		{"a PDU Session Container that does not fit in the length is rejected", "34 ff 0004 00000001 | 0000 00 85", "length", 4},
		{"a PDU Session Container of length 2 is rejected", "34 ff 000c 00000001 | 0000 00 85 | 02 10 09 00 00000000", "PDU Session Container length", 2},
		{"a PDU Session Container of length 0 is rejected", "34 ff 0008 00000001 | 0000 00 85 | 00 10 09 00", "PDU Session Container length", 0},
		{"a second extension after the PDU Session Container is rejected", "34 ff 000c 00000001 | 0000 00 85 | 01 10 09 85 | 01 10 09 00", "extension header type after the PDU Session Container", 0x85},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseGTPU(wiretest.Hex(tc.hex))
			wantError(t, err, wire.LayerGTPU, tc.field, tc.value)
		})
	}
	t.Run("the message names the extension in hex", func(t *testing.T) {
		_, err := wire.ParseGTPU(wiretest.Hex("34 ff 0008 00000001 | 0000 00 c0 | 01 00 00 00"))
		want := "gtp-u: bad extension header type 0xc0: want 0x85 (PDU Session Container), the only extension supported"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("without E the next extension type is not looked at", func(t *testing.T) {
		g, err := wire.ParseGTPU(wiretest.Hex("32 ff 0004 00000001 | 0000 00 c0"))
		if err != nil || g.HeaderLen() != 12 || g.NextExt != 0xc0 {
			t.Errorf("ParseGTPU = %+v %v", g, err)
		}
	})
}
