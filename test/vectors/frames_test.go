package vectors

import (
	"encoding/hex"
	"testing"

	"github.com/junction-atsss/junction/internal/p4schema"
	"github.com/junction-atsss/junction/p4"
)

// Every case file parses and every frame in it builds: vectors are checked without a target.
func TestCasesLoadAndFramesBuild(t *testing.T) {
	cases, err := LoadCases("cases", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		v := vars{"n3": 1, "n6": 2, "wifi": 3}
		for i, s := range c.Steps {
			if s.Send != nil {
				if _, err := v.buildFrame(s.Send.Frame, false); err != nil {
					t.Errorf("%s step %d send: %v", c.Name, i+1, err)
				}
			}
			if s.PacketOut != nil {
				if _, err := v.buildFrame(s.PacketOut.Frame, false); err != nil {
					t.Errorf("%s step %d packet_out: %v", c.Name, i+1, err)
				}
			}
			for port, frames := range s.Expect {
				for j, f := range frames {
					b, err := v.buildFrame(f, true)
					if err != nil {
						t.Errorf("%s step %d expect %s[%d]: %v", c.Name, i+1, port, j, err)
						continue
					}
					// Captured names become usable in later steps.
					b.record(b.bytes, v)
				}
			}
			for j, p := range s.PacketIn {
				if _, err := v.buildFrame(p.Frame, true); err != nil {
					t.Errorf("%s step %d packet_in %d: %v", c.Name, i+1, j+1, err)
				}
			}
			for name, ds := range s.Digests {
				for _, d := range ds {
					for m, x := range d {
						if _, err := v.parseMatcher(x, 32); err != nil {
							t.Errorf("%s step %d digest %s.%s: %v", c.Name, i+1, name, m, err)
						}
						if mm, _ := v.parseMatcher(x, 32); mm.capture != "" {
							v[mm.capture] = 1
						}
					}
				}
			}
			for key, x := range s.Registers {
				if mm, err := v.parseMatcher(x, 32); err != nil {
					t.Errorf("%s step %d register %s: %v", c.Name, i+1, key, err)
				} else if mm.capture != "" {
					v[mm.capture] = 1
				}
			}
			for key, cell := range s.Counters {
				for _, x := range []any{cell.Packets, cell.Bytes} {
					if mm, err := v.parseMatcher(x, 63); err != nil {
						t.Errorf("%s step %d counter %s: %v", c.Name, i+1, key, err)
					} else if mm.capture != "" {
						v[mm.capture] = 1
					}
				}
			}
			for name := range s.Drops {
				if _, ok := DropReasons[name]; !ok {
					t.Errorf("%s step %d: unknown drop reason %s", c.Name, i+1, name)
				}
			}
		}
	}
}

