//go:build linux

// Package topology builds the testbed's network in network namespaces: UE nodes with a 3GPP
// interface behind a gNB and a WiFi interface behind an access gateway, the software UPF's three
// ports, and a data network. The end-to-end tests (test/ueagent) and `make run` (hack/local)
// both build it here, with the addresses and MACs of config/samples/upf.yaml and sessions.yaml:
//
//	ns ue (node ue-node-a)     [ns wire-*]         ns gnb                      ns upf (softupf)    ns dn
//	 TUN jx… ─ agent ─ ran0 ══ [radio emulator] ══ ran0 ─ gnb-emulator ─ n3g ══ u-n3   port 1 ┐
//	                 └ wlan0 ══ [cell emulator] ══ gw0 ┐ ns ap (routes)  gw-up ══ u-wifi port 2 ├ UPF
//	 ns ue (node ue-node-b) …          ran1, gw1 … ───┘                        u-n6   port 3 ┘ ══ dn0
//
// The access gateway routes (it is the WiFi next hop of the sample UPF, 02:00:00:00:02:02), so
// any number of UEs share the UPF's one WiFi port. It can also be a W-AGF for chosen UEs
// (WAGFArgs): the gNB emulator in its W-AGF role, in the gateway's namespace, carries what
// arrives on those UEs' lines in GTP-U from WAGFN3 to the UPF's N3 address, through the same
// port (a 5G-RG's fixed line, its non-3GPP leg over N3). With Emulation, each UE's radio link runs
// through its own link emulator (internal/linkem) in a namespace of its own, and the UEs' WiFi
// links run through one emulated cell in the gateway's namespace: one UE's load queues the
// others' packets. Nothing is configured in the caller's namespace; Close deletes everything.
package topology

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/test/netns"
)

// Addresses of the testbed: documentation and test ranges, the ones config/samples uses. They
// exist only inside the testbed's namespaces.
var (
	UPFN3       = netip.MustParseAddr("192.0.2.1")     // the UPF's N3 address (GTP-U)
	UPFJunction = netip.MustParseAddr("192.0.2.2")     // the UPF's Junction address, on both legs
	GNBN3       = netip.MustParseAddr("198.51.100.10") // the gNB's N3 address
	GNBRadio    = netip.MustParseAddr("10.45.0.254")   // the gNB's address on every radio link
	WiFiGateway = netip.MustParseAddr("203.0.113.1")   // the access gateway's address toward UEs
	WAGFN3      = netip.MustParseAddr("203.0.113.2")   // the access gateway's N3 address as a W-AGF
	DNHost      = netip.MustParseAddr("198.18.0.10")   // the data network's server
	DNGateway   = netip.MustParseAddr("198.18.0.1")    // the UPF, as the data network sees it
	SessionPool = netip.MustParsePrefix("10.60.0.0/16")
	// UEPools hold the UEs' 3GPP and WiFi addresses (DefaultUE's and the samples').
	UEPools = []netip.Prefix{netip.MustParsePrefix("10.45.0.0/24"), netip.MustParsePrefix("203.0.113.0/24")}
)

// Port is one of the software UPF's ports and the next hop behind it.
type Port struct {
	Name       string // as in the UserPlaneFunction
	Number     int32
	Role       junctionv1.PortRole
	Iface      string // the UPF namespace's interface
	MAC        net.HardwareAddr
	NextHopMAC net.HardwareAddr // the gNB's N3, the access gateway, the data network
}

// Ports are the UPF's ports, as config/samples/upf.yaml declares them.
var Ports = [3]Port{
	{Name: "n3", Number: 1, Role: junctionv1.PortN3, Iface: "u-n3", MAC: mac("02:00:00:00:01:01"), NextHopMAC: mac("02:00:00:00:02:01")},
	{Name: "wifi", Number: 2, Role: junctionv1.PortNon3GPP, Iface: "u-wifi", MAC: mac("02:00:00:00:01:02"), NextHopMAC: mac("02:00:00:00:02:02")},
	{Name: "n6", Number: 3, Role: junctionv1.PortN6, Iface: "u-n6", MAC: mac("02:00:00:00:01:03"), NextHopMAC: mac("02:00:00:00:02:03")},
}

