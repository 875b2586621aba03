package wire_test

import (
	"bytes"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// Every fuzz target checks two things: parsing arbitrary bytes never panics (and fails only with
// a *wire.Error), and what parses writes back to the same bytes, so parse(put(x)) == x for every
// x a parser accepts.

func wantWireError(t *testing.T, err error) {
	t.Helper()
	if err != nil && wire.LayerOf(err) == 0 {
		t.Fatalf("error %v is not a *wire.Error", err)
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, tc := range headerCases {
		f.Add(wiretest.Hex(tc.hex))
	}
	f.Add(wiretest.Hex("60 00 0010 00000000"))
	f.Add([]byte{0x08})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := wire.ParseHeader(b)
		wantWireError(t, err)
		if err != nil {
			return
		}
		out := make([]byte, wire.HeaderLen)
		h.Put(out)
		if !bytes.Equal(out, b[:wire.HeaderLen]) {
			t.Fatalf("Put(ParseHeader(% x)) = % x", b[:8], out)
		}
		if again, err := wire.ParseHeader(out); err != nil || again != h {
			t.Fatalf("ParseHeader(Put(%+v)) = %+v, %v", h, again, err)
		}
		if _, _, err := wire.ParseJunction(b); (err == nil) != (int(h.Length) == len(b)-wire.HeaderLen) {
			t.Fatalf("ParseJunction on %d bytes with length %d: %v", len(b), h.Length, err)
		}
	})
}

func FuzzParseControl(f *testing.F) {
	for _, tc := range controlCases {
		f.Add(wiretest.Hex(tc.hex))
	}
	f.Add(wiretest.Hex("0a2d0007 03 ffffff 00000000 00000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := wire.ParseControl(b)
		wantWireError(t, err)
		if err != nil {
			return
		}
		out := make([]byte, wire.ControlLen)
		c.Put(out)
		want := append([]byte{}, b[:wire.ControlLen]...)
		want[6], want[7] = want[6]&0x7f, 0 // reserved bits: ignored on receipt, written as 0
		if !bytes.Equal(out, want) {
			t.Fatalf("Put(ParseControl(% x)) = % x", b[:16], out)
		}
		if again, err := wire.ParseControl(out); err != nil || again != c {
			t.Fatalf("ParseControl(Put(%+v)) = %+v, %v", c, again, err)
		}
	})
}

func FuzzParseIPv4(f *testing.F) {
	f.Add(append(wiretest.Hex(exampleIPv4), make([]byte, 0x73-20)...))
	f.Add(userPacket())
	f.Add(wiretest.Hex("46 00 0014"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := wire.ParseIPv4(b)
		wantWireError(t, err)
		if err != nil {
			return
		}
		if int(h.TotalLen) > len(b) || h.TotalLen < wire.IPv4HeaderLen {
			t.Fatalf("accepted total length %d of %d bytes", h.TotalLen, len(b))
		}
		out := make([]byte, wire.IPv4HeaderLen)
		h.Put(out)
		want := append([]byte{}, b[:wire.IPv4HeaderLen]...)
		copy(want[10:12], out[10:12]) // Put computes the checksum
		if !bytes.Equal(out, want) {
			t.Fatalf("Put(ParseIPv4(% x)) = % x", b[:20], out)
		}
		if !wire.VerifyIPv4Checksum(out) {
			t.Fatalf("Put wrote a bad checksum: % x", out)
		}
		again, err := wire.ParseIPv4(append(out, b[20:]...))
		h.Checksum = wire.IPv4Checksum(out)
		if err != nil || again != h {
			t.Fatalf("ParseIPv4(Put(%+v)) = %+v, %v", h, again, err)
		}
		if wire.DecrementTTL(out) {
			if out[8] != h.TTL-1 || !wire.VerifyIPv4Checksum(out) {
				t.Fatalf("DecrementTTL broke the header: % x", out)
			}
		} else if h.TTL > 1 {
			t.Fatalf("DecrementTTL refused TTL %d", h.TTL)
		}
	})
}

func FuzzParseGTPU(f *testing.F) {
	f.Add(append(wiretest.Hex("30 ff 0010 01020304"), tpdu...))
	f.Add(append(wiretest.Hex("34 ff 0018 0000abcd 0000 00 85 01 10 09 00"), tpdu...))
	f.Add(wiretest.Hex("34 ff 0008 00000001 0000 00 c0 01 00 00 00"))
	f.Add(wiretest.Hex("32 ff 0004 00000001 0000 00 c0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := wire.ParseGTPU(b)
		wantWireError(t, err)
		if err != nil {
			return
		}
		n := g.HeaderLen()
		if n > wire.GTPUHeaderLen+int(g.Length) || wire.GTPUHeaderLen+int(g.Length) > len(b) {
			t.Fatalf("header %d bytes, length %d, %d bytes: T-PDU out of bounds", n, g.Length, len(b))
		}
		out := make([]byte, n)
		g.Put(out)
		if !bytes.Equal(out, b[:n]) {
			t.Fatalf("Put(ParseGTPU(% x)) = % x", b[:n], out)
		}
		if again, err := wire.ParseGTPU(append(out, b[n:]...)); err != nil || again != g {
			t.Fatalf("ParseGTPU(Put(%+v)) = %+v, %v", g, again, err)
		}
	})
}

