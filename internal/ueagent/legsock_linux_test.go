package ueagent

import (
	"bytes"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/test/netns"
)

// A leg's reader gives each datagram the time the kernel received it, not the time the agent
// read it: a probe reply that waited in the socket while the agent was busy must not read as
// queueing on the leg (batchReader).
func TestBatchReaderGivesTheKernelsReceiveTime(t *testing.T) {
	if want := unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))); stampSpace != want {
		t.Fatalf("stampSpace = %d, want unix.CmsgSpace of a timespec, %d", stampSpace, want)
	}
	r, tx := loopbackReader(t)
	// The kernel turns receive timestamps on a moment after the first socket asks (a deferred
	// static key); a leg's socket lives far longer.
	time.Sleep(100 * time.Millisecond)
	const datagrams, wait = 3, 200 * time.Millisecond
	sent := time.Now()
	for range datagrams {
		if _, err := tx.Write([]byte("probe reply")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(wait) // the agent is busy elsewhere
	bufs := make([][]byte, rxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	var got []time.Time
	for len(got) < datagrams {
		n, err := r.read(bufs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			got = append(got, r.arrival(i))
		}
	}
	read := time.Now()
	for i, at := range got {
		// Received on loopback as it was sent, within scheduling slack; read at least wait later.
		if at.IsZero() || at.Before(sent.Add(-time.Second)) || read.Sub(at) < wait {
			t.Errorf("datagram %d: received at %v, sent at %v and read at %v: want a receive time between the send and %v before the read",
				i, at.Format(time.StampMicro), sent.Format(time.StampMicro), read.Format(time.StampMicro), wait)
		}
	}
}

// A leg's socket is connected to the UPF's Junction endpoint (dialLeg): it sends there with no
// address of its own choosing, the kernel hands it only the UPF's datagrams, an ICMP error for
// one of its sends is an error the reader recognizes and reads past, and a leg whose interface
// has no route to the UPF opens as before (a socket bound to an interface takes an address it
// has no route to as on the link), so connecting changes nothing about when a leg comes up.
// Two namespaces joined by a veth: the UE's leg interface, and the UPF with a second address
// that plays a stranger.
func TestLegSocketTalksOnlyToTheUPF(t *testing.T) {
	netns.Require(t)
	ue, upfNS := netns.ForTest(t, "jxlegue"), netns.ForTest(t, "jxlegupf")
	if err := netns.AddVeth(netns.Link{Name: "wlan0", NS: ue}, netns.Link{Name: "ap0", NS: upfNS}); err != nil {
		t.Fatal(err)
	}
	leg, upf, stranger := netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	for _, a := range []struct {
		ns     *netns.Namespace
		iface  string
		prefix string
	}{{ue, "wlan0", "198.51.100.10/24"}, {upfNS, "ap0", "198.51.100.1/24"}, {upfNS, "ap0", "198.51.100.2/24"}} {
		if err := a.ns.AddAddress(a.iface, netip.MustParsePrefix(a.prefix)); err != nil {
			t.Fatal(err)
		}
	}
	upfEP := netip.AddrPortFrom(upf, wire.JunctionPort)

	if c, err := dialLeg(ue.Path(), leg, "wlan0", netip.MustParseAddrPort("203.0.113.1:2153")); err != nil {
		t.Fatalf("leg socket toward a UPF the interface has no route to: %v, want it open", err)
	} else {
		c.Close()
	}
	conn, err := dialLeg(ue.Path(), leg, "wlan0", upfEP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := newBatchReader(conn)
	if err != nil {
		t.Fatal(err)
	}
	listen := func(a netip.Addr) *net.UDPConn {
		var c *net.UDPConn
		if err := upfNS.Do(func() (err error) {
			c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, wire.JunctionPort)))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	bufs := make([][]byte, rxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	// read returns the first datagram the leg reads, or the error of its read.
	read := func() (string, error) {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.read(bufs); err != nil {
			return "", err
		}
		size, _ := r.datagram(0)
		return string(bufs[0][:size]), nil
	}

	upfConn, strangerConn := listen(upf), listen(stranger)
	if _, err := conn.Write([]byte("probe")); err != nil {
		t.Fatal(err)
	}
	_ = upfConn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	n, from, err := upfConn.ReadFromUDPAddrPort(b)
	if err != nil || string(b[:n]) != "probe" || from != netip.AddrPortFrom(leg, wire.JunctionPort) {
		t.Fatalf("the UPF got %q from %v (%v), want \"probe\" from %v", b[:n], from, err, netip.AddrPortFrom(leg, wire.JunctionPort))
	}
	legEP := net.UDPAddrFromAddrPort(netip.AddrPortFrom(leg, wire.JunctionPort))
	if _, err := strangerConn.WriteToUDP([]byte("spoofed"), legEP); err != nil {
		t.Fatal(err)
	}
	if _, err := upfConn.WriteToUDP([]byte("reply 1"), legEP); err != nil {
		t.Fatal(err)
	}
	if got, err := read(); err != nil || got != "reply 1" {
		t.Fatalf("the leg read %q (%v), want the UPF's \"reply 1\" and nothing from %v", got, err, stranger)
	}

	// The UPF's port closes: the leg's next send draws an ICMP port unreachable.
	upfConn.Close()
	if _, err := conn.Write([]byte("probe")); err != nil {
		t.Fatal(err)
	}
	if got, err := read(); !icmpError(err) {
		t.Fatalf("after an ICMP port unreachable the leg read %q (%v), want an error icmpError takes", got, err)
	}
	upfConn = listen(upf)
	if _, err := upfConn.WriteToUDP([]byte("reply 2"), legEP); err != nil {
		t.Fatal(err)
	}
	if got, err := read(); err != nil || got != "reply 2" {
		t.Fatalf("after the ICMP error the leg read %q (%v), want \"reply 2\"", got, err)
	}
}

// A run of datagrams the software UPF sends as one UDP GSO frame reaches a leg's socket whole
// (UDP_GRO): the reader says the run's segment size, and still the kernel's receive time
// (its control message comes after the segment size's).
func TestBatchReaderReadsAUDPGRORun(t *testing.T) {
	r, tx := loopbackReader(t)
	time.Sleep(100 * time.Millisecond) // receive timestamps, as above
	// Ten datagrams of 1,000 bytes and one of 300, in one send with UDP_SEGMENT (loopback keeps
	// it whole up to a socket with UDP_GRO), then one alone.
	run := make([]byte, 10*1000+300)
	for i := range run {
		run[i] = byte(i / 1000)
	}
	oob := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.SizeofCmsghdr])) = 1000
	if _, _, err := tx.WriteMsgUDP(run, oob, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Write([]byte("alone")); err != nil {
		t.Fatal(err)
	}
	bufs := make([][]byte, rxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, groRead)
	}
	type read struct{ size, seg int }
	var got []read
	for len(got) < 2 {
		n, err := r.read(bufs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			size, truncated := r.datagram(i)
			if truncated || r.arrival(i).IsZero() {
				t.Errorf("read %d: truncated %v, receive time %v", len(got), truncated, r.arrival(i))
			}
			if len(got) == 0 && !bytes.Equal(bufs[i][:size], run) {
				t.Errorf("the run's read differs from what was sent (%d bytes of %d)", size, len(run))
			}
			got = append(got, read{size, r.segment(i)})
		}
	}
	if want := []read{{len(run), 1000}, {5, 5}}; !slices.Equal(got, want) {
		t.Errorf("reads (size, segment) %v, want %v", got, want)
	}
}

// loopbackReader is a batchReader on a loopback socket and a socket that sends to it.
func loopbackReader(t *testing.T) (*batchReader, *net.UDPConn) {
	t.Helper()
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Close() })
	r, err := newBatchReader(rx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return r, tx
}
