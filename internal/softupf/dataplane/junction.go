package dataplane

// Junction messages that reach the UPF (docs/pipeline.md, steps 2 and 3, and "RTT probes").
//
// A message's way through junction:
//
//	DATA with payload ─ length != user packet ──> drop BAD_JUNCTION
//	                  ─ sessions(user src) miss ─> drop NO_SESSION
//	                  ─ not from the session's address on its leg ─> drop WRONG_SOURCE (every message)
//	                  └ filter, TTL, route, uplink_usage ─ CURRENT_PATH ─> reorder (hold or send)
//	                                                      └ unmarked ────> out
//	EX-PATH marker ── sessions(seq) ──> release held packets (reorder.go) ──> CONSUMED
//	PROBE ── sessions(body) ──> PROBE_REPLY on the arrival leg (in GTP-U on 3GPP and on a
//	                            non-3GPP leg over N3), upf_ts = now_us ──> out
//	PROBE_ACK ── rtt = now_us - upf_ts ──> rtt_<leg>[user] unless suspended, the UE's share into
//	                                       autonomous_share[user], digest ──> CONSUMED
//	LINK_DOWN/UP ──> rtt_<access>[user] = 0 / max(rtt_us, 1) unless suspended, digest ──> CONSUMED
//	PROBE_REPLY (a UPF-to-UE message) ──> drop BAD_JUNCTION

import (
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/p4bytes"
	"github.com/junction-atsss/junction/internal/wire"
)

func (c *proc) junction(pkt *Packet, arrival contract.Access) {
	f := &c.f
	h := f.Junction
	switch h.Type {
	case wire.TypeData:
		if h.IsExPathMarker() {
			sess, ok := c.session(pkt, h.Seq, arrival)
			if !ok {
				return
			}
			c.marker(sess.user, h.Marks.Epoch())
			c.drop(pkt, contract.DropConsumed)
			return
		}
		c.uplinkData(pkt, h, arrival)
	case wire.TypeProbe:
		c.probe(pkt, arrival)
	case wire.TypeProbeAck, wire.TypeLinkDown, wire.TypeLinkUp:
		c.pathReport(pkt, h.Type, arrival)
	default:
		c.drop(pkt, contract.DropBadJunction)
	}
}

// session finds the session a Junction message names by its session address: sessions must hit
// (else NO_SESSION), and the message must come from the session's address on the leg it arrived
// on, the source of the IPv4 header that carried it (the outer one on a plain non-3GPP leg, the
// one inside GTP-U on 3GPP and on a non-3GPP leg over N3), in the leg's form: GTP-U from an
// access gateway only for a leg over N3, plain only for one that is not (else WRONG_SOURCE).
// On false the packet has been dropped.
func (c *proc) session(pkt *Packet, addr uint32, arrival contract.Access) (session, bool) {
	sess, ok := c.t.sessions.lookup(addr)
	if !ok {
		c.drop(pkt, contract.DropNoSession)
		return session{}, false
	}
	src, leg, form := c.f.IPv4.Src, sess.ueNon3GP, sess.gwN3 == 0
	switch {
	case arrival == contract.Access3GPP:
		src, leg, form = c.f.InnerIPv4.Src, sess.ue3GPP, true
	case c.f.Has&wire.HasGTPU != 0:
		src, form = c.f.InnerIPv4.Src, sess.gwN3 != 0
	}
	if !form || be32(src) != leg {
		c.drop(pkt, contract.DropWrongSource)
		return session{}, false
	}
	return sess, true
}

func (c *proc) uplinkData(pkt *Packet, h wire.Header, arrival contract.Access) {
	f := &c.f
	user := f.User
	if int(user.TotalLen) != int(h.Length) {
		c.drop(pkt, contract.DropBadJunction) // the Junction length must be the user packet's
		return
	}
	sess, ok := c.session(pkt, be32(user.Src), arrival)
	if !ok {
		return
	}
	off := pkt.off
	if !c.forward(pkt, off+f.UserOff, off+f.UserEnd, user, f.Ports) {
		return
	}
	c.st.add(cUplinkUsage, sess.usage, c.inLen) // held or not, it is through
	fl := flowOf(user, f.Ports)
	if c.police(mUplinkMBR, fl.src, c.t.qosFlow(fl.src, true, &fl), sess.usage) {
		c.p.pool.Put(pkt)
		return
	}
	if h.Marks&wire.MarkCurrentPath != 0 && pkt.OutPort != c.p.cpuPort {
		c.reorder(pkt, sess.user, h.Marks.Epoch(), min(h.Seq, contract.ReorderMaxHoldUS))
		return
	}
	c.send(pkt)
}

