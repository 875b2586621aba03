package desired

import (
	"bytes"
	"strings"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func policy(name string, id uint16, prec int32, td junctionv1.TrafficDescriptor, m junctionv1.SteeringMode) Policy {
	return Policy{Name: name, AppID: id, Spec: junctionv1.SteeringPolicySpec{Precedence: prec, TrafficDescriptor: td, Steering: m}}
}

var (
	smallestDelay = junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay}
	loadBalance30 = junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptr[int32](30)}}
	activeWiFi    = junctionv1.SteeringMode{Mode: junctionv1.ModeActiveStandby, ActiveStandby: &junctionv1.ActiveStandby{Active: junctionv1.AccessNon3GPP}}
)

func TestEncodeSteering(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode junctionv1.SteeringMode
		th   *junctionv1.Thresholds
		want Steering
	}{
		{"active-standby carries the active access", activeWiFi, nil, Steering{Mode: 1, Access: 2}},
		{"smallest-delay has no parameters", smallestDelay, nil, Steering{Mode: 2}},
		{"a 30 percent split becomes 38 of 128", loadBalance30, nil, Steering{Mode: 3, Ratio3GPP: 38}},
		{"a 100 percent split sends everything on 3GPP", junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{ThreeGPPPercent: ptr[int32](100)}}, nil, Steering{Mode: 3, Ratio3GPP: 128}},
		{"autonomous load-balance is its own mode", junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance, LoadBalance: &junctionv1.LoadBalance{Autonomous: true}}, nil, Steering{Mode: 6}},
		{"priority-based carries the access and its threshold in microseconds", junctionv1.SteeringMode{Mode: junctionv1.ModePriorityBased, PriorityBased: &junctionv1.PriorityBased{PriorityAccess: junctionv1.Access3GPP, RTTThreshold: "40ms"}}, nil, Steering{Mode: 4, Access: 1, RTTThresholdUS: 40000}},
		{"redundant has no parameters", junctionv1.SteeringMode{Mode: junctionv1.ModeRedundant}, nil, Steering{Mode: 5}},
		{"a Rel-17 RTT threshold applies to other modes", smallestDelay, &junctionv1.Thresholds{RTT: "150ms"}, Steering{Mode: 2, RTTThresholdUS: 150000}},
		// docs/pipeline.md: loss_limit_pct is packetLossPercent + 1, 0 being no limit.
		{"a 10 percent loss threshold is a limit of 11", activeWiFi, &junctionv1.Thresholds{PacketLossPercent: ptr[int32](10)}, Steering{Mode: 1, Access: 2, LossLimitPct: 11}},
		{"a 0 percent loss threshold is a limit of 1, not none", activeWiFi, &junctionv1.Thresholds{PacketLossPercent: ptr[int32](0)}, Steering{Mode: 1, Access: 2, LossLimitPct: 1}},
		{"a 100 percent loss threshold still fits in 8 bits", activeWiFi, &junctionv1.Thresholds{RTT: "20ms", PacketLossPercent: ptr[int32](100)}, Steering{Mode: 1, Access: 2, RTTThresholdUS: 20000, LossLimitPct: 101}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeSteering(tc.mode, tc.th)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := EncodeSteering(junctionv1.SteeringMode{Mode: junctionv1.ModeLoadBalance}, nil); err == nil || !strings.Contains(err.Error(), "steering.loadBalance") {
		t.Errorf("a load-balance without parameters should name steering.loadBalance, got %v", err)
	}
}

