// Package p4rttest serves the software UPF's P4Runtime server (its data plane, no ports) on a
// loopback address, for the tests of the parts that speak P4Runtime to it.
package p4rttest

import (
	"net"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/p4rt"
)

// Serve starts a server with device ID 1 until the test ends and returns it with its address.
func Serve(t testing.TB) (*p4rt.Server, string) {
	t.Helper()
	dp, err := dataplane.New(dataplane.Config{Pool: dataplane.NewPool(16), MaxHeld: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv := p4rt.New(dp, p4rt.Options{DeviceID: 1})
	gs := grpc.NewServer()
	p4v1.RegisterP4RuntimeServer(gs, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return srv, lis.Addr().String()
}