const portN3, portWiFi, portN6 = 0, 1, 2

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// Config says how to build a topology.
type Config struct {
	// Name names the namespace of a role ("gnb", "upf", "dn", "ap", "wire-<node>-<iface>", or
	// a node's name); nil: UniqueNames.
	Name func(role string) string
	// Emulation puts link emulators on the UEs' links; nil: plain veths.
	Emulation *Emulation
}

// UniqueNames names namespaces "j" + role + random digits, for tests that run in parallel.
func UniqueNames(role string) string {
	short := map[string]string{"gnb": "jgnb", "upf": "jupf", "dn": "jdn", "ap": "jap"}[role]
	switch {
	case short != "":
	case strings.HasPrefix(role, "wire-"):
		short = "jwire"
	default:
		short = "jue"
	}
	return netns.UniqueName(short)
}

// FixedNames names namespaces prefix + role, for a demo a user can enter with `ip netns exec`.
func FixedNames(prefix string) func(string) string {
	return func(role string) string { return prefix + role }
}

// Emulation is the link emulators' parameters: Radio for each UE's own 3GPP link, WiFi for the
// one cell the UEs share. New creates the shapers; change them with Set while traffic runs.
type Emulation struct {
	Radio, WiFi linkem.Params
	// Cell is the WiFi cell's uplink [0] and downlink [1], shared by every UE.
	Cell [2]*linkem.Shaper
}

// UESpec is a UE node: its Kubernetes node name and its interfaces' addresses (the first of each
// is the UE's own; more are for sessions that use an address of their own, as in the samples).
type UESpec struct {
	Node               string
	Addr3GPP, AddrWiFi []netip.Addr
}

// DefaultUE is the i-th UE of config/samples/sessions.yaml's pattern: node ue-node-a, b, ...,
// 3GPP address 10.45.0.1+i, WiFi address 203.0.113.11+i.
func DefaultUE(i int) UESpec {
	return UESpec{
		Node:     fmt.Sprintf("ue-node-%c", 'a'+i),
		Addr3GPP: []netip.Addr{netip.AddrFrom4([4]byte{10, 45, 0, byte(1 + i)})},
		AddrWiFi: []netip.Addr{netip.AddrFrom4([4]byte{203, 0, 113, byte(11 + i)})},
	}
}

// UE is one UE namespace, the node its agent serves.
type UE struct {
	UESpec
	NS *netns.Namespace
	// Radio and WiFi are the far ends of the UE's ran0 and wlan0 (with Emulation, the
	// emulator's): taking one down takes the UE's carrier away.
	Radio, WiFi Wire
	// Line is the access gateway's interface toward the UE's wlan0: a W-AGF's fixed line.
	Line string
	// RadioShapers are the radio link's uplink [0] and downlink [1] (nil without Emulation).
	RadioShapers [2]*linkem.Shaper
}

// Wire is the end of a UE's link that faces the UE.
type Wire struct {
	NS    *netns.Namespace
	Iface string
}

// SetCarrier takes the UE's link up or down at its far end: the UE sees its carrier come and go.
func (w Wire) SetCarrier(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return run(w.NS, "ip", "link", "set", w.Iface, state)
}

// Topology is a built testbed network.
type Topology struct {
	GNB, UPF, DN, AP *netns.Namespace
	UEs              []*UE
	Emulation        *Emulation
	// Radios are the gNB's interfaces toward the UEs (the gNB emulator's --radio-interface).
	Radios []string

	name    func(string) string
	closers []func() // in reverse order by Close
}

