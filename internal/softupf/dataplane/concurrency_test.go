package dataplane

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

// Packets flow on two goroutines while P4Runtime writes, register writes, probes and the
// reorder timer run; with -race this checks the locking scheme of package dataplane. Both
// workers must get frames out while the writes go on, and the last write must be what the next
// packet sees.
func TestConcurrentProcessingAndWrites(t *testing.T) {
	h := topology(t, func(c *Config) { c.Pool = NewPool(512); c.MaxHeld = 64 })
	h.pool = h.p.pool
	h.sink.pool = h.pool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent [2]atomic.Int64 // frames out, per worker
	worker := func(w int, port uint32, frame []byte) {
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
				sent[w].Add(1)
				h.pool.Put(o)
			}
		}
	}
	wg.Add(3)
	go worker(0, portDN, fromDN(userPacket(64, false)))
	go worker(1, portWiFi, junctionWiFi(current(0, 50), upPacket(1, 64)))
	go func() {
		defer wg.Done()
		h.p.Run(chanCtx(stop))
	}()
	// 300 rounds of writes, and more until both workers have had frames out while they run: on
	// a loaded machine (CI runs bf-p4c and other race tests beside this one) a worker may get no
	// CPU in the first 300 rounds, while a write that starved Process keeps it at none until the
	// deadline.
	deadline := time.Now().Add(20 * time.Second)
	last := 0
	for i := 0; i < 300 || (sent[0].Load() == 0 || sent[1].Load() == 0) && time.Now().Before(deadline); i++ {
		last = i
		h.write(p4v1.Update_MODIFY, h.entry("sessions", map[string]any{"session_addr": ip4(sessAddr)}, 0, "set_session", map[string]uint64{
			"user_idx": user, "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": uint64(dlTEID + i),
			"ue_addr_3gpp": ip4(ue3GPP), "ue_addr_non3gpp": ip4(ueWiFi), "gateway_non3gpp": 0, "teid_non3gpp": 0, "usage_idx": sessUsage}))
		h.setReg("rtt_3gpp", user, uint64(1000+i))
		h.setReg("reorder_state", user, 0)
		h.reg("rtt_non3gpp", user)
		h.drops(contract.DropNoPath)
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
	for w, name := range []string{"downlink", "uplink"} {
		if sent[w].Load() == 0 {
			t.Errorf("the %s worker got no frame out while the writes ran", name)
		}
	}
	// The default application is active-standby on 3GPP (docs/pipeline.md) and rtt_3gpp is set:
	// the downlink goes out on N3 with the TEID of the last sessions write.
	out := h.process(portDN, fromDN(userPacket(64, false)))
	const gtpAt = 14 + 20 + 8 // Ethernet, IPv4 without options, UDP
	if len(out) != 1 || out[0].port != portGNB || len(out[0].frame) < gtpAt {
		t.Fatalf("downlink after the writes: %v, want one GTP-U frame to port %d", out, portGNB)
	}
	g, err := wire.ParseGTPU(out[0].frame[gtpAt:])
	if err != nil {
		t.Fatalf("downlink after the writes: %v", err)
	}
	if want := uint32(dlTEID + last); g.TEID != want {
		t.Errorf("downlink TEID %#x after the writes, want %#x (the last write)", g.TEID, want)
	}
}
