package wire_test

import (
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// Sinks keep the compiler from discarding the work measured.
var (
	sinkHeader  wire.Header
	sinkControl wire.Control
	sinkIPv4    wire.IPv4
	sinkGTPU    wire.GTPU
	sinkInt     int
	sinkErr     error
)

// hotPath lists the per-packet operations of the data path; each must not allocate.
func hotPath() map[string]func() {
	header := wiretest.Hex("06 04 05dc 000061a8")
	control := wiretest.Hex("0a2d0007 01 000000 01020304 a0b0c0d0")
	ipv4 := append(wiretest.Hex(exampleIPv4), make([]byte, 0x73-20)...)
	gtpu := append(wiretest.Hex("34 ff 0018 0000abcd 0000 00 85 01 10 09 00"), tpdu...)
	frame := wiretest.Hex(downlink3GPPHex)
	fromDN := wiretest.Build(wire.Ethernet{}, wire.IPv4{Src: server, Dst: session},
		wiretest.TCP{SrcPort: 443, DstPort: 40001}, wiretest.Payload(1400))
	user := userPacket()
	buf := make([]byte, wire.MaxHeadroom+len(user))
	out := make([]byte, 64)
	var fr wire.Frame
	return map[string]func(){
		"ParseHeader": func() { sinkHeader, sinkErr = wire.ParseHeader(header) },
		"HeaderPut":   func() { wire.Header{Type: wire.TypeData, Proto: 4, Length: 1500, Seq: 7}.Put(out) },
		"ParseControl": func() {
			sinkControl, sinkErr = wire.ParseControl(control)
		},
		"ControlPut": func() { wire.Control{Session: session, Access: contract.Access3GPP, UETime: 1}.Put(out) },
		"ParseIPv4":  func() { sinkIPv4, sinkErr = wire.ParseIPv4(ipv4) },
		"IPv4Put":    func() { sinkIPv4.Put(out) },
		"VerifyIPv4Checksum": func() {
			if !wire.VerifyIPv4Checksum(ipv4) {
				panic("bad checksum")
			}
		},
		"DecrementTTL": func() {
			ipv4[8] = 64
			ipv4[10], ipv4[11] = 0xb8, 0x61
			wire.DecrementTTL(ipv4)
		},
		"ParseGTPU":          func() { sinkGTPU, sinkErr = wire.ParseGTPU(gtpu) },
		"FrameParse":         func() { sinkErr = fr.Parse(frame) },
		"FrameParseDownlink": func() { sinkErr = fr.Parse(fromDN) },
		"Encapsulate3GPP": func() {
			off := wire.MaxHeadroom
			off = wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 42}.Prepend(buf, off)
			off = wire.TunnelUDP(wire.JunctionPort).Prepend(buf, off)
			off = wire.TunnelIPv4(upfJunc, ue3GPP).Prepend(buf, off)
			off = wire.TunnelGTPU(100).Prepend(buf, off)
			off = wire.TunnelUDP(wire.GTPUPort).Prepend(buf, off)
			off = wire.TunnelIPv4(upfN3, gNB).Prepend(buf, off)
			sinkInt = wire.Ethernet{Dst: macNext, Src: macUPF, Type: wire.EtherTypeIPv4}.Prepend(buf, off)
		},
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	for name, fn := range hotPath() {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s allocates %.0f times per packet, want 0", name, n)
		}
	}
	if sinkErr != nil {
		t.Fatalf("a hot-path input failed to parse: %v", sinkErr)
	}
}

func bench(b *testing.B, name string) {
	fn := hotPath()[name]
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
}

func BenchmarkParseHeader(b *testing.B)        { bench(b, "ParseHeader") }
func BenchmarkHeaderPut(b *testing.B)          { bench(b, "HeaderPut") }
func BenchmarkParseControl(b *testing.B)       { bench(b, "ParseControl") }
func BenchmarkControlPut(b *testing.B)         { bench(b, "ControlPut") }
func BenchmarkParseIPv4(b *testing.B)          { bench(b, "ParseIPv4") }
func BenchmarkIPv4Put(b *testing.B)            { bench(b, "IPv4Put") }
func BenchmarkVerifyIPv4Checksum(b *testing.B) { bench(b, "VerifyIPv4Checksum") }
func BenchmarkDecrementTTL(b *testing.B)       { bench(b, "DecrementTTL") }
func BenchmarkParseGTPU(b *testing.B)          { bench(b, "ParseGTPU") }
func BenchmarkFrameParse(b *testing.B)         { bench(b, "FrameParse") }
func BenchmarkFrameParseDownlink(b *testing.B) { bench(b, "FrameParseDownlink") }
func BenchmarkEncapsulate3GPP(b *testing.B)    { bench(b, "Encapsulate3GPP") }

// BenchmarkParseHeaderReject shows the cost of a rejection: one small allocation for the
// *wire.Error, the only allocation in the package.
func BenchmarkParseHeaderReject(b *testing.B) {
	bad := wiretest.Hex("60 00 0010 00000000")
	b.ReportAllocs()
	for b.Loop() {
		sinkHeader, sinkErr = wire.ParseHeader(bad)
	}
}