// New builds the gNB, UPF, data-network and access-gateway namespaces; AddUE adds UEs.
func New(cfg Config) (*Topology, error) {
	t := &Topology{name: cfg.Name, Emulation: cfg.Emulation}
	if t.name == nil {
		t.name = UniqueNames
	}
	if err := t.build(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *Topology) build() error {
	var err error
	for _, x := range []struct {
		ns   **netns.Namespace
		role string
	}{{&t.GNB, "gnb"}, {&t.UPF, "upf"}, {&t.DN, "dn"}, {&t.AP, "ap"}} {
		if *x.ns, err = t.namespace(x.role); err != nil {
			return err
		}
	}
	if em := t.Emulation; em != nil {
		em.Cell = [2]*linkem.Shaper{linkem.NewShaper(em.WiFi, 3), linkem.NewShaper(em.WiFi, 4)}
	}
	n3, wifi, n6 := Ports[portN3], Ports[portWiFi], Ports[portN6]
	return steps(
		// The gNB and the gateway forward between their links.
		func() error { return forwarding(t.GNB) },
		func() error { return forwarding(t.AP) },
		// gNB ══ N3 ══ UPF port 1
		func() error {
			return netns.AddVeth(netns.Link{Name: "n3g", NS: t.GNB, MAC: n3.NextHopMAC}, netns.Link{Name: n3.Iface, NS: t.UPF, MAC: n3.MAC})
		},
		func() error { return t.GNB.AddAddress("n3g", netip.PrefixFrom(GNBN3, 24)) },
		func() error { return t.GNB.AddRoute(netip.PrefixFrom(UPFN3, 32), netip.Addr{}, "n3g") },
		func() error { return t.GNB.AddNeighbor("n3g", UPFN3, n3.MAC) },
		// access gateway ══ UPF port 2: the UPF answers no ARP, so its Junction address is static.
		func() error {
			return netns.AddVeth(netns.Link{Name: "gw-up", NS: t.AP, MAC: wifi.NextHopMAC}, netns.Link{Name: wifi.Iface, NS: t.UPF, MAC: wifi.MAC})
		},
		func() error { return t.AP.AddRoute(netip.PrefixFrom(UPFJunction, 32), netip.Addr{}, "gw-up") },
		func() error { return t.AP.AddNeighbor("gw-up", UPFJunction, wifi.MAC) },
		// As a W-AGF: its N3 address, and the UPF's, through the same port.
		func() error { return t.AP.AddAddress("gw-up", netip.PrefixFrom(WAGFN3, 32)) },
		func() error { return t.AP.AddRoute(netip.PrefixFrom(UPFN3, 32), netip.Addr{}, "gw-up") },
		func() error { return t.AP.AddNeighbor("gw-up", UPFN3, wifi.MAC) },
		// UPF port 3 ══ N6 ══ data network
		func() error {
			return netns.AddVeth(netns.Link{Name: n6.Iface, NS: t.UPF, MAC: n6.MAC}, netns.Link{Name: "dn0", NS: t.DN, MAC: n6.NextHopMAC})
		},
		func() error { return t.DN.AddAddress("dn0", netip.PrefixFrom(DNHost, 24)) },
		func() error { return t.DN.AddNeighbor("dn0", DNGateway, n6.MAC) },
		func() error { return t.DN.AddRoute(SessionPool, DNGateway, "dn0") },
		func() error {
			return noOffload(map[*netns.Namespace][]string{t.GNB: {"n3g"}, t.AP: {"gw-up"}, t.DN: {"dn0"}, t.UPF: {n3.Iface, wifi.Iface, n6.Iface}})
		},
		// The UPF's WiFi port sends a run of one leg's datagrams as one frame
		// (internal/softupf/ports, gso_linux.go), which the gateway forwards: cut by its
		// kernel toward an emulated link, whole toward a plain one (AddUE).
		func() error { return UDPSegmentation(t.UPF, wifi.Iface) },
		// Its N6 port sends a run of one TCP flow's segments (a UE's upload, decapsulated) as
		// one frame (tso_linux.go), which the data network's TCP takes whole.
		func() error { return TCPSegmentation(t.UPF, n6.Iface) },
	)
}

// AddUE creates a UE namespace with its radio link to the gNB and its WiFi link to the gateway.
// Start the gNB emulator after the last AddUE: it takes Radios as flags.
func (t *Topology) AddUE(spec UESpec) (*UE, error) {
	if len(spec.Addr3GPP) == 0 || len(spec.AddrWiFi) == 0 {
		return nil, fmt.Errorf("UE %s: a 3GPP and a WiFi address are needed", spec.Node)
	}
	ns, err := t.namespace(spec.Node)
	if err != nil {
		return nil, err
	}
	i := len(t.UEs)
	radio, gw := fmt.Sprintf("ran%d", i), fmt.Sprintf("gw%d", i)
	u := &UE{UESpec: spec, NS: ns, Line: gw}
	err = steps(
		func() error { return ns.Sysctl("net/ipv4/conf/all/rp_filter", "0") },
		func() error { return ns.Sysctl("net/ipv4/conf/default/rp_filter", "0") },
		// UE ran0 ══ gNB ran<i>: the gNB's radio address on every radio, a host route per UE.
		func() (err error) {
			u.Radio, u.RadioShapers, err = t.connect(u, "ran0", netns.Link{Name: radio, NS: t.GNB})
			return err
		},
		func() error { return t.GNB.AddAddress(radio, netip.PrefixFrom(GNBRadio, 32)) },
		func() error { return t.GNB.Sysctl("net/ipv4/conf/"+radio+"/rp_filter", "0") },
		// UE wlan0 ══ gateway gw<i>, through the shared cell when emulated.
		func() (err error) { u.WiFi, _, err = t.connect(u, "wlan0", netns.Link{Name: gw, NS: t.AP}); return err },
		func() error { return t.AP.AddAddress(gw, netip.PrefixFrom(WiFiGateway, 32)) },
		func() error {
			for _, a := range spec.Addr3GPP {
				if err := t.GNB.AddRoute(netip.PrefixFrom(a, 32), netip.Addr{}, radio); err != nil {
					return err
				}
			}
			for _, a := range spec.AddrWiFi {
				if err := t.AP.AddRoute(netip.PrefixFrom(a, 32), netip.Addr{}, gw); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			for iface, addrs := range map[string][]netip.Addr{"ran0": spec.Addr3GPP, "wlan0": spec.AddrWiFi} {
				for _, a := range addrs {
					if err := ns.AddAddress(iface, netip.PrefixFrom(a, 24)); err != nil {
						return err
					}
				}
			}
			return nil
		},
		u.Routes,
		func() error {
			return noOffload(map[*netns.Namespace][]string{ns: {"ran0", "wlan0"}, t.GNB: {radio}, t.AP: {gw}})
		},
		func() error {
			if t.Emulation != nil {
				return nil // the link emulator reads frames, as on the wire
			}
			return UDPSegmentation(t.AP, gw) // the UE's socket takes a run whole (UDP_GRO)
		},
	)
	if err != nil {
		return nil, fmt.Errorf("UE %s: %w", spec.Node, err)
	}
	t.UEs = append(t.UEs, u)
	t.Radios = append(t.Radios, radio)
	return u, nil
}

// connect joins the UE's interface ueIface to far: a veth pair, or with Emulation two, bridged by a
// link emulator in a namespace of its own (the radio's own shapers; WiFi's through the shared
// cell). It returns the end that faces the UE.
func (t *Topology) connect(u *UE, ueIface string, far netns.Link) (Wire, [2]*linkem.Shaper, error) {
	em := t.Emulation
	if em == nil {
		return Wire{NS: far.NS, Iface: far.Name}, [2]*linkem.Shaper{}, netns.AddVeth(netns.Link{Name: ueIface, NS: u.NS}, far)
	}
	// The emulator's interfaces live in a namespace without addresses or forwarding: in the
	// gateway's, the kernel would answer ARP on them and route around the emulator.
	ns, err := t.namespace("wire-" + u.Node + "-" + ueIface)
	if err != nil {
		return Wire{}, [2]*linkem.Shaper{}, err
	}
	w, shapers := Wire{NS: ns, Iface: "w-ue"}, em.Cell
	if ueIface == "ran0" {
		seed := uint64(10 + 2*len(t.UEs))
		shapers = [2]*linkem.Shaper{linkem.NewShaper(em.Radio, seed), linkem.NewShaper(em.Radio, seed+1)}
	}
	netSide := "w-net"
	err = steps(
		func() error {
			return netns.AddVeth(netns.Link{Name: ueIface, NS: u.NS}, netns.Link{Name: w.Iface, NS: w.NS})
		},
		func() error { return netns.AddVeth(netns.Link{Name: netSide, NS: w.NS}, far) },
		func() error { return noOffload(map[*netns.Namespace][]string{w.NS: {w.Iface, netSide}}) },
		func() error {
			l, err := linkem.Open(w.NS.Name, w.Iface, netSide, shapers[0], shapers[1])
			if err == nil {
				t.closers = append(t.closers, func() { l.Close() })
			}
			return err
		},
	)
	return w, shapers, err
}

// Routes sets the UE's routes to the UPF's Junction address, as a UE node's network manager
// does: through the gNB (preferred, as a cellular default) and through the WiFi gateway. Call it
// again after taking wlan0 or ran0 down at the UE: the kernel removes a link's routes with it.
func (u *UE) Routes() error {
	return steps(
		func() error {
			return run(u.NS, "ip", "route", "replace", UPFJunction.String()+"/32", "via", GNBRadio.String(), "dev", "ran0", "metric", "10", "onlink")
		},
		func() error {
			return run(u.NS, "ip", "route", "replace", UPFJunction.String()+"/32", "via", WiFiGateway.String(), "dev", "wlan0", "metric", "20", "onlink")
		},
	)
}

// UPFSpec is the UserPlaneFunction of this topology, reached over P4Runtime as p4rt says (the
// caller's software UPF: its address and security): what config/samples/upf.yaml declares.
func (t *Topology) UPFSpec(p4rt junctionv1.P4RuntimeEndpoint, pipelineConfigMap string) junctionv1.UserPlaneFunctionSpec {
	spec := junctionv1.UserPlaneFunctionSpec{
		P4Runtime: p4rt,
		Pipeline:  junctionv1.Pipeline{ConfigMapRef: junctionv1.LocalObjectReference{Name: pipelineConfigMap}},
		TunnelEndpoints: []junctionv1.TunnelEndpoint{{Name: "core",
			N3Address: junctionv1.IPv4Address(UPFN3.String()), JunctionAddress: junctionv1.IPv4Address(UPFJunction.String())}},
	}
	for _, p := range Ports {
		spec.Ports = append(spec.Ports, junctionv1.Port{Name: p.Name, Number: p.Number, Role: p.Role, MAC: junctionv1.MACAddress(p.MAC.String())})
	}
	for _, r := range []struct {
		dst  string
		port Port
	}{{"198.51.100.0/24", Ports[portN3]}, {"203.0.113.0/24", Ports[portWiFi]}, {"0.0.0.0/0", Ports[portN6]}} {
		spec.Routes = append(spec.Routes, junctionv1.Route{Destination: junctionv1.IPv4Prefix(r.dst), Port: r.port.Name, NextHopMAC: junctionv1.MACAddress(r.port.NextHopMAC.String())})
	}
	return spec
}

// UPFObject is UPFSpec as an object.
func (t *Topology) UPFObject(namespace, name string, p4rt junctionv1.P4RuntimeEndpoint, pipelineConfigMap string) *junctionv1.UserPlaneFunction {
	return &junctionv1.UserPlaneFunction{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: t.UPFSpec(p4rt, pipelineConfigMap)}
}

// AddressPool grants namespace this topology's session and UE addresses, as
// config/samples/addresspool.yaml does.
func AddressPool(namespace string) *junctionv1.AddressPool {
	p := &junctionv1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: namespace}, Spec: junctionv1.AddressPoolSpec{Namespace: namespace,
		SessionAddresses: []junctionv1.IPv4Prefix{junctionv1.IPv4Prefix(SessionPool.String())}}}
	for _, u := range UEPools {
		p.Spec.UEAddresses = append(p.Spec.UEAddresses, junctionv1.IPv4Prefix(u.String()))
	}
	return p
}

