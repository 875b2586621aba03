package dataplane

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/p4bytes"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// The test topology. Addresses are documentation and private ranges; nothing leaves the process.
const (
	n3Addr   = "192.0.2.1"    // the UPF's N3 (GTP-U) endpoint
	jAddr    = "192.0.2.2"    // the UPF's Junction endpoint
	gnbAddr  = "192.0.2.100"  // the gNB, tunnel peer 3
	ue3GPP   = "10.60.0.1"    // the UE's address on the 3GPP leg (inside GTP-U)
	ueWiFi   = "198.51.100.7" // the UE's address on the non-3GPP leg
	sessAddr = "10.45.0.1"    // the MA PDU session's address
	server   = "203.0.113.10" // an application server in the data network

	user       = 7
	dlTEID     = 0x1234 // toward the gNB
	ulTEID     = 0xabcd // the UPF's uplink TEID
	portGNB    = 1
	portWiFi   = 2
	portDN     = 3
	endpointIx = 1
	peerIx     = 3
	sessUsage  = 11 // the MA session's usage cell
	ulUsage    = 12 // the uplink tunnel's (a single-access session's)
)

var (
	upfMAC  = [6]byte{0x02, 0, 0, 0, 0, 0xaa}
	gnbMAC  = [6]byte{0x02, 0, 0, 0, 1, 0xfe}
	wifiMAC = [6]byte{0x02, 0, 0, 0, 2, 0xfe}
	dnMAC   = [6]byte{0x02, 0, 0, 0, 3, 0xfe}
	srcMAC  = [6]byte{0x02, 0, 0, 0, 0, 0x01} // the routes' source MAC
)

// topology installs the session and everything around it; rtt_3gpp = 20 ms, rtt_non3gpp = 5 ms.
func topology(t testing.TB, opts ...func(*Config)) *harness {
	h := newHarness(t, opts...)
	install(h)
	return h
}

func install(h *harness) {
	h.insert("local_addresses", map[string]any{"dst_addr": ip4(n3Addr)}, 0, "accept_local", nil)
	h.insert("local_addresses", map[string]any{"dst_addr": ip4(jAddr)}, 0, "accept_local", nil)
	h.insert("uplink_tunnels", map[string]any{"teid": uint64(ulTEID)}, 0, "decap_gtpu", map[string]uint64{"access": 1, "usage_idx": ulUsage})
	h.insert("tunnel_endpoints", map[string]any{"endpoint_idx": uint64(endpointIx)}, 0, "set_tunnel_endpoint",
		map[string]uint64{"n3_addr": ip4(n3Addr), "junction_addr": ip4(jAddr)})
	h.insert("tunnel_peers", map[string]any{"peer_idx": uint64(peerIx)}, 0, "set_tunnel_peer",
		map[string]uint64{"peer_addr": ip4(gnbAddr)})
	h.insert("sessions", map[string]any{"session_addr": ip4(sessAddr)}, 0, "set_session", map[string]uint64{
		"user_idx": user, "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": dlTEID,
		"ue_addr_3gpp": ip4(ue3GPP), "ue_addr_non3gpp": ip4(ueWiFi), "gateway_non3gpp": 0, "teid_non3gpp": 0, "usage_idx": sessUsage})
	route := func(prefix string, l int32, port uint64, dst [6]byte) {
		h.insert("routes", map[string]any{"dst_addr": lv{ip4(prefix), l}}, 0, "route",
			map[string]uint64{"port": port, "src_mac": macV(srcMAC), "dst_mac": macV(dst)})
	}
	route(gnbAddr, 32, portGNB, gnbMAC)
	route("198.51.100.0", 24, portWiFi, wifiMAC)
	route("0.0.0.0", 0, portDN, dnMAC)
	h.setReg("rtt_3gpp", user, 20000)
	h.setReg("rtt_non3gpp", user, 5000)
}

// userPacket is a UDP packet from the server to the session (or back, with up).
func userPacket(ttl uint8, up bool) []byte {
	src, dst, sport, dport := server, sessAddr, uint16(443), uint16(40000)
	if up {
		src, dst, sport, dport = dst, src, dport, sport
	}
	return wiretest.Build(wire.IPv4{Src: addr(src), Dst: addr(dst), TTL: ttl},
		wire.UDP{SrcPort: sport, DstPort: dport}, []byte("hello, junction"))
}

