package ueagent

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/linkem"
	"github.com/junction-atsss/junction/internal/testenv"
)

// A split uplink (load balance 50/50) over legs whose one-way delays differ by 20 ms (5G 25 ms
// each way, WiFi 5 ms, neither queueing) reaches the data network in the order the UE sent it:
// the agent holds WiFi's share for the difference, which it reads from its probes
// (docs/pipeline.md, "Uplink delay equalization"). The split sends runs of 64 datagrams on each
// leg (by sequence number, steer.Choose); without the hold, the last 20 ms of each 5G run, ten
// datagrams at this test's 500 a second, arrive behind the next WiFi run: about 8% of the stream
// (115 of 1,500 in a run with the hold taken out, 6 with it).
func TestSplitUplinkArrivesInOrder(t *testing.T) {
	fast := linkem.Params{Rate: 200e6, Delay: 5 * time.Millisecond, Queue: 1_000_000}
	slow := fast
	slow.Delay = 25 * time.Millisecond
	tb := newEmulatedTestbed(t, 1, newEmulation(slow, fast))
	u := tb.ues[0]
	metrics := testenv.FreeAddr(t)
	tb.startAgent(u, "--metrics-addr", metrics, "--metrics-secure=false")
	half := int32(50)
	pol := tb.policy("p", junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: &half}})
	create(t, pol, tb.session("s1", u, sessionAddr, 100, "p"))
	tb.waitReady("s1")
	tb.legState("s1", junctionv1.Access3GPP, junctionv1.LegUp, probeTimeout)
	tb.legState("s1", junctionv1.AccessNon3GPP, junctionv1.LegUp, probeTimeout)
	hold := func(access string) float64 {
		return scrapeCounter(t, metrics, "junction_ue_uplink_hold_seconds", `access="`+access+`"`)
	}
	// One probe reply on each leg sets the holds: WiFi about 20 ms (the gNB's GTP-U hop adds a
	// little on 5G), 5G none.
	testenv.Eventually(t, 10*time.Second, "the WiFi leg's uplink hold near the links' 20 ms", func() error {
		if h, h3 := hold("non-3GPP"), hold("3GPP"); h < 0.015 || h > 0.030 || h3 != 0 {
			return fmt.Errorf("holds: WiFi %.1f ms, 5G %.1f ms", h*1e3, h3*1e3)
		}
		return nil
	})

	var rx, tx *net.UDPConn
	must(t, tb.DN.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IP(dnHost.AsSlice()), Port: 7003})
		return err
	}))
	must(t, u.NS.Do(func() (err error) {
		tx, err = net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(sessionAddr)}, &net.UDPAddr{IP: net.IP(dnHost.AsSlice()), Port: 7003})
		return err
	}))
	t.Cleanup(func() { rx.Close(); tx.Close() })
	var (
		mu   sync.Mutex
		seqs []uint64
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			rx.SetReadDeadline(time.Now().Add(time.Second))
			n, err := rx.Read(buf)
			if err != nil {
				return
			}
			if n >= 8 {
				mu.Lock()
				seqs = append(seqs, binary.BigEndian.Uint64(buf))
				mu.Unlock()
			}
		}
	}()
	const sent, pps = 1500, 500
	msg := make([]byte, 200)
	start := time.Now()
	for i := range sent {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / pps)))
		binary.BigEndian.PutUint64(msg, uint64(i))
		if _, err := tx.Write(msg); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	<-done

	var late int
	var highest uint64
	for i, q := range seqs {
		if i > 0 && q < highest {
			late++
		}
		highest = max(highest, q)
	}
	held := scrapeCounter(t, metrics, "junction_ue_uplink_held_packets_total", `kind="held"`)
	t.Logf("%d of %d datagrams arrived, %d after a later one; %.0f packets waited", len(seqs), sent, late, held)
	if len(seqs) < sent*95/100 {
		t.Errorf("%d of %d datagrams arrived: the links drop nothing", len(seqs), sent)
	}
	if late > len(seqs)*3/100 {
		t.Errorf("%d of %d datagrams arrived after one sent later (at most 3%%): the split uplink is reordered", late, len(seqs))
	}
	if held < sent/4 {
		t.Errorf("%.0f packets waited on a delay line: want about half of the %d sent, WiFi's share", held, sent)
	}
}