// DeviceGrant grants upf's namespace the P4Runtime device upf names, as
// config/samples/p4runtimetarget.yaml does: without it the operator does not connect.
func DeviceGrant(upf *junctionv1.UserPlaneFunction) *junctionv1.P4RuntimeTarget {
	ep := upf.Spec.P4Runtime
	return &junctionv1.P4RuntimeTarget{ObjectMeta: metav1.ObjectMeta{Name: upf.Namespace + "-" + upf.Name},
		Spec: junctionv1.P4RuntimeTargetSpec{Namespace: upf.Namespace, Address: ep.Address, DeviceID: ep.DeviceID, Role: ep.Role}}
}

// SoftUPFArgs are the software UPF's flags for its ports in this topology.
func (t *Topology) SoftUPFArgs() []string {
	args := []string{"--ports-netns", t.UPF.Name}
	for _, p := range Ports {
		args = append(args, "-i", fmt.Sprintf("%d@%s", p.Number, p.Iface))
	}
	return args
}

// GNBArgs are the gNB emulator's flags for this topology's UEs.
func (t *Topology) GNBArgs() []string {
	args := []string{"--netns", t.GNB.Name, "--n3-address", GNBN3.String()}
	for _, r := range t.Radios {
		args = append(args, "--radio-interface", r)
	}
	return args
}