func fromDN(pkt []byte) []byte { return wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: dnMAC}, pkt) }

// want3GPP is a downlink user packet as the pipeline sends it on the 3GPP leg.
func want3GPP(hdr wire.Header, payload []byte) []byte {
	return wiretest.Build(wire.Ethernet{Dst: gnbMAC, Src: srcMAC},
		wire.IPv4{Src: addr(n3Addr), Dst: addr(gnbAddr)}, wire.UDP{}, wire.GTPU{TEID: dlTEID},
		wire.IPv4{Src: addr(jAddr), Dst: addr(ue3GPP)}, wire.UDP{}, hdr, payload)
}

func wantWiFi(hdr wire.Header, payload []byte) []byte {
	return wiretest.Build(wire.Ethernet{Dst: wifiMAC, Src: srcMAC},
		wire.IPv4{Src: addr(jAddr), Dst: addr(ueWiFi)}, wire.UDP{}, hdr, payload)
}

func data(seq uint32) wire.Header {
	return wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: seq}
}

func expectFrames(t *testing.T, got []output, want ...output) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].port != want[i].port {
			t.Errorf("frame %d: port %d, want %d", i, got[i].port, want[i].port)
		}
		if !bytes.Equal(got[i].frame, want[i].frame) {
			t.Errorf("frame %d differs:\ngot  %s\nwant %s", i, hex.EncodeToString(got[i].frame), hex.EncodeToString(want[i].frame))
		}
	}
}

func expectDrop(t *testing.T, h *harness, r DropReason, got []output) {
	t.Helper()
	if len(got) != 0 {
		t.Fatalf("want a drop (%s), got %d frames", r, len(got))
	}
	if n := h.drops(r); n != 1 {
		t.Fatalf("drops[%s] = %d, want 1", r, n)
	}
}

func TestDownlinkActiveStandbySummarized(t *testing.T) {
	h := topology(t)
	// No applications entry: set_default_application is active-standby on 3GPP.
	out := h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portGNB, want3GPP(data(0), userPacket(63, false))})

	t.Run("the standby leg takes over when 3GPP is unavailable", func(t *testing.T) {
		h.setReg("rtt_3gpp", user, 0)
		out := h.process(portDN, fromDN(userPacket(64, false)))
		expectFrames(t, out, output{portWiFi, wantWiFi(data(0), userPacket(63, false))})
	})
	t.Run("no available access drops NO_PATH", func(t *testing.T) {
		h.setReg("rtt_non3gpp", user, 0)
		expectDrop(t, h, contract.DropNoPath, h.process(portDN, fromDN(userPacket(64, false))))
	})
}

func TestIDsResolvedByName(t *testing.T) {
	h := newHarness(t)
	h.info = specP4Info() // the same names, other IDs
	if err := h.p.CommitPipeline(h.info, nil); err != nil {
		t.Fatal(err)
	}
	install(h)
	out := h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portGNB, want3GPP(data(0), userPacket(63, false))})
}

func TestDownlinkApplicationSteering(t *testing.T) {
	h := topology(t)
	// UDP from port 443 of any server: smallest-delay (non-3GPP at 5 ms wins over 20 ms).
	h.insert("applications", map[string]any{"proto": tv{17, 0xff}, "remote_port": rv{443, 443}}, 100,
		"set_application", map[string]uint64{"app_id": 9, "mode": uint64(contract.ModeSmallestDelay), "access": uint64(contract.Access3GPP), "ratio_3gpp": 0, "rtt_threshold_us": 0, "loss_limit_pct": 0})
	// A lower-priority catch-all that must not win.
	h.insert("applications", map[string]any{"remote_addr": tv{0, 0}}, 1,
		"set_application", map[string]uint64{"app_id": 1, "mode": uint64(contract.ModeActiveStandby), "access": uint64(contract.Access3GPP), "ratio_3gpp": 0, "rtt_threshold_us": 0, "loss_limit_pct": 0})
	out := h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portWiFi, wantWiFi(data(0), userPacket(63, false))})

	t.Run("deleting the application falls back to the catch-all", func(t *testing.T) {
		h.write(p4v1.Update_DELETE, h.entry("applications", map[string]any{"proto": tv{17, 0xff}, "remote_port": rv{443, 443}}, 100, "", nil))
		out := h.process(portDN, fromDN(userPacket(64, false)))
		expectFrames(t, out, output{portGNB, want3GPP(data(0), userPacket(63, false))})
	})
}

