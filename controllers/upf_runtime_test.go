package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-atsss/junction/internal/softupf/p4rt/p4rttest"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// A reconnect of the leader wins over its own earlier stream that the switch still holds (a
// healed partition): the new stream's election ID is higher, not a duplicate the switch refuses.
// A later leader outranks every stream of the earlier one.
func TestReconnectOutranksItsOwnHalfDeadStream(t *testing.T) {
	_, addr := p4rttest.Serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	var high atomic.Uint64
	leader := electionIDs(&high, 7)
	connect := func(ids func() (uint64, uint64)) *upfclient.Device {
		dev, err := upfclient.New(upfclient.Config{Address: addr, DeviceID: 1, ElectionID: ids})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = dev.Run(ctx) }()
		return dev
	}
	primary := func(dev *upfclient.Device, what string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		defer wcancel()
		if _, err := dev.WaitPrimary(wctx); err != nil {
			t.Fatalf("%s is not primary: %v (%+v)", what, err, dev.State())
		}
	}
	old := connect(leader)
	primary(old, "the first stream")
	// The same leader connects again while the switch still holds its first stream.
	primary(connect(leader), "the leader's reconnect")
	for deadline := time.Now().Add(5 * time.Second); old.State().Primary; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the earlier stream is still primary")
		}
	}
	primary(connect(electionIDs(&high, 8)), "the next leader")
}
