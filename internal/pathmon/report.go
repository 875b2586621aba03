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

	"github.com/junction-atsss/junction/internal/contract"
)

// slot is the array position of an access in per-access state (3GPP 0, non-3GPP 1).
func slot(a contract.Access) int { return int(a) - 1 }

// Report is one `probe_reports` digest message.
type Report struct {
	SessionAddr netip.Addr
	User        uint32
	Access      contract.Access
	Kind        contract.ReportKind
	RTT         time.Duration // microsecond resolution; 0 for a link-down
	// Loss is the loss (percent) the UE reported for the access: 0 for a link-down.
	Loss uint8
	// Suspended says path_updates_suspended[user] was set on the device when it sent the
	// report (the data plane then left the path-state registers alone).
	Suspended bool
}

// DecodeReport reads one digest message given as its members' bytestrings by name (as
// upfclient decodes a digest list). Errors name the member at fault.
func DecodeReport(members map[string][]byte) (Report, error) {
	var v [7]uint64
	for i, m := range contract.ProbeReportMembers {
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
		Access:      contract.Access(v[2]),
		Kind:        contract.ReportKind(v[3]),
		RTT:         time.Duration(v[4]) * time.Microsecond,
		Loss:        uint8(v[5]),
		Suspended:   v[6] != 0,
	}
	if !r.Access.Valid() {
		return Report{}, fmt.Errorf("probe_reports member access: %d is neither 1 (3GPP) nor 2 (non-3GPP)", v[2])
	}
	if r.Kind < contract.ReportRTT || r.Kind > contract.ReportLinkUp {
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