// overrideSession gives the session a session_overrides entry for app 0 with seq_index 5, no
// loss limit.
func overrideSession(h *harness, mode, access, ratio uint64, threshold uint64) {
	h.insert("session_overrides", map[string]any{"session_addr": ip4(sessAddr), "app_id": uint64(0)}, 0,
		"override_steering", map[string]uint64{"mode": mode, "access": access, "ratio_3gpp": ratio,
			"rtt_threshold_us": threshold, "loss_limit_pct": 0, "seq_index": 5})
}

func TestDownlinkLoadBalanceSequence(t *testing.T) {
	h := topology(t)
	overrideSession(h, uint64(contract.ModeLoadBalance), uint64(contract.Access3GPP), 64, 0) // half the packets on 3GPP
	h.setReg("session_seq", 5, 62)
	// seq 63 → 63 % 128 < 64: 3GPP; seq 64: non-3GPP.
	out := h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portGNB, want3GPP(data(63), userPacket(63, false))})
	out = h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portWiFi, wantWiFi(data(64), userPacket(63, false))})
	if v := h.reg("session_seq", 5); v != 64 {
		t.Errorf("session_seq[5] = %d, want 64", v)
	}
}

func TestDownlinkPriorityOverflow(t *testing.T) {
	h := topology(t)
	overrideSession(h, uint64(contract.ModePriorityBased), uint64(contract.Access3GPP), 0, 10000) // 3GPP while its RTT <= 10 ms
	out := h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portWiFi, wantWiFi(data(1), userPacket(63, false))})
	h.setReg("rtt_3gpp", user, 8000)
	out = h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portGNB, want3GPP(data(2), userPacket(63, false))})
}

func TestDownlinkRedundant(t *testing.T) {
	h := topology(t)
	overrideSession(h, uint64(contract.ModeRedundant), uint64(contract.Access3GPP), 0, 0)

	t.Run("without clone session 100 only the first copy goes out", func(t *testing.T) {
		out := h.process(portDN, fromDN(userPacket(64, false)))
		expectFrames(t, out, output{portGNB, want3GPP(data(1), userPacket(63, false))})
		if n := h.drops(contract.DropCopyFailed); n != 0 {
			t.Errorf("drops[COPY_FAILED] = %d, want 0 (a missing clone session is invisible, as on P4 targets)", n)
		}
	})
	t.Run("with clone session 100 both legs get a copy with the same seq", func(t *testing.T) {
		if err := h.p.WriteCloneSession(contract.RedundantCloneSession, []*p4v1.Replica{{PortKind: &p4v1.Replica_EgressPort{EgressPort: 1}}}); err != nil {
			t.Fatal(err)
		}
		out := h.process(portDN, fromDN(userPacket(64, false)))
		expectFrames(t, out,
			output{portWiFi, wantWiFi(data(2), userPacket(63, false))},
			output{portGNB, want3GPP(data(2), userPacket(63, false))})
	})
}

