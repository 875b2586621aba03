package dataplane

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Downlink buffering (docs/pipeline.md, "Registers, counters, digest, packet I/O"):
// buffer_downlink sends a single-access session's downlink packet to the controller as it came;
// the controller sends it back as a to_ingress packet-out once the tunnel forwards, and it
// leaves as a forwarded one does.

// setTunnel rewrites the single-access session's downlink_tunnels entry (singleAccess).
func setTunnel(h *harness, action string) {
	h.t.Helper()
	params := map[string]uint64{"teid": 0x777, "peer_idx": peerIx, "endpoint_idx": endpointIx, "usage_idx": dlTunnelUsage}
	if action == "buffer_downlink" {
		params = nil
	}
	h.write(p4v1.Update_MODIFY, h.entry("downlink_tunnels", map[string]any{"ue_addr": ip4("10.46.0.9")}, 0, action, params))
}

func TestBufferedDownlinkGoesUpAsItCameAndComesBackForwarded(t *testing.T) {
	h := topology(t)
	frame := singleAccess(h)
	forwarded := h.process(portDN, frame)
	if len(forwarded) != 1 || forwarded[0].port != portGNB {
		t.Fatalf("forwarded: %v", forwarded)
	}
	packets, byteCount := h.counter("downlink_usage", dlTunnelUsage)

	setTunnel(h, "buffer_downlink")
	if out := h.process(portDN, frame); len(out) != 0 {
		t.Fatalf("a buffered packet was also forwarded: %v", out)
	}
	// TTL 1 would be TTL_EXPIRED if it were forwarded: buffered, it goes up untouched.
	expiring := fromDN(wiretest.Build(wire.IPv4{Src: addr(server), Dst: addr("10.46.0.9"), TTL: 1}, wiretest.TCP{SrcPort: 80, DstPort: 5555}))
	if out := h.process(portDN, expiring); len(out) != 0 {
		t.Fatalf("a buffered packet with TTL 1 was forwarded: %v", out)
	}
	h.wantPacketIns(t, portDN, frame, expiring)
	if n, b := h.counter("downlink_usage", dlTunnelUsage); n != packets || b != byteCount {
		t.Errorf("buffered packets counted as usage: %d packets %d bytes, want %d, %d", n, b, packets, byteCount)
	}
	if d := h.p.Stats().Drops; d != [numDropReasons]uint64{} {
		t.Errorf("drops %v, want none", d)
	}

	// Released: egress_port is ignored, the tunnel decides.
	setTunnel(h, "encap_gtpu")
	if err := h.p.PacketOut(portWiFi, true, frame); err != nil {
		t.Fatal(err)
	}
	if len(h.sink.sent) != 1 || h.sink.sent[0].port != portGNB || !bytes.Equal(h.sink.sent[0].frame, forwarded[0].frame) {
		t.Fatalf("released packet sent %v, want on port %d: %x", h.sink.sent, portGNB, forwarded[0].frame)
	}
	// BMv2 counts the packet_out header in packet_length: so does the software UPF.
	if n, b := h.counter("downlink_usage", dlTunnelUsage); n != packets+1 || b != byteCount+uint64(len(frame))+packetOutLen {
		t.Errorf("usage after the release: %d packets %d bytes, want %d, %d", n, b, packets+1, byteCount+uint64(len(frame))+packetOutLen)
	}
}

func TestToIngressPacketOuts(t *testing.T) {
	t.Run("a frame too short for Ethernet is a parser error, counted with the header's bytes", func(t *testing.T) {
		h := topology(t)
		for _, f := range [][]byte{nil, {0x02}, make([]byte, 13)} {
			if err := h.p.PacketOut(0, true, f); err != nil {
				t.Fatalf("%d bytes: %v", len(f), err)
			}
		}
		n, b := h.counter("drops", uint32(contract.DropParserError))
		if n != 3 || b != 0+1+13+3*packetOutLen || len(h.sink.sent) != 0 {
			t.Errorf("drops[PARSER_ERROR] = %d packets %d bytes, %d sent; want 3, %d, 0", n, b, len(h.sink.sent), 14+3*packetOutLen)
		}
	})
	t.Run("what the pipeline punts goes up with the CPU port as its port", func(t *testing.T) {
		h := topology(t)
		arp := wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: dnMAC, Type: 0x0806}, make([]byte, 28))
		if err := h.p.PacketOut(portDN, true, arp); err != nil {
			t.Fatal(err)
		}
		h.wantPacketIns(t, cpuPort, arp)
	})
	t.Run("MA downlink leaves as from a port, its usage counting the header", func(t *testing.T) {
		h := topology(t)
		frame := fromDN(userPacket(64, false))
		if err := h.p.PacketOut(0, true, frame); err != nil {
			t.Fatal(err)
		}
		expectFrames(t, h.sink.sent, output{portGNB, want3GPP(data(0), userPacket(63, false))})
		if n, b := h.counter("downlink_usage", sessUsage); n != 1 || b != uint64(len(frame))+packetOutLen {
			t.Errorf("usage %d packets %d bytes, want 1, %d", n, b, len(frame)+packetOutLen)
		}
	})
	t.Run("no free buffer is an error, not a crash", func(t *testing.T) {
		h := topology(t)
		var held []*Packet
		for p := h.pool.TryGet(); p != nil; p = h.pool.TryGet() {
			held = append(held, p)
		}
		if err := h.p.PacketOut(0, true, fromDN(userPacket(64, false))); err == nil {
			t.Error("a to_ingress packet-out with no free buffer succeeded")
		}
		for _, p := range held {
			h.pool.Put(p)
		}
	})
}

