package tun

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/test/netns"
)

// inNamespace gives the test a fresh network namespace; CI must run it (root).
func inNamespace(t *testing.T) *netns.Namespace {
	t.Helper()
	netns.Require(t)
	ns, err := netns.New(netns.UniqueName("jtun"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// A real TUN with offloads, both ways: a datagram the namespace sends to a peer behind the TUN
// is read with its headers intact, and a packet written to the TUN (behind the zero virtio-net
// header Write adds) reaches a socket in the namespace.
func TestDeviceCarriesPacketsBothWays(t *testing.T) {
	ns := inNamespace(t)
	var d *Device
	if err := ns.Do(func() (err error) { d, err = Create(Config{Name: "jtest0", MTU: 1400, Offload: true}); return err }); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, args := range [][]string{{"link", "set", "jtest0", "up"}, {"addr", "add", "10.99.0.1/24", "dev", "jtest0"}} {
		if out, err := ns.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	if out, _ := ns.Command("ip", "link", "show", "jtest0").CombinedOutput(); !strings.Contains(string(out), "mtu 1400") {
		t.Fatalf("MTU not set: %s", out)
	}
	// A sender's MSS can be as small as 88 bytes: the kernel must not hand over more segments
	// than a Read of MaxSegments buffers takes.
	if out, _ := ns.Command("ip", "-d", "link", "show", "jtest0").CombinedOutput(); !strings.Contains(string(out), "gso_max_segs 128 ") {
		t.Fatalf("gso_max_segs not capped at 128: %s", out)
	}

	// Out of the namespace, into the TUN.
	var c *net.UDPConn
	if err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 99, 0, 1), Port: 7000})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.WriteToUDP([]byte("to the tun"), &net.UDPAddr{IP: net.IPv4(10, 99, 0, 2), Port: 7001}); err != nil {
		t.Fatal(err)
	}
	bufs, sizes := [][]byte{make([]byte, 2000)}, []int{0}
	for {
		n, err := d.Read(bufs, sizes, 16)
		if err != nil || n != 1 {
			t.Fatalf("Read: %d, %v", n, err)
		}
		p := bufs[0][16 : 16+sizes[0]]
		if p[0]>>4 != 4 || p[9] != 17 {
			continue // IPv6 router solicitations and the like
		}
		if !bytes.Equal(p[12:16], []byte{10, 99, 0, 1}) || !bytes.Equal(p[16:20], []byte{10, 99, 0, 2}) || string(p[28:]) != "to the tun" {
			t.Fatalf("read %x: want UDP 10.99.0.1 -> 10.99.0.2 'to the tun'", p)
		}
		if port := binary.BigEndian.Uint16(p[22:]); port != 7001 {
			t.Fatalf("destination port %d", port)
		}
		break
	}

	// Out of the TUN, into the namespace's socket.
	pkt := make([]byte, 16+28+len("from the tun"))
	ip := pkt[16:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{10, 99, 0, 2, 10, 99, 0, 1})
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4Checksum(ip))
	binary.BigEndian.PutUint16(ip[20:], 7001)
	binary.BigEndian.PutUint16(ip[22:], 7000)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+len("from the tun")))
	copy(ip[28:], "from the tun")
	if _, err := d.Write([][]byte{pkt}, 16); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 100)
	n, from, err := c.ReadFromUDP(got)
	if err != nil || string(got[:n]) != "from the tun" || from.Port != 7001 {
		t.Fatalf("socket read %q from %v: %v", got[:n], from, err)
	}
}

// A device that refuses writes (a TUN that is down answers EIO) has every refused packet
// counted, a coalesced run as all its segments: the agent counts them as drops.
func TestWriteCoalescedCountsRefusedPackets(t *testing.T) {
	ns := inNamespace(t)
	var d *Device
	if err := ns.Do(func() (err error) { d, err = Create(Config{Name: "jtest2", Offload: true}); return err }); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const mss, off = 1000, VirtioHeaderRoom
	data := bytes.Repeat([]byte{7}, mss)
	var bufs [][]byte
	// A run of three segments (one super-packet) and a segment after a sequence gap.
	for _, seq := range []uint32{100, 100 + mss, 100 + 2*mss, 100 + 5*mss} {
		bufs = append(bufs, append(make([]byte, off), segment(seq, data, 0x10)...))
	}
	if lost, err := d.WriteCoalesced(bufs, off); lost != 4 || err == nil {
		t.Fatalf("WriteCoalesced to a TUN that is down: %d lost, %v; want all 4 lost and an error", lost, err)
	}
}

func TestCreateRejectsLongNames(t *testing.T) {
	if _, err := Create(Config{Name: "a-name-of-16-chr"}); err == nil || !strings.Contains(err.Error(), "15") {
		t.Fatalf("a 16-byte name: %v, want an error naming the 15-byte limit", err)
	}
}

// Close unblocks a reader: the agent's uplink goroutine ends with the tunnel.
func TestCloseUnblocksRead(t *testing.T) {
	ns := inNamespace(t)
	var d *Device
	if err := ns.Do(func() (err error) { d, err = Create(Config{Name: "jtest1"}); return err }); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Read([][]byte{make([]byte, 2000)}, []int{0}, 0)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	d.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Read returned no error after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still blocked 10 s after Close")
	}
}
