// Frame parsing as the pipeline's parser does it (docs/pipeline.md, "Packets and their way").
//
// A frame's way through Frame.Parse:
//
//	Ethernet ─ not IPv4 ──────────────────────────────────────────────> done (punt to the CPU)
//	         └ IPv4 ─ not TCP/UDP, or a later fragment ───────────────> User = IPv4
//	                ├ TCP, UDP to another port ───────────────────────> User = IPv4, Ports
//	                ├ UDP:2152 → GTP-U → IPv4 ─ UDP:2153 → Junction ─┐
//	                │                         └ else ─────────────────> User = inner IPv4, Ports
//	                └ UDP:2153 → Junction ───────────────────────────┤
//	                        DATA with a payload → User = IPv4, Ports ┤
//	                        EX-PATH marker (no payload) ─────────────┤
//	                        control type → Control ──────────────────┴> done
//
// The parser does not know which addresses are the UPF's: like the P4 parser it goes by UDP
// destination port, and the UPF decides what a parsed frame means.

package wire

import "github.com/junction-atsss/junction/internal/contract"

// Layers is a set of the headers a Frame holds.
type Layers uint16

const (
	HasEthernet Layers = 1 << iota
	HasIPv4            // the outer IPv4 header
	HasUDP             // the outer UDP header
	HasGTPU
	HasInnerIPv4 // the IPv4 header inside GTP-U
	HasInnerUDP  // the UDP header inside GTP-U
	HasJunction
	HasControl
	HasUser  // the user's IPv4 packet: User, UserOff, UserEnd
	HasPorts // the user packet's TCP or UDP ports
)

// Frame is a parsed frame: each header by value, and offsets into the frame for the ones the
// data path rewrites or strips. Parse fills it in place, so a Frame can live in a per-worker
// struct and be reused without allocation.
type Frame struct {
	Has Layers

	Ethernet  Ethernet
	IPv4      IPv4 // outer
	UDP       UDP  // outer
	GTPU      GTPU
	InnerIPv4 IPv4 // inside GTP-U: the UE's 3GPP-leg packet, or the user packet itself
	InnerUDP  UDP
	Junction  Header
	Control   Control

	// User is the user's packet, frame[UserOff:UserEnd]: the outer IPv4 for plain IP, the inner
	// one for plain GTP-U, the Junction payload for Junction DATA. It is a copy of IPv4 or
	// InnerIPv4 when it is one of them.
	User             IPv4
	UserOff, UserEnd int
	Ports            Ports

	// IPv4Off is where the outer IPv4 header starts (14); InnerOff where the IPv4 inside
	// GTP-U starts; JunctionOff where the Junction header starts.
	IPv4Off, InnerOff, JunctionOff int
}

// JunctionAccess returns the access a Junction message arrived on: 3GPP when it came inside
// GTP-U, non-3GPP otherwise, contract.AccessNone without a Junction header.
func (f *Frame) JunctionAccess() contract.Access {
	switch {
	case f.Has&HasJunction == 0:
		return contract.AccessNone
	case f.Has&HasGTPU != 0:
		return contract.Access3GPP
	}
	return contract.AccessNon3GPP
}

// Parse parses frame from its Ethernet header on. A frame that is not IPv4 is not an error: Has
// is just HasEthernet. On error, the layers parsed before the failing one stay valid and are in
// Has; LayerOf(err) says which layer failed (a Junction header or control body that breaks a
// rule is the UPF's BAD_JUNCTION, anything else, truncation included, PARSER_ERROR).
func (f *Frame) Parse(frame []byte) error {
	*f = Frame{}
	eth, err := ParseEthernet(frame)
	if err != nil {
		return err
	}
	f.Ethernet, f.Has = eth, HasEthernet
	if eth.Type != EtherTypeIPv4 {
		return nil
	}
	f.IPv4Off = EthernetHeaderLen
	return f.parseIPv4(frame, EthernetHeaderLen)
}

// ParseIP parses a frame without Ethernet, starting at an IPv4 header (a TUN device's packets).
func (f *Frame) ParseIP(packet []byte) error {
	*f = Frame{}
	return f.parseIPv4(packet, 0)
}

func (f *Frame) parseIPv4(b []byte, off int) error {
	ip := &f.IPv4
	if err := ip.decode(b[off:]); err != nil {
		return err
	}
	f.Has |= HasIPv4
	end := off + int(ip.TotalLen)
	l4 := off + IPv4HeaderLen
	if ip.Proto != ProtoUDP || ip.FragmentOffset() != 0 {
		return f.user(b, off, end, ip)
	}
	u, err := ParseUDP(b[l4:end])
	if err != nil {
		return err
	}
	f.UDP, f.Has = u, f.Has|HasUDP
	switch u.DstPort {
	case GTPUPort:
		return f.parseGTPU(b, l4+UDPHeaderLen, l4+int(u.Length))
	case JunctionPort:
		return f.parseJunction(b, l4+UDPHeaderLen, l4+int(u.Length))
	}
	return f.user(b, off, end, ip)
}

func (f *Frame) parseGTPU(b []byte, off, end int) error {
	g := &f.GTPU
	if err := g.decode(b[off:end]); err != nil {
		return err
	}
	f.Has |= HasGTPU
	if g.Type == GTPUTypeEchoRequest || g.Type == GTPUTypeEndMarker {
		return nil // no T-PDU: the UPF answers an Echo Request (softupf's gtpuEcho), relays an End Marker
	}
	in, inEnd := off+g.HeaderLen(), off+GTPUHeaderLen+int(g.Length)
	ip := &f.InnerIPv4
	if err := ip.decode(b[in:inEnd]); err != nil {
		return err
	}
	f.InnerOff, f.Has = in, f.Has|HasInnerIPv4
	ipEnd := in + int(ip.TotalLen)
	if ip.Proto != ProtoUDP || ip.FragmentOffset() != 0 {
		return f.user(b, in, ipEnd, ip)
	}
	l4 := in + IPv4HeaderLen
	u, err := ParseUDP(b[l4:ipEnd])
	if err != nil {
		return err
	}
	f.InnerUDP, f.Has = u, f.Has|HasInnerUDP
	if u.DstPort == JunctionPort {
		return f.parseJunction(b, l4+UDPHeaderLen, l4+int(u.Length))
	}
	return f.user(b, in, ipEnd, ip)
}

func (f *Frame) parseJunction(b []byte, off, end int) error {
	h, body, err := ParseJunction(b[off:end])
	if err != nil {
		return err
	}
	f.Junction, f.JunctionOff, f.Has = h, off, f.Has|HasJunction
	switch {
	case h.Type.IsControl():
		c, err := ParseControl(body)
		if err != nil {
			return err
		}
		f.Control, f.Has = c, f.Has|HasControl
		return nil
	case h.Length == 0: // the EX-PATH marker
		return nil
	}
	ip := &f.User
	if err := ip.decode(body); err != nil {
		return err
	}
	in := off + HeaderLen
	return f.user(b, in, in+int(ip.TotalLen), ip)
}

// user records the user packet b[off:end] with header ip and reads its ports.
func (f *Frame) user(b []byte, off, end int, ip *IPv4) error {
	if ip != &f.User {
		f.User = *ip
	}
	f.UserOff, f.UserEnd, f.Has = off, end, f.Has|HasUser
	p, err := ParsePorts(*ip, b[off+IPv4HeaderLen:end])
	if err != nil {
		return err
	}
	if (ip.Proto == ProtoTCP || ip.Proto == ProtoUDP) && ip.FragmentOffset() == 0 {
		f.Has |= HasPorts
	}
	f.Ports = p
	return nil
}
