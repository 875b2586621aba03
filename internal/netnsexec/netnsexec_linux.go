// Package netnsexec runs code inside a named network namespace. A socket or TUN device stays in
// the namespace it was created in, whichever thread uses it later, so a process can serve its
// control plane (gRPC, the Kubernetes API) from its own namespace while its data-plane sockets
// and interfaces live in another: how the testbed runs several "nodes" on one machine. Netlink
// requests go through a Handle bound to the namespace instead.
package netnsexec

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// open returns a handle to the namespace: a name under /var/run/netns, or a path.
func open(name string) (netns.NsHandle, error) {
	if strings.Contains(name, "/") {
		return netns.GetFromPath(name)
	}
	return netns.GetFromName(name)
}

// Do runs fn on an OS thread inside the namespace name; "" runs it where the process is. fn must
// not start goroutines that need the namespace (they run on other threads).
func Do(name string, fn func() error) error {
	if name == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		// If returning to the original namespace fails, the thread stays locked and the
		// runtime discards it when this goroutine ends: nothing else runs in the wrong one.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("netns: current namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := open(name)
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			errc <- fmt.Errorf("netns %s: enter: %w", name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("netns %s: leave: %w", name, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Handle returns a netlink handle whose requests act in the namespace name ("" the process's),
// and the namespace handle for subscriptions (netlink.LinkSubscribeOptions.Namespace); close
// both when done.
func Handle(name string) (*netlink.Handle, *netns.NsHandle, error) {
	if name == "" {
		h, err := netlink.NewHandle()
		return h, nil, err
	}
	ns, err := open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("netns %s: %w", name, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return nil, nil, fmt.Errorf("netns %s: netlink: %w", name, err)
	}
	return h, &ns, nil
}
