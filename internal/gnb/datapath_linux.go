package gnb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/netnsexec"
	"github.com/junction-atsss/junction/internal/tun"
	"github.com/junction-atsss/junction/internal/wire"
)

// Names and numbers the emulator owns in its namespace (one emulator per namespace).
const (
	TUNName = "gtp0"
	// routeTable holds "default dev gtp0"; radioRulePrio sends everything arriving on a radio
	// interface there, whatever its destination (the UE's packets are for the UPF).
	routeTable    = 2152
	radioRulePrio = 1000
	// headroom holds the outer GTP-U header with its options and container.
	headroom = 16
	bufSize  = headroom + 65536
)

// Options configure the data path.
type Options struct {
	Netns  string     // the namespace with the radio and N3 interfaces ("" the process's)
	N3     netip.Addr // the gNB's N3 address: source of uplink GTP-U, where the UPF sends downlink
	Radios []string   // the interfaces toward the UEs
}

// Datapath is the emulator's TUN, N3 socket and forwarding goroutines.
type Datapath struct {
	opts  Options
	log   logr.Logger
	table atomic.Pointer[Table]
	dev   *tun.Device
	n3    *net.UDPConn
	nl    *netlink.Handle
	wg    sync.WaitGroup
	m     *Metrics
}

// NewDatapath creates the TUN and the policy routing, opens the N3 socket and starts
// forwarding with an empty table.
func NewDatapath(opts Options, m *Metrics, log logr.Logger) (*Datapath, error) {
	d := &Datapath{opts: opts, log: log, m: m}
	d.table.Store(&Table{})
	nl, nsh, err := netnsexec.Handle(opts.Netns)
	if err != nil {
		return nil, err
	}
	if nsh != nil {
		nsh.Close()
	}
	d.nl = nl
	err = netnsexec.Do(opts.Netns, func() error {
		// The gNB forwards between its radios and the TUN; /proc/sys/net is the calling
		// thread's namespace.
		if err := setSysctl("/proc/sys/net/ipv4/ip_forward", "1"); err != nil {
			return fmt.Errorf("enabling IPv4 forwarding: %w", err)
		}
		if d.dev, err = tun.Create(tun.Config{Name: TUNName}); err != nil {
			return err
		}
		for _, dev := range append([]string{TUNName}, opts.Radios...) {
			// Uplink arrives on the radios and leaves through the TUN toward addresses the
			// radios do not route: strict reverse-path filtering would drop it.
			if err := setSysctl("/proc/sys/net/ipv4/conf/"+dev+"/rp_filter", "0"); err != nil {
				return fmt.Errorf("rp_filter on %s: %w", dev, err)
			}
		}
		d.n3, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(opts.N3, wire.GTPUPort)))
		if err != nil {
			return fmt.Errorf("N3 socket on %s: %w", opts.N3, err)
		}
		return nil
	})
	if err == nil {
		err = d.route()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	d.wg.Add(2)
	go d.uplink()
	go d.downlink()
	return d, nil
}

// route brings the TUN up and sends the radios' traffic into it (replacing what an earlier
// emulator left in the namespace).
func (d *Datapath) route() error {
	link, err := d.nl.LinkByName(TUNName)
	if err != nil {
		return err
	}
	if err := d.nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s up: %w", TUNName, err)
	}
	if err := d.nl.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Table: routeTable,
		Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, Scope: netlink.SCOPE_LINK}); err != nil {
		return fmt.Errorf("route table %d: %w", routeTable, err)
	}
	for _, radio := range d.opts.Radios {
		r := netlink.NewRule()
		r.IifName, r.Table, r.Priority, r.Family = radio, routeTable, radioRulePrio, unix.AF_INET
		if err := d.nl.RuleDel(r); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("rule iif %s: %w", radio, err)
		}
		if err := d.nl.RuleAdd(r); err != nil {
			return fmt.Errorf("rule iif %s lookup %d: %w", radio, routeTable, err)
		}
	}
	return nil
}

// SetTable replaces the bearers.
func (d *Datapath) SetTable(t *Table) {
	d.table.Store(t)
	d.m.bearers.Set(float64(t.Len()))
}

// Close stops forwarding and removes the TUN (its route goes with it) and the rules.
func (d *Datapath) Close() error {
	var errs []error
	if d.dev != nil {
		errs = append(errs, d.dev.Close())
	}
	if d.n3 != nil {
		errs = append(errs, d.n3.Close())
	}
	d.wg.Wait()
	if d.nl != nil {
		for _, radio := range d.opts.Radios {
			r := netlink.NewRule()
			r.IifName, r.Table, r.Priority, r.Family = radio, routeTable, radioRulePrio, unix.AF_INET
			if err := d.nl.RuleDel(r); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, err)
			}
		}
		d.nl.Close()
	}
	return errors.Join(errs...)
}

