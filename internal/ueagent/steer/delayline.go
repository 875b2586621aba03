package steer

import (
	"encoding/binary"
	"time"

	"github.com/junction-atsss/junction/internal/wire"
)

// Uplink delay equalization (issue 31, docs/pipeline.md "Uplink delay equalization"): a split
// uplink (load balance, autonomous load balance) reaches the UPF over two legs whose one-way
// delays differ, queues included, and the UPF forwards it as it comes, so the server's TCP sees
// it reordered and answers with duplicate ACKs the UE's TCP takes for losses. The agent holds
// the faster leg's uplink for the difference instead, so that packets arrive in the order they
// were sent. The difference comes from the probes: a PROBE_REPLY carries the UPF's clock when it
// answered (upf_ts) and echoes the UE's when it sent the probe (ue_ts), so upf_ts - ue_ts is the
// uplink's one-way delay plus the clocks' offset, and the offset cancels between two legs to the
// same UPF.

// MaxUplinkHold bounds how long the agent holds a leg's uplink, for MaxReorderTimeout's reason:
// past TCP's minimum retransmission timeout the sender retransmits what only waits.
const MaxUplinkHold = MaxReorderTimeout

// UplinkOneWay is a probe's uplink one-way delay plus the UE's and UPF's clocks' offset, in µs,
// from the PROBE_REPLY's timestamps (both clocks' low 32 bits, so the difference wraps).
func UplinkOneWay(ueTS, upfTS uint32) int32 { return int32(upfTS - ueTS) }

// UplinkHold is how long to hold the uplink of a leg whose probe's UplinkOneWay is this so that
// it arrives with the other leg's, whose UplinkOneWay is other: the difference, 0 when this leg
// is the slower one, at most MaxUplinkHold.
func UplinkHold(this, other int32) time.Duration {
	d := time.Duration(other-this) * time.Microsecond
	return min(max(d, 0), MaxUplinkHold)
}

// PureACK reports whether pkt is a TCP segment that carries nothing but an acknowledgement (no
// data, no SYN, FIN or RST). It need not wait on a delay line: a late ACK slows the flow it
// acknowledges, while one that overtakes another is harmless (ACKs are cumulative).
func PureACK(pkt []byte) bool {
	if len(pkt) < wire.IPv4HeaderLen || pkt[0]>>4 != 4 || pkt[9] != wire.ProtoTCP || binary.BigEndian.Uint16(pkt[6:8])&0x1fff != 0 {
		return false
	}
	ihl := int(pkt[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:4]))
	if ihl < wire.IPv4HeaderLen || total > len(pkt) || total < ihl+20 {
		return false
	}
	tcp := pkt[ihl:total]
	const syn, rst, fin = 0x02, 0x04, 0x01
	return int(tcp[12]>>4)*4 == len(tcp) && tcp[13]&(syn|rst|fin) == 0
}

// DelayLine holds one leg's uplink frames, in order, until each is due. Its slots are copied
// into, not handed over, and keep their buffers: no allocation once each slot has held a frame.
// Not safe for concurrent use.
type DelayLine struct {
	slots [][]byte
	due   []time.Time
	head  int
	n     int
	last  time.Time // when the newest frame is due: none leaves before one ahead of it
}

// NewDelayLine makes a line of capacity frames.
func NewDelayLine(capacity int) *DelayLine {
	return &DelayLine{slots: make([][]byte, capacity), due: make([]time.Time, capacity)}
}

// Push queues a copy of frame due at now+hold, or when the frame ahead of it is due if that is
// later (a line never reorders). It returns false, queueing nothing, when the line is full.
func (d *DelayLine) Push(now time.Time, hold time.Duration, frame []byte) bool {
	if d.n == len(d.slots) {
		return false
	}
	i := (d.head + d.n) % len(d.slots)
	d.slots[i] = append(d.slots[i][:0], frame...)
	at := now.Add(hold)
	if d.n > 0 && at.Before(d.last) {
		at = d.last
	}
	d.due[i], d.last = at, at
	d.n++
	return true
}

// Pop takes the oldest frame if it is due at now, or whatever its time if force. The frame is
// valid until the next Push.
func (d *DelayLine) Pop(now time.Time, force bool) ([]byte, bool) {
	if d.n == 0 || (!force && d.due[d.head].After(now)) {
		return nil, false
	}
	f := d.slots[d.head]
	d.head = (d.head + 1) % len(d.slots)
	d.n--
	return f, true
}

// Next is when the oldest frame is due; zero when the line is empty.
func (d *DelayLine) Next() time.Time {
	if d.n == 0 {
		return time.Time{}
	}
	return d.due[d.head]
}

// Len is the number of frames held.
func (d *DelayLine) Len() int { return d.n }
