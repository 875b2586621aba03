// Package pathmon watches the paths of every user of a UPF through the copies of the RTT probes
// and link notifications the data plane sends as `probe_reports` digests (docs/pipeline.md),
// decides when a user's paths flip-flop and in-data-plane path updates must be suspended, and
// summarises each user's paths for the ATSSSSession status at a bounded rate.
//
// The decisions are pure functions of a user's state, a report and the time (detector.go); the
// Monitor (monitor.go) feeds them, carries out what they decide through an Actuator, and keeps
// the Prometheus metrics (metrics.go).
package pathmon

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// Access is an access network, encoded as in the pipeline (docs/pipeline.md).
type Access uint8

const (
	// AccessNone: no access (no leg is available).
	AccessNone Access = 0
	// Access3GPP is the 5G leg.
	Access3GPP Access = 1
	// AccessNon3GPP is the WiFi or wireline leg.
	AccessNon3GPP Access = 2
)

func (a Access) String() string {
	switch a {
	case Access3GPP:
		return "3gpp"
	case AccessNon3GPP:
		return "non3gpp"
	}
	return "none"
}

// slot is the array position of an access in per-access state (3GPP 0, non-3GPP 1).
func (a Access) slot() int { return int(a) - 1 }

func (a Access) valid() bool { return a == Access3GPP || a == AccessNon3GPP }

// Kind is what a report is about (the digest's kind member).
type Kind uint8

const (
	// KindRTT: a probe exchange measured the RTT of the access it arrived on.
	KindRTT Kind = 1
	// KindLinkDown: the UE reports the access down.
	KindLinkDown Kind = 2
	// KindLinkUp: the UE reports the access up again, with its last RTT estimate.
	KindLinkUp Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindRTT:
		return "rtt"
	case KindLinkDown:
		return "link_down"
	case KindLinkUp:
		return "link_up"
	}
	return "unknown"
}

// Report is one `probe_reports` digest message.
type Report struct {
	SessionAddr netip.Addr
	User        uint32
	Access      Access
	Kind        Kind
	RTT         time.Duration // microsecond resolution; 0 for a link-down
	// Suspended says path_updates_suspended[user] was set on the device when it sent the
	// report (the data plane then left the path-state registers alone).
	Suspended bool
}

// DigestMembers are the members of `probe_reports`, in the P4Info's struct order, with their
// widths in bits.
var DigestMembers = []struct {
	Name  string
	Width int
}{{"session_addr", 32}, {"user_idx", 32}, {"access", 8}, {"kind", 8}, {"rtt_us", 32}, {"suspended", 8}}

// DecodeReport reads one digest message given as its members' bytestrings by name (as
// upfclient decodes a digest list). Errors name the member at fault.
func DecodeReport(members map[string][]byte) (Report, error) {
	var v [6]uint64
	for i, m := range DigestMembers {
		b, ok := members[m.Name]
		if !ok {
			return Report{}, fmt.Errorf("probe_reports: member %s is missing", m.Name)
		}
		x, err := beUint(b)
		if err != nil || x>>m.Width != 0 {
			return Report{}, fmt.Errorf("probe_reports member %s: value 0x%x does not fit in %d bits", m.Name, b, m.Width)
		}
		v[i] = x
	}
	r := Report{
		SessionAddr: netip.AddrFrom4(u32bytes(uint32(v[0]))),
		User:        uint32(v[1]),
		Access:      Access(v[2]),
		Kind:        Kind(v[3]),
		RTT:         time.Duration(v[4]) * time.Microsecond,
		Suspended:   v[5] != 0,
	}
	if !r.Access.valid() {
		return Report{}, fmt.Errorf("probe_reports member access: %d is neither 1 (3GPP) nor 2 (non-3GPP)", v[2])
	}
	if r.Kind < KindRTT || r.Kind > KindLinkUp {
		return Report{}, fmt.Errorf("probe_reports member kind: %d is not 1 (rtt), 2 (link down) or 3 (link up)", v[3])
	}
	return r, nil
}

func beUint(b []byte) (uint64, error) {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	if len(b) > 8 {
		return 0, fmt.Errorf("too wide")
	}
	var x uint64
	for _, c := range b {
		x = x<<8 | uint64(c)
	}
	return x, nil
}

func u32bytes(x uint32) [4]byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], x)
	return b
}
