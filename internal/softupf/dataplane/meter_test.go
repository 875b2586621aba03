package dataplane

import (
	"slices"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// The MBR policer (meter.go; RFC 2698 colour-blind as BMv2 runs it; docs/pipeline.md): a
// session's packet that usage counted meets the meter of its direction at the cell mbr_sessions
// gives its UE address (the user packet's source on the uplink, its destination on the
// downlink); red (the peak bucket short of the packet's bytes) is dropped and counted in
// mbr_drops[direction] and in the direction's policed counter at the cell (uplink_policed,
// downlink_policed: usage after QoS enforcement is usage less these), yellow and green go on; no mbr_sessions entry, or a cell never
// configured, or reset, passes everything.

func TestMBRPolicer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		meter string
		idx   uint32
		port  uint32
		frame func(h *harness) []byte
		cell  uint32 // mbr_drops: 0 uplink, 1 downlink
		usage string
		ue    string // the UE address mbr_sessions is keyed by
	}{
		{"MA downlink", "downlink_mbr", sessUsage, portDN,
			func(*harness) []byte { return fromDN(userPacket(64, false)) }, 1, "downlink_usage", sessAddr},
		{"single-access downlink", "downlink_mbr", dlTunnelUsage, portDN, singleAccess, 1, "downlink_usage", "10.46.0.9"},
		{"Junction DATA uplink", "uplink_mbr", sessUsage, portWiFi,
			func(*harness) []byte { return junctionWiFi(data(0), userPacket(64, true)) }, 0, "uplink_usage", sessAddr},
		{"plain G-PDU uplink", "uplink_mbr", ulUsage, portGNB,
			func(*harness) []byte { return fromGNB(ulTEID, userPacket(64, true)) }, 0, "uplink_usage", sessAddr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := topology(t)
			frame := tc.frame(h)
			n := int64(len(frame))
			send := func() bool { return len(h.process(tc.port, frame)) == 1 }

			for range 5 { // not configured: every packet through
				if !send() {
					t.Fatal("dropped with no meter configured")
				}
			}
			// 1,000 bytes/s, a peak bucket of three frames: three pass at once, the fourth is red,
			// once mbr_sessions names the cell; before, the packets are not metered at all.
			h.setMeter(tc.meter, tc.idx, &p4v1.MeterConfig{Cir: 1000, Cburst: 3 * n, Pir: 1000, Pburst: 3 * n})
			for range 5 {
				if !send() {
					t.Fatal("dropped with no mbr_sessions entry")
				}
			}
			h.insert("mbr_sessions", map[string]any{"ue_addr": ip4(tc.ue)}, 0, "police", map[string]uint64{"usage_idx": uint64(tc.idx)})
			for i := range 3 {
				if !send() {
					t.Fatalf("packet %d of a full three-frame bucket dropped", i+1)
				}
			}
			if send() {
				t.Fatal("the fourth packet went through an empty bucket")
			}
			if p, b := h.counter("mbr_drops", tc.cell); p != 1 || b != uint64(n) {
				t.Errorf("mbr_drops[%d] = %d packets, %d bytes; want 1, %d", tc.cell, p, b, n)
			}
			if p, b := h.counter("mbr_drops", 1-tc.cell); p != 0 || b != 0 {
				t.Errorf("mbr_drops[%d] (the other direction) = %d, %d; want 0", 1-tc.cell, p, b)
			}
			if p, _ := h.counter(tc.usage, tc.idx); p != 14 { // usage counts before the policer
				t.Errorf("%s[%d] = %d packets, want 14", tc.usage, tc.idx, p)
			}
			policed, other := "uplink_policed", "downlink_policed"
			if tc.cell == 1 {
				policed, other = other, policed
			}
			if p, b := h.counter(policed, tc.idx); p != 1 || b != uint64(n) {
				t.Errorf("%s[%d] = %d packets, %d bytes; want 1, %d", policed, tc.idx, p, b, n)
			}
			if p, _ := h.counter(other, tc.idx); p != 0 {
				t.Errorf("%s[%d] (the other direction) = %d packets, want 0", other, tc.idx, p)
			}
			// One frame's worth of time (n bytes at 1,000 bytes/s is n ms) refills one frame.
			h.now += uint32(n) * 1000
			if !send() {
				t.Fatal("dropped after the bucket refilled one frame")
			}
			if send() {
				t.Fatal("a second packet went through a bucket refilled for one")
			}
			// Reset: everything through again.
			h.setMeter(tc.meter, tc.idx, nil)
			if !send() {
				t.Fatal("dropped after the meter was reset")
			}
		})
	}
}

