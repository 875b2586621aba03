//go:build linux

package topology

import (
	"fmt"
	"net/netip"

	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/test/netns"
)

// MPTCP is the paper's baseline: a host with a 3GPP-like and a WiFi-like interface whose links
// run through the same link emulator with the same parameters as the testbed's (Emulation), routed
// straight to a server, with no UPF and no tunnel, for Linux MPTCP (one subflow per link):
//
//	ns client  c-ran ══ [radio emulator] ══ s-ran  ns server (172.31.0.1 on lo)
//	           c-wifi ═ [WiFi emulator]  ══ s-wifi
//
// The first subflow goes over WiFi (the main route); the client's 3GPP endpoint adds the second,
// as a backup subflow when Backup3GPP (MPTCP's active-standby).
type MPTCP struct {
	Client, Server *netns.Namespace
	// Server is reached at ServerAddr over either link; the client's are ClientRadio, ClientWiFi.
	ServerAddr, ClientRadio, ClientWiFi netip.Addr
	// Radio and WiFi are the far ends of the client's links (SetCarrier takes one away).
	Radio, WiFi Wire
	// RadioShapers and WiFiShapers are the links' uplink [0] and downlink [1].
	RadioShapers, WiFiShapers [2]*linkem.Shaper

	t *Topology // the namespaces and emulators, closed by Close
}

var (
	mptcpServer = netip.MustParseAddr("172.31.0.1")
	mptcpNets   = map[string][2]netip.Addr{ // client, server side of each link
		"ran":  {netip.MustParseAddr("172.31.1.2"), netip.MustParseAddr("172.31.1.1")},
		"wifi": {netip.MustParseAddr("172.31.2.2"), netip.MustParseAddr("172.31.2.1")},
	}
)

// NewMPTCP builds the baseline with em's link parameters (its own shapers: the testbed's cell is
// not shared with it).
func NewMPTCP(name func(string) string, em Emulation, backup3GPP bool) (*MPTCP, error) {
	if name == nil {
		name = UniqueNames
	}
	t := &Topology{name: name}
	m := &MPTCP{t: t, ServerAddr: mptcpServer, ClientRadio: mptcpNets["ran"][0], ClientWiFi: mptcpNets["wifi"][0]}
	if err := m.build(em, backup3GPP); err != nil {
		t.Close()
		return nil, err
	}
	return m, nil
}

func (m *MPTCP) build(em Emulation, backup3GPP bool) error {
	var err error
	if m.Client, err = m.t.namespace("mptcp-client"); err != nil {
		return err
	}
	if m.Server, err = m.t.namespace("mptcp-server"); err != nil {
		return err
	}
	seed := uint64(100)
	for _, l := range []struct {
		name    string
		p       linkem.Params
		wire    *Wire
		shapers *[2]*linkem.Shaper
		table   string
	}{{"ran", em.Radio, &m.Radio, &m.RadioShapers, "101"}, {"wifi", em.WiFi, &m.WiFi, &m.WiFiShapers, "102"}} {
		ns, err := m.t.namespace("wire-mptcp-" + l.name)
		if err != nil {
			return err
		}
		*l.wire = Wire{NS: ns, Iface: "w-ue"}
		*l.shapers = [2]*linkem.Shaper{linkem.NewShaper(l.p, seed), linkem.NewShaper(l.p, seed+1)}
		seed += 2
		c, s := "c-"+l.name, "s-"+l.name
		addrs := mptcpNets[l.name]
		if err := steps(
			func() error {
				return netns.AddVeth(netns.Link{Name: c, NS: m.Client}, netns.Link{Name: "w-ue", NS: ns})
			},
			func() error {
				return netns.AddVeth(netns.Link{Name: "w-net", NS: ns}, netns.Link{Name: s, NS: m.Server})
			},
			func() error {
				return noOffload(map[*netns.Namespace][]string{m.Client: {c}, ns: {"w-ue", "w-net"}, m.Server: {s}})
			},
			func() error {
				link, err := linkem.Open(ns.Name, "w-ue", "w-net", l.shapers[0], l.shapers[1])
				if err == nil {
					m.t.closers = append(m.t.closers, func() { link.Close() })
				}
				return err
			},
			func() error { return m.Client.AddAddress(c, netip.PrefixFrom(addrs[0], 24)) },
			func() error { return m.Server.AddAddress(s, netip.PrefixFrom(addrs[1], 24)) },
			// Each subflow leaves on the link of its source address.
			func() error { return run(m.Client, "ip", "rule", "add", "from", addrs[0].String(), "table", l.table) },
			func() error {
				return run(m.Client, "ip", "route", "add", mptcpServer.String()+"/32", "via", addrs[1].String(), "dev", c, "table", l.table)
			},
		); err != nil {
			return fmt.Errorf("MPTCP baseline, %s link: %w", l.name, err)
		}
	}
	flags := []string{"subflow"}
	if backup3GPP {
		flags = append(flags, "backup")
	}
	return steps(
		func() error { return run(m.Server, "ip", "addr", "add", mptcpServer.String()+"/32", "dev", "lo") },
		func() error { return m.Server.Sysctl("net/ipv4/conf/all/rp_filter", "0") },
		func() error {
			return run(m.Client, "ip", "route", "add", mptcpServer.String()+"/32", "via", mptcpNets["wifi"][1].String(), "dev", "c-wifi", "src", m.ClientWiFi.String())
		},
		func() error {
			return run(m.Client, "ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2")
		},
		func() error {
			return run(m.Server, "ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2")
		},
		func() error {
			return run(m.Client, "ip", append([]string{"mptcp", "endpoint", "add", m.ClientRadio.String(), "dev", "c-ran"}, flags...)...)
		},
	)
}

// Close stops the emulators and deletes the namespaces.
func (m *MPTCP) Close() { m.t.Close() }