func TestApplicationEntries(t *testing.T) {
	t.Run("one prefix and one port give one entry with every field encoded", func(t *testing.T) {
		p := policy("video", 7, 10, junctionv1.TrafficDescriptor{
			DestinationPrefixes: []junctionv1.IPv4Prefix{"198.18.10.0/24"},
			DestinationPorts:    []junctionv1.PortRange{{From: 443}},
			Protocol:            junctionv1.ProtocolTCP,
		}, loadBalance30)
		es, err := ApplicationEntries(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 {
			t.Fatalf("got %d entries", len(es))
		}
		e := es[0]
		if e.Table != "applications" || e.Action != "set_application" || e.Priority != 65525 {
			t.Errorf("entry %+v", e)
		}
		want := []Match{
			{Field: "remote_addr", Kind: Ternary, Value: []byte{198, 18, 10, 0}, Mask: []byte{255, 255, 255, 0}},
			{Field: "proto", Kind: Ternary, Value: []byte{6}, Mask: []byte{0xff}},
			{Field: "remote_port", Kind: Range, Low: []byte{1, 0xbb}, High: []byte{1, 0xbb}},
		}
		if len(e.Match) != len(want) {
			t.Fatalf("matches %+v", e.Match)
		}
		for i := range want {
			if e.Match[i].Key() != want[i].Key() {
				t.Errorf("match %d = %+v, want %+v", i, e.Match[i], want[i])
			}
		}
		wantParams := []Param{{"app_id", []byte{0, 7}}, {"mode", []byte{3}}, {"access", []byte{0}}, {"ratio_3gpp", []byte{38}}, {"rtt_threshold_us", []byte{0, 0, 0, 0}}, {"loss_limit_pct", []byte{0}}}
		if !e.SameAction(Entry{Action: "set_application", Params: wantParams}) {
			t.Errorf("params %+v", e.Params)
		}
	})
	t.Run("prefixes and port ranges multiply", func(t *testing.T) {
		p := policy("games", 8, 20, junctionv1.TrafficDescriptor{
			DestinationPrefixes: []junctionv1.IPv4Prefix{"198.18.20.0/24", "198.18.21.0/24"},
			DestinationPorts:    []junctionv1.PortRange{{From: 3074, To: ptr[int32](3079)}, {From: 9000}},
			Protocol:            junctionv1.ProtocolUDP,
		}, smallestDelay)
		es, err := ApplicationEntries(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 4 {
			t.Errorf("got %d entries, want 4", len(es))
		}
	})
	t.Run("an empty descriptor is one match-all entry", func(t *testing.T) {
		es, err := ApplicationEntries(policy("default", 9, 65000, junctionv1.TrafficDescriptor{}, activeWiFi))
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || len(es[0].Match) != 0 || es[0].Priority != 535 {
			t.Errorf("got %+v", es)
		}
	})
	t.Run("a default route prefix is a don't-care", func(t *testing.T) {
		es, _ := ApplicationEntries(policy("any", 9, 1, junctionv1.TrafficDescriptor{DestinationPrefixes: []junctionv1.IPv4Prefix{"0.0.0.0/0"}}, activeWiFi))
		if len(es) != 1 || len(es[0].Match) != 0 {
			t.Errorf("got %+v", es)
		}
	})
}

func sampleUPF() junctionv1.UserPlaneFunctionSpec {
	return junctionv1.UserPlaneFunctionSpec{
		TunnelEndpoints: []junctionv1.TunnelEndpoint{{Name: "core", N3Address: "192.0.2.1", JunctionAddress: "192.0.2.2"}},
		Ports:           []junctionv1.Port{{Name: "n6", Number: 3, MAC: "02:00:00:00:01:03"}},
		Routes:          []junctionv1.Route{{Destination: "0.0.0.0/0", Port: "n6", NextHopMAC: "02:00:00:00:02:03"}},
	}
}

func TestUPFEntries(t *testing.T) {
	t.Run("endpoints, local addresses and routes are derived from the spec", func(t *testing.T) {
		es, err := UPFEntries(sampleUPF())
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, e := range es {
			count[e.Table]++
		}
		if count["tunnel_endpoints"] != 1 || count["local_addresses"] != 2 || count["routes"] != 1 {
			t.Fatalf("tables %v", count)
		}
		r := es[len(es)-1]
		if r.Match[0].PrefixLen != 0 || !bytes.Equal(r.Params[0].Value, []byte{0, 3}) || !bytes.Equal(r.Params[2].Value, []byte{2, 0, 0, 0, 2, 3}) {
			t.Errorf("route %+v", r)
		}
	})
	t.Run("one address used for GTP-U and Junction is one local address", func(t *testing.T) {
		spec := sampleUPF()
		spec.TunnelEndpoints[0].JunctionAddress = "192.0.2.1"
		es, _ := UPFEntries(spec)
		n := 0
		for _, e := range es {
			if e.Table == "local_addresses" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d local addresses", n)
		}
	})
	t.Run("a route through an unknown port is an error naming the route", func(t *testing.T) {
		spec := sampleUPF()
		spec.Routes[0].Port = "n9"
		if _, err := UPFEntries(spec); err == nil || !strings.Contains(err.Error(), "routes[0].port") {
			t.Errorf("got %v", err)
		}
	})
}

func session(override *junctionv1.SteeringMode, policies ...Policy) Session {
	return Session{
		Name: "alice",
		Spec: junctionv1.ATSSSSessionSpec{
			SessionAddress: "10.60.0.1",
			AccessLegs: junctionv1.AccessLegs{
				ThreeGPP:    &junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.1", GNBAddress: "198.51.100.10", UplinkTEID: 4097, DownlinkTEID: 8193},
				NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: "203.0.113.11"},
			},
			ModeOverride: override,
		},
		UserIndex: 5, PeerIndex: 2, UsageIndex: 9, Policies: policies,
	}
}

func tables(es []Entry) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[e.Table]++
	}
	return m
}