// Yellow (over the committed rate, within the peak) goes on: only the peak rate polices.
func TestMBRPolicerPassesYellow(t *testing.T) {
	h := topology(t)
	frame := fromDN(userPacket(64, false))
	h.insert("mbr_sessions", map[string]any{"ue_addr": ip4(sessAddr)}, 0, "police", map[string]uint64{"usage_idx": sessUsage})
	h.setMeter("downlink_mbr", sessUsage, &p4v1.MeterConfig{Cir: 0, Cburst: 0, Pir: 1000, Pburst: 100 * int64(len(frame))})
	for i := range 50 {
		if len(h.process(portDN, frame)) != 1 {
			t.Fatalf("yellow packet %d dropped", i+1)
		}
	}
	if p, _ := h.counter("mbr_drops", 1); p != 0 {
		t.Errorf("mbr_drops[1] = %d, want 0", p)
	}
}

// The meter of another session's cell, or of the other direction, does not police this one.
func TestMBRPolicerIsPerSessionAndDirection(t *testing.T) {
	h := topology(t)
	frame := fromDN(userPacket(64, false))
	h.insert("mbr_sessions", map[string]any{"ue_addr": ip4(sessAddr)}, 0, "police", map[string]uint64{"usage_idx": sessUsage})
	zero := &p4v1.MeterConfig{} // bursts of 0: every packet red
	h.setMeter("downlink_mbr", sessUsage+1, zero)
	h.setMeter("uplink_mbr", sessUsage, zero)
	if len(h.process(portDN, frame)) != 1 {
		t.Fatal("dropped by another session's or the uplink's meter")
	}
	h.setMeter("downlink_mbr", sessUsage, zero)
	if len(h.process(portDN, frame)) != 0 {
		t.Fatal("not dropped by its own zero-burst meter")
	}
}

func TestMeterReadsBackWhatWasWritten(t *testing.T) {
	h := topology(t)
	id := h.info.GetMeters()[0].GetPreamble().GetId()
	if cfg, err := h.p.ReadMeter(id, 7); err != nil || cfg != nil {
		t.Fatalf("unconfigured cell: %v, %v; want nil, nil", cfg, err)
	}
	want := &p4v1.MeterConfig{Cir: 125_000, Cburst: 12_500, Pir: 250_000, Pburst: 25_000}
	if err := h.p.WriteMeter(id, 7, want); err != nil {
		t.Fatal(err)
	}
	got, err := h.p.ReadMeter(id, 7)
	if err != nil || got.Cir != 125_000 || got.Cburst != 12_500 || got.Pir != 250_000 || got.Pburst != 25_000 {
		t.Fatalf("read %v, %v; want %v", got, err, want)
	}
	if _, err := h.p.ReadMeter(id, 1<<30); err == nil {
		t.Error("an index beyond the meter read without error")
	}
}

// A program without the policer (a P4 program may leave it out: docs/pipeline.md) runs with
// nothing policed; one with part of it is refused, naming what is missing.
func TestAProgramWithoutThePolicerRuns(t *testing.T) {
	info := specP4Info()
	info.Meters = nil
	info.Counters = slices.DeleteFunc(info.Counters, func(c *p4configv1.Counter) bool {
		return slices.Contains([]string{"mbr_drops", "uplink_policed", "downlink_policed"}, c.GetPreamble().GetName())
	})
	info.Tables = slices.DeleteFunc(info.Tables, func(t *p4configv1.Table) bool { return t.GetPreamble().GetName() == "mbr_sessions" })
	h := newHarness(t, func(*Config) {})
	if err := h.p.CheckPipeline(info, nil); err != nil {
		t.Fatalf("a P4Info without the policer: %v", err)
	}
	info.Meters = specP4Info().Meters[:1]
	if err := h.p.CheckPipeline(info, nil); err == nil || !strings.Contains(err.Error(), "mbr_sessions") {
		t.Errorf("a P4Info with the meters but not mbr_sessions: %v, want a refusal naming it", err)
	}
	info = specP4Info()
	info.Meters = info.Meters[:1]
	if err := h.p.CheckPipeline(info, nil); err == nil || !strings.Contains(err.Error(), "downlink_mbr") {
		t.Errorf("a P4Info with half the meters: %v, want a refusal naming downlink_mbr", err)
	}
	// The policer and QoS flows without the per-session and per-flow policed counters (the TNA
	// build's, for now).
	info = specP4Info()
	info.Counters = slices.DeleteFunc(info.Counters, func(c *p4configv1.Counter) bool {
		return slices.Contains([]string{"uplink_policed", "downlink_policed", "uplink_flow_policed", "downlink_flow_policed"}, c.GetPreamble().GetName())
	})
	if err := h.p.CheckPipeline(info, nil); err != nil {
		t.Errorf("a P4Info with the policer and without the policed counters: %v", err)
	}
	// QoS flows without their usage counters: refused.
	info = specP4Info()
	info.Counters = slices.DeleteFunc(info.Counters, func(c *p4configv1.Counter) bool { return c.GetPreamble().GetName() == "uplink_flow_usage" })
	if err := h.p.CheckPipeline(info, nil); err == nil || !strings.Contains(err.Error(), "uplink_flow_usage") {
		t.Errorf("a P4Info with QoS flows but not uplink_flow_usage: %v, want a refusal naming it", err)
	}
}
