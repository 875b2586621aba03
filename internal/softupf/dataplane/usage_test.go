package dataplane

import (
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Usage counters (docs/pipeline.md, "Usage counters"): a PDU session's user packet that the
// pipeline lets through adds one packet and the frame's length as it arrived to its session's
// cell; nothing else counts.

const dlTunnelUsage = 13 // the single-access session's cell in these tests

// singleAccess gives the test topology a single-access PDU session at 10.46.0.9 and returns a
// downlink packet to it.
func singleAccess(h *harness) []byte {
	h.insert("downlink_tunnels", map[string]any{"ue_addr": ip4("10.46.0.9")}, 0, "encap_gtpu",
		map[string]uint64{"teid": 0x777, "peer_idx": peerIx, "endpoint_idx": endpointIx, "usage_idx": dlTunnelUsage})
	return fromDN(wiretest.Build(wire.IPv4{Src: addr(server), Dst: addr("10.46.0.9")}, wiretest.TCP{SrcPort: 80, DstPort: 5555}))
}

type cell struct {
	counter string
	idx     uint32
}

// usageCells are every usage cell the test topology names.
var usageCells = []cell{
	{"uplink_usage", sessUsage}, {"uplink_usage", ulUsage}, {"uplink_usage", dlTunnelUsage},
	{"downlink_usage", sessUsage}, {"downlink_usage", ulUsage}, {"downlink_usage", dlTunnelUsage},
}

func TestUsageCounters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		port  uint32
		frame func(h *harness) []byte
		want  *cell // nil: no cell moves
	}{
		{"Junction DATA on the non-3GPP leg counts the session's uplink cell", portWiFi,
			func(*harness) []byte { return junctionWiFi(data(0), userPacket(64, true)) }, &cell{"uplink_usage", sessUsage}},
		{"Junction DATA on the 3GPP leg counts the session's cell, not the TEID's", portGNB,
			func(*harness) []byte { return junction3GPP(data(0), userPacket(64, true)) }, &cell{"uplink_usage", sessUsage}},
		{"a plain G-PDU counts its TEID's cell", portGNB,
			func(*harness) []byte { return fromGNB(ulTEID, userPacket(64, true)) }, &cell{"uplink_usage", ulUsage}},
		{"MA downlink counts the session's downlink cell", portDN,
			func(*harness) []byte { return fromDN(userPacket(64, false)) }, &cell{"downlink_usage", sessUsage}},
		{"single-access downlink counts its tunnel's downlink cell", portDN,
			singleAccess, &cell{"downlink_usage", dlTunnelUsage}},
		{"a probe is not usage", portWiFi,
			func(*harness) []byte {
				return junctionWiFi(wire.Header{Type: wire.TypeProbe}, wire.Control{Session: addr(sessAddr), Access: contract.AccessNon3GPP})
			}, nil},
		{"a path report is not usage", portWiFi,
			func(*harness) []byte {
				return junctionWiFi(wire.Header{Type: wire.TypeProbeAck}, wire.Control{Session: addr(sessAddr), Access: contract.AccessNon3GPP})
			}, nil},
		{"an EX-PATH marker is not usage", portWiFi,
			func(*harness) []byte { return junctionWiFi(exPath(0)) }, nil},
		{"plain routed traffic is not usage", portWiFi,
			func(*harness) []byte {
				return wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, wire.IPv4{Src: addr(ueWiFi), Dst: addr(server)}, []byte("x"))
			}, nil},
		{"a session's packet that is dropped is not usage", portWiFi,
			func(h *harness) []byte {
				h.insert("filters", map[string]any{"proto": tv{17, 0xff}}, 10, "deny", nil)
				return junctionWiFi(data(0), userPacket(64, true))
			}, nil},
		{"a session's packet from the wrong source is not usage", portWiFi,
			func(*harness) []byte {
				return wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, wire.IPv4{Src: addr("198.51.100.99"), Dst: addr(jAddr)},
					wire.UDP{}, data(0), userPacket(64, true))
			}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := topology(t)
			frame := tc.frame(h)
			h.process(tc.port, frame)
			for _, c := range usageCells {
				var want [2]uint64
				if tc.want != nil && *tc.want == c {
					want = [2]uint64{1, uint64(len(frame))}
				}
				if n, b := h.counter(c.counter, c.idx); n != want[0] || b != want[1] {
					t.Errorf("%s[%d] = %d packets, %d bytes; want %d, %d", c.counter, c.idx, n, b, want[0], want[1])
				}
			}
		})
	}
}