// A P4Info without buffer_downlink and without packet_out's to_ingress (an older program) runs:
// nothing is buffered, packet-outs only leave on their port. Half of it is refused.
func TestAProgramWithoutBufferingRuns(t *testing.T) {
	withoutBuffering := func() *p4configv1.P4Info {
		info := testP4Info(t)
		testenv.WithoutAction(t, info, "buffer_downlink")
		for _, h := range info.ControllerPacketMetadata {
			if h.GetPreamble().GetName() == "packet_out" {
				n := len(h.Metadata)
				h.Metadata = slices.DeleteFunc(h.Metadata, func(m *p4configv1.ControllerPacketMetadata_Metadata) bool { return m.GetName() == "to_ingress" })
				if len(h.Metadata) != n-1 {
					t.Fatal("the P4Info's packet_out has no to_ingress")
				}
			}
		}
		return info
	}
	h := newHarness(t)
	h.info = withoutBuffering()
	if err := h.p.CommitPipeline(h.info, nil); err != nil {
		t.Fatalf("a P4Info without buffering: %v", err)
	}
	install(h)
	if err := h.p.PacketOut(0, true, fromDN(userPacket(64, false))); err == nil || !strings.Contains(err.Error(), "to_ingress") {
		t.Errorf("a to_ingress packet-out on a program without it: %v, want a refusal naming to_ingress", err)
	}
	frame := singleAccess(h)
	if out := h.process(portDN, frame); len(out) != 1 || out[0].port != portGNB {
		t.Errorf("single-access downlink: %v", out)
	}

	info := withoutBuffering()
	info.Actions = testP4Info(t).Actions // buffer_downlink, but no table has it
	if err := h.p.CheckPipeline(info, nil); err == nil || !strings.Contains(err.Error(), `lacks action "buffer_downlink"`) {
		t.Errorf("buffer_downlink outside downlink_tunnels: %v, want a refusal naming it", err)
	}
	info = testP4Info(t)
	for _, c := range info.ControllerPacketMetadata {
		for _, m := range c.Metadata {
			if m.GetName() == "to_ingress" {
				m.Bitwidth = 2
			}
		}
	}
	if err := h.p.CheckPipeline(info, nil); err == nil || !strings.Contains(err.Error(), "to_ingress is bit<2>") {
		t.Errorf("a 2-bit to_ingress: %v, want a refusal naming it", err)
	}
}

// countingSink counts what leaves on one port, allocating nothing.
type countingSink struct {
	pool *Pool
	port uint32
	n    int
}

func (s *countingSink) Transmit(pkts []*Packet) {
	for _, p := range pkts {
		if p.OutPort == s.port {
			s.n++
		}
		s.pool.Put(p)
	}
}

func (s *countingSink) HasPort(port uint32) bool { return port >= 1 && port <= 4 }

func TestToIngressPacketOutAllocatesNothingInThePipeline(t *testing.T) {
	cs := &countingSink{port: portGNB}
	h := topology(t, func(c *Config) { cs.pool = c.Pool; c.Sink = cs })
	frame := fromDN(userPacket(64, false))
	allocs := testing.AllocsPerRun(1000, func() {
		if err := h.p.PacketOut(0, true, frame); err != nil {
			t.Fatal(err)
		}
	})
	if cs.n != 1001 {
		t.Fatalf("%d of 1001 frames left on port %d; drops %v", cs.n, portGNB, h.p.Stats().Drops)
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations per packet", allocs)
	}
}
