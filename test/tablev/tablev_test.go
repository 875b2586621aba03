// Package tablev reproduces the paper's Table V (users that fit, by lookup design) from this
// program's own tables: their sizes and entry widths in the Tofino build's P4Info, so that the
// table follows the program when it changes.
//
//	go test ./test/tablev -run TableV -v
//
// Under `make scenarios` (JUNCTION_SCENARIO=full) it writes its two tables into docs/results.md;
// otherwise it fails where the tables there are not what it computes.
package tablev

import (
	"fmt"
	"os"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/p4"
)

// The model (docs/results.md, "Table V"). Memory is counted in bits of entries (match key plus
// the widest action's data) and register cells; exact and ternary memory are not told apart.
// The budget is what the Junction program allocates to the structures the four designs differ
// in: sessions, applications, session_overrides, session_seq and the path state (rtt_<access>,
// loss_<access>). A design
// fits U users with k sessions each when shared + U·(perUser + k·perSession) <= budget:
//
//	naive:     one flat entry per session keyed by session and application (the paper's Fig. 7a:
//	           each session serves one application), a sequence counter and a path state (RTT
//	           and loss of both accesses) per session
//	HTL only:  a sessions entry per session, the applications table shared by all, and for the
//	           exception share x of the sessions a session_overrides entry with its counter; a
//	           path state per session
//	UTSS only: the naive flat entry and counter per session, one path state per user
//	Junction:  HTL's entries and UTSS's path state per user
//
// x is the program's own ratio of session_overrides to sessions.
type widths struct {
	session, application, override, seq, pathState float64 // bits per entry or cell(s)
	budget, applications, exceptionShare           float64
}

// fromP4Info reads the TNA build's P4Info: the paper's table is about a Tofino's memory, and
// the TNA build provisions overrides for a share of the sessions as the paper does. The v1model
// build (BMv2, the software UPF) gives every session one, since each N4 MA PDU session's MAR
// becomes its override: x would be 100% there.
func fromP4Info(t *testing.T) widths {
	info, err := p4.TNAP4Info()
	if err != nil {
		t.Fatal(err)
	}
	actionBits := map[uint32]int32{}
	for _, a := range info.GetActions() {
		for _, p := range a.GetParams() {
			actionBits[a.GetPreamble().GetId()] += p.GetBitwidth()
		}
	}
	tables := map[string]*p4configv1.Table{}
	for _, tb := range info.GetTables() {
		tables[tb.GetPreamble().GetName()] = tb
	}
	entry := func(name string) (bits float64, size float64) {
		tb := tables[name]
		if tb == nil {
			t.Fatalf("table %s is not in the P4Info", name)
		}
		var key, action int32
		for _, m := range tb.GetMatchFields() {
			key += m.GetBitwidth()
		}
		for _, r := range tb.GetActionRefs() {
			action = max(action, actionBits[r.GetId()])
		}
		return float64(key + action), float64(tb.GetSize())
	}
	registers := map[string]*p4configv1.Register{}
	for _, r := range info.GetRegisters() {
		registers[r.GetPreamble().GetName()] = r
	}
	cell := func(name string) (bits float64, size float64) {
		r := registers[name]
		if r == nil {
			t.Fatalf("register %s is not in the P4Info", name)
		}
		return float64(r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()), float64(r.GetSize())
	}
	var w widths
	var nSessions, nOverrides, nSeq float64
	w.session, nSessions = entry("sessions")
	w.application, w.applications = entry("applications")
	w.override, nOverrides = entry("session_overrides")
	w.seq, nSeq = cell("session_seq")
	w.exceptionShare = nOverrides / nSessions
	w.budget = nSessions*w.session + w.applications*w.application + nOverrides*w.override + nSeq*w.seq
	for _, r := range []string{"rtt_3gpp", "rtt_non3gpp", "loss_3gpp", "loss_non3gpp"} {
		bits, n := cell(r)
		w.pathState += bits
		w.budget += n * bits
	}
	return w
}

// users is how many users with k sessions each fit the budget in a design.
func (w widths) users(design string, k float64) float64 {
	flat := w.session + w.application // keyed by session and application, both values
	var shared, perUser, perSession float64
	switch design {
	case "naive":
		perSession = flat + w.seq + w.pathState
	case "HTL only":
		shared = w.applications * w.application
		perSession = w.session + w.exceptionShare*(w.override+w.seq) + w.pathState
	case "UTSS only":
		perUser, perSession = w.pathState, flat+w.seq
	case "Junction":
		shared = w.applications * w.application
		perUser, perSession = w.pathState, w.session+w.exceptionShare*(w.override+w.seq)
	}
	return float64(int64((w.budget - shared) / (perUser + k*perSession)))
}

var designs = []string{"naive", "HTL only", "UTSS only", "Junction"}

// The paper's Table V, for the shape checks below and the printout.
var paper = map[float64][4]float64{
	1: {3022848, 3702784, 3022848, 3702784},
	2: {1511424, 1851392, 1705984, 3702784},
	4: {755712, 925696, 913408, 1175552},
	8: {377856, 462848, 473088, 616448},
}

