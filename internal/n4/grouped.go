package n4

import "github.com/wmnsk/go-pfcp/ie"

// groupedIE is go-pfcp's set of grouped IE types, read into a bit set once. go-pfcp looks the
// type up in a map behind a process-wide RWMutex for every IE it parses, sizes or marshals;
// at thousands of requests a second on two cores, that lock was 6% of the endpoint's CPU. A
// type added to go-pfcp's set later (ie.AddGroupedIEType) is not seen: nothing here adds one.
var groupedIE [1 << 16 / 64]uint64

func init() {
	for t := range 1 << 16 {
		if (&ie.IE{Type: uint16(t)}).IsGrouped() {
			groupedIE[t/64] |= 1 << (t % 64)
		}
	}
	ie.SetIsGroupedFun(func(t uint16) bool { return groupedIE[t/64]&(1<<(t%64)) != 0 })
}