// WAGFArgs are the gNB emulator's flags for a W-AGF in the access gateway's namespace whose fixed
// lines are those of ues: every packet that arrives on them goes into its tunnels, so each of
// these UEs' non-3GPP legs must be over N3 through WAGFN3.
func (t *Topology) WAGFArgs(ues ...*UE) []string {
	args := []string{"--role", "w-agf", "--netns", t.AP.Name, "--n3-address", WAGFN3.String()}
	for _, u := range ues {
		args = append(args, "--radio-interface", u.Line)
	}
	return args
}

// Close stops the emulators and deletes the namespaces (with every interface in them).
func (t *Topology) Close() {
	for i := len(t.closers) - 1; i >= 0; i-- {
		t.closers[i]()
	}
	t.closers = nil
}

// namespace creates the role's namespace (replacing one a crashed run left under a fixed name)
// and has Close delete it.
func (t *Topology) namespace(role string) (*netns.Namespace, error) {
	name := t.name(role)
	_ = exec.Command("ip", "netns", "del", name).Run()
	ns, err := netns.New(name)
	if err != nil {
		return nil, err
	}
	t.closers = append(t.closers, func() { ns.Close() })
	return ns, nil
}

func forwarding(ns *netns.Namespace) error {
	return steps(
		func() error { return ns.Sysctl("net/ipv4/ip_forward", "1") },
		func() error { return ns.Sysctl("net/ipv4/conf/all/rp_filter", "0") },
		func() error { return ns.Sysctl("net/ipv4/conf/default/rp_filter", "0") },
	)
}