func TestDownlinkPlainGTPU(t *testing.T) {
	h := topology(t)
	other := "10.46.0.9"
	h.insert("downlink_tunnels", map[string]any{"ue_addr": ip4(other)}, 0, "encap_gtpu",
		map[string]uint64{"teid": 0x777, "peer_idx": peerIx, "endpoint_idx": endpointIx, "usage_idx": 13})
	pkt := func(ttl uint8) []byte {
		return wiretest.Build(wire.IPv4{Src: addr(server), Dst: addr(other), TTL: ttl}, wiretest.TCP{SrcPort: 80, DstPort: 5555})
	}
	out := h.process(portDN, fromDN(pkt(64)))
	want := wiretest.Build(wire.Ethernet{Dst: gnbMAC, Src: srcMAC},
		wire.IPv4{Src: addr(n3Addr), Dst: addr(gnbAddr)}, wire.UDP{}, wire.GTPU{TEID: 0x777}, pkt(63))
	expectFrames(t, out, output{portGNB, want})

	// With a QFI for the tunnel, the G-PDU carries the PDU Session Container (TS 29.281
	// §5.2.2.7, TS 38.415 §5.5.2.1): flags 0x34 (E), sequence 0, N-PDU 0, next type 0x85;
	// length 1, PDU type 0 (downlink), the QFI, next type 0. The GTP-U length counts those 8
	// bytes.
	h.insert("tunnel_qfis", map[string]any{"peer_addr": ip4(gnbAddr), "teid": uint64(0x777)}, 0, "set_qfi", map[string]uint64{"qfi": 9})
	user := pkt(63)
	gtpu := binary.BigEndian.AppendUint16([]byte{0x34, 0xff}, uint16(8+len(user)))
	gtpu = append(gtpu, 0, 0, 0x07, 0x77, 0, 0, 0, 0x85, 1, 0x00, 9, 0)
	out = h.process(portDN, fromDN(pkt(64)))
	want = wiretest.Build(wire.Ethernet{Dst: gnbMAC, Src: srcMAC},
		wire.IPv4{Src: addr(n3Addr), Dst: addr(gnbAddr)}, wire.UDP{SrcPort: 2152, DstPort: 2152}, append(gtpu, user...))
	expectFrames(t, out, output{portGNB, want})
}

func TestPlainRoutingAndFilters(t *testing.T) {
	h := topology(t)
	pkt := func(dst string, ttl uint8) []byte {
		return wiretest.Build(wire.IPv4{Src: addr(ueWiFi), Dst: addr(dst), TTL: ttl}, wiretest.TCP{SrcPort: 1000, DstPort: 22})
	}
	out := h.process(portWiFi, wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, pkt(server, 9)))
	expectFrames(t, out, output{portDN, wiretest.Build(wire.Ethernet{Dst: dnMAC, Src: srcMAC}, pkt(server, 8))})

	t.Run("TTL 1 expires", func(t *testing.T) {
		expectDrop(t, h, contract.DropTTLExpired, h.process(portWiFi, wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, pkt(server, 1))))
	})
	t.Run("a deny filter drops FILTERED", func(t *testing.T) {
		h.insert("filters", map[string]any{"proto": tv{6, 0xff}, "dst_port": rv{22, 22}}, 10, "deny", nil)
		expectDrop(t, h, contract.DropFiltered, h.process(portWiFi, wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, pkt(server, 9))))
	})
	t.Run("no route drops NO_ROUTE", func(t *testing.T) {
		h.write(p4v1.Update_DELETE, h.entry("routes", map[string]any{"dst_addr": lv{0, 0}}, 0, "", nil))
		expectDrop(t, h, contract.DropNoRoute, h.process(portWiFi, wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC},
			wiretest.Build(wire.IPv4{Src: addr(ueWiFi), Dst: addr(server), TTL: 9}, []byte("x")))))
	})
}

// fromGNB wraps an IPv4 packet in GTP-U from the gNB to the UPF.
func fromGNB(teid uint32, inner []byte) []byte {
	return wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: gnbMAC}, wire.IPv4{Src: addr(gnbAddr), Dst: addr(n3Addr)},
		wire.UDP{}, wire.GTPU{TEID: teid, NextExt: wire.GTPUExtPDUSession, PSC: [2]byte{0x10, 9}}, inner)
}

func TestUplinkPlainGTPU(t *testing.T) {
	h := topology(t)
	out := h.process(portGNB, fromGNB(ulTEID, userPacket(64, true)))
	expectFrames(t, out, output{portDN, wiretest.Build(wire.Ethernet{Dst: dnMAC, Src: srcMAC}, userPacket(63, true))})
	t.Run("an unknown TEID drops UNKNOWN_TEID", func(t *testing.T) {
		expectDrop(t, h, contract.DropUnknownTEID, h.process(portGNB, fromGNB(0x999, userPacket(64, true))))
	})
}

// junction3GPP is a Junction message from the UE on the 3GPP leg; junctionWiFi on non-3GPP.
func junction3GPP(layers ...any) []byte {
	inner := wiretest.Build(append([]any{wire.IPv4{Src: addr(ue3GPP), Dst: addr(jAddr)}, wire.UDP{}}, layers...)...)
	return fromGNB(ulTEID, inner)
}

