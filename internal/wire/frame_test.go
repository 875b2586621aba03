package wire_test

import (
	"bytes"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// The 3GPP-leg downlink frame as the pipeline writes it, computed independently of this
// package, one layer per line: the UPF (N3 192.0.2.1, Junction 10.0.0.1) sends a DNS answer from
// 8.8.8.8 to the session 10.45.0.7 through the gNB 192.0.2.100 (TEID 100) to the UE's 3GPP-leg
// address 10.10.0.2, with Junction sequence number 42, in the session's QoS flow 9 (the GTP-U
// PDU Session Container: the longest encapsulation there is).
const downlink3GPPHex = `
	020000000002 020000000001 0800
	45 00 0070 0000 0000 40 11 f617 c0000201 c0000264
	0868 0868 005c 0000
	34 ff 004c 00000064 0000 00 85 01 00 09 00
	45 00 0044 0000 0000 40 11 669d 0a000001 0a0a0002
	0869 0869 0030 0000
	00 04 0020 0000002a
	45 00 0020 0000 0000 3f 11 618a 08080808 0a2d0007
	0035 9c40 000c 0000 deadbeef`

var (
	macUPF    = wiretest.MAC("02:00:00:00:00:01")
	macNext   = wiretest.MAC("02:00:00:00:00:02")
	upfN3     = wiretest.IP("192.0.2.1")
	gNB       = wiretest.IP("192.0.2.100")
	upfJunc   = wiretest.IP("10.0.0.1")
	ue3GPP    = wiretest.IP("10.10.0.2")
	ueNon3GPP = wiretest.IP("198.51.100.7")
	session   = wiretest.IP("10.45.0.7")
	server    = wiretest.IP("8.8.8.8")
)

// userPacket is the DNS answer inside downlink3GPPHex.
func userPacket() []byte {
	return wiretest.Build(
		wire.IPv4{TTL: 63, Src: server, Dst: session},
		wire.UDP{SrcPort: 53, DstPort: 40000},
		wiretest.Hex("deadbeef"))
}

func TestEncapsulationInHeadroom(t *testing.T) {
	want := wiretest.Hex(downlink3GPPHex)
	user := userPacket()

	t.Run("prepending the pipeline's headers in the headroom gives the specified frame", func(t *testing.T) {
		buf := make([]byte, wire.MaxHeadroom+len(user))
		copy(buf[wire.MaxHeadroom:], user)
		off := wire.MaxHeadroom
		off = wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 42}.Prepend(buf, off)
		off = wire.TunnelUDP(wire.JunctionPort).Prepend(buf, off)
		off = wire.TunnelIPv4(upfJunc, ue3GPP).Prepend(buf, off)
		off = wire.DownlinkGTPU(100, 9).Prepend(buf, off)
		off = wire.TunnelUDP(wire.GTPUPort).Prepend(buf, off)
		off = wire.TunnelIPv4(upfN3, gNB).Prepend(buf, off)
		off = wire.Ethernet{Dst: macNext, Src: macUPF, Type: wire.EtherTypeIPv4}.Prepend(buf, off)
		if off != 0 {
			t.Fatalf("headers start at %d, want 0 (MaxHeadroom is the whole 3GPP downlink encapsulation)", off)
		}
		if !bytes.Equal(buf, want) {
			t.Errorf("frame\n% x\nwant\n% x", buf, want)
		}
	})
	t.Run("wiretest.Build composes the same frame from its layers", func(t *testing.T) {
		got := wiretest.Build(
			wire.Ethernet{Dst: macNext, Src: macUPF},
			wire.IPv4{Src: upfN3, Dst: gNB},
			wire.UDP{},
			wire.GTPU{TEID: 100, NextExt: wire.GTPUExtPDUSession, PSC: [2]byte{0, 9}},
			wire.IPv4{Src: upfJunc, Dst: ue3GPP},
			wire.UDP{},
			wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 42},
			user)
		if !bytes.Equal(got, want) {
			t.Errorf("frame\n% x\nwant\n% x", got, want)
		}
	})
	t.Run("Frame.Parse finds every layer of the specified frame", func(t *testing.T) {
		var f wire.Frame
		if err := f.Parse(want); err != nil {
			t.Fatal(err)
		}
		wantHas := wire.HasEthernet | wire.HasIPv4 | wire.HasUDP | wire.HasGTPU | wire.HasInnerIPv4 |
			wire.HasInnerUDP | wire.HasJunction | wire.HasUser | wire.HasPorts
		if f.Has != wantHas {
			t.Errorf("Has = %#x, want %#x", f.Has, wantHas)
		}
		if f.IPv4.Dst != gNB || f.GTPU.TEID != 100 || f.GTPU.QFI() != 9 || f.InnerIPv4.Dst != ue3GPP || f.Junction.Seq != 42 {
			t.Errorf("layers: %+v", f)
		}
		if f.InnerOff != 14+20+8+16 || f.JunctionOff != f.InnerOff+28 || f.UserOff != f.JunctionOff+8 || f.UserEnd != len(want) {
			t.Errorf("offsets inner %d junction %d user %d..%d", f.InnerOff, f.JunctionOff, f.UserOff, f.UserEnd)
		}
		if !bytes.Equal(want[f.UserOff:f.UserEnd], user) {
			t.Errorf("user packet % x, want % x", want[f.UserOff:f.UserEnd], user)
		}
		if f.User.Src != server || f.User.TTL != 63 || f.Ports != (wire.Ports{Src: 53, Dst: 40000}) {
			t.Errorf("user %+v ports %+v", f.User, f.Ports)
		}
		if f.JunctionAccess() != contract.Access3GPP {
			t.Errorf("JunctionAccess = %s", f.JunctionAccess())
		}
	})
}

