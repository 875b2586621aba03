package ueagent

// What `make scenarios` (the full runs) writes: the CSVs and plots into docs/results/, and each
// scenario's table into docs/results.md between the lines "<!-- table:NAME -->" and
// "<!-- /table:NAME -->". The text around the tables (what the numbers mean, across runs) is
// written by hand.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/testenv"
)

// resultsDir is docs/results, where the full runs' CSVs and plots go.
func resultsDir(t testing.TB) string {
	dir := filepath.Join(testenv.RepoRoot(), "docs", "results")
	must(t, os.MkdirAll(dir, 0o755))
	return dir
}

// writeResultsTable replaces table NAME of docs/results.md with rows (a header row first), as
// a Markdown table. A document without the table's markers fails the test.
func writeResultsTable(t testing.TB, name string, rows [][]string) {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "docs", "results.md")
	b, err := os.ReadFile(path)
	must(t, err)
	begin, end := "<!-- table:"+name+" -->\n", "<!-- /table:"+name+" -->"
	i, j := strings.Index(string(b), begin), strings.Index(string(b), end)
	if i < 0 || j < i {
		t.Fatalf("docs/results.md has no %q ... %q", strings.TrimSpace(begin), end)
	}
	var table strings.Builder
	for k, r := range rows {
		table.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if k == 0 {
			table.WriteString(strings.Repeat("| --- ", len(r)) + "|\n")
		}
	}
	out := string(b[:i+len(begin)]) + table.String() + string(b[j:])
	must(t, os.WriteFile(path, []byte(out), 0o644))
	t.Logf("wrote table %s of docs/results.md", name)
}

// metOrNot says whether a target was met, for a table cell.
func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// mbps formats a rate in Mbit/s.
func mbps(v float64) string { return fmt.Sprintf("%.1f", v) }

// pct formats a fraction as a whole percentage.
func pct(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
