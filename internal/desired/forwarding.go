package desired

import (
	"net/netip"

	"github.com/junction-atsss/junction/internal/wire"
)

// Indirect data forwarding during an N2 handover (docs/n4.md, "Indirect data forwarding"): the
// source gNB forwards a session's downlink to a TEID of the UPF's, whose uplink_tunnels entry
// sends each G-PDU to the controller as it came (forward_indirect); the controller sends it on
// to the target gNB's tunnel through the pipeline (RelayedMessage, a to_ingress packet-out), and
// so the End Marker the source gNB forwards last.

// ActionForwardIndirect is the uplink_tunnels action of a forwarding tunnel. A P4 program may
// leave it out; a session with such a tunnel then cannot be programmed.
const ActionForwardIndirect = "forward_indirect"

// forwardingTunnel is the uplink_tunnels entry of the 3GPP leg's indirect forwarding tunnel.
func forwardingTunnel(teid int64) Entry {
	return Entry{Table: "uplink_tunnels", Match: []Match{{Field: "teid", Kind: Exact, Value: u32(uint32(teid))}}, Action: ActionForwardIndirect}
}

// TunnelMessage returns the TEID of the GTP-U G-PDU or End Marker frame holds and the GTP-U
// message (its header, with any optional fields and extension header such as a PDU Session
// Container, and what it carries); ok is false for any other frame. What a G-PDU carries is not
// looked at: a forwarding tunnel relays it whole, and the End Marker that ends the old path
// (TS 29.281 §7.3.2) with it.
func TunnelMessage(frame []byte) (teid uint32, msg []byte, ok bool) {
	var f wire.Frame
	_ = f.Parse(frame) // a T-PDU the parser does not take is still relayed: the GTP-U header is what counts
	if f.Has&wire.HasGTPU == 0 || (f.GTPU.Type != wire.GTPUTypeGPDU && f.GTPU.Type != wire.GTPUTypeEndMarker) {
		return 0, nil, false
	}
	off := f.IPv4Off + wire.IPv4HeaderLen + wire.UDPHeaderLen
	end := off + wire.GTPUHeaderLen + int(f.GTPU.Length) // GTPU's decode checked it against the UDP length
	return f.GTPU.TEID, frame[off:end], true
}

// RelayedMessage is the frame that sends the GTP-U message msg (TunnelMessage's) on from the UPF's
// N3 address src to peer, on the TEID the peer gave: the message as it came with its TEID
// replaced, in the outer header the pipeline puts on a downlink G-PDU (TTL 64, UDP 2152 both
// ways, checksum 0), behind an Ethernet header the pipeline's route replaces.
func RelayedMessage(msg []byte, src, peer netip.Addr, teid uint32) []byte {
	b := make([]byte, wire.EthernetHeaderLen+wire.IPv4HeaderLen+wire.UDPHeaderLen+len(msg))
	off := len(b) - len(msg)
	copy(b[off:], msg)
	g := b[off:]
	g[4], g[5], g[6], g[7] = byte(teid>>24), byte(teid>>16), byte(teid>>8), byte(teid)
	off = wire.TunnelUDP(wire.GTPUPort).Prepend(b, off)
	off = wire.TunnelIPv4(src.As4(), peer.As4()).Prepend(b, off)
	wire.Ethernet{Type: wire.EtherTypeIPv4}.Prepend(b, off)
	return b
}