func junctionWiFi(layers ...any) []byte {
	return wiretest.Build(append([]any{wire.Ethernet{Dst: upfMAC, Src: wifiMAC},
		wire.IPv4{Src: addr(ueWiFi), Dst: addr(jAddr)}, wire.UDP{}}, layers...)...)
}

func TestUplinkJunctionData(t *testing.T) {
	want := wiretest.Build(wire.Ethernet{Dst: dnMAC, Src: srcMAC}, userPacket(63, true))
	for _, leg := range []struct {
		name  string
		frame func(...any) []byte
		port  uint32
	}{{"3GPP", junction3GPP, portGNB}, {"non-3GPP", junctionWiFi, portWiFi}} {
		t.Run(leg.name, func(t *testing.T) {
			h := topology(t)
			out := h.process(leg.port, leg.frame(data(0), userPacket(64, true)))
			expectFrames(t, out, output{portDN, want})
		})
	}
	t.Run("an unknown session address drops NO_SESSION", func(t *testing.T) {
		h := topology(t)
		stranger := wiretest.Build(wire.IPv4{Src: addr("10.45.9.9"), Dst: addr(server)}, []byte("x"))
		expectDrop(t, h, contract.DropNoSession, h.process(portWiFi, junctionWiFi(data(0), stranger)))
	})
	t.Run("a Junction length that is not the user packet's drops BAD_JUNCTION", func(t *testing.T) {
		h := topology(t)
		pkt := append(userPacket(64, true), 0, 0, 0, 0) // 4 bytes after the user packet
		expectDrop(t, h, contract.DropBadJunction, h.process(portWiFi, junctionWiFi(data(0), pkt)))
	})
}

func TestProbeExchange(t *testing.T) {
	h := topology(t)
	h.now = 1_000_000
	body := wire.Control{Session: addr(sessAddr), Access: contract.AccessNon3GPP, UETime: 4242}
	probe := wire.Header{Type: wire.TypeProbe}

	t.Run("PROBE on non-3GPP is answered to its source with upf_ts", func(t *testing.T) {
		out := h.process(portWiFi, junctionWiFi(probe, body))
		reply := body
		reply.UPFTime = 1_000_000
		expectFrames(t, out, output{portWiFi, wantWiFi(wire.Header{Type: wire.TypeProbeReply}, reply.Append(nil))})
	})
	t.Run("PROBE on 3GPP is answered inside GTP-U toward the gNB", func(t *testing.T) {
		b := body
		b.Access = contract.Access3GPP
		out := h.process(portGNB, junction3GPP(probe, b))
		reply := b
		reply.UPFTime = 1_000_000
		expectFrames(t, out, output{portGNB, want3GPP(wire.Header{Type: wire.TypeProbeReply}, reply.Append(nil))})
	})
	t.Run("PROBE_ACK writes the RTT and loss of its leg and reports them", func(t *testing.T) {
		h.now = 1_000_000 + 7_500
		ack := body
		ack.UPFTime, ack.LossPercent = 1_000_000, 25
		out := h.process(portGNB, junction3GPP(wire.Header{Type: wire.TypeProbeAck}, ack))
		if len(out) != 0 || h.drops(contract.DropConsumed) != 1 {
			t.Fatalf("the ACK must be consumed: %d frames, CONSUMED %d", len(out), h.drops(contract.DropConsumed))
		}
		if v := h.reg("rtt_3gpp", user); v != 7500 {
			t.Errorf("rtt_3gpp[%d] = %d, want 7500", user, v)
		}
		if v := h.reg("loss_3gpp", user); v != 25 {
			t.Errorf("loss_3gpp[%d] = %d, want 25", user, v)
		}
		if s := h.reg("autonomous_share", user); s != 0 {
			t.Errorf("autonomous_share = %d, want 0 (the ACK carried no share)", s)
		}
		expectDigest(t, h, sessAddr, user, contract.Access3GPP, uint8(contract.ReportRTT), 7500, 25, 0)
	})
	t.Run("a suspended user's RTT is reported but not written; the UE's share is", func(t *testing.T) {
		h.setReg("path_updates_suspended", user, 1)
		h.now = 1_000_000 + 900
		ack := body
		ack.UPFTime, ack.Share = 1_000_000, 26
		h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeProbeAck}, ack))
		if v := h.reg("rtt_non3gpp", user); v != 5000 {
			t.Errorf("rtt_non3gpp = %d, want 5000 (unchanged)", v)
		}
		if s := h.reg("autonomous_share", user); s != 26 {
			t.Errorf("autonomous_share = %d, want the ACK's 26", s)
		}
		expectDigest(t, h, sessAddr, user, contract.AccessNon3GPP, uint8(contract.ReportRTT), 900, 0, 1)
		h.setReg("path_updates_suspended", user, 0)
	})
	t.Run("an RTT of 0 is stored as 1", func(t *testing.T) {
		ack := body
		ack.UPFTime = h.now
		h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeProbeAck}, ack))
		if v := h.reg("rtt_non3gpp", user); v != 1 {
			t.Errorf("rtt_non3gpp = %d, want 1", v)
		}
	})
	t.Run("PROBE_REPLY sent to the UPF is malformed", func(t *testing.T) {
		n := h.drops(contract.DropBadJunction)
		h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeProbeReply}, body))
		if h.drops(contract.DropBadJunction) != n+1 {
			t.Error("PROBE_REPLY was not counted BAD_JUNCTION")
		}
	})
}

