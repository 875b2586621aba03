//go:build !linux

package vectors

import "errors"

type packetPort struct{}

func openPacketPort(name, iface string, c *collector) (*packetPort, error) {
	return nil, errors.New("the vector runner sends and captures frames with AF_PACKET, which only Linux has; set Config.Wire")
}

func (p *packetPort) Send(frame []byte) error { return nil }
func (p *packetPort) Close()                  {}