// Every name and value in the vectors resolves against the checked-in P4Info, exactly as the
// runner resolves them before writing to a target: tables, match fields, actions, parameters,
// registers, counters and digest members.
func TestCasesResolveAgainstP4Info(t *testing.T) {
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := LoadCases("cases", nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := p4schema.Compile(info)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{schema: sch}
	for _, c := range cases {
		cr := &caseRun{r: r, c: c, vars: vars{"n3": 1, "n6": 2, "wifi": 3, "cpu": 255}}
		for i, e := range c.Setup.Entries {
			if _, err := cr.tableEntry(e); err != nil {
				t.Errorf("%s entry %d (%s): %v", c.Name, i+1, e.Table, err)
			}
		}
		for i, s := range c.Steps {
			for j, e := range s.ModifyEntries {
				if _, err := cr.tableEntry(e); err != nil {
					t.Errorf("%s step %d modify_entries %d (%s): %v", c.Name, i+1, j+1, e.Table, err)
				}
			}
		}
		for _, d := range c.Setup.Defaults {
			tbl, err := r.schema.Table(d.Table)
			if err == nil {
				_, err = cr.action(tbl, d.Action, d.Params)
			}
			if err != nil {
				t.Errorf("%s default action of %s: %v", c.Name, d.Table, err)
			}
		}
		for key, val := range c.Setup.Registers {
			if _, _, _, err := cr.registerCell(key, val); err != nil {
				t.Errorf("%s register %s: %v", c.Name, key, err)
			}
		}
		for key := range c.Setup.Counters {
			if _, _, err := cr.counterRef(key); err != nil {
				t.Errorf("%s counters: %v", c.Name, err)
			}
		}
		for i, s := range c.Steps {
			for _, cells := range []map[string]CounterCell{s.SetCounters, s.Counters} {
				for key := range cells {
					if _, _, err := cr.counterRef(key); err != nil {
						t.Errorf("%s step %d counters: %v", c.Name, i+1, err)
					}
				}
			}
			for key, val := range s.SetRegisters {
				if _, _, _, err := cr.registerCell(key, val); err != nil {
					t.Errorf("%s step %d set_registers %s: %v", c.Name, i+1, key, err)
				}
			}
			for key := range s.Registers {
				if _, _, err := cr.registerRef(key); err != nil {
					t.Errorf("%s step %d registers: %v", c.Name, i+1, err)
				}
			}
			for name, ds := range s.Digests {
				d, err := r.schema.Digest(name)
				if err != nil {
					t.Errorf("%s step %d: %v", c.Name, i+1, err)
					continue
				}
				members := d.Members
				for _, want := range ds {
					if len(want) != len(members) {
						t.Errorf("%s step %d digest %s: %d members given, the P4Info has %d", c.Name, i+1, name, len(want), len(members))
					}
					for _, m := range members {
						if _, ok := want[m.Name]; !ok {
							t.Errorf("%s step %d digest %s: member %s missing", c.Name, i+1, name, m.Name)
						}
					}
				}
			}
		}
	}
}

// The builder lays frames out as the header specs say. The expected bytes were written from RFC
// 791 and 768 (IPv4 header and checksums, UDP with the pseudo-header), TS 29.281 (GTP-U G-PDU)
// and docs/junction-header.md (DATA, proto 4, length of the user packet), not by the builder:
// downlink-active-standby-threshold's first step, the user packet from the data network and the
// GTP-U frame the UPF sends toward the gNB.
func TestFramesFollowTheHeaderSpecs(t *testing.T) {
	cases, err := LoadCases("cases", nil)
	if err != nil {
		t.Fatal(err)
	}
	var step *Step
	for _, c := range cases {
		if c.Name == "downlink-active-standby-threshold" {
			step = &c.Steps[0]
		}
	}
	if step == nil || step.Send == nil || len(step.Expect["n3"]) != 1 {
		t.Fatal("downlink-active-standby-threshold: its first step is not a send with one frame on n3")
	}
	v := vars{"n3": 1, "n6": 2, "wifi": 3}
	// IPv4 (TTL 63), UDP 443 → 40000 with checksum 0 ("none", RFC 768: the builder computes IPv4
	// and TCP checksums, not UDP ones unless a case gives them).
	const user = "4500003c000000003f117993cb00710ac612000101bb9c4000280000" +
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" // payload: 32, the 00 01 02 ... pattern
	for _, tc := range []struct {
		what  string
		frame Frame
		want  string
	}{
		{"the user packet from the data network", step.Send.Frame,
			"020000000106020000000206" + "0800" + "4500003c0000000040117893cb00710ac6120001" + user[40:]},
		{"the GTP-U frame toward the gNB", step.Expect["n3"][0],
			"020000000203020000000103" + "0800" +
				"45000084000000004011f65dc0000201c000020a" + // outer IPv4 192.0.2.1 → 192.0.2.10, 132 bytes
				"0868086800700000" + // UDP 2152 → 2152, checksum 0
				"30ff006000000200" + // GTP-U version 1, PT 1, G-PDU, length 96, TEID 0x200
				"45000060000000004011f177c0000202c6120101" + // IPv4 192.0.2.2 → 198.18.1.1
				"08690869004c0000" + // UDP 2153 → 2153, checksum 0
				"00" + "04" + "003c" + "00000000" + // Junction DATA, no marks, proto 4, length 60, seq 0
				user},
	} {
		b, err := v.buildFrame(tc.frame, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if got := hex.EncodeToString(b.bytes); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.what, got, tc.want)
		}
	}
}