func TestTableV(t *testing.T) {
	w := fromP4Info(t)
	fmt.Printf("\nTable V: users that fit the %.1f Mbit this program gives its session, application and path state\n", w.budget/1e6)
	fmt.Printf("(entry bits: sessions %.0f, applications %.0f, overrides %.0f, seq %.0f, path state %.0f; exception share %.3f)\n",
		w.session, w.application, w.override, w.seq, w.pathState, w.exceptionShare)
	fmt.Printf("%-9s %12s %12s %12s %12s %10s %10s\n", "sess/user", designs[0], designs[1], designs[2], designs[3], "J/naive", "paper")
	rows := [][]string{{"sessions per user", "naive", "HTL only", "UTSS only", "Junction", "Junction / naive", "paper's ratio"}}
	for _, k := range []float64{1, 2, 4, 8} {
		var u [4]float64
		for i, d := range designs {
			u[i] = w.users(d, k)
		}
		fmt.Printf("%-9.0f %12.0f %12.0f %12.0f %12.0f %9.2fx %9.2fx\n", k, u[0], u[1], u[2], u[3], u[3]/u[0], paper[k][3]/paper[k][0])
		rows = append(rows, []string{fmt.Sprint(k), count(u[0]), count(u[1]), count(u[2]), count(u[3]),
			fmt.Sprintf("%.2f×", u[3]/u[0]), fmt.Sprintf("%.2f×", paper[k][3]/paper[k][0])})

		// The paper's shape, which the model must keep: each technique helps alone, Junction is
		// at least as good as either, and UTSS gains nothing with one session per user.
		if !(u[1] > u[0] && u[3] >= u[1] && u[3] >= u[2] && u[2] >= u[0]) {
			t.Errorf("%v sessions per user: %v does not order naive < HTL <= Junction, naive <= UTSS <= Junction", k, u)
		}
		if k == 1 && u[2] != u[0] {
			t.Errorf("one session per user: UTSS %v != naive %v, but one path state per user is one per session", u[2], u[0])
		}
	}
	// Junction's advantage over naive grows with sessions per user (the paper: 1.22x to 1.63x).
	if r1, r8 := w.users("Junction", 1)/w.users("naive", 1), w.users("Junction", 8)/w.users("naive", 8); r8 <= r1 {
		t.Errorf("Junction/naive is %.2f at 1 session per user and %.2f at 8: want it to grow", r1, r8)
	}
	for name, table := range map[string][][]string{"tablev-model": w.model(), "tablev": rows} {
		if os.Getenv("JUNCTION_SCENARIO") == "full" {
			if err := testenv.WriteResultsTable(name, table); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if same, err := testenv.ResultsTableIs(name, table); err != nil {
			t.Fatal(err)
		} else if !same {
			t.Errorf("docs/results.md: table %s is not what the P4Info gives; rewrite it with JUNCTION_SCENARIO=full go test ./test/tablev", name)
		}
	}
}

// model is the table of what each design stores, in bits, with the budget.
func (w widths) model() [][]string {
	path := fmt.Sprintf("path state (%.0f)", w.pathState)
	return [][]string{
		{"design", "per session", "per user", "shared"},
		{"naive (Fig. 7a)", fmt.Sprintf("flat entry keyed by session and application (%.0f + %.0f bits), counter (%.0f), %s", w.session, w.application, w.seq, path), "", ""},
		{"HTL only (§V-C1)", fmt.Sprintf("sessions entry (%.0f), x·(override %.0f + counter %.0f), %s", w.session, w.override, w.seq, path), "",
			fmt.Sprintf("applications (%.0f × %.0f)", w.applications, w.application)},
		{"UTSS only (§V-C2)", fmt.Sprintf("flat entry (%.0f), counter (%.0f)", w.session+w.application, w.seq), path, ""},
		{"Junction", fmt.Sprintf("sessions entry (%.0f), x·(override + counter)", w.session), path, "applications"},
		{"budget", fmt.Sprintf("%.1f Mbit; x = %.1f%%", w.budget/1e6, 100*w.exceptionShare), "", ""},
	}
}

// count renders a user count with thousands separators.
func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The formula, checked by hand on round numbers: a 1000-bit budget, 10-bit entries.
func TestUsersFormula(t *testing.T) {
	w := widths{session: 10, application: 10, override: 10, seq: 10, pathState: 10, budget: 1000, applications: 10, exceptionShare: 0.5}
	for _, c := range []struct {
		design string
		k      float64
		want   float64
	}{
		{"naive", 1, 25},     // 1000 / (20 + 10 + 10)
		{"HTL only", 1, 30},  // (1000 - 100) / (10 + 0.5*20 + 10)
		{"UTSS only", 2, 14}, // 1000 / (10 + 2*30)
		{"Junction", 2, 18},  // (1000 - 100) / (10 + 2*20)
	} {
		if got := w.users(c.design, c.k); got != c.want {
			t.Errorf("%s, %v sessions per user: %v users, want %v", c.design, c.k, got, c.want)
		}
	}
}