func expectDigest(t *testing.T, h *harness, session string, user uint32, access contract.Access, kind uint8, rtt uint32, loss, suspended uint8) {
	t.Helper()
	h.ev.mu.Lock()
	defer h.ev.mu.Unlock()
	if len(h.ev.digests) == 0 {
		t.Fatal("no digest")
	}
	got := h.ev.digests[len(h.ev.digests)-1]
	want := [][]byte{p4bytes.Uint(ip4(session)), p4bytes.Uint(uint64(user)), p4bytes.Uint(uint64(access)),
		p4bytes.Uint(uint64(kind)), p4bytes.Uint(uint64(rtt)), p4bytes.Uint(uint64(loss)), p4bytes.Uint(uint64(suspended))}
	for i := range want {
		if i >= len(got) || !bytes.Equal(got[i], want[i]) {
			t.Fatalf("digest = %x, want %x", got, want)
		}
	}
	var want4 uint32
	for _, d := range h.info.GetDigests() {
		if d.GetPreamble().GetName() == "probe_reports" {
			want4 = d.GetPreamble().GetId()
		}
	}
	if id := h.ev.ids[len(h.ev.ids)-1]; id != want4 {
		t.Errorf("digest id %#x, want probe_reports %#x", id, want4)
	}
}

func TestLinkNotifications(t *testing.T) {
	h := topology(t)
	down := wire.Control{Session: addr(sessAddr), Access: contract.Access3GPP}
	// LINK_DOWN about 3GPP arrives on the other leg.
	h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeLinkDown}, down))
	if v := h.reg("rtt_3gpp", user); v != 0 {
		t.Errorf("rtt_3gpp after LINK_DOWN = %d, want 0", v)
	}
	expectDigest(t, h, sessAddr, user, contract.Access3GPP, uint8(contract.ReportLinkDown), 0, 0, 0)
	up := down
	up.UETime = 12345
	h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeLinkUp}, up))
	if v := h.reg("rtt_3gpp", user); v != 12345 {
		t.Errorf("rtt_3gpp after LINK_UP = %d, want 12345", v)
	}
	expectDigest(t, h, sessAddr, user, contract.Access3GPP, uint8(contract.ReportLinkUp), 12345, 0, 0)
	if n := h.drops(contract.DropConsumed); n != 2 {
		t.Errorf("CONSUMED = %d, want 2", n)
	}
}

