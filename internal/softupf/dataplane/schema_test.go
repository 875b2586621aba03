package dataplane

import (
	"slices"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
)

func TestCheckPipeline(t *testing.T) {
	p, err := New(Config{Pool: NewPool(8), MaxHeld: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckPipeline(testP4Info(t), nil); err != nil {
		t.Fatalf("the contract's P4Info is refused: %v", err)
	}
	table := func(info *p4configv1.P4Info, name string) *p4configv1.Table {
		i := slices.IndexFunc(info.Tables, func(x *p4configv1.Table) bool { return x.GetPreamble().GetName() == name })
		return info.Tables[i]
	}
	action := func(info *p4configv1.P4Info, name string) *p4configv1.Action {
		i := slices.IndexFunc(info.Actions, func(x *p4configv1.Action) bool { return x.GetPreamble().GetName() == name })
		return info.Actions[i]
	}
	cases := []struct {
		name   string
		change func(*p4configv1.P4Info)
		want   string
	}{
		{"a missing table is named", func(i *p4configv1.P4Info) {
			i.Tables = slices.DeleteFunc(i.Tables, func(x *p4configv1.Table) bool { return x.GetPreamble().GetName() == "session_overrides" })
		}, `table "session_overrides"`},
		{"a match field of another kind is named", func(i *p4configv1.P4Info) {
			table(i, "routes").MatchFields[0].Match = &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_TERNARY}
		}, `table "routes" field "dst_addr"`},
		{"an extra match field is refused", func(i *p4configv1.P4Info) {
			t := table(i, "sessions")
			t.MatchFields = append(t.MatchFields, &p4configv1.MatchField{Id: 9, Name: "vrf", Bitwidth: 8,
				Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT}})
		}, `table "sessions" has 2 match fields`},
		{"a missing action of a table is named", func(i *p4configv1.P4Info) {
			table(i, "filters").ActionRefs = table(i, "filters").ActionRefs[:1]
		}, `table "filters" lacks action "deny"`},
		{"a param of another width is named", func(i *p4configv1.P4Info) {
			action(i, "encap_gtpu").Params[0].Bitwidth = 24
		}, `action "encap_gtpu" param "teid" is 24 bits`},
		{"a renamed param is named", func(i *p4configv1.P4Info) {
			action(i, "set_session").Params[1].Name = "endpoint"
		}, `action "set_session" lacks param "endpoint_idx"`},
		{"a missing register is named", func(i *p4configv1.P4Info) {
			i.Registers = slices.DeleteFunc(i.Registers, func(x *p4configv1.Register) bool { return x.GetPreamble().GetName() == "rtt_non3gpp" })
		}, `register "rtt_non3gpp"`},
		{"a register of another width is named", func(i *p4configv1.P4Info) {
			for _, r := range i.Registers {
				if r.GetPreamble().GetName() == "rtt_3gpp" {
					r.TypeSpec.GetBitstring().GetBit().Bitwidth = 16
				}
			}
		}, `register "rtt_3gpp" elements are bit<16>`},
		{"a short drops counter is refused", func(i *p4configv1.P4Info) { i.Counters[0].Size = 8 }, `counter "drops"`},
		{"a missing usage counter is named", func(i *p4configv1.P4Info) {
			i.Counters = slices.DeleteFunc(i.Counters, func(x *p4configv1.Counter) bool { return x.GetPreamble().GetName() == "downlink_usage" })
		}, `counter "downlink_usage"`},
		{"a usage counter of packets alone is refused", func(i *p4configv1.P4Info) {
			for _, c := range i.Counters {
				if c.GetPreamble().GetName() == "uplink_usage" {
					c.Spec.Unit = p4configv1.CounterSpec_PACKETS
				}
			}
		}, `counter "uplink_usage" counts PACKETS`},
		{"decap_gtpu without its params is refused", func(i *p4configv1.P4Info) {
			action(i, "decap_gtpu").Params = nil
		}, `action "decap_gtpu" has 0 params`},
		{"a changed digest member is named", func(i *p4configv1.P4Info) {
			for _, s := range i.TypeInfo.Structs {
				s.Members[4].Name = "rtt"
			}
		}, `digest "probe_reports" member 4`},
		{"a missing packet_out header is named", func(i *p4configv1.P4Info) {
			i.ControllerPacketMetadata = i.ControllerPacketMetadata[:1]
		}, `controller header "packet_out"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := testP4Info(t)
			c.change(info)
			err := p.CheckPipeline(info, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckPipeline = %v, want an error containing %s", err, c.want)
			}
			if err := p.CommitPipeline(info, nil); err == nil {
				t.Fatal("CommitPipeline accepted it")
			}
		})
	}
}

func TestWritesBeforePipeline(t *testing.T) {
	p, err := New(Config{Pool: NewPool(8), MaxHeld: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: 1}); err == nil {
		t.Error("a write before any pipeline succeeded")
	}
	pkt := p.pool.TryGet()
	pkt.SetFrame(make([]byte, 60))
	if out := p.Process([]*Packet{pkt}, nil); len(out) != 0 || p.pool.Free() != 8 {
		t.Error("without a pipeline a packet must be dropped and its buffer returned")
	}
}

func TestModifyAndDefaultActions(t *testing.T) {
	h := topology(t)
	t.Run("MODIFY of a session moves its non-3GPP leg", func(t *testing.T) {
		h.write(p4v1.Update_MODIFY, h.entry("sessions", map[string]any{"session_addr": ip4(sessAddr)}, 0, "set_session", map[string]uint64{
			"user_idx": user, "endpoint_idx": endpointIx, "peer_idx": peerIx, "teid": dlTEID,
			"ue_addr_3gpp": ip4(ue3GPP), "ue_addr_non3gpp": ip4("198.51.100.8"), "gateway_non3gpp": 0, "teid_non3gpp": 0, "usage_idx": sessUsage}))
		h.setReg("rtt_3gpp", user, 0)
		out := h.process(portDN, fromDN(userPacket(64, false)))
		if len(out) != 1 || out[0].port != portWiFi {
			t.Fatalf("got %v", out)
		}
		if got := [4]byte(out[0].frame[30:34]); got != addr("198.51.100.8") {
			t.Errorf("outer destination %v, want the new leg address", got)
		}
	})
	t.Run("a deny default filter drops what no entry permits", func(t *testing.T) {
		if err := h.p.SetDefaultAction(h.table("filters").GetPreamble().GetId(), h.action("deny", nil)); err != nil {
			t.Fatal(err)
		}
		h.insert("filters", map[string]any{"src_addr": tv{ip4(server), 0xffffffff}}, 5, "permit", nil)
		h.setReg("rtt_3gpp", user, 100)
		if out := h.process(portDN, fromDN(userPacket(64, false))); len(out) != 1 {
			t.Fatalf("permitted packet: %v", out)
		}
		other := fromDN(wiretestUser("203.0.113.99"))
		expectDrop(t, h, contract.DropFiltered, h.process(portDN, other))
		if err := h.p.SetDefaultAction(h.table("filters").GetPreamble().GetId(), nil); err != nil {
			t.Fatal(err)
		}
		if out := h.process(portDN, other); len(out) != 1 {
			t.Fatalf("after restoring the default permit: %v", out)
		}
	})
	t.Run("an action of another table is refused", func(t *testing.T) {
		e := h.entry("routes", map[string]any{"dst_addr": lv{ip4("10.0.0.0"), 8}}, 0, "deny", nil)
		if err := h.p.WriteTableEntry(p4v1.Update_INSERT, e); err == nil || !strings.Contains(err.Error(), `"deny"`) {
			t.Errorf("WriteTableEntry = %v", err)
		}
	})
}

func wiretestUser(src string) []byte {
	b := userPacket(64, false)
	ip, _ := wire.ParseIPv4(b)
	ip.Src = addr(src)
	ip.Put(b)
	return b
}
