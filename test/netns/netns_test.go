//go:build linux

package netns

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVethCarriesUDPBetweenNamespaces(t *testing.T) {
	Require(t)
	a, b := ForTest(t, "jnta"), ForTest(t, "jntb")
	macA, _ := net.ParseMAC("02:00:00:00:0a:01")
	macB, _ := net.ParseMAC("02:00:00:00:0b:01")
	if err := AddVeth(Link{Name: "va", NS: a, MAC: macA}, Link{Name: "vb", NS: b, MAC: macB}); err != nil {
		t.Fatal(err)
	}
	addrA, addrB := netip.MustParseAddr("10.231.0.1"), netip.MustParseAddr("10.231.0.2")
	if err := a.AddAddress("va", netip.PrefixFrom(addrA, 30)); err != nil {
		t.Fatal(err)
	}
	if err := b.AddAddress("vb", netip.PrefixFrom(addrB, 30)); err != nil {
		t.Fatal(err)
	}
	// Static neighbours in both directions: no ARP needed.
	if err := a.AddNeighbor("va", addrB, macB); err != nil {
		t.Fatal(err)
	}
	if err := b.AddNeighbor("vb", addrA, macA); err != nil {
		t.Fatal(err)
	}
	if err := a.AddRoute(netip.MustParsePrefix("10.232.0.0/24"), addrB, "va"); err != nil {
		t.Fatal(err)
	}
	if out, err := a.Command("ip", "route", "show", "10.232.0.0/24").CombinedOutput(); err != nil || !strings.Contains(string(out), "via 10.231.0.2 dev va") {
		t.Fatalf("route in %s: %q, %v", a, out, err)
	}
	if got, err := b.InterfaceMAC("vb"); err != nil || got.String() != macB.String() {
		t.Fatalf("InterfaceMAC(vb) = %v, %v; want %v", got, err, macB)
	}
	out, err := a.Command("ip", "neigh", "show", "dev", "va").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PERMANENT") {
		t.Fatalf("neighbour in %s: %q, %v", a, out, err)
	}

	// IPv6 is off inside the namespaces (quiet links), and /proc/sys follows the thread.
	var v6 []byte
	if err := a.Do(func() (err error) {
		v6, err = os.ReadFile(filepath.Join("/proc/sys/net/ipv6/conf/va/disable_ipv6"))
		return err
	}); err != nil || strings.TrimSpace(string(v6)) != "1" {
		t.Fatalf("disable_ipv6 on va = %q, %v", v6, err)
	}

	var server *net.UDPConn
	if err := b.Do(func() (err error) {
		server, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrB, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	var client *net.UDPConn
	if err := a.Do(func() (err error) {
		client, err = net.DialUDP("udp4", nil, server.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("junction")); err != nil {
		t.Fatal(err)
	}
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := server.ReadFromUDP(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "junction" || from.IP.String() != addrA.String() {
		t.Fatalf("got %q from %v", buf[:n], from)
	}

	// The root namespace never sees the test's interfaces.
	if _, err := net.InterfaceByName("va"); err == nil {
		t.Fatal("va is visible in the root namespace")
	}
}

func TestCloseRemovesNamespaceAndLinks(t *testing.T) {
	Require(t)
	ns, err := New(UniqueName("jntc"))
	if err != nil {
		t.Fatal(err)
	}
	root := UniqueName("jr")
	if err := AddVeth(Link{Name: root, NS: Root()}, Link{Name: "inner", NS: ns}); err != nil {
		ns.Close()
		t.Fatal(err)
	}
	if _, err := net.InterfaceByName(root); err != nil {
		ns.Close()
		t.Fatalf("root end missing: %v", err)
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ns.Path()); !os.IsNotExist(err) {
		t.Fatalf("%s still exists: %v", ns.Path(), err)
	}
	// Deleting the namespace destroys the inner end, and with it the root end.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := net.InterfaceByName(root); err != nil {
			break
		}
		if time.Now().After(deadline) {
			Root().DeleteLink(root)
			t.Fatalf("%s survived its peer's namespace", root)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestErrorsNameTheCommand(t *testing.T) {
	Require(t)
	err := (&Namespace{Name: UniqueName("jmissing")}).AddAddress("eth0", netip.MustParsePrefix("10.0.0.1/24"))
	if err == nil || !strings.Contains(err.Error(), "ip -n jmissing") {
		t.Fatalf("err = %v; want one naming the ip command", err)
	}
}
