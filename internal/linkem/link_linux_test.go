package linkem

import (
	"encoding/binary"
	"math"
	"net"
	"net/netip"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-atsss/junction/test/netns"
)

// testLink is two hosts joined through a Link in a third namespace:
//
//	ns a: a0 10.98.0.1 ══ la [Link] lb ══ b0 10.98.0.2 :ns b
type testLink struct {
	a, b *netns.Namespace
	rx   *net.UDPConn // in b, :9000
	tx   *net.UDPConn // in a, to b
}

func newTestLink(t *testing.T, aToB, bToA *Shaper) *testLink {
	t.Helper()
	netns.Require(t)
	ns := func(p string) *netns.Namespace {
		n, err := netns.New(netns.UniqueName(p))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	tl := &testLink{a: ns("jla"), b: ns("jlb")}
	l := ns("jll")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(netns.AddVeth(netns.Link{Name: "a0", NS: tl.a}, netns.Link{Name: "la", NS: l}))
	must(netns.AddVeth(netns.Link{Name: "b0", NS: tl.b}, netns.Link{Name: "lb", NS: l}))
	must(tl.a.AddAddress("a0", netip.MustParsePrefix("10.98.0.1/24")))
	must(tl.b.AddAddress("b0", netip.MustParsePrefix("10.98.0.2/24")))
	for _, x := range []struct {
		ns *netns.Namespace
		i  string
	}{{tl.a, "a0"}, {l, "la"}, {l, "lb"}, {tl.b, "b0"}} {
		if out, err := x.ns.Command("ethtool", "-K", x.i, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off").CombinedOutput(); err != nil {
			t.Fatalf("ethtool: %v %s", err, out)
		}
	}
	link, err := Open(l.Name, "la", "lb", aToB, bToA)
	must(err)
	t.Cleanup(func() { link.Close() })
	must(tl.b.Do(func() (err error) {
		tl.rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 98, 0, 2), Port: 9000})
		return err
	}))
	must(tl.a.Do(func() (err error) {
		tl.tx, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 98, 0, 2), Port: 9000})
		return err
	}))
	tl.rx.SetReadBuffer(16 << 20)
	t.Cleanup(func() { tl.rx.Close(); tl.tx.Close() })
	// Resolve ARP before measuring.
	tl.tx.Write([]byte("warm"))
	tl.rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	if _, err := tl.rx.Read(buf); err != nil {
		t.Fatalf("nothing crossed the link: %v", err)
	}
	return tl
}

// arrival is one received datagram: its sequence number, size and one-way latency (both ends
// are this process, on one clock).
type arrival struct {
	seq  uint64
	size int
	at   time.Time
	lat  time.Duration
}

// send sends count datagrams of size bytes at pps, each stamped, and returns what arrived
// within 1 s after the last.
func (tl *testLink) send(t *testing.T, count, size int, pps float64) []arrival {
	t.Helper()
	var got []arrival
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		buf := make([]byte, 2048)
		for {
			tl.rx.SetReadDeadline(time.Now().Add(time.Second))
			n, err := tl.rx.Read(buf)
			now := time.Now()
			if err != nil {
				if done.Load() {
					return
				}
				continue
			}
			if n < 16 {
				continue
			}
			sent := time.Unix(0, int64(binary.BigEndian.Uint64(buf[8:])))
			got = append(got, arrival{seq: binary.BigEndian.Uint64(buf), size: n, at: now, lat: now.Sub(sent)})
		}
	}()
	msg := make([]byte, size)
	start := time.Now()
	for i := 0; i < count; i++ {
		if due := start.Add(time.Duration(float64(i) / pps * float64(time.Second))); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
		binary.BigEndian.PutUint64(msg, uint64(i))
		binary.BigEndian.PutUint64(msg[8:], uint64(time.Now().UnixNano()))
		tl.tx.Write(msg)
	}
	done.Store(true)
	<-finished
	return got
}

const frameOverhead = 14 + 20 + 8 // Ethernet, IPv4, UDP: what a Shaper counts beyond the payload

// The measured one-way delay, rate and loss are within 5% of what was configured. The delay
// the emulator adds is what comes on top of the path's own (veths, the emulator's goroutines),
// measured in the same run with no delay: on two busy cores the path alone took 1 ms in CI.
func TestLinkDelay(t *testing.T) {
	// The fastest and the median one-way delay of 300 frames.
	delays := func(delay time.Duration) (fastest, median time.Duration) {
		tl := newTestLink(t, NewShaper(Params{Delay: delay}, 1), NewShaper(Params{Delay: delay}, 2))
		got := tl.send(t, 300, 100, 500)
		if len(got) != 300 {
			t.Fatalf("%d of 300 arrived with no loss configured", len(got))
		}
		sort.Slice(got, func(i, j int) bool { return got[i].lat < got[j].lat })
		return got[0].lat, got[len(got)/2].lat
	}
	path, _ := delays(0)
	fastest, median := delays(20 * time.Millisecond)
	// A frame leaves when the emulator's timer fires, which a busy machine makes late, never
	// early: the fastest frame shows the delay the emulator adds (20 ms ± 5%), the median only
	// that most frames are not grossly late (CI's parallel packages on two cores have made it
	// 1 ms late).
	if added := fastest - path; added < 19*time.Millisecond || added > 21*time.Millisecond || median-path > 25*time.Millisecond {
		t.Fatalf("one-way delay %v fastest, %v median, beyond the path's own %v: want 20 ms ± 5%% added to the fastest frame, at most 25 ms to the median", fastest-path, median-path, path)
	}
}

func TestLinkRate(t *testing.T) {
	const rate = 20e6
	tl := newTestLink(t, NewShaper(Params{Rate: rate, Queue: 64 * 1500}, 1), NewShaper(Params{}, 2))
	// Offer 1.5x the rate for 3 s; measure the arrivals' rate after the queue filled.
	const size = 1400
	pps := 1.5 * rate / 8 / (size + frameOverhead)
	got := tl.send(t, int(3*pps), size, pps)
	if len(got) < 100 {
		t.Fatalf("%d arrived", len(got))
	}
	from, to := got[0].at.Add(500*time.Millisecond), got[len(got)-1].at
	var bytes int
	for _, a := range got {
		if a.at.After(from) {
			bytes += a.size + frameOverhead
		}
	}
	measured := float64(bytes*8) / to.Sub(from).Seconds()
	if math.Abs(measured-rate)/rate > 0.05 {
		t.Fatalf("measured %.2f Mbit/s, want %.0f ± 5%%", measured/1e6, rate/1e6)
	}
}

func TestLinkLoss(t *testing.T) {
	const loss = 0.05
	s := NewShaper(Params{Loss: loss}, 3)
	tl := newTestLink(t, s, NewShaper(Params{}, 4))
	// 100,000 frames: the binomial spread of the measured rate is 1.4% of 5%, so ± 5% is 3.6
	// standard deviations.
	const n = 100_000
	pps := 40_000.0
	if raceEnabled {
		pps = 10_000 // under the race detector the bridge cannot forward 40k frames/s on 2 cores
	}
	got := tl.send(t, n, 64, pps)
	measured := 1 - float64(len(got))/n
	if lost := s.Stats().Lost; uint64(len(got))+lost != n {
		t.Errorf("%d arrived and the shaper dropped %d of %d: %d lost elsewhere", len(got), lost, n, n-len(got)-int(lost))
	}
	if math.Abs(measured-loss)/loss > 0.05 {
		t.Fatalf("measured loss %.4f (%d of %d arrived), want %.2f ± 5%% (the shaper dropped %d)", measured, len(got), n, loss, s.Stats().Lost)
	}
}
