package ueagent

import (
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

// rxKind is what a datagram from the UPF turned out to be.
type rxKind uint8

const (
	rxDrop       rxKind = iota // malformed, spoofed or unexpected: dropped and counted by reason
	rxData                     // a user packet for the TUN: payload, sequenced when Seq != 0
	rxProbeReply               // a PROBE_REPLY for the leg it arrived on
)

// rx is the verdict on one datagram.
type rx struct {
	kind    rxKind
	header  wire.Header
	payload []byte       // rxData: the user packet
	control wire.Control // rxProbeReply
	reason  string       // rxDrop: the drops metric's reason label
}

// parseDownlink checks one UDP payload that leg on of session received from the UPF
// (docs/junction-header.md): the UPF sends the UE only DATA without marks carrying an IPv4
// packet to the session address, and PROBE_REPLY about this session and this leg. Anything else
// is dropped with a reason; it never panics on any input (FuzzParseDownlink).
func parseDownlink(b []byte, session [4]byte, on contract.Access) rx {
	h, payload, err := wire.ParseJunction(b)
	if err != nil {
		return rx{reason: "BadJunction"}
	}
	switch h.Type {
	case wire.TypeData:
		switch {
		case h.Marks != 0:
			return rx{reason: "MarksOnDownlink"} // marks are uplink-only
		case len(payload) < wire.IPv4HeaderLen || payload[0]>>4 != 4 || h.Proto != wire.ProtoIPv4:
			return rx{reason: "NotIPv4"}
		case [4]byte(payload[16:20]) != session:
			return rx{reason: "NotForSession"} // the UPF sends a session only its own packets
		}
		return rx{kind: rxData, header: h, payload: payload}
	case wire.TypeProbeReply:
		c, err := wire.ParseControl(payload)
		if err != nil || c.Session != session || c.Access != on {
			return rx{reason: "BadProbeReply"}
		}
		return rx{kind: rxProbeReply, header: h, control: c}
	}
	return rx{reason: "UnexpectedType"}
}
