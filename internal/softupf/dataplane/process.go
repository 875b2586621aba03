package dataplane

// The per-packet path (docs/pipeline.md, "Packets and their way through the pipeline").
//
// A frame's way through Process:
//
//	parse (wire.Frame) ─ error ─ not to the UPF, IPv4/UDP sound ─> downlink (below)
//	                           └ else ──────────────────> drop PARSER_ERROR / BAD_JUNCTION
//	  ├ not IPv4 ────────────────────────────────────────> packet-in
//	  ├ outer dst in local_addresses:
//	  │   ├ UDP:2152 Echo Request ───────────────────────> Echo Response to its source (gtpuEcho)
//	  │   ├ UDP:2152 G-PDU ─ uplink_tunnels miss ────────> drop UNKNOWN_TEID
//	  │   │   ├ forward_indirect, or an End Marker ─────> packet-in
//	  │   │   ├ inner UDP:2153 ──────────────────────────> junction (arrival: the tunnel's leg)
//	  │   │   └ else: the inner packet ──────────────────> filter, TTL, route
//	  │   ├ UDP:2153 ─────────────────────────────────────> junction (arrival non-3GPP)
//	  │   └ anything else (ICMP, ...) ───────────────────> packet-in
//	  └ downlink: sessions hit ─> applications → session_overrides → steering → encap
//	              downlink_tunnels hit ─> GTP-U encap, or buffer_downlink ──> packet-in
//	              else plain routing
//	              each then: filter, TTL, route (Ethernet) ──> out
//
// A to_ingress packet-out (PacketOut) takes the same way, as a frame from the CPU port.
//
// junction (junction.go): DATA → sessions(src) → filter, TTL, route → reorder (reorder.go);
// control messages → probes and link notifications (junction.go).
//
// Usage: a PDU session's user packet that the pipeline lets through (its route found, before
// any reorder hold) adds one packet and the received frame's length to its session's cell,
// usage_idx: uplink_usage for Junction DATA and plain G-PDUs, downlink_usage for downlink that
// sessions or downlink_tunnels took (a redundant packet once, for both copies); as the P4
// program's Verdict counts what ingress does not drop, on its first pass. Each such packet then
// meets its session's MBR policer (meter.go), which drops red after usage has counted it.
//
// Every packet handed to Process ends in exactly one place: appended to the output, held by
// the reorder queue, or returned to the pool (drops and packet-ins).

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

// proc is the per-batch context of Process; it lives on the caller's stack.
type proc struct {
	p     *Pipeline
	st    *state
	t     *tables
	out   []*Packet
	f     wire.Frame
	inLen int // the received frame's length, for the drops and usage counters
	extra int // bytes the counters add to every frame: packetOutLen for a to_ingress packet-out
	nowOK bool
	now   uint32
}

// Process runs a batch of received packets through the pipeline and appends the packets to
// send to out (each with OutPort set), returning the extended slice. The caller sends them and
// returns them to the pool. Tables are read under one read lock per batch.
func (p *Pipeline) Process(in []*Packet, out []*Packet) []*Packet {
	return p.process(in, out, 0)
}

// process is Process with extra bytes counted for every frame.
func (p *Pipeline) process(in []*Packet, out []*Packet, extra int) []*Packet {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.st == nil {
		for _, pkt := range in {
			p.pool.Put(pkt) // no pipeline yet: drop, as BMv2 does
		}
		return out
	}
	c := proc{p: p, st: p.st, t: p.st.t, out: out, extra: extra}
	for _, pkt := range in {
		c.ingress(pkt)
	}
	return c.out
}

func be32(a [4]byte) uint32 { return binary.BigEndian.Uint32(a[:]) }

func addr4(v uint32) (a [4]byte) {
	binary.BigEndian.PutUint32(a[:], v)
	return a
}

// clock reads now_us once per packet that needs it.
func (c *proc) clock() uint32 {
	if !c.nowOK {
		c.now, c.nowOK = c.p.now(), true
	}
	return c.now
}

func (c *proc) drop(pkt *Packet, r DropReason) {
	c.st.count(r, c.inLen)
	c.p.pool.Put(pkt)
}

func (c *proc) emit(pkt *Packet) { c.out = append(c.out, pkt) }

