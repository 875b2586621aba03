package dataplane

import (
	"testing"
)

// The hot paths allocate nothing per packet: downlink (session, steering, Junction in GTP-U),
// uplink Junction DATA on either leg, plain GTP-U uplink and downlink, each counting its
// session's usage, and the downlink again once the session has QoS flows of its own (the last
// case installs them). Each frame must leave on the port
// its path sends it to, so that a drop path (cheaper, and also allocation-free) cannot stand in.
func TestHotPathsAllocateNothing(t *testing.T) {
	h := topology(t)
	qosFlows := func() { installQoSFlow(h, ip4(sessAddr), 1) }
	for _, tc := range []struct {
		name   string
		setup  func()
		inPort uint32
		frame  []byte
		out    uint32
	}{
		{"downlink", nil, portDN, fromDN(userPacket(64, false)), portGNB},
		{"uplink Junction DATA on 3GPP", nil, portGNB, junction3GPP(data(0), userPacket(64, true)), portDN},
		{"uplink Junction DATA on non-3GPP", nil, portWiFi, junctionWiFi(data(0), userPacket(64, true)), portDN},
		{"uplink plain GTP-U", nil, portGNB, fromGNB(ulTEID, userPacket(64, true)), portDN},
		{"downlink plain GTP-U", nil, portDN, singleAccess(h), portGNB},
		{"downlink in the default flow of a session with QoS flows", qosFlows, portDN, fromDN(userPacket(64, false)), portGNB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			in := make([]*Packet, 1)
			out := make([]*Packet, 0, 4)
			sent := 0
			allocs := testing.AllocsPerRun(1000, func() {
				pkt := h.pool.TryGet()
				pkt.SetFrame(tc.frame)
				pkt.InPort = tc.inPort
				in[0] = pkt
				out = h.p.Process(in, out[:0])
				for _, o := range out {
					if o.OutPort == tc.out {
						sent++
					}
					h.pool.Put(o)
				}
			})
			if sent != 1001 { // AllocsPerRun runs the function once more to warm up
				t.Fatalf("%d of 1001 frames left on port %d; drops %v", sent, tc.out, h.p.Stats().Drops)
			}
			if allocs != 0 {
				t.Errorf("%.1f allocations per packet", allocs)
			}
		})
	}
}
