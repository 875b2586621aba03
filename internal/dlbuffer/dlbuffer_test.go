package dlbuffer

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

// frame is an untagged Ethernet frame with an IPv4 header to dst and one payload byte n.
func frame(dst string, n byte) []byte {
	f := make([]byte, 14+20+1)
	f[12], f[13] = 0x08, 0x00
	f[14] = 0x45
	a := netip.MustParseAddr(dst).As4()
	copy(f[14+16:], a[:])
	f[len(f)-1] = n
	return f
}

func TestHoldsInOrderAndReportsTheFirstFrameOnce(t *testing.T) {
	b := New()
	b.Start("ns/s1", netip.MustParseAddr("10.45.0.1"))
	var firsts int
	for i := range 5 {
		o, key, first := b.Hold(frame("10.45.0.1", byte(i)))
		if o != Held || key != "ns/s1" {
			t.Fatalf("frame %d: %v for %q, want held for ns/s1", i, o, key)
		}
		if first {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d frames reported as first, want 1", firsts)
	}
	if o, _, _ := b.Hold(frame("10.45.0.2", 9)); o != NotBuffering {
		t.Errorf("a frame to an address no session buffers: %v, want not_buffering", o)
	}
	got := b.Stop("ns/s1", true)
	if len(got) != 5 {
		t.Fatalf("Stop returned %d frames, want 5", len(got))
	}
	for i, f := range got {
		if !bytes.Equal(f, frame("10.45.0.1", byte(i))) {
			t.Errorf("frame %d comes back as %x", i, f)
		}
	}
	if o, _, _ := b.Hold(frame("10.45.0.1", 0)); o != Late {
		t.Errorf("a frame just after the release: %v, want late", o)
	}
	b.Start("ns/s1", netip.MustParseAddr("10.45.0.1"))
	if _, _, first := b.Hold(frame("10.45.0.1", 0)); !first {
		t.Errorf("buffering again: its first frame is not reported")
	}
}

func TestKeepsNoMoreThanASessionMayHold(t *testing.T) {
	b := New()
	b.Start("a", netip.MustParseAddr("10.45.0.1"))
	for i := range MaxFrames {
		if o, _, _ := b.Hold(frame("10.45.0.1", byte(i))); o != Held {
			t.Fatalf("frame %d: %v", i, o)
		}
	}
	if o, _, _ := b.Hold(frame("10.45.0.1", 0)); o != Full {
		t.Errorf("frame %d: %v, want full", MaxFrames+1, o)
	}
	if n := len(b.Stop("a", false)); n != MaxFrames {
		t.Errorf("held %d, want %d", n, MaxFrames)
	}
}

func TestKeepsNoMoreThanTheUPFMayHold(t *testing.T) {
	b := New()
	big := make([]byte, 1<<20)
	copy(big, frame("10.45.0.1", 0))
	held := 0
	for i := range MaxBytes>>20 + 8 {
		key := string(rune('a' + i))
		addr := netip.AddrFrom4([4]byte{10, 46, 0, byte(i)})
		b.Start(key, addr)
		f := append([]byte(nil), big...)
		a := addr.As4()
		copy(f[14+16:], a[:])
		if o, _, _ := b.Hold(f); o == Held {
			held++
		}
	}
	if held != MaxBytes>>20 {
		t.Errorf("held %d frames of 1 MiB, want %d (MaxBytes)", held, MaxBytes>>20)
	}
}

func TestAModifiedSessionHoldsForItsNewAddress(t *testing.T) {
	b := New()
	b.Start("a", netip.MustParseAddr("10.45.0.1"))
	b.Hold(frame("10.45.0.1", 1))
	b.Start("a", netip.MustParseAddr("10.45.0.9"))
	if o, _, _ := b.Hold(frame("10.45.0.1", 2)); o != NotBuffering {
		t.Errorf("the old address still buffers: %v", o)
	}
	if o, _, _ := b.Hold(frame("10.45.0.9", 3)); o != Held {
		t.Errorf("the new address: %v, want held", o)
	}
	if n := len(b.Stop("a", true)); n != 2 {
		t.Errorf("holds %d frames, want 2 (one before the change, one after)", n)
	}
}

func TestIgnoresWhatIsNotAnIPv4Frame(t *testing.T) {
	b := New()
	b.Start("a", netip.MustParseAddr("10.45.0.1"))
	arp := frame("10.45.0.1", 0)
	arp[12], arp[13] = 0x08, 0x06
	for name, f := range map[string][]byte{"ARP": arp, "short": frame("10.45.0.1", 0)[:30], "empty": nil} {
		if o, _, _ := b.Hold(f); o != NotBuffering {
			t.Errorf("%s: %v, want not_buffering", name, o)
		}
	}
}

func TestAFrameIsLateOnlyForLingerAfterARelease(t *testing.T) {
	b := New()
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }
	b.Start("a", netip.MustParseAddr("10.45.0.1"))
	b.Start("b", netip.MustParseAddr("10.45.0.2"))
	b.Stop("a", true)
	b.Stop("b", false) // deleted: its frames are nobody's
	if o, _, _ := b.Hold(frame("10.45.0.2", 0)); o != NotBuffering {
		t.Errorf("a frame of a session that went: %v, want not_buffering", o)
	}
	now = now.Add(Linger)
	if o, key, _ := b.Hold(frame("10.45.0.1", 0)); o != Late || key != "a" {
		t.Errorf("a frame Linger after the release: %v for %q, want late for a", o, key)
	}
	now = now.Add(time.Millisecond)
	if o, _, _ := b.Hold(frame("10.45.0.1", 0)); o != NotBuffering {
		t.Errorf("a frame past Linger: %v, want not_buffering", o)
	}
}