// NoOffload turns off the offloads an AF_PACKET port cannot take (unsegmented, partially
// checksummed frames): the software UPF's ports, the link emulators' and BMv2's.
func NoOffload(ns *netns.Namespace, ifaces ...string) error {
	for _, i := range ifaces {
		if err := run(ns, "ethtool", "-K", i, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"); err != nil {
			return fmt.Errorf("%w (hack/tools.sh dataplane installs ethtool)", err)
		}
	}
	return nil
}

// UDPSegmentation lets iface send a UDP GSO frame on whole (tx-udp-segmentation, with the
// checksum offload it needs), as a veth and a NIC with USO do by default.
func UDPSegmentation(ns *netns.Namespace, iface string) error {
	if err := run(ns, "ethtool", "-K", iface, "tx", "on", "gso", "on", "tx-udp-segmentation", "on"); err != nil {
		return fmt.Errorf("%w (hack/tools.sh dataplane installs ethtool)", err)
	}
	return nil
}

// TCPSegmentation lets iface send a TCP GSO frame on whole (TSO, with the scatter-gather and
// checksum offloads it needs), as a veth and most NICs do by default.
func TCPSegmentation(ns *netns.Namespace, iface string) error {
	if err := run(ns, "ethtool", "-K", iface, "tx", "on", "sg", "on", "tso", "on"); err != nil {
		return fmt.Errorf("%w (hack/tools.sh dataplane installs ethtool)", err)
	}
	return nil
}

func noOffload(ifaces map[*netns.Namespace][]string) error {
	for ns, names := range ifaces {
		if err := NoOffload(ns, names...); err != nil {
			return err
		}
	}
	return nil
}

func run(ns *netns.Namespace, name string, args ...string) error {
	if out, err := ns.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// steps runs fns in order and stops at the first error.
func steps(fns ...func() error) error {
	for _, f := range fns {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}