// punt sends the frame as received to the controller.
func (c *proc) punt(pkt *Packet) {
	if ev := c.p.events; ev != nil {
		ev.PacketIn(pkt.InPort, slices.Clone(pkt.Frame()))
	}
	c.p.pool.Put(pkt)
}

func (c *proc) isLocal(a [4]byte) bool {
	_, ok := c.t.local.lookup(be32(a))
	return ok
}

func (c *proc) ingress(pkt *Packet) {
	c.nowOK = false
	frame := pkt.Frame()
	c.inLen = len(frame) + c.extra
	f := &c.f
	if err := f.Parse(frame); err != nil {
		c.malformed(pkt, err)
		return
	}
	if f.Has&wire.HasIPv4 == 0 {
		c.punt(pkt)
		return
	}
	if !c.isLocal(f.IPv4.Dst) {
		c.downlinkOuter(pkt)
		return
	}
	switch {
	case f.Has&wire.HasGTPU != 0 && f.GTPU.Type == wire.GTPUTypeEchoRequest:
		c.gtpuEcho(pkt)
	case f.Has&wire.HasGTPU != 0:
		tun, ok := c.knownTEID(pkt)
		if !ok {
			return
		}
		if tun.forward || f.GTPU.Type == wire.GTPUTypeEndMarker {
			// A forwarding tunnel's G-PDU or End Marker: the controller relays it as it came. An
			// End Marker on another tunnel carries nothing for the pipeline: it goes up too.
			c.punt(pkt)
			return
		}
		if f.Has&wire.HasJunction != 0 {
			arrival := contract.Access3GPP
			if tun.access == contract.AccessNon3GPP {
				arrival = contract.AccessNon3GPP // a non-3GPP leg over N3, from its access gateway
			}
			c.junction(pkt, arrival)
			return
		}
		// Plain GTP-U uplink: the T-PDU is the user packet.
		inner := f.InnerIPv4
		ports := f.Ports
		if f.Has&wire.HasInnerUDP != 0 {
			ports = wire.Ports{Src: f.InnerUDP.SrcPort, Dst: f.InnerUDP.DstPort}
		}
		in := pkt.off + f.InnerOff
		if c.forward(pkt, in, in+int(inner.TotalLen), inner, ports) {
			c.st.add(cUplinkUsage, tun.usage, c.inLen)
			fl := flowOf(inner, ports)
			if c.police(mUplinkMBR, fl.src, c.t.qosFlow(fl.src, true, &fl), tun.usage) {
				c.p.pool.Put(pkt)
				return
			}
			c.send(pkt)
		}
	case f.Has&wire.HasJunction != 0:
		c.junction(pkt, contract.AccessNon3GPP)
	default:
		c.punt(pkt)
	}
}

// gtpuEcho answers a GTP-U Echo Request to one of the UPF's addresses (TS 29.281 §7.2.2): the
// response goes back to the request's source address and UDP port, from the address it was sent
// to and port 2152, with the request's sequence number and a Recovery IE (restart counter 0) in
// front of the IEs the request carried. Its IPv4 header is one the pipeline adds (TTL 64, ID 0,
// UDP checksum 0). The IE's 2 bytes go in place: the headers in front of it move 2 bytes into
// the headroom, so the packet, and any bytes after it, end where they did.
func (c *proc) gtpuEcho(pkt *Packet) {
	f := &c.f
	ipOff := pkt.off + f.IPv4Off
	ieOff := ipOff + wire.IPv4HeaderLen + wire.UDPHeaderLen + f.GTPU.HeaderLen()
	end := ipOff + int(f.IPv4.TotalLen)
	ipOff -= recoveryIELen
	copy(pkt.buf[ipOff:ieOff-recoveryIELen], pkt.buf[ipOff+recoveryIELen:ieOff])
	pkt.buf[ieOff-recoveryIELen], pkt.buf[ieOff-recoveryIELen+1] = wire.GTPUIERecovery, 0 // restart counter
	ip := wire.TunnelIPv4(f.IPv4.Dst, f.IPv4.Src)
	ip.TotalLen = f.IPv4.TotalLen + recoveryIELen
	ip.Put(pkt.buf[ipOff:])
	udpOff := ipOff + wire.IPv4HeaderLen
	wire.UDP{SrcPort: wire.GTPUPort, DstPort: f.UDP.SrcPort, Length: f.UDP.Length + recoveryIELen}.Put(pkt.buf[udpOff:])
	wire.GTPU{Flags: f.GTPU.Flags, Type: wire.GTPUTypeEchoResponse, Length: f.GTPU.Length + recoveryIELen, Seq: f.GTPU.Seq}.
		Put(pkt.buf[udpOff+wire.UDPHeaderLen:])
	if c.route(pkt, ipOff, end, be32(f.IPv4.Src)) {
		c.send(pkt)
	}
}