func TestDropsByReason(t *testing.T) {
	eth := wire.Ethernet{Dst: upfMAC, Src: dnMAC}
	cases := []struct {
		name   string
		reason DropReason
		frame  func() []byte
	}{
		{"a frame shorter than Ethernet", contract.DropParserError, func() []byte { return []byte{1, 2, 3} }},
		{"IPv4 with options", contract.DropParserError, func() []byte {
			b := fromDN(userPacket(64, false))
			b[14] = 0x46
			return b
		}},
		{"IPv4 total length beyond the frame", contract.DropParserError, func() []byte {
			b := fromDN(userPacket(64, false))
			return b[:len(b)-4]
		}},
		{"GTP-U with an unknown extension", contract.DropParserError, func() []byte {
			return wiretest.Build(eth, wire.IPv4{Src: addr(gnbAddr), Dst: addr(n3Addr)}, wire.UDP{},
				wire.GTPU{Flags: 0x34, TEID: ulTEID, NextExt: 0x40}, []byte{1, 0, 0, 0}, userPacket(64, true))
		}},
		{"a Junction header cut short", contract.DropParserError, func() []byte {
			return wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, wire.IPv4{Src: addr(ueWiFi), Dst: addr(jAddr)},
				wire.UDP{SrcPort: wire.JunctionPort, DstPort: wire.JunctionPort}, []byte{0x00, 0x04})
		}},
		{"a Junction header of unknown type", contract.DropBadJunction, func() []byte {
			return junctionWiFi(wire.Header{Type: 9, Length: 16}, make([]byte, 16))
		}},
		{"a session without an endpoint", contract.DropNoEndpoint, nil},
		{"a 3GPP leg without a tunnel peer", contract.DropNoTunnelPeer, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := topology(t)
			switch c.reason {
			case contract.DropNoEndpoint:
				h.write(p4v1.Update_DELETE, h.entry("tunnel_endpoints", map[string]any{"endpoint_idx": uint64(endpointIx)}, 0, "", nil))
				expectDrop(t, h, c.reason, h.process(portDN, fromDN(userPacket(64, false))))
				return
			case contract.DropNoTunnelPeer:
				h.write(p4v1.Update_DELETE, h.entry("tunnel_peers", map[string]any{"peer_idx": uint64(peerIx)}, 0, "", nil))
				expectDrop(t, h, c.reason, h.process(portDN, fromDN(userPacket(64, false))))
				return
			}
			expectDrop(t, h, c.reason, h.process(portDN, c.frame()))
		})
	}
}

func TestPacketIn(t *testing.T) {
	h := topology(t)
	arp := wiretest.Build(wire.Ethernet{Dst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Src: wifiMAC, Type: 0x0806}, make([]byte, 28))
	icmp := wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, wire.IPv4{Src: addr(ueWiFi), Dst: addr(jAddr), Proto: 1}, make([]byte, 8))
	for _, f := range [][]byte{arp, icmp} {
		if out := h.process(portWiFi, f); len(out) != 0 {
			t.Fatalf("punted frame was also forwarded: %v", out)
		}
	}
	h.wantPacketIns(t, portWiFi, arp, icmp)
}

func TestPacketOut(t *testing.T) {
	h := topology(t)
	frame := fromDN(userPacket(64, false))
	if err := h.p.PacketOut(portWiFi, false, frame); err != nil {
		t.Fatal(err)
	}
	if len(h.sink.sent) != 1 || h.sink.sent[0].port != portWiFi || !bytes.Equal(h.sink.sent[0].frame, frame) {
		t.Fatalf("packet-out sent %v", h.sink.sent)
	}
	// docs/pipeline.md: to the CPU port or to a port with no interface, dropped and counted.
	for _, port := range []uint32{cpuPort, 99} {
		if err := h.p.PacketOut(port, false, frame); err != nil {
			t.Errorf("packet-out to port %d: %v, want it dropped without an error", port, err)
		}
	}
	if len(h.sink.sent) != 1 || h.p.Stats().PacketOutDrops != 2 {
		t.Errorf("after packet-outs to the CPU port and port 99: %d sent, %d dropped; want 1 sent, 2 dropped", len(h.sink.sent), h.p.Stats().PacketOutDrops)
	}
}

func TestNoBufferLeaks(t *testing.T) {
	h := topology(t)
	free := h.pool.Free()
	h.process(portDN, fromDN(userPacket(64, false)))
	h.process(portDN, []byte{1})
	h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeProbe}, wire.Control{Session: addr(sessAddr), Access: 2}))
	if h.pool.Free() != free {
		t.Errorf("pool has %d free buffers, want %d", h.pool.Free(), free)
	}
}