func TestFrameParseLayouts(t *testing.T) {
	eth := wire.Ethernet{Dst: macUPF, Src: macNext}
	user := userPacket()
	tcpUser := wiretest.Build(wire.IPv4{Src: session, Dst: server}, wiretest.TCP{SrcPort: 40001, DstPort: 443, Flags: 0x02})
	probe := wire.Control{Session: session, Access: contract.AccessNon3GPP, UETime: 1234}
	base := wire.HasEthernet | wire.HasIPv4

	for _, tc := range []struct {
		name   string
		frame  []byte
		has    wire.Layers
		user   []byte // the user packet Frame.Parse must find, if any
		ports  wire.Ports
		access contract.Access
		check  func(t *testing.T, f *wire.Frame)
	}{
		{
			name:  "a downlink packet from the data network is the user packet itself, with its TCP ports",
			frame: wiretest.Build(eth, tcpUser),
			has:   base | wire.HasUser | wire.HasPorts, user: tcpUser, ports: wire.Ports{Src: 40001, Dst: 443},
		},
		{
			name:  "a downlink UDP packet to another port is the user packet, with its UDP ports",
			frame: wiretest.Build(eth, user),
			has:   base | wire.HasUDP | wire.HasUser | wire.HasPorts, user: user, ports: wire.Ports{Src: 53, Dst: 40000},
		},
		{
			name:  "an ICMP packet is a user packet without ports",
			frame: wiretest.Build(eth, wire.IPv4{Src: server, Dst: session, Proto: 1}, wiretest.Hex("0800f7ff00000000")),
			has:   base | wire.HasUser,
			user:  wiretest.Build(wire.IPv4{Src: server, Dst: session, Proto: 1}, wiretest.Hex("0800f7ff00000000")),
		},
		{
			name:  "a plain GTP-U uplink carries the user packet inside GTP-U",
			frame: wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{}, wire.GTPU{TEID: 7}, tcpUser),
			has:   base | wire.HasUDP | wire.HasGTPU | wire.HasInnerIPv4 | wire.HasUser | wire.HasPorts,
			user:  tcpUser, ports: wire.Ports{Src: 40001, Dst: 443},
			check: func(t *testing.T, f *wire.Frame) {
				if f.GTPU.TEID != 7 || f.InnerIPv4 != f.User || f.InnerOff != f.UserOff {
					t.Errorf("GTP-U %+v inner %+v at %d", f.GTPU, f.InnerIPv4, f.InnerOff)
				}
			},
		},
		{
			name: "a plain GTP-U uplink from a real gNB carries a PDU Session Container",
			frame: wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{},
				wire.GTPU{TEID: 7, NextExt: wire.GTPUExtPDUSession, PSC: [2]byte{0x10, 5}}, tcpUser),
			has:  base | wire.HasUDP | wire.HasGTPU | wire.HasInnerIPv4 | wire.HasUser | wire.HasPorts,
			user: tcpUser, ports: wire.Ports{Src: 40001, Dst: 443},
			check: func(t *testing.T, f *wire.Frame) {
				if f.GTPU.QFI() != 5 || f.InnerOff != 14+20+8+16 {
					t.Errorf("QFI %d inner at %d", f.GTPU.QFI(), f.InnerOff)
				}
			},
		},
		{
			name: "Junction uplink data on the 3GPP leg arrives inside GTP-U",
			frame: wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{}, wire.GTPU{TEID: 7},
				wire.IPv4{Src: ue3GPP, Dst: upfJunc}, wire.UDP{},
				wire.Header{Type: wire.TypeData, Marks: wire.MarkCurrentPath, Proto: 4, Seq: 3000}, tcpUser),
			has: base | wire.HasUDP | wire.HasGTPU | wire.HasInnerIPv4 | wire.HasInnerUDP | wire.HasJunction |
				wire.HasUser | wire.HasPorts,
			user: tcpUser, ports: wire.Ports{Src: 40001, Dst: 443}, access: contract.Access3GPP,
			check: func(t *testing.T, f *wire.Frame) {
				if f.Junction.Marks != wire.MarkCurrentPath || f.Junction.Seq != 3000 || f.InnerIPv4.Src != ue3GPP {
					t.Errorf("junction %+v inner %+v", f.Junction, f.InnerIPv4)
				}
			},
		},
		{
			name: "Junction uplink data on the non-3GPP leg arrives directly over UDP",
			frame: wiretest.Build(eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc}, wire.UDP{},
				wire.Header{Type: wire.TypeData, Proto: 4}, tcpUser),
			has:  base | wire.HasUDP | wire.HasJunction | wire.HasUser | wire.HasPorts,
			user: tcpUser, ports: wire.Ports{Src: 40001, Dst: 443}, access: contract.AccessNon3GPP,
			check: func(t *testing.T, f *wire.Frame) {
				if f.JunctionOff != 14+20+8 || f.UserOff != 14+20+8+8 {
					t.Errorf("junction at %d, user at %d", f.JunctionOff, f.UserOff)
				}
			},
		},
		{
			name: "a PROBE on the non-3GPP leg carries its control body",
			frame: wiretest.Build(eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc}, wire.UDP{},
				wire.Header{Type: wire.TypeProbe}, probe),
			has: base | wire.HasUDP | wire.HasJunction | wire.HasControl, access: contract.AccessNon3GPP,
			check: func(t *testing.T, f *wire.Frame) {
				if f.Control != probe || f.Junction.Length != 16 {
					t.Errorf("control %+v header %+v", f.Control, f.Junction)
				}
			},
		},
		{
			name: "a LINK_DOWN on the 3GPP leg carries its control body inside GTP-U",
			frame: wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{}, wire.GTPU{TEID: 7},
				wire.IPv4{Src: ue3GPP, Dst: upfJunc}, wire.UDP{},
				wire.Header{Type: wire.TypeLinkDown}, wire.Control{Session: session, Access: contract.AccessNon3GPP}),
			has:    base | wire.HasUDP | wire.HasGTPU | wire.HasInnerIPv4 | wire.HasInnerUDP | wire.HasJunction | wire.HasControl,
			access: contract.Access3GPP,
			check: func(t *testing.T, f *wire.Frame) {
				if f.Junction.Type != wire.TypeLinkDown || f.Control.Access != contract.AccessNon3GPP {
					t.Errorf("junction %+v control %+v", f.Junction, f.Control)
				}
			},
		},
		{
			name: "the EX-PATH marker has no user packet",
			frame: wiretest.Build(eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc}, wire.UDP{},
				wire.Header{Type: wire.TypeData, Marks: wire.MarkExPath | wire.MarkEpoch}),
			has: base | wire.HasUDP | wire.HasJunction, access: contract.AccessNon3GPP,
			check: func(t *testing.T, f *wire.Frame) {
				if !f.Junction.IsExPathMarker() || f.Junction.Marks.Epoch() != 1 {
					t.Errorf("junction %+v", f.Junction)
				}
			},
		},
		{
			name:  "a frame that is not IPv4 stops after Ethernet",
			frame: wiretest.Build(wire.Ethernet{Dst: macUPF, Src: macNext, Type: 0x0806}, wiretest.Payload(28)),
			has:   wire.HasEthernet,
		},
		{
			name:  "Ethernet padding after a short packet is not part of the user packet",
			frame: wiretest.Build(eth, user, make([]byte, 60-14-len(user))),
			has:   base | wire.HasUDP | wire.HasUser | wire.HasPorts, user: user, ports: wire.Ports{Src: 53, Dst: 40000},
		},
		{
			name: "a later fragment is a user packet without ports, even to the Junction port",
			frame: wiretest.Build(eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc, Proto: wire.ProtoUDP, Frag: 100},
				wiretest.Hex("0869 0869 ffff 0000")),
			has: base | wire.HasUser,
			user: wiretest.Build(wire.IPv4{Src: ueNon3GPP, Dst: upfJunc, Proto: wire.ProtoUDP, Frag: 100},
				wiretest.Hex("0869 0869 ffff 0000")),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f wire.Frame
			if err := f.Parse(tc.frame); err != nil {
				t.Fatal(err)
			}
			if f.Has != tc.has {
				t.Errorf("Has = %#x, want %#x", f.Has, tc.has)
			}
			if tc.user != nil {
				if got := tc.frame[f.UserOff:f.UserEnd]; !bytes.Equal(got, tc.user) {
					t.Errorf("user packet [%d:%d] = % x, want % x", f.UserOff, f.UserEnd, got, tc.user)
				}
				if u, _ := wire.ParseIPv4(tc.user); u != f.User {
					t.Errorf("User = %+v, want %+v", f.User, u)
				}
			}
			if f.Ports != tc.ports {
				t.Errorf("Ports = %+v, want %+v", f.Ports, tc.ports)
			}
			if f.JunctionAccess() != tc.access {
				t.Errorf("JunctionAccess = %s, want %s", f.JunctionAccess(), tc.access)
			}
			if tc.check != nil {
				tc.check(t, &f)
			}
		})
	}
}

