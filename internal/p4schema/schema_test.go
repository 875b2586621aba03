package p4schema

import (
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"

	"github.com/junction-atsss/junction/p4"
)

func compiled(t *testing.T) *Schema {
	t.Helper()
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(info)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The expectations are docs/pipeline.md's tables ("P4Info names", "Sizes").
func TestCompileThePipeline(t *testing.T) {
	s := compiled(t)
	apps, err := s.Table("applications")
	if err != nil {
		t.Fatal(err)
	}
	if apps.Size != 1024 || !apps.NeedsPriority || len(apps.Fields) != 6 {
		t.Errorf("applications: size %d, needs priority %v, %d fields; want 1024, true, 6", apps.Size, apps.NeedsPriority, len(apps.Fields))
	}
	f, err := apps.Field("local_port")
	if err != nil || f.Kind != p4configv1.MatchField_RANGE || f.Width != 16 {
		t.Errorf("applications.local_port = %+v, %v; want a 16-bit range field", f, err)
	}
	if byID, ok := s.TableByID(apps.ID); !ok || byID != apps {
		t.Error("the table is not found by its ID")
	}
	if sess, err := s.Table("sessions"); err != nil || sess.NeedsPriority || sess.Size != 524288 {
		t.Errorf("sessions: %+v, %v; want 524288 exact entries without priority", sess, err)
	}

	a, err := s.Action("set_application")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range a.Params {
		got = append(got, p.Name)
	}
	if want := "app_id mode access ratio_3gpp rtt_threshold_us loss_limit_pct"; strings.Join(got, " ") != want {
		t.Errorf("set_application params in ID order: %v, want %s", got, want)
	}
	if p, err := a.Param("loss_limit_pct"); err != nil || p.Width != 8 || a.ParamIndex[p.ID] != 5 {
		t.Errorf("loss_limit_pct = %+v, %v; want 8 bits at position 5", p, err)
	}
	if _, ok := apps.Actions[a.ID]; !ok {
		t.Error("applications does not list set_application")
	}

	r, err := s.Register("loss_non3gpp")
	if err != nil || r.Width != 8 || r.Size != 262144 {
		t.Errorf("loss_non3gpp = %+v, %v; want 262144 8-bit cells", r, err)
	}
	d, err := s.Digest("probe_reports")
	if err != nil || !d.IsStruct || len(d.Members) != 7 || d.Members[5] != (Member{"loss_pct", 8}) {
		t.Errorf("probe_reports = %+v, %v; want 7 members, loss_pct 8 bits sixth", d, err)
	}
	if c, err := s.Counter("drops"); err != nil || c.Size != 32 || c.Unit != p4configv1.CounterSpec_BOTH {
		t.Errorf("drops = %+v, %v; want 32 cells of packets and bytes", c, err)
	}
	if s.PacketIn == nil || s.PacketOut == nil || s.PacketIn.Fields[s.PacketIn.ByName["ingress_port"]].Width != 9 {
		t.Errorf("packet_in %+v, packet_out %+v; want both, ingress_port 9 bits", s.PacketIn, s.PacketOut)
	}
	for i := 1; i < len(s.Tables); i++ {
		if s.Tables[i-1].ID >= s.Tables[i].ID {
			t.Fatal("tables are not in ID order")
		}
	}
}

func TestNames(t *testing.T) {
	s := compiled(t)
	info := proto.Clone(s.Info).(*p4configv1.P4Info)
	for _, tb := range info.Tables {
		if tb.Preamble.Name == "routes" {
			tb.Preamble.Name, tb.Preamble.Alias = ".Ingress.routes", "rt"
		}
	}
	s2, err := Compile(info)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".Ingress.routes", "Ingress.routes", "rt"} {
		if _, err := s2.Table(name); err != nil {
			t.Errorf("Table(%q): %v", name, err)
		}
	}
	if _, err := s.Table("route"); err == nil || !strings.Contains(err.Error(), `no table "route"`) || !strings.Contains(err.Error(), "routes") {
		t.Errorf("an unknown table: %v, want an error naming it and listing the tables", err)
	}
	apps, _ := s.Table("applications")
	if _, err := apps.Field("port"); err == nil || !strings.Contains(err.Error(), "remote_port") {
		t.Errorf("an unknown field: %v, want an error listing the fields", err)
	}
}

func TestCompileRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*p4configv1.P4Info)
		want   string
	}{
		{"two objects with one ID", func(i *p4configv1.P4Info) { i.Registers[1].Preamble.Id = i.Registers[0].Preamble.Id }, "reuses id"},
		{"an object without an ID", func(i *p4configv1.P4Info) { i.Tables[0].Preamble.Id = 0 }, "has no id"},
		{"a table naming an action that is not there", func(i *p4configv1.P4Info) { i.Tables[0].ActionRefs[0].Id = 0x01ffffff }, "unknown action id"},
		{"an unsupported match kind", func(i *p4configv1.P4Info) {
			i.Tables[0].MatchFields[0].Match = &p4configv1.MatchField_OtherMatchType{OtherMatchType: "selector"}
		}, "is not supported"},
		{"a zero-width param", func(i *p4configv1.P4Info) {
			for _, a := range i.Actions {
				if len(a.Params) > 0 {
					a.Params[0].Bitwidth = 0
					return
				}
			}
		}, "bitwidth 0"},
		{"two params with one ID", func(i *p4configv1.P4Info) {
			for _, a := range i.Actions {
				if len(a.Params) > 1 {
					a.Params[1].Id = a.Params[0].Id
					return
				}
			}
		}, "used twice"},
		{"a digest struct missing from type_info", func(i *p4configv1.P4Info) { i.TypeInfo.Structs = nil }, "type_info"},
		{"a register of size 0", func(i *p4configv1.P4Info) { i.Registers[0].Size = 0 }, "size 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := proto.Clone(compiled(t).Info).(*p4configv1.P4Info)
			tc.mutate(info)
			if _, err := Compile(info); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Compile(nil); err == nil {
		t.Error("Compile(nil) succeeded")
	}
}
