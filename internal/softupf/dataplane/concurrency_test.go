package dataplane

import (
	"sync"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/wire"
)

// Packets flow on two goroutines while P4Runtime writes, register writes, probes and the
// reorder timer run; with -race this checks the locking scheme of package dataplane.
func TestConcurrentProcessingAndWrites(t *testing.T) {
	h := topology(t, func(c *Config) { c.Pool = NewPool(512); c.MaxHeld = 64 })
	h.pool = h.p.pool
	h.sink.pool = h.pool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(port uint32, frame []byte) {
		defer wg.Done()
		in := make([]*Packet, 0, 16)
		for {
			select {
			case <-stop:
				return
			default:
			}
			in = in[:0]
			for range 16 {
				pkt := h.pool.Get(stop)
				if pkt == nil {
					return
				}
				pkt.SetFrame(frame)
				pkt.InPort = port
				in = append(in, pkt)
			}
			for _, o := range h.p.Process(in, nil) {
				h.pool.Put(o)
			}
		}
	}
	wg.Add(3)
	go worker(portDN, fromDN(userPacket(64, false)))
	go worker(portWiFi, junctionWiFi(current(0, 50), upPacket(1, 64)))
	go func() {
		defer wg.Done()
		h.p.Run(chanCtx(stop))
	}()
	for i := range 300 {
		h.write(p4v1.Update_MODIFY, h.entry("sessions", map[string]any{"session_addr": ip4(sessAddr)}, 0, "set_session", map[string]uint64{
			"user_idx": user, "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": uint64(dlTEID + i),
			"ue_addr_3gpp": ip4(ue3GPP), "ue_addr_non3gpp": ip4(ueWiFi)}))
		h.setReg("rtt_3gpp", user, uint64(1000+i))
		h.setReg("reorder_state", user, 0)
		h.reg("rtt_non3gpp", user)
		h.drops(NoPath)
		h.process(portWiFi, junctionWiFi(wire.Header{Type: wire.TypeProbeAck}, wire.Control{Session: addr(sessAddr), Access: 2}))
		if i == 150 {
			if err := h.p.CommitPipeline(h.info, nil); err != nil {
				t.Fatal(err)
			}
			install(h)
		}
	}
	close(stop)
	wg.Wait()
}