func TestTunnelPortsThatAreNotTunnels(t *testing.T) {
	// An End Marker (TS 29.281 §7.3.2) to the UPF carries nothing for the pipeline: on a known
	// TEID it goes up (a forwarding tunnel's is the controller's to relay, docs/pipeline.md), on
	// an unknown one it is UNKNOWN_TEID; announced options it cannot hold are a parser error.
	marker := func(flags byte, length uint16, teid uint32) []byte {
		g := []byte{flags, 0xfe, byte(length >> 8), byte(length), byte(teid >> 24), byte(teid >> 16), byte(teid >> 8), byte(teid)}
		return wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: gnbMAC}, wire.IPv4{Src: addr(gnbAddr), Dst: addr(n3Addr)},
			wire.UDP{SrcPort: 2152, DstPort: 2152}, append(g, make([]byte, length)...))
	}
	t.Run("a GTP-U End Marker on an uplink tunnel goes up", func(t *testing.T) {
		h := topology(t)
		m := marker(0x30, 0, ulTEID)
		if out := h.process(portGNB, m); len(out) != 0 {
			t.Fatalf("the End Marker was forwarded: %v", out)
		}
		h.wantPacketIns(t, portGNB, m)
	})
	t.Run("a GTP-U End Marker on an unknown TEID is dropped", func(t *testing.T) {
		h := topology(t)
		expectDrop(t, h, contract.DropUnknownTEID, h.process(portGNB, marker(0x30, 0, 0x0100)))
	})
	t.Run("a GTP-U End Marker whose S announces options its length cannot hold is a parser error", func(t *testing.T) {
		h := topology(t)
		expectDrop(t, h, contract.DropParserError, h.process(portGNB, marker(0x32, 2, ulTEID)))
	})
	t.Run("a G-PDU that does not carry IPv4 is a parser error", func(t *testing.T) {
		h := topology(t)
		expectDrop(t, h, contract.DropParserError, h.process(portGNB, fromGNB(ulTEID, append([]byte{0x60}, make([]byte, 39)...))))
	})
	t.Run("UDP:2153 through the UPF is routed like any downlink packet", func(t *testing.T) {
		h := topology(t)
		pkt := func(ttl uint8) []byte {
			return wiretest.Build(wire.IPv4{Src: addr(server), Dst: addr("203.0.113.77"), TTL: ttl},
				wire.UDP{SrcPort: 2153, DstPort: 2153}, []byte{0xff, 0xff})
		}
		out := h.process(portWiFi, wiretest.Build(wire.Ethernet{Dst: upfMAC, Src: wifiMAC}, pkt(9)))
		expectFrames(t, out, output{portDN, wiretest.Build(wire.Ethernet{Dst: dnMAC, Src: srcMAC}, pkt(8))})
	})
}

// A session without a 3GPP leg has no address a 3GPP-leg message may come from: a probe there is
// WRONG_SOURCE (docs/pipeline.md, step 3), before its reply could find no leg to go on.
func TestProbeOnAMissingLeg(t *testing.T) {
	h := topology(t)
	h.write(p4v1.Update_MODIFY, h.entry("sessions", map[string]any{"session_addr": ip4(sessAddr)}, 0, "set_session", map[string]uint64{
		"user_idx": user, "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": dlTEID,
		"ue_addr_3gpp": 0, "ue_addr_non3gpp": ip4(ueWiFi), "gateway_non3gpp": 0, "teid_non3gpp": 0, "usage_idx": sessUsage}))
	probe := junction3GPP(wire.Header{Type: wire.TypeProbe}, wire.Control{Session: addr(sessAddr), Access: contract.Access3GPP})
	expectDrop(t, h, contract.DropWrongSource, h.process(portGNB, probe))
}

func TestSequenceSkipsZero(t *testing.T) {
	h := topology(t)
	overrideSession(h, uint64(contract.ModeActiveStandby), uint64(contract.Access3GPP), 0, 0)
	h.setReg("session_seq", 5, 0xffffffff)
	out := h.process(portDN, fromDN(userPacket(64, false)))
	expectFrames(t, out, output{portGNB, want3GPP(data(1), userPacket(63, false))})
}
