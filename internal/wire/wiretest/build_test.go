package wiretest_test

import (
	"bytes"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

func TestBuildFillsFields(t *testing.T) {
	src, dst := wiretest.IP("198.51.100.7"), wiretest.IP("10.0.0.1")
	for _, tc := range []struct {
		name   string
		layers []any
		want   string
	}{
		{"UDP before a Junction header uses port 2153 both ways and counts the payload",
			[]any{wire.UDP{}, wire.Header{Type: wire.TypeData, Marks: wire.MarkExPath}},
			"0869 0869 0010 0000 | 01 00 0000 00000000"},
		{"UDP before GTP-U uses port 2152 both ways, and GTP-U defaults to flags 0x30 and G-PDU",
			[]any{wire.UDP{}, wire.GTPU{TEID: 5}, []byte{0xaa}},
			"0868 0868 0011 0000 | 30 ff 0001 00000005 | aa"},
		{"GTP-U with a PDU Session Container sets E and counts options and container",
			[]any{wire.GTPU{TEID: 5, NextExt: wire.GTPUExtPDUSession, PSC: [2]byte{0x00, 0x09}}, []byte{0xaa}},
			"34 ff 0009 00000005 | 0000 00 85 | 01 00 09 00 | aa"},
		{"explicit UDP ports and lengths are kept",
			[]any{wire.UDP{SrcPort: 1, DstPort: 2, Length: 99}, wire.Header{Type: wire.TypeProbe, Length: 3}},
			"0001 0002 0063 0000 | 10 00 0003 00000000"},
		{"a Junction header counts the bytes after it",
			[]any{wire.Header{Type: wire.TypeProbeReply}, wire.Control{Session: dst, Access: contract.Access3GPP, UETime: 1, UPFTime: 2}},
			"20 00 0010 00000000 | 0a000001 01 000000 00000001 00000002"},
		{"IPv4 in IPv4 gets protocol 4, TTL 64 and both total lengths",
			[]any{wire.IPv4{Src: src, Dst: dst}, wire.IPv4{Src: dst, Dst: src, Proto: 253}},
			"45 00 0028 0000 0000 40 04 0000 c6336407 0a000001 | 45 00 0014 0000 0000 40 fd 0000 0a000001 c6336407"},
		{"Ethernet defaults to EtherType IPv4",
			[]any{wire.Ethernet{Dst: wiretest.MAC("ff:ff:ff:ff:ff:ff"), Src: wiretest.MAC("02:00:00:00:00:01")}},
			"ffffffffffff 020000000001 0800"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wiretest.Build(tc.layers...)
			want := wiretest.Hex(tc.want)
			if _, ok := tc.layers[0].(wire.IPv4); ok { // checksums: checked, then blanked for the comparison
				for _, at := range []int{0, 20} {
					if !wire.VerifyIPv4Checksum(got[at:]) {
						t.Errorf("bad IPv4 checksum at %d", at)
					}
					got[at+10], got[at+11] = 0, 0
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Build =\n% x\nwant\n% x", got, want)
			}
		})
	}
}

func TestTransportChecksum(t *testing.T) {
	src, dst := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	t.Run("a segment with its checksum in place sums to zero", func(t *testing.T) {
		seg := wiretest.Hex("0035 9c40 000d 0000 deadbeef 01")
		c := wiretest.TransportChecksum(src, dst, wire.ProtoUDP, seg)
		seg[6], seg[7] = byte(c>>8), byte(c)
		if again := wiretest.TransportChecksum(src, dst, wire.ProtoUDP, seg); again != 0 && again != 0xffff {
			t.Errorf("checksum over the checksummed segment = %#04x", again)
		}
	})
}

func TestHelpersPanicOnBadInput(t *testing.T) {
	for name, fn := range map[string]func(){
		"IP of an IPv6 address":    func() { wiretest.IP("::1") },
		"MAC of five bytes":        func() { wiretest.MAC("02:00:00:00:00") },
		"Hex of an odd digit":      func() { wiretest.Hex("abc") },
		"Build of an unknown type": func() { wiretest.Build(42) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			fn()
		})
	}
}

func TestHexIgnoresSeparators(t *testing.T) {
	if got := wiretest.Hex("01 02|03\n\t04"); !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Errorf("Hex = % x", got)
	}
	if got := wiretest.Payload(3); !bytes.Equal(got, []byte{0, 1, 2}) {
		t.Errorf("Payload = % x", got)
	}
}
