package ueagent

import (
	"bytes"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

var (
	testSession = [4]byte{10, 60, 0, 1}
	otherAddr   = [4]byte{10, 60, 0, 2}
)

// ipv4Packet is a minimal IPv4 header (no checksum: the agent does not check it, the kernel does)
// from src to dst followed by payload.
func ipv4Packet(src, dst [4]byte, payload string) []byte {
	b := make([]byte, 20, 20+len(payload))
	b[0], b[8], b[9] = 0x45, 64, 17
	b[2], b[3] = byte((20+len(payload))>>8), byte(20+len(payload))
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	return append(b, payload...)
}

func frame(h wire.Header, body []byte) []byte {
	h.Length = uint16(len(body))
	return append(h.Append(nil), body...)
}

func control(typ wire.Type, c wire.Control) []byte {
	b := make([]byte, wire.ControlLen)
	c.Put(b)
	return frame(wire.Header{Type: typ}, b)
}

// The cases follow docs/junction-header.md: what the UPF may send a UE, and what it must not.
func TestParseDownlink(t *testing.T) {
	user := ipv4Packet([4]byte{198, 18, 0, 10}, testSession, "hello")
	reply := wire.Control{Session: testSession, Access: contract.AccessNon3GPP, UETime: 7, UPFTime: 9}
	for _, tc := range []struct {
		name   string
		in     []byte
		on     contract.Access
		kind   rxKind
		reason string
	}{
		{"unsequenced data", frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4}, user), contract.Access3GPP, rxData, ""},
		{"sequenced data", frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 42}, user), contract.AccessNon3GPP, rxData, ""},
		{"probe reply on its leg", control(wire.TypeProbeReply, reply), contract.AccessNon3GPP, rxProbeReply, ""},
		{"probe reply for the other leg", control(wire.TypeProbeReply, reply), contract.Access3GPP, rxDrop, "BadProbeReply"},
		{"probe reply for another session", control(wire.TypeProbeReply, wire.Control{Session: otherAddr, Access: contract.AccessNon3GPP}), contract.AccessNon3GPP, rxDrop, "BadProbeReply"},
		{"data for another session", frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4}, ipv4Packet(testSession, otherAddr, "x")), contract.Access3GPP, rxDrop, "NotForSession"},
		{"marks on downlink", frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Marks: wire.MarkCurrentPath}, user), contract.Access3GPP, rxDrop, "MarksOnDownlink"},
		{"IPv6 payload", frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4}, append([]byte{0x60}, user[1:]...)), contract.Access3GPP, rxDrop, "NotIPv4"},
		{"a PROBE (UE to UPF only)", control(wire.TypeProbe, reply), contract.AccessNon3GPP, rxDrop, "UnexpectedType"},
		{"LINK_DOWN (UE to UPF only)", control(wire.TypeLinkDown, reply), contract.AccessNon3GPP, rxDrop, "UnexpectedType"},
		{"length beyond the datagram", frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4}, user)[:30], contract.Access3GPP, rxDrop, "BadJunction"},
		{"short header", []byte{0x00, 0x04}, contract.Access3GPP, rxDrop, "BadJunction"},
		{"empty", nil, contract.Access3GPP, rxDrop, "BadJunction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parseDownlink(tc.in, testSession, tc.on)
			if r.kind != tc.kind || r.reason != tc.reason {
				t.Fatalf("kind %d reason %q, want kind %d reason %q", r.kind, r.reason, tc.kind, tc.reason)
			}
			switch r.kind {
			case rxData:
				if !bytes.Equal(r.payload, user) {
					t.Fatalf("payload %x, want %x", r.payload, user)
				}
			case rxProbeReply:
				if r.control != reply {
					t.Fatalf("control %+v, want %+v", r.control, reply)
				}
			}
		})
	}
}

// FuzzParseDownlink: whatever arrives on a leg, the agent neither panics nor passes on what the
// UPF may not send: data goes to the TUN only as an IPv4 packet for the session, the 8 bytes
// after the header, and probe replies only for this session and leg.
func FuzzParseDownlink(f *testing.F) {
	user := ipv4Packet([4]byte{198, 18, 0, 10}, testSession, "seed")
	f.Add(frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 1}, user), uint8(1))
	f.Add(control(wire.TypeProbeReply, wire.Control{Session: testSession, Access: contract.Access3GPP}), uint8(1))
	f.Add([]byte{0x10, 0, 0, 16, 0, 0, 0, 0}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, on uint8) {
		leg := contract.Access(on%2 + 1)
		r := parseDownlink(b, testSession, leg)
		switch r.kind {
		case rxData:
			if len(r.payload) != len(b)-wire.HeaderLen || !bytes.Equal(r.payload, b[wire.HeaderLen:]) {
				t.Fatalf("payload is not the bytes after the header")
			}
			if r.payload[0]>>4 != 4 || [4]byte(r.payload[16:20]) != testSession || r.header.Marks != 0 {
				t.Fatalf("passed data the UPF may not send: %x", b)
			}
		case rxProbeReply:
			if r.control.Session != testSession || r.control.Access != leg {
				t.Fatalf("accepted a probe reply for %v on %v", r.control, leg)
			}
		case rxDrop:
			if r.reason == "" {
				t.Fatalf("drop without a reason")
			}
		default:
			t.Fatalf("kind %d", r.kind)
		}
	})
}

func TestParseDownlinkDoesNotAllocate(t *testing.T) {
	in := frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 3}, ipv4Packet([4]byte{198, 18, 0, 10}, testSession, "x"))
	if n := testing.AllocsPerRun(100, func() { parseDownlink(in, testSession, contract.Access3GPP) }); n != 0 {
		t.Fatalf("%.1f allocations per datagram, want 0", n)
	}
}

func BenchmarkParseDownlink(b *testing.B) {
	in := frame(wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: 3}, ipv4Packet([4]byte{198, 18, 0, 10}, testSession, string(make([]byte, 1400))))
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for i := 0; i < b.N; i++ {
		parseDownlink(in, testSession, contract.Access3GPP)
	}
}
