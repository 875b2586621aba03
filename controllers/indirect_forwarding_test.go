package controllers

import (
	"net/netip"
	"testing"
)

// A session's forwarding tunnel moves to another TEID after a second session took its old one
// (its entry written in between): the second session's tunnel stays; a session removed takes
// only its own.
func TestForwardingTunnelsKeepATEIDAnotherSessionTook(t *testing.T) {
	var f forwardingTunnels
	a := forwardingTarget{src: netip.MustParseAddr("192.0.2.1"), gnb: netip.MustParseAddr("198.51.100.12"), gnbTEID: 0x777}
	b := a
	b.gnbTEID = 0x888
	f.set("ns/a", 0x10, &a)
	f.set("ns/b", 0x10, &b) // a's forward_indirect entry moved off 0x10, b's took it
	f.set("ns/a", 0x20, &a)
	if got, ok := f.lookup(0x10); !ok || got.session != "ns/b" || got.gnbTEID != 0x888 {
		t.Errorf("TEID 0x10: %+v, %v; want session b's tunnel", got, ok)
	}
	if got, ok := f.lookup(0x20); !ok || got.session != "ns/a" {
		t.Errorf("TEID 0x20: %+v, %v; want session a's tunnel", got, ok)
	}
	f.set("ns/a", 0, nil)
	if _, ok := f.lookup(0x20); ok {
		t.Error("TEID 0x20 still relayed after session a went")
	}
	if _, ok := f.lookup(0x10); !ok {
		t.Error("session a's removal took session b's tunnel")
	}
}