func TestUsageOfARedundantPacketCountsOnce(t *testing.T) {
	h := topology(t)
	overrideSession(h, uint64(contract.ModeRedundant), uint64(contract.Access3GPP), 0, 0)
	if err := h.p.WriteCloneSession(contract.RedundantCloneSession, []*p4v1.Replica{{PortKind: &p4v1.Replica_EgressPort{EgressPort: 1}}}); err != nil {
		t.Fatal(err)
	}
	frame := fromDN(userPacket(64, false))
	if out := h.process(portDN, frame); len(out) != 2 {
		t.Fatalf("%d copies, want 2", len(out))
	}
	if n, b := h.counter("downlink_usage", sessUsage); n != 1 || b != uint64(len(frame)) {
		t.Errorf("downlink_usage = %d packets, %d bytes; want 1, %d", n, b, len(frame))
	}
}

// A held packet is counted when it arrives, as on a P4 target (its first pass), not when the
// marker releases it.
func TestUsageOfAHeldPacketCountsOnArrival(t *testing.T) {
	h := topology(t)
	frame := junctionWiFi(current(1, 10_000), upPacket(1, 64))
	if out := h.process(portWiFi, frame); len(out) != 0 {
		t.Fatalf("not held: %v", out)
	}
	if n, b := h.counter("uplink_usage", sessUsage); n != 1 || b != uint64(len(frame)) {
		t.Errorf("held: uplink_usage = %d packets, %d bytes; want 1, %d", n, b, len(frame))
	}
	if out := h.process(portGNB, junction3GPP(exPath(1))); len(out) != 1 {
		t.Fatalf("released %d packets, want 1", len(out))
	}
	if n, _ := h.counter("uplink_usage", sessUsage); n != 1 {
		t.Errorf("released: uplink_usage = %d packets, want still 1", n)
	}
}

// The controller zeroes a cell before it gives the index to a new session; an index beyond the
// counter counts nowhere.
func TestUsageCellsAreWritable(t *testing.T) {
	h := topology(t)
	frame := fromDN(userPacket(64, false))
	h.process(portDN, frame)
	id := h.counterID("downlink_usage")
	if err := h.p.WriteCounter(id, sessUsage, 0, 0); err != nil {
		t.Fatal(err)
	}
	h.process(portDN, frame)
	if n, b := h.counter("downlink_usage", sessUsage); n != 1 || b != uint64(len(frame)) {
		t.Errorf("after the write and one packet: %d packets, %d bytes; want 1, %d", n, b, len(frame))
	}
	size := uint32(len(h.p.st.ctrs[cDownlinkUsage]))
	if err := h.p.WriteCounter(id, size, 0, 0); err == nil {
		t.Errorf("a write beyond the counter's %d cells succeeded", size)
	}
	h.write(p4v1.Update_MODIFY, h.entry("sessions", map[string]any{"session_addr": ip4(sessAddr)}, 0, "set_session", map[string]uint64{
		"user_idx": user, "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": dlTEID,
		"ue_addr_3gpp": ip4(ue3GPP), "ue_addr_non3gpp": ip4(ueWiFi), "gateway_non3gpp": 0, "teid_non3gpp": 0, "usage_idx": uint64(size)}))
	if out := h.process(portDN, frame); len(out) != 1 {
		t.Errorf("a session whose usage_idx is beyond the counter: %d frames, want 1 (it counts nowhere)", len(out))
	}
}