// recoveryIELen is the Recovery IE's length: type and restart counter.
const recoveryIELen = 2

// knownTEID looks the G-PDU's TEID up in uplink_tunnels; on false the packet has been dropped.
func (c *proc) knownTEID(pkt *Packet) (tun uplinkTunnel, ok bool) {
	if tun, ok = c.t.uplink.lookup(c.f.GTPU.TEID); !ok {
		c.drop(pkt, contract.DropUnknownTEID)
	}
	return tun, ok
}

// downlinkOuter sends an IPv4 packet not addressed to the UPF down step 4; the whole outer
// packet is the user packet, whatever tunnel headers it seems to carry.
func (c *proc) downlinkOuter(pkt *Packet) {
	f := &c.f
	ports := f.Ports
	if f.Has&wire.HasUDP != 0 {
		ports = wire.Ports{Src: f.UDP.SrcPort, Dst: f.UDP.DstPort}
	}
	off := pkt.off + f.IPv4Off // bytes past the IPv4 total length (padding) follow the packet
	c.downlink(pkt, off, off+int(f.IPv4.TotalLen), f.IPv4, ports)
}

// malformed handles a frame the parser rejected. A packet not addressed to the UPF is a
// downlink packet (docs/pipeline.md: Ethernet / IPv4 / [TCP|UDP ports]) whatever follows its
// UDP header, so it is routed when its outer IPv4 and UDP headers are sound; anything else is
// dropped by the layer at fault (a GTP-U Error Indication to the UPF is a PARSER_ERROR, as the contract says).
func (c *proc) malformed(pkt *Packet, err error) {
	f := &c.f
	if f.Has&wire.HasUDP != 0 && !c.isLocal(f.IPv4.Dst) {
		c.downlinkOuter(pkt)
		return
	}
	// A Junction header or control body that is there but breaks a rule is BAD_JUNCTION;
	// anything else, truncation included, is PARSER_ERROR (wire.LayerOf).
	l := wire.LayerOf(err)
	badJunction := (l == wire.LayerJunction || l == wire.LayerControl) && !errors.Is(err, wire.ErrTruncated)
	// The pipeline judges a Junction header, and the user packet it carries (its IPv4 header
	// and ports), after the GTP-U TEID (P4: JunctionCheck follows Uplink): on the 3GPP leg an
	// unknown TEID comes first.
	carried := badJunction || (f.Has&wire.HasJunction != 0 && (l == wire.LayerIPv4 || l == wire.LayerTransport))
	if carried && f.Has&wire.HasGTPU != 0 {
		tun, ok := c.knownTEID(pkt)
		if !ok {
			return
		}
		if tun.forward {
			c.punt(pkt) // a forwarding tunnel's G-PDU: what it carries is not judged (JunctionCheck is Junction's path)
			return
		}
	}
	if badJunction {
		c.drop(pkt, contract.DropBadJunction)
	} else {
		c.drop(pkt, contract.DropParserError)
	}
}

// flowOf is the user packet as applications and filters see it.
func flowOf(ip wire.IPv4, ports wire.Ports) flow {
	return flow{src: be32(ip.Src), dst: be32(ip.Dst), sport: ports.Src, dport: ports.Dst,
		proto: ip.Proto, dscp: ip.DSCP()}
}

// filterTTL applies filters and the TTL decrement to the user packet at buf[off:].
func (c *proc) filterTTL(pkt *Packet, off int, fl *flow) bool {
	if c.t.filtered(fl) {
		c.drop(pkt, contract.DropFiltered)
		return false
	}
	if !wire.DecrementTTL(pkt.buf[off:]) {
		c.drop(pkt, contract.DropTTLExpired)
		return false
	}
	return true
}

