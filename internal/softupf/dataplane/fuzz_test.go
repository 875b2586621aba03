package dataplane

import (
	"testing"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

// FuzzProcess feeds arbitrary frames to the pipeline with the test topology installed: no
// frame may panic, and every buffer must come back (sent, held or dropped).
//
//	go test -run '^$' -fuzz FuzzProcess -fuzztime 10s ./internal/softupf/dataplane/
func FuzzProcess(f *testing.F) {
	f.Add(fromDN(userPacket(64, false)))
	f.Add(fromGNB(ulTEID, userPacket(64, true)))
	f.Add(junction3GPP(data(0), userPacket(64, true)))
	f.Add(junctionWiFi(current(1, 100), upPacket(1, 64)))
	f.Add(junctionWiFi(exPath(1)))
	f.Add(junctionWiFi(wire.Header{Type: wire.TypeProbe}, wire.Control{Session: addr(sessAddr), Access: 2}))
	f.Add(junction3GPP(wire.Header{Type: wire.TypeLinkUp}, wire.Control{Session: addr(sessAddr), Access: 1, UETime: 9}))
	h := topology(f)
	overrideSession(h, uint64(contract.ModeRedundant), uint64(contract.Access3GPP), 0, 0)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > MaxFrame {
			return
		}
		h.now += 1000 // deadlines pass now and then
		pkt := h.pool.TryGet()
		if pkt == nil {
			t.Fatal("pool exhausted: a buffer leaked")
		}
		pkt.SetFrame(frame)
		pkt.InPort = portWiFi
		for _, o := range h.p.Process([]*Packet{pkt}, nil) {
			if len(o.Frame()) < wire.EthernetHeaderLen {
				t.Fatalf("emitted a %d-byte frame", len(o.Frame()))
			}
			h.pool.Put(o)
		}
		out, _ := h.p.releaseDue(nil)
		for _, o := range out {
			h.pool.Put(o)
		}
		if held := h.p.Stats().Held; h.pool.Free()+held != h.pool.Size() {
			t.Fatalf("%d free + %d held != %d buffers", h.pool.Free(), held, h.pool.Size())
		}
	})
}