func TestSessionEntries(t *testing.T) {
	games := policy("games", 8, 20, junctionv1.TrafficDescriptor{}, smallestDelay)
	video := policy("video", 7, 10, junctionv1.TrafficDescriptor{}, loadBalance30)

	t.Run("a smallest-delay session is summarized: a sessions entry and its uplink TEID", func(t *testing.T) {
		s := session(nil, games)
		if k, _ := Lookup(s.Spec, s.Policies); k != junctionv1.LookupSummarized {
			t.Fatalf("lookup %s", k)
		}
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["sessions"] != 1 || got["uplink_tunnels"] != 1 || got["session_overrides"] != 0 {
			t.Errorf("tables %v", got)
		}
		// docs/pipeline.md: decap_gtpu(access, usage_idx), access 1 = 3GPP; set_session(user_idx,
		// endpoint_idx, peer_idx, teid, ue_addr_3gpp, ue_addr_non3gpp, gateway_non3gpp,
		// teid_non3gpp, usage_idx), the gateway 0 for a plain non-3GPP leg.
		if up := es[0]; up.Action != "decap_gtpu" || len(up.Params) != 2 || !bytes.Equal(up.Params[0].Value, []byte{1}) ||
			!bytes.Equal(up.Params[1].Value, []byte{0, 0, 0, 9}) {
			t.Errorf("uplink TEID entry %+v, want decap_gtpu(access 1, usage_idx 9)", up)
		}
		se := es[1]
		want := [][]byte{{0, 0, 0, 5}, {0}, {0, 2}, {0, 0, 0x20, 0x01}, {10, 45, 0, 1}, {203, 0, 113, 11}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 9}}
		if len(se.Params) != len(want) {
			t.Fatalf("set_session has %d params, want %d", len(se.Params), len(want))
		}
		for i, w := range want {
			if !bytes.Equal(se.Params[i].Value, w) {
				t.Errorf("param %s = %v, want %v", se.Params[i].Name, se.Params[i].Value, w)
			}
		}
	})
	t.Run("a non-3GPP leg over N3 adds its uplink TEID (access 2) and its gateway and TEID to set_session", func(t *testing.T) {
		s := session(nil, games)
		s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWireline, UEAddress: "203.0.113.11",
			GatewayAddress: "198.51.100.20", UplinkTEID: 0x3001, DownlinkTEID: 0x3002}
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["sessions"] != 1 || got["uplink_tunnels"] != 2 {
			t.Fatalf("tables %v", got)
		}
		n3 := es[1]
		if !bytes.Equal(n3.Match[0].Value, []byte{0, 0, 0x30, 0x01}) || n3.Action != "decap_gtpu" ||
			!bytes.Equal(n3.Params[0].Value, []byte{2}) || !bytes.Equal(n3.Params[1].Value, []byte{0, 0, 0, 9}) {
			t.Errorf("non-3GPP uplink TEID entry %+v, want teid 0x3001 -> decap_gtpu(access 2, usage_idx 9)", n3)
		}
		se := es[2]
		if len(se.Params) != 9 || se.Params[6].Name != "gateway_non3gpp" || !bytes.Equal(se.Params[6].Value, []byte{198, 51, 100, 20}) ||
			se.Params[7].Name != "teid_non3gpp" || !bytes.Equal(se.Params[7].Value, []byte{0, 0, 0x30, 0x02}) {
			t.Errorf("set_session %+v, want gateway_non3gpp 198.51.100.20 and teid_non3gpp 0x3002", se.Params)
		}
	})
	t.Run("an inactive leg gets nothing: no uplink TEID, no QFI tunnel, its address 0 in set_session", func(t *testing.T) {
		// docs/n4.md, "An access not active": the UPF installs nothing for a dropDownlink leg of
		// an MA PDU session, so steering finds it unavailable (docs/pipeline.md: a leg is present
		// when its UE address is non-zero) and no uplink comes in on it.
		s := session(nil, games)
		s.Spec.QFI = 9
		s.Spec.AccessLegs.ThreeGPP = &junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.1", DropDownlink: true}
		s.PeerIndex = 0 // no gNB: no tunnel peer (sessionNeeds)
		s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWireline, UEAddress: "203.0.113.11",
			GatewayAddress: "198.51.100.20", UplinkTEID: 0x3001, DownlinkTEID: 0x3002}
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["sessions"] != 1 || got["uplink_tunnels"] != 1 || got["tunnel_qfis"] != 1 {
			t.Fatalf("tables %v, want the sessions entry and the non-3GPP leg's uplink TEID and QFI tunnel only", got)
		}
		var se Entry
		for _, e := range es {
			switch e.Table {
			case "sessions":
				se = e
			case "uplink_tunnels":
				if !bytes.Equal(e.Match[0].Value, []byte{0, 0, 0x30, 0x01}) {
					t.Errorf("uplink TEID %x, want only the non-3GPP leg's 0x3001", e.Match[0].Value)
				}
			}
		}
		want := [][]byte{{0, 0, 0, 5}, {0}, {0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {203, 0, 113, 11}, {198, 51, 100, 20}, {0, 0, 0x30, 0x02}, {0, 0, 0, 9}}
		for i, w := range want {
			if !bytes.Equal(se.Params[i].Value, w) {
				t.Errorf("set_session param %s = %v, want %v", se.Params[i].Name, se.Params[i].Value, w)
			}
		}
		s.Spec.AccessLegs.NonThreeGPP.DropDownlink = true
		if es, err = SessionEntries(s); err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["sessions"] != 1 || got["uplink_tunnels"] != 0 || got["tunnel_qfis"] != 0 {
			t.Fatalf("both legs inactive: tables %v, want the sessions entry alone", got)
		}
		for _, e := range es {
			if e.Table == "sessions" && (!bytes.Equal(e.Params[4].Value, []byte{0, 0, 0, 0}) || !bytes.Equal(e.Params[5].Value, []byte{0, 0, 0, 0})) {
				t.Errorf("both legs inactive: set_session %+v, want both UE addresses 0 (the downlink finds no path: NO_PATH)", e.Params)
			}
		}
	})
	t.Run("an inactive 3GPP leg with an uplink TEID keeps its uplink: the TEID, its address, no tunnel peer", func(t *testing.T) {
		// docs/n4.md, "An access not active": a UE back on 3GPP sends before the SMF's
		// modification with the gNB's tunnel reaches the UPF (TS 23.502 §4.2.3.2), so the leg's
		// uplink TEID stays, and its address, which the pipeline checks the uplink's source
		// against; with tunnel peer 0 (tunnel_peers has no entry 0) and no downlink TEID, no
		// downlink can leave on it.
		s := session(nil, games)
		s.Spec.QFI = 9
		s.Spec.AccessLegs.ThreeGPP = &junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.1", UplinkTEID: 0x1001, DropDownlink: true}
		s.PeerIndex = 3 // the gNB's index the session held while the leg was active: not used
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["sessions"] != 1 || got["uplink_tunnels"] != 1 || got["tunnel_qfis"] != 0 {
			t.Fatalf("tables %v, want the sessions entry and the 3GPP leg's uplink TEID, no QFI tunnel", got)
		}
		for _, e := range es {
			switch e.Table {
			case "uplink_tunnels":
				if !bytes.Equal(e.Match[0].Value, []byte{0, 0, 0x10, 0x01}) || e.Action != "decap_gtpu" || !bytes.Equal(e.Params[0].Value, []byte{1}) {
					t.Errorf("uplink TEID entry %+v, want teid 0x1001 -> decap_gtpu(access 1, ...)", e)
				}
			case "sessions":
				want := map[string][]byte{"peer_idx": {0, 0}, "teid": {0, 0, 0, 0}, "ue_addr_3gpp": {10, 45, 0, 1}}
				for _, p := range e.Params {
					if w, ok := want[p.Name]; ok && !bytes.Equal(p.Value, w) {
						t.Errorf("set_session %s = %v, want %v", p.Name, p.Value, w)
					}
				}
			}
		}
	})
	t.Run("an MA session that holds its downlink has buffer_downlink and its overrides alone", func(t *testing.T) {
		// docs/n4.md, "An access not active": no access active, the UE idle on 3GPP; the
		// downlink misses `sessions` (none) and downlink_tunnels holds it (docs/pipeline.md).
		s := session(nil, video) // load balance: an exception, with its override
		s.Spec.AccessLegs.ThreeGPP = &junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.1", UplinkTEID: 0x2001, BufferDownlink: true}
		s.Spec.AccessLegs.NonThreeGPP.DropDownlink = true
		s.PeerIndex, s.SequenceIndex = 0, ptr[uint32](3)
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); len(got) != 2 || got["downlink_tunnels"] != 1 || got["session_overrides"] != 1 {
			t.Fatalf("tables %v, want one downlink_tunnels entry and the override", got)
		}
		if d := es[0]; d.Action != ActionBufferDownlink || len(d.Params) != 0 || !bytes.Equal(d.Match[0].Value, []byte{10, 60, 0, 1}) {
			t.Errorf("downlink_tunnels entry %+v, want ue_addr 10.60.0.1 -> buffer_downlink()", d)
		}
	})
	t.Run("an indirect forwarding tunnel adds its TEID, forward_indirect without parameters", func(t *testing.T) {
		// docs/pipeline.md: uplink_tunnels (teid) -> forward_indirect(); the target gNB is the
		// controller's to know, not the pipeline's.
		s := session(nil, games)
		s.Spec.AccessLegs.ThreeGPP.IndirectForwarding = &junctionv1.IndirectForwarding{TEID: 0x4001, GNBAddress: "198.51.100.12", GNBTEID: 0x777}
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		var fw []Entry
		for _, e := range es {
			if e.Action == ActionForwardIndirect {
				fw = append(fw, e)
			}
		}
		if got := tables(es); got["uplink_tunnels"] != 2 || len(fw) != 1 || fw[0].Table != "uplink_tunnels" ||
			!bytes.Equal(fw[0].Match[0].Value, []byte{0, 0, 0x40, 0x01}) || len(fw[0].Params) != 0 {
			t.Errorf("tables %v, forwarding entries %+v; want one uplink_tunnels teid 0x4001 -> forward_indirect()", got, fw)
		}
	})
	t.Run("a session with a QFI marks each of its downlink GTP-U tunnels, by peer and TEID", func(t *testing.T) {
		// docs/pipeline.md: tunnel_qfis (peer_addr, teid) -> set_qfi(qfi), one entry per tunnel
		// into which the UPF sends G-PDUs: the gNB's and a non-3GPP leg's over N3; none for a
		// plain non-3GPP leg (no GTP-U) and none without spec.qfi.
		want := func(es []Entry, tunnels ...[]byte) {
			t.Helper()
			var got [][]byte
			for _, e := range es {
				if e.Table != "tunnel_qfis" {
					continue
				}
				if e.Action != "set_qfi" || len(e.Params) != 1 || !bytes.Equal(e.Params[0].Value, []byte{9}) || len(e.Match) != 2 {
					t.Errorf("tunnel_qfis entry %+v, want set_qfi(qfi 9)", e)
				}
				got = append(got, append(append([]byte{}, e.Match[0].Value...), e.Match[1].Value...))
			}
			if len(got) != len(tunnels) {
				t.Fatalf("tunnel_qfis keys %x, want %x", got, tunnels)
			}
			for i := range tunnels {
				if !bytes.Equal(got[i], tunnels[i]) {
					t.Errorf("tunnel_qfis key %x, want %x", got[i], tunnels[i])
				}
			}
		}
		s := session(nil, games)
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		want(es) // no QFI
		s.Spec.QFI = 9
		if es, err = SessionEntries(s); err != nil {
			t.Fatal(err)
		}
		want(es, []byte{198, 51, 100, 10, 0, 0, 0x20, 0x01}) // the gNB and TEID 8193; WiFi is plain
		s.Spec.AccessLegs.NonThreeGPP = &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWireline, UEAddress: "203.0.113.11",
			GatewayAddress: "198.51.100.20", UplinkTEID: 0x3001, DownlinkTEID: 0x3002}
		if es, err = SessionEntries(s); err != nil {
			t.Fatal(err)
		}
		want(es, []byte{198, 51, 100, 10, 0, 0, 0x20, 0x01}, []byte{198, 51, 100, 20, 0, 0, 0x30, 0x02})
		s.Spec.Type, s.Spec.AccessLegs.NonThreeGPP = junctionv1.SessionSingleAccess, nil
		if es, err = SessionEntries(s); err != nil {
			t.Fatal(err)
		}
		want(es, []byte{198, 51, 100, 10, 0, 0, 0x20, 0x01})
	})
	t.Run("a session with an MBR names its usage cell in mbr_sessions, by its address", func(t *testing.T) {
		// docs/pipeline.md, "MBR policer": mbr_sessions (ue_addr) -> police(usage_idx), one entry
		// for a session with a rate in either direction, MA or single-access; none without.
		want := func(es []Entry, n int) {
			t.Helper()
			var got []Entry
			for _, e := range es {
				if e.Table == "mbr_sessions" {
					got = append(got, e)
				}
			}
			if len(got) != n {
				t.Fatalf("%d mbr_sessions entries, want %d", len(got), n)
			}
			for _, e := range got {
				if len(e.Match) != 1 || e.Match[0].Field != "ue_addr" || !bytes.Equal(e.Match[0].Value, []byte{10, 60, 0, 1}) ||
					e.Action != "police" || len(e.Params) != 1 || e.Params[0].Name != "usage_idx" || !bytes.Equal(e.Params[0].Value, []byte{0, 0, 0, 9}) {
					t.Errorf("mbr_sessions entry %+v, want the session address 10.60.0.1 -> police(usage_idx 9)", e)
				}
			}
		}
		s := session(nil, games)
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		want(es, 0)
		up := int64(2000)
		s.Spec.MaxBitRate = &junctionv1.BitRate{UplinkKbps: &up}
		if es, err = SessionEntries(s); err != nil {
			t.Fatal(err)
		}
		want(es, 1)
		s.Spec.Type, s.Spec.AccessLegs.NonThreeGPP = junctionv1.SessionSingleAccess, nil
		if es, err = SessionEntries(s); err != nil {
			t.Fatal(err)
		}
		want(es, 1)
	})
	t.Run("a load-balance session is an exception with an override for that policy only", func(t *testing.T) {
		s := session(nil, games, video)
		s.SequenceIndex = ptr[uint32](11)
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["session_overrides"] != 1 {
			t.Fatalf("tables %v", got)
		}
		o := es[len(es)-1]
		if !bytes.Equal(o.Match[1].Value, []byte{0, 7}) || !bytes.Equal(o.Params[5].Value, []byte{0, 0, 0, 11}) {
			t.Errorf("override %+v", o)
		}
	})
	t.Run("a mode override covers every policy and unmatched traffic", func(t *testing.T) {
		s := session(&activeWiFi, games, video)
		s.SequenceIndex = ptr[uint32](3)
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["session_overrides"] != 3 {
			t.Fatalf("tables %v", got)
		}
		for _, e := range es {
			if e.Table == "session_overrides" && !bytes.Equal(e.Params[0].Value, []byte{1}) {
				t.Errorf("override mode %v, want active-standby", e.Params[0].Value)
			}
		}
	})
	t.Run("a policy the session steers itself gets that steering ahead of the override", func(t *testing.T) {
		// docs/pipeline.md: override_steering(mode, access, ratio_3gpp, rtt_threshold_us, ...);
		// redundant is mode 5, active-standby 1 with access 2 for non-3GPP.
		s := session(&activeWiFi, games, video)
		s.Spec.PolicySteering = []junctionv1.PolicySteering{{Name: "games", Steering: junctionv1.SteeringMode{Mode: junctionv1.ModeRedundant}, Thresholds: &junctionv1.Thresholds{RTT: "20ms"}}}
		s.SequenceIndex = ptr[uint32](3)
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		modes := map[string][]byte{}
		for _, e := range es {
			if e.Table == "session_overrides" {
				modes[string(e.Match[1].Value)] = append(append([]byte{}, e.Params[0].Value...), e.Params[3].Value...)
			}
		}
		want := map[string][]byte{
			string([]byte{0, 8}): {5, 0, 0, 0x4e, 0x20}, // games: redundant, 20,000 us
			string([]byte{0, 7}): {1, 0, 0, 0, 0},       // video: the override
			string([]byte{0, 0}): {1, 0, 0, 0, 0},       // unmatched traffic: the override
		}
		if len(modes) != len(want) {
			t.Fatalf("overrides %x, want %x", modes, want)
		}
		for k, w := range want {
			if !bytes.Equal(modes[k], w) {
				t.Errorf("app %x: mode and threshold %x, want %x", k, modes[k], w)
			}
		}
		if k, _ := Lookup(junctionv1.ATSSSSessionSpec{PolicySteering: s.Spec.PolicySteering}, nil); k != junctionv1.LookupException {
			t.Errorf("a session with policySteering is %s, want Exception", k)
		}
	})
	t.Run("a single-access session is plain GTP-U: its uplink TEID and a downlink_tunnels entry, no sessions entry", func(t *testing.T) {
		// docs/pipeline.md: downlink_tunnels (ue_addr) -> encap_gtpu(teid, peer_idx, endpoint_idx,
		// usage_idx); uplink_tunnels (teid) -> decap_gtpu(usage_idx).
		s := session(nil)
		s.Spec.Type = junctionv1.SessionSingleAccess
		s.Spec.AccessLegs.NonThreeGPP = nil
		s.EndpointIndex = 1
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); len(got) != 2 || got["uplink_tunnels"] != 1 || got["downlink_tunnels"] != 1 {
			t.Fatalf("tables %v", got)
		}
		d := es[1]
		want := [][]byte{{0, 0, 0x20, 0x01}, {0, 2}, {1}, {0, 0, 0, 9}}
		if !bytes.Equal(d.Match[0].Value, []byte{10, 60, 0, 1}) || d.Action != "encap_gtpu" || len(d.Params) != len(want) {
			t.Fatalf("downlink entry %+v", d)
		}
		for i, w := range want {
			if !bytes.Equal(d.Params[i].Value, w) {
				t.Errorf("param %s = %v, want %v", d.Params[i].Name, d.Params[i].Value, w)
			}
		}
	})
	t.Run("a single-access session whose downlink buffers has buffer_downlink and needs no gNB", func(t *testing.T) {
		// docs/pipeline.md: downlink_tunnels (ue_addr) -> buffer_downlink(); the uplink TEID stays.
		s := session(nil)
		s.Spec.Type = junctionv1.SessionSingleAccess
		s.Spec.AccessLegs.NonThreeGPP = nil
		s.Spec.AccessLegs.ThreeGPP.GNBAddress, s.Spec.AccessLegs.ThreeGPP.DownlinkTEID = "", 0
		s.Spec.AccessLegs.ThreeGPP.BufferDownlink = true
		s.Spec.QFI = 9
		s.PeerIndex = 0
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); len(got) != 2 || got["uplink_tunnels"] != 1 || got["downlink_tunnels"] != 1 {
			t.Fatalf("tables %v (no tunnel_qfis entry: there is no tunnel yet)", got)
		}
		if d := es[1]; !bytes.Equal(d.Match[0].Value, []byte{10, 60, 0, 1}) || d.Action != "buffer_downlink" || len(d.Params) != 0 {
			t.Fatalf("downlink entry %+v", d)
		}
	})
	t.Run("a single-access session whose downlink drops has a deny filter for its address and no downlink_tunnels entry", func(t *testing.T) {
		// docs/pipeline.md, step 5: filters (dst_addr ternary) -> deny() drops FILTERED; a miss in
		// downlink_tunnels alone would route the packet. The uplink TEID stays.
		s := session(nil)
		s.Spec.Type = junctionv1.SessionSingleAccess
		s.Spec.AccessLegs.NonThreeGPP = nil
		s.Spec.AccessLegs.ThreeGPP.GNBAddress, s.Spec.AccessLegs.ThreeGPP.DownlinkTEID = "", 0
		s.Spec.AccessLegs.ThreeGPP.DropDownlink = true
		s.Spec.QFI = 9
		s.PeerIndex = 0
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); len(got) != 2 || got["uplink_tunnels"] != 1 || got["filters"] != 1 {
			t.Fatalf("tables %v, want uplink_tunnels and filters", got)
		}
		f := es[1]
		want := []Match{{Field: "dst_addr", Kind: Ternary, Value: []byte{10, 60, 0, 1}, Mask: []byte{255, 255, 255, 255}}}
		if f.Table != "filters" || f.Action != "deny" || len(f.Params) != 0 || f.Priority == 0 || len(f.Match) != 1 ||
			f.Match[0].Key() != want[0].Key() {
			t.Fatalf("filters entry %+v, want deny of 10.60.0.1/32 as destination with a priority", f)
		}
	})
	t.Run("an exception session without a sequence index is an error", func(t *testing.T) {
		if _, err := SessionEntries(session(nil, video)); err == nil {
			t.Error("no error")
		}
	})
	t.Run("a WiFi-only session has no uplink TEID and no 3GPP address", func(t *testing.T) {
		s := session(nil, games)
		s.Spec.AccessLegs.ThreeGPP = nil
		s.PeerIndex = 0
		es, err := SessionEntries(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tables(es); got["uplink_tunnels"] != 0 || !bytes.Equal(es[0].Params[4].Value, []byte{0, 0, 0, 0}) {
			t.Errorf("entries %+v", es)
		}
	})
}

// An entry's key names its table, every match field with all its parts and the priority, so
// entries that differ in any of them never share a key.
func TestEntryKeyHoldsEveryPartOfTheMatch(t *testing.T) {
	e := Entry{Table: "applications", Priority: 7, Match: []Match{
		{Field: "app_dst", Kind: Ternary, Value: []byte{198, 18, 10, 0}, Mask: []byte{255, 255, 255, 0}},
		{Field: "app_dport", Kind: Range, Low: []byte{1, 187}, High: []byte{1, 187}},
		{Field: "ue_addr", Kind: LPM, Value: []byte{10}, PrefixLen: 8},
	}}
	want := "applications|app_dst=c6120a00/ffffff00/0/-|app_dport=//0/01bb-01bb|ue_addr=0a//8/-|p7"
	if got := e.Key(); got != want {
		t.Errorf("key %q, want %q", got, want)
	}
	other := e
	other.Match = append([]Match(nil), e.Match...)
	other.Match[2].PrefixLen = 16
	if other.Key() == e.Key() {
		t.Error("entries with different prefix lengths share a key")
	}
}