// route looks up the frame's final destination, adds Ethernet and sets the egress port.
// The packet becomes buf[off:end] and the received bytes past end (pkt.tail).
func (c *proc) route(pkt *Packet, off, end int, dst uint32) bool {
	r, ok := c.t.routes.lookup(dst)
	if !ok {
		c.drop(pkt, contract.DropNoRoute)
		return false
	}
	off = wire.Ethernet{Dst: r.dst, Src: r.src, Type: wire.EtherTypeIPv4}.Prepend(pkt.buf[:end], off)
	pkt.off, pkt.end, pkt.OutPort = off, max(end, pkt.tail), r.port
	return true
}

// forward is step 5 for a user packet at buf[off:end]: filter, TTL, route. On false the
// packet has been dropped.
func (c *proc) forward(pkt *Packet, off, end int, ip wire.IPv4, ports wire.Ports) bool {
	fl := flowOf(ip, ports)
	return c.filterTTL(pkt, off, &fl) && c.route(pkt, off, end, fl.dst)
}

// send emits a routed packet, or hands it to the controller when the route is the CPU port.
func (c *proc) send(pkt *Packet) {
	if pkt.OutPort == c.p.cpuPort {
		c.punt(pkt)
		return
	}
	c.emit(pkt)
}

// downlink is step 4 for the IPv4 packet at buf[off:end] not addressed to the UPF.
func (c *proc) downlink(pkt *Packet, off, end int, ip wire.IPv4, ports wire.Ports) {
	fl := flowOf(ip, ports)
	sess, ok := c.t.sessions.lookup(fl.dst)
	if !ok {
		if tun, ok := c.t.dlTunnels.lookup(fl.dst); ok {
			if tun.buffer {
				c.punt(pkt) // untouched so far: the controller gets the frame as it came
				return
			}
			c.downlinkGTPU(pkt, off, end, &fl, tun)
			return
		}
		if c.filterTTL(pkt, off, &fl) && c.route(pkt, off, end, fl.dst) {
			c.send(pkt)
		}
		return
	}

	params := c.t.application(&fl)
	var seq uint32
	if ov, ok := c.t.overrides.lookup(overrideKey(fl.dst, params.app)); ok {
		params = ov.steering
		seq = c.st.nextSeq(ov.seqIndex)
	}
	var ps paths
	ps.present[contract.Access3GPP], ps.present[contract.AccessNon3GPP] = sess.ue3GPP != 0, sess.ueNon3GP != 0
	ps.rtt[contract.Access3GPP] = c.st.regs[rRTT3GPP].load(sess.user)
	ps.rtt[contract.AccessNon3GPP] = c.st.regs[rRTTNon3GPP].load(sess.user)
	ps.loss[contract.Access3GPP] = uint8(c.st.regs[rLoss3GPP].load(sess.user))
	ps.loss[contract.AccessNon3GPP] = uint8(c.st.regs[rLossNon3GPP].load(sess.user))
	ps.share = contract.AutonomousShare(c.st.regs[rAutonomousShare].load(sess.user))
	first, second := decide(&ps, params, seq)
	if first == contract.AccessNone {
		c.drop(pkt, contract.DropNoPath)
		return
	}
	ep := c.t.endpoint(sess.endpoint)
	if !ep.ok {
		c.drop(pkt, contract.DropNoEndpoint)
		return
	}
	if first == contract.Access3GPP && !c.t.peer(sess.peer).ok {
		c.drop(pkt, contract.DropNoTunnelPeer)
		return
	}
	if !c.filterTTL(pkt, off, &fl) {
		return
	}
	hdr := wire.Header{Type: wire.TypeData, Proto: wire.ProtoIPv4, Seq: seq}
	fq := c.t.qosFlow(fl.dst, false, &fl)
	if !c.encapJunction(pkt, off, end, first, &sess, ep, hdr, legAddr(&sess, first), fq.qfi) {
		return // dropped (no route): as on P4, whose ingress clones only a packet it does not drop
	}
	c.st.add(cDownlinkUsage, sess.usage, c.inLen)
	if c.police(mDownlinkMBR, fl.dst, fq, sess.usage) {
		c.p.pool.Put(pkt)
		return
	}
	if second != contract.AccessNone {
		c.redundantCopy(pkt, off, end, &sess, ep, second, hdr, fq.qfi) // the user packet at [off:end] is untouched
	}
	c.send(pkt)
}