func TestFrameParseRejects(t *testing.T) {
	eth := wire.Ethernet{Dst: macUPF, Src: macNext}
	tcpUser := wiretest.Build(wire.IPv4{Src: session, Dst: server}, wiretest.TCP{SrcPort: 40001, DstPort: 443})
	nonJunction := func(h wire.Header, rest ...any) []byte {
		return wiretest.Build(append([]any{eth, wire.IPv4{Src: ueNon3GPP, Dst: upfJunc}, wire.UDP{}, h}, rest...)...)
	}
	optionsUser := append(wiretest.Hex("46"), tcpUser[1:]...)

	for _, tc := range []struct {
		name  string
		frame []byte
		layer wire.Layer
		field string
		value int
		has   wire.Layers // the layers still valid after the error
	}{
		{"a frame shorter than Ethernet is truncated", wiretest.Hex("0200000000"), wire.LayerEthernet, "header", 5, 0},
		{"an outer IPv4 header with options is a parser error",
			wiretest.Build(eth, optionsUser), wire.LayerIPv4, "ihl", 6, wire.HasEthernet},
		{"a UDP length past the IPv4 packet is a parser error",
			wiretest.Build(eth, wire.IPv4{Src: server, Dst: session}, wire.UDP{SrcPort: 1, DstPort: 2, Length: 9}),
			wire.LayerUDP, "length", 9, wire.HasEthernet | wire.HasIPv4},
		{"a GTP-U extension other than the container is a parser error",
			wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{},
				wire.GTPU{Flags: 0x34, NextExt: 0xc0}, wiretest.Hex("01000000"), tcpUser),
			wire.LayerGTPU, "extension header type", 0xc0, wire.HasEthernet | wire.HasIPv4 | wire.HasUDP},
		{"a GTP-U T-PDU that is not IPv4 is a parser error",
			wiretest.Build(eth, wire.IPv4{Src: gNB, Dst: upfN3}, wire.UDP{}, wire.GTPU{TEID: 7}, wiretest.Hex("60000000")),
			wire.LayerIPv4, "version", 6, wire.HasEthernet | wire.HasIPv4 | wire.HasUDP | wire.HasGTPU},
		{"a Junction header with an unknown type is bad Junction",
			nonJunction(wire.Header{Type: 9, Length: 16}, wiretest.Payload(16)),
			wire.LayerJunction, "type", 9, wire.HasEthernet | wire.HasIPv4 | wire.HasUDP},
		{"a Junction length that does not match the datagram is bad Junction",
			nonJunction(wire.Header{Type: wire.TypeData, Proto: 4, Length: uint16(len(tcpUser) + 1)}, tcpUser),
			wire.LayerJunction, "length", len(tcpUser) + 1, wire.HasEthernet | wire.HasIPv4 | wire.HasUDP},
		{"a probe body with access 0 is bad Junction",
			nonJunction(wire.Header{Type: wire.TypeProbe}, wire.Control{Session: session}),
			wire.LayerControl, "access", 0, wire.HasEthernet | wire.HasIPv4 | wire.HasUDP | wire.HasJunction},
		{"a user packet inside Junction with options is a parser error",
			nonJunction(wire.Header{Type: wire.TypeData, Proto: 4}, optionsUser),
			wire.LayerIPv4, "ihl", 6, wire.HasEthernet | wire.HasIPv4 | wire.HasUDP | wire.HasJunction},
		{"a TCP user packet too short for its ports is a parser error",
			wiretest.Build(eth, wire.IPv4{Src: server, Dst: session, Proto: wire.ProtoTCP}, wiretest.Hex("0050")),
			wire.LayerTransport, "ports", 2, wire.HasEthernet | wire.HasIPv4 | wire.HasUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f wire.Frame
			err := f.Parse(tc.frame)
			wantError(t, err, tc.layer, tc.field, tc.value)
			if f.Has != tc.has {
				t.Errorf("Has = %#x, want %#x", f.Has, tc.has)
			}
		})
	}
}

