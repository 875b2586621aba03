package ueagent

import (
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A leg's reader gives each datagram the time the kernel received it, not the time the agent
// read it: a probe reply that waited in the socket while the agent was busy must not read as
// queueing on the leg (batchReader).
func TestBatchReaderGivesTheKernelsReceiveTime(t *testing.T) {
	if want := unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))); stampSpace != want {
		t.Fatalf("stampSpace = %d, want unix.CmsgSpace of a timespec, %d", stampSpace, want)
	}
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	r, err := newBatchReader(rx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// The kernel turns receive timestamps on a moment after the first socket asks (a deferred
	// static key); a leg's socket lives far longer.
	time.Sleep(100 * time.Millisecond)
	const datagrams, wait = 3, 200 * time.Millisecond
	sent := time.Now()
	for range datagrams {
		if _, err := tx.Write([]byte("probe reply")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(wait) // the agent is busy elsewhere
	bufs := make([][]byte, rxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	var got []time.Time
	for len(got) < datagrams {
		n, err := r.read(bufs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			got = append(got, r.arrival(i))
		}
	}
	read := time.Now()
	for i, at := range got {
		// Received on loopback as it was sent, within scheduling slack; read at least wait later.
		if at.IsZero() || at.Before(sent.Add(-time.Second)) || read.Sub(at) < wait {
			t.Errorf("datagram %d: received at %v, sent at %v and read at %v: want a receive time between the send and %v before the read",
				i, at.Format(time.StampMicro), sent.Format(time.StampMicro), read.Format(time.StampMicro), wait)
		}
	}
}