// probe answers PROBE with PROBE_REPLY on the leg it came on, built in place over the probe.
func (c *proc) probe(pkt *Packet, arrival contract.Access) {
	f := &c.f
	sess, ok := c.session(pkt, be32(f.Control.Session), arrival)
	if !ok {
		return
	}
	dst := be32(f.IPv4.Src) // plain non-3GPP: back to the probe's source
	switch {
	case arrival == contract.Access3GPP:
		dst = sess.ue3GPP
	case f.Has&wire.HasGTPU != 0:
		dst = sess.ueNon3GP // over N3: through the leg's gateway (encapJunction)
	}
	if dst == 0 {
		c.drop(pkt, contract.DropNoPath) // the session has no such leg to answer on
		return
	}
	ep := c.t.endpoint(sess.endpoint)
	if !ep.ok {
		c.drop(pkt, contract.DropNoEndpoint)
		return
	}
	if arrival == contract.Access3GPP && !c.t.peer(sess.peer).ok {
		c.drop(pkt, contract.DropNoTunnelPeer)
		return
	}
	reply := f.Control
	reply.UPFTime, reply.LossPercent, reply.Share = c.clock(), 0, 0
	bodyOff := pkt.off + f.JunctionOff + wire.HeaderLen
	end := bodyOff + wire.ControlLen
	reply.Put(pkt.buf[bodyOff:end])
	hdr := wire.Header{Type: wire.TypeProbeReply}
	if c.encapJunction(pkt, bodyOff, end, arrival, &sess, ep, hdr, dst, 0) { // a reply is in no QoS flow of its own
		c.send(pkt)
	}
}

// pathReport handles PROBE_ACK, LINK_DOWN and LINK_UP: path state and a digest.
func (c *proc) pathReport(pkt *Packet, typ wire.Type, arrival contract.Access) {
	body := c.f.Control
	sess, ok := c.session(pkt, be32(body.Session), arrival)
	if !ok {
		return
	}
	var access contract.Access
	var rtt uint32
	var loss uint8
	var kind contract.ReportKind
	switch typ {
	case wire.TypeProbeAck:
		access, kind = arrival, contract.ReportRTT
		rtt = max(c.clock()-body.UPFTime, 1) // modulo 2^32; a measured 0 is stored as 1
		loss = body.LossPercent
	case wire.TypeLinkDown:
		access, kind = body.Access, contract.ReportLinkDown
	default:
		access, kind = body.Access, contract.ReportLinkUp
		rtt, loss = max(body.UETime, 1), body.LossPercent
	}
	suspended := c.st.regs[rPathUpdatesSuspended].load(sess.user) != 0
	if !suspended {
		rttReg, lossReg := rRTT3GPP, rLoss3GPP
		if access == contract.AccessNon3GPP {
			rttReg, lossReg = rRTTNon3GPP, rLossNon3GPP
		}
		c.st.regs[rttReg].store(sess.user, rtt)
		c.st.regs[lossReg].store(sess.user, uint32(loss))
	}
	// Autonomous load balance's split: the UE's, which a suspension does not freeze.
	if kind == contract.ReportRTT && body.Share.Valid() {
		c.st.regs[rAutonomousShare].store(sess.user, uint32(body.Share))
	}
	c.p.digest(c.st, be32(body.Session), sess.user, access, kind, rtt, loss, suspended)
	c.drop(pkt, contract.DropConsumed)
}

// digest sends one probe_reports message.
func (p *Pipeline) digest(st *state, sessionAddr, user uint32, access contract.Access, kind contract.ReportKind, rtt uint32, loss uint8, suspended bool) {
	ev := p.events
	if ev == nil {
		return
	}
	var s uint64
	if suspended {
		s = 1
	}
	ev.Digest(st.schema.digestID, [][]byte{
		p4bytes.Uint(uint64(sessionAddr)), p4bytes.Uint(uint64(user)), p4bytes.Uint(uint64(access)),
		p4bytes.Uint(uint64(kind)), p4bytes.Uint(uint64(rtt)), p4bytes.Uint(uint64(loss)), p4bytes.Uint(s),
	})
}