func FuzzParseFrame(f *testing.F) {
	eth := wire.Ethernet{Dst: macUPF, Src: macNext}
	tcpUser := wiretest.Build(wire.IPv4{Src: session, Dst: server}, wiretest.TCP{SrcPort: 40001, DstPort: 443})
	f.Add(wiretest.Hex(downlink3GPPHex))
	f.Add(wiretest.Build(eth, tcpUser))
	f.Add(wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{},
		wire.GTPU{TEID: 7, NextExt: wire.GTPUExtPDUSession, PSC: [2]byte{0x10, 5}}, tcpUser))
	f.Add(wiretest.Build(eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc}, wire.UDP{},
		wire.Header{Type: wire.TypeProbe}, wire.Control{Session: session, Access: contract.AccessNon3GPP}))
	f.Add(wiretest.Build(eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc}, wire.UDP{},
		wire.Header{Type: wire.TypeData, Marks: wire.MarkExPath}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr wire.Frame
		err := fr.Parse(b)
		wantWireError(t, err)
		if fr.Has&wire.HasUser != 0 {
			if fr.UserOff < 0 || fr.UserOff+wire.IPv4HeaderLen > fr.UserEnd || fr.UserEnd > len(b) {
				t.Fatalf("user packet [%d:%d] of %d bytes", fr.UserOff, fr.UserEnd, len(b))
			}
			if u, err := wire.ParseIPv4(b[fr.UserOff:fr.UserEnd]); err != nil || u != fr.User ||
				int(u.TotalLen) != fr.UserEnd-fr.UserOff {
				t.Fatalf("user packet %+v does not parse back: %+v, %v", fr.User, u, err)
			}
		}
		if fr.Has&wire.HasJunction != 0 {
			if h, err := wire.ParseHeader(b[fr.JunctionOff:]); err != nil || h != fr.Junction {
				t.Fatalf("Junction header at %d does not parse back: %+v, %v", fr.JunctionOff, h, err)
			}
		}
		if fr.Has&wire.HasInnerIPv4 != 0 {
			if ip, err := wire.ParseIPv4(b[fr.InnerOff:]); err != nil || ip != fr.InnerIPv4 {
				t.Fatalf("inner IPv4 at %d does not parse back: %+v, %v", fr.InnerOff, ip, err)
			}
		}
	})
}

// FuzzEncapsulation builds frames the way the UPF does, by prepending headers in headroom,
// and checks that Frame.Parse gives back every field that went in.
func FuzzEncapsulation(f *testing.F) {
	f.Add(uint32(100), uint32(42), uint8(0), uint16(53), uint16(40000), 4, true)
	f.Add(uint32(0), uint32(0), uint8(wire.MarkCurrentPath|wire.MarkEpoch), uint16(1), uint16(2), 0, false)
	f.Fuzz(func(t *testing.T, teid, seq uint32, marks uint8, sport, dport uint16, n int, threeGPP bool) {
		if n < 0 || n > 1400 {
			return
		}
		h := wire.Header{Type: wire.TypeData, Marks: wire.Marks(marks), Proto: wire.ProtoIPv4, Seq: seq}
		h.Length = uint16(wire.IPv4HeaderLen + wire.UDPHeaderLen + n)
		if h.Check() != nil {
			return
		}
		buf := make([]byte, wire.MaxHeadroom+wire.IPv4HeaderLen+wire.UDPHeaderLen+n)
		off := wire.MaxHeadroom
		user := buf[off:]
		copy(user[28:], wiretest.Payload(n))
		wire.UDP{SrcPort: sport, DstPort: dport}.Prepend(buf, off+28)
		wire.IPv4{TTL: 9, Proto: wire.ProtoUDP, Src: server, Dst: session}.Prepend(buf, off+20)
		off = h.Prepend(buf, off)
		off = wire.TunnelUDP(wire.JunctionPort).Prepend(buf, off)
		if threeGPP {
			off = wire.TunnelIPv4(upfJunc, ue3GPP).Prepend(buf, off)
			off = wire.TunnelGTPU(teid).Prepend(buf, off)
			off = wire.TunnelUDP(wire.GTPUPort).Prepend(buf, off)
			off = wire.TunnelIPv4(upfN3, gNB).Prepend(buf, off)
		} else {
			off = wire.TunnelIPv4(upfJunc, ueNon3GPP).Prepend(buf, off)
		}
		off = wire.Ethernet{Dst: macNext, Src: macUPF, Type: wire.EtherTypeIPv4}.Prepend(buf, off)

		var fr wire.Frame
		if err := fr.Parse(buf[off:]); err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if fr.Junction != h || fr.Ports != (wire.Ports{Src: sport, Dst: dport}) || fr.User.TTL != 9 ||
			!bytes.Equal(buf[off+fr.UserOff:off+fr.UserEnd], user) {
			t.Fatalf("parsed %+v", fr)
		}
		want := contract.AccessNon3GPP
		if threeGPP {
			want = contract.Access3GPP
			if fr.GTPU.TEID != teid || fr.InnerIPv4.Dst != ue3GPP {
				t.Fatalf("GTP-U %+v inner %+v", fr.GTPU, fr.InnerIPv4)
			}
		}
		if fr.JunctionAccess() != want {
			t.Fatalf("JunctionAccess %s, want %s", fr.JunctionAccess(), want)
		}
	})
}