// uplink wraps what the UEs send in GTP-U toward their UPF.
func (d *Datapath) uplink() {
	defer d.wg.Done()
	bufs, sizes := [][]byte{make([]byte, bufSize)}, []int{0}
	for {
		if _, err := d.dev.Read(bufs, sizes, headroom); err != nil {
			if errors.Is(err, tun.ErrBadPacket) {
				d.m.drop("up", "TUNBadPacket")
				continue
			}
			if !errors.Is(err, os.ErrClosed) {
				d.log.Error(err, "TUN read failed; uplink stops")
			}
			return
		}
		pkt := bufs[0][headroom : headroom+sizes[0]]
		if len(pkt) < wire.IPv4HeaderLen || pkt[0]>>4 != 4 {
			d.m.drop("up", "NotIPv4")
			continue
		}
		b, ok := d.table.Load().Uplink(netip.AddrFrom4([4]byte(pkt[12:16])))
		if !ok {
			d.m.drop("up", "UnknownUE")
			continue
		}
		g := wire.GTPU{Flags: wire.GTPUFlags | wire.GTPUFlagExtension, Type: wire.GTPUTypeGPDU, TEID: b.UplinkTEID,
			NextExt: wire.GTPUExtPDUSession, PSC: [2]byte{0x10, b.UplinkQFI()}} // PDU type 1: UL PDU SESSION INFORMATION
		off := g.Prepend(bufs[0][:headroom+sizes[0]], headroom)
		if _, err := d.n3.WriteToUDPAddrPort(bufs[0][off:headroom+sizes[0]], netip.AddrPortFrom(b.UPF, wire.GTPUPort)); err != nil {
			d.m.drop("up", "SendError")
			continue
		}
		d.m.packets.WithLabelValues("up").Inc()
	}
}

// downlink unwraps G-PDUs for the UEs and hands them to the kernel, which routes them out of
// the UE's radio.
func (d *Datapath) downlink() {
	defer d.wg.Done()
	buf := make([]byte, bufSize)
	bufs := [][]byte{nil}
	for {
		n, _, err := d.n3.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				d.log.Error(err, "N3 read failed; downlink stops")
			}
			return
		}
		g, err := wire.ParseGTPU(buf[:n])
		if err != nil || g.Type != wire.GTPUTypeGPDU { // the UPF sends no Echo Requests
			d.m.drop("down", "BadGTPU")
			continue
		}
		b, ok := d.table.Load().Downlink(g.TEID)
		if !ok {
			d.m.drop("down", "UnknownTEID")
			continue
		}
		if !b.TakesDownlink(g.QFI()) {
			d.m.drop("down", "WrongQFI") // not the session's QoS flow: no radio bearer for it
			continue
		}
		inner := buf[g.HeaderLen() : wire.GTPUHeaderLen+int(g.Length)]
		if len(inner) < wire.IPv4HeaderLen || inner[0]>>4 != 4 || netip.AddrFrom4([4]byte(inner[16:20])) != b.UE {
			d.m.drop("down", "NotForUE") // a TEID carries only its UE's packets
			continue
		}
		bufs[0] = inner
		if _, err := d.dev.Write(bufs, 0); err != nil {
			d.m.drop("down", "TUNWrite")
			continue
		}
		d.m.packets.WithLabelValues("down").Inc()
	}
}

// Metrics are the emulator's Prometheus series.
type Metrics struct {
	packets *prometheus.CounterVec
	drops   *prometheus.CounterVec
	bearers prometheus.Gauge
}

// NewMetrics registers the series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		packets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_gnb_packets_total", Help: "Packets forwarded, by direction (up: radio to N3)."}, []string{"direction"}),
		drops:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_gnb_drops_total", Help: "Packets dropped, by direction and reason."}, []string{"direction", "reason"}),
		bearers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "junction_gnb_bearers", Help: "UEs served."}),
	}
	reg.MustRegister(m.packets, m.drops, m.bearers)
	return m
}

func (m *Metrics) drop(dir, reason string) { m.drops.WithLabelValues(dir, reason).Inc() }

// setSysctl sets a /proc/sys file to value unless it holds it already: a container's /proc/sys
// is read-only (the kind pod, hack/kind/objects/gnb-deployment), so there the namespace's owner sets
// them (hack/kind/dataplane.sh) and the emulator only checks.
func setSysctl(path, value string) error {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == value {
		return nil
	}
	return os.WriteFile(path, []byte(value), 0)
}