func legAddr(s *session, access contract.Access) uint32 {
	if access == contract.Access3GPP {
		return s.ue3GPP
	}
	return s.ueNon3GP
}

// redundantCopy sends the second copy of a redundant packet, as the clone of clone session
// REDUNDANT_CLONE_SESSION does on v1model.
func (c *proc) redundantCopy(pkt *Packet, off, end int, sess *session, ep endpoint, access contract.Access, hdr wire.Header, flowQFI uint8) {
	if _, ok := c.st.clones[contract.RedundantCloneSession]; !ok {
		return // as on every P4 target: no clone session, no copy, nothing to count
	}
	if access == contract.Access3GPP && !c.t.peer(sess.peer).ok {
		c.st.count(contract.DropNoTunnelPeer, c.inLen)
		return
	}
	cl := c.p.pool.TryGet()
	if cl == nil {
		c.st.count(contract.DropCopyFailed, c.inLen)
		return
	}
	cl.InPort = pkt.InPort
	n := copy(cl.buf[Headroom:], pkt.buf[off:max(end, pkt.tail)])
	cl.tail = Headroom + n
	if c.encapJunction(cl, Headroom, Headroom+(end-off), access, sess, ep, hdr, legAddr(sess, access), flowQFI) {
		c.send(cl)
	}
}

// encapJunction wraps the packet at buf[off:end] in IPv4/UDP:2153/<hdr> toward ue on the
// given access, plus IPv4/UDP:2152/GTP-U toward the session's gNB on 3GPP or toward the leg's
// access gateway on a non-3GPP leg over N3, and routes it. hdr.Length is set from what follows it.
// The G-PDU carries the tunnel's QFI (tunnel_qfis), or flowQFI in its place (gpduQFI).
func (c *proc) encapJunction(pkt *Packet, off, end int, access contract.Access, sess *session, ep endpoint, hdr wire.Header, ue uint32, flowQFI uint8) bool {
	b := pkt.buf[:end]
	off = hdr.Prepend(b, off)
	off = wire.TunnelUDP(wire.JunctionPort).Prepend(b, off)
	off = wire.TunnelIPv4(addr4(ep.junction), addr4(ue)).Prepend(b, off)
	dst, teid, tunnel := ue, uint32(0), true
	switch {
	case access == contract.Access3GPP:
		dst, teid = c.t.peer(sess.peer).addr, sess.teid
	case sess.gwN3 != 0:
		dst, teid = sess.gwN3, sess.teidN3
	default:
		tunnel = false
	}
	if tunnel {
		off = wire.DownlinkGTPU(teid, c.t.gpduQFI(dst, teid, flowQFI)).Prepend(b, off)
		off = wire.TunnelUDP(wire.GTPUPort).Prepend(b, off)
		off = wire.TunnelIPv4(addr4(ep.n3), addr4(dst)).Prepend(b, off)
	}
	return c.route(pkt, off, end, dst)
}

// downlinkGTPU wraps a single-access PDU session's packet in plain GTP-U.
func (c *proc) downlinkGTPU(pkt *Packet, off, end int, fl *flow, tun dlTunnel) {
	ep := c.t.endpoint(tun.endpoint)
	if !ep.ok {
		c.drop(pkt, contract.DropNoEndpoint)
		return
	}
	pr := c.t.peer(tun.peer)
	if !pr.ok {
		c.drop(pkt, contract.DropNoTunnelPeer)
		return
	}
	if !c.filterTTL(pkt, off, fl) {
		return
	}
	b := pkt.buf[:end]
	fq := c.t.qosFlow(fl.dst, false, fl)
	off = wire.DownlinkGTPU(tun.teid, c.t.gpduQFI(pr.addr, tun.teid, fq.qfi)).Prepend(b, off)
	off = wire.TunnelUDP(wire.GTPUPort).Prepend(b, off)
	off = wire.TunnelIPv4(addr4(ep.n3), addr4(pr.addr)).Prepend(b, off)
	if c.route(pkt, off, end, pr.addr) {
		c.st.add(cDownlinkUsage, tun.usage, c.inLen)
		if c.police(mDownlinkMBR, fl.dst, fq, tun.usage) {
			c.p.pool.Put(pkt)
			return
		}
		c.send(pkt)
	}
}