func TestFrameParseIP(t *testing.T) {
	t.Run("a packet from a TUN device parses from its IPv4 header", func(t *testing.T) {
		pkt := userPacket()
		var f wire.Frame
		if err := f.ParseIP(pkt); err != nil {
			t.Fatal(err)
		}
		if f.Has != wire.HasIPv4|wire.HasUDP|wire.HasUser|wire.HasPorts || f.UserOff != 0 || f.UserEnd != len(pkt) {
			t.Errorf("Has %#x user %d..%d", f.Has, f.UserOff, f.UserEnd)
		}
	})
}

func TestBuildFillsTransportChecksums(t *testing.T) {
	// A SYN from 10.0.0.1:1024 to 10.0.0.2:80, checksum worked out independently.
	pkt := wiretest.Build(wire.IPv4{Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 0, 2}},
		wiretest.TCP{SrcPort: 1024, DstPort: 80, Seq: 1, Flags: 0x02, Window: 65535})
	want := wiretest.Hex("0400 0050 00000001 00000000 50 02 ffff 978f 0000")
	if !bytes.Equal(pkt[20:], want) {
		t.Errorf("TCP header % x, want % x", pkt[20:], want)
	}
	if pkt[9] != wire.ProtoTCP || !wire.VerifyIPv4Checksum(pkt) {
		t.Errorf("IPv4 header % x", pkt[:20])
	}
}
