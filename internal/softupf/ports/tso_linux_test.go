package ports

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// tcpFrame is segment seq of one upload (10.77.0.1:sport -> 10.77.0.2:5201) with size bytes of
// payload and the given flags, its checksums computed by wiretest.
func tcpFrame(seq uint32, size int, flags uint8, sport uint16) []byte {
	return wiretest.Build(wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 0, 9}, Src: [6]byte{2, 0, 0, 0, 0, 2}},
		wire.IPv4{TTL: 63, Src: [4]byte{10, 77, 0, 1}, Dst: [4]byte{10, 77, 0, 2}},
		wiretest.TCP{SrcPort: sport, DstPort: 5201, Seq: seq, Ack: 7, Flags: flags, Window: 512}, wiretest.Payload(size))
}

// TestTCPRunsOfABatch: tcpRun finds the runs tso_linux.go defines in a batch of frames.
func TestTCPRunsOfABatch(t *testing.T) {
	const ack, psh = 0x10, 0x18
	seg := func(i int) []byte { return tcpFrame(uint32(1000+1400*i), 1400, ack, 40000) }
	corrupt := seg(13)
	corrupt[60] ^= 1 // in the payload
	frames := [][]byte{
		seg(0), seg(1), seg(2), tcpFrame(1000+1400*3, 1400, psh, 40000), // a PSH ends a run, in it
		seg(4), seg(5), // 2
		seg(7),                                          // a gap in the sequence: alone
		tcpFrame(1000+1400*8, 1400, ack, 40001),         // another flow: alone
		seg(9), tcpFrame(1000+1400*10, 700, ack, 40000), // a shorter one ends a run, in it
		seg(11), seg(11), // the same sequence number twice: each alone
		corrupt,                               // a segment whose checksum fails: alone
		tcpFrame(1000+1400*14, 0, ack, 40000), // no payload: alone
		tcpFrame(1000+1400*14, 1400, 0x12, 40000), // SYN-ACK: alone
		seg(14), seg(15), // 2
	}
	want := []int{4, 2, 1, 1, 2, 1, 1, 1, 1, 1, 2}
	if runs := runsOf(packetsOf(frames), tcpRun); fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
}

// TestTCPRunCutByTheKernel: what the kernel makes of a TCP run where it segments (a hop or a
// device without TSO) is the run's segments as the pipeline made them, but for the IPv4
// identification (counted up from the first's) and header checksum; each TCP checksum is the
// segment's own. The run goes through the qdisc of an interface with its offloads off, which
// segments in software and completes the checksums from the pseudo-header sum the run carries.
func TestTCPRunCutByTheKernel(t *testing.T) {
	tb := newTestbed(t)
	ethtoolK(t, tb.upf, tb.u2, "tx", "off")
	tx := qdiscGSO(t, tb)
	defer tx.close()
	_, rec := recordingPeer(t, tb.peer, []Mapping{{2, tb.p2}})

	var want [][]byte // a run of 10: 9 full segments and a shorter one with PSH
	for i := range 10 {
		size, flags := 1400, uint8(0x10)
		if i == 9 {
			size, flags = 300, 0x18
		}
		want = append(want, tcpFrame(uint32(5000+1400*i), size, flags, 40000))
	}
	pkts := packetsOf(want)
	if n := tcpRun(pkts); n != len(want) {
		t.Fatalf("tcpRun: %d frames, want %d", n, len(want))
	}
	if err := newGSOScratch().sendTCP(tx, pkts); err != nil {
		t.Fatal(err)
	}
	got := rec.onWire(t, 2, len(want))
	for i, g := range got {
		w := want[i]
		if len(g) != len(w) || !bytes.Equal(g[:18], w[:18]) || !bytes.Equal(g[20:24], w[20:24]) || !bytes.Equal(g[26:], w[26:]) {
			t.Fatalf("segment %d:\ngot  %x\nwant %x (but for ID and header checksum)", i, g, w)
		}
		if id := binary.BigEndian.Uint16(g[18:]); id != uint16(i) {
			t.Errorf("segment %d: IPv4 identification %d, want %d", i, id, i)
		}
		if !wire.VerifyIPv4Checksum(g[14:34]) {
			t.Errorf("segment %d: IPv4 header checksum wrong", i)
		}
	}
}
