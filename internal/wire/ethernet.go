// Ethernet II: the 14 bytes in front of every frame the UPF receives and sends.
//
// A packet's way: frame ──ParseEthernet──> EtherType 0x0800 goes on to IPv4, anything else is
// punted to the CPU; on the way out Ethernet.Prepend adds the route's MAC addresses.

package wire

import "encoding/binary"

// Ethernet is an Ethernet II header. VLAN tags are not parsed: a tagged frame has EtherType
// 0x8100 and is not IPv4 to the pipeline.
type Ethernet struct {
	Dst, Src [6]byte
	Type     uint16
}

// ParseEthernet decodes the header at the start of b.
func ParseEthernet(b []byte) (Ethernet, error) {
	if len(b) < EthernetHeaderLen {
		return Ethernet{}, truncated(LayerEthernet, "header", len(b), EthernetHeaderLen)
	}
	return Ethernet{
		Dst:  [6]byte(b[0:6]),
		Src:  [6]byte(b[6:12]),
		Type: binary.BigEndian.Uint16(b[12:14]),
	}, nil
}

// Put writes e into b[:14].
func (e Ethernet) Put(b []byte) {
	_ = b[13]
	copy(b[0:6], e.Dst[:])
	copy(b[6:12], e.Src[:])
	binary.BigEndian.PutUint16(b[12:14], e.Type)
}

// Prepend writes e into b[off-14:off] and returns off-14.
func (e Ethernet) Prepend(b []byte, off int) int {
	e.Put(b[off-EthernetHeaderLen : off])
	return off - EthernetHeaderLen
}
