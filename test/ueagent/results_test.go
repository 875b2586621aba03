package ueagent

// What `make scenarios` (the full runs) writes: the CSVs and plots into docs/results/, and each
// scenario's table into docs/results.md between the lines "<!-- table:NAME -->" and
// "<!-- /table:NAME -->". The text around the tables (what the numbers mean, across runs) is
// written by hand.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-atsss/junction/internal/testenv"
)

// resultsDir is docs/results, where the full runs' CSVs and plots go.
func resultsDir(t testing.TB) string {
	dir := filepath.Join(testenv.RepoRoot(), "docs", "results")
	must(t, os.MkdirAll(dir, 0o755))
	return dir
}

// writeResultsTable replaces table name of docs/results.md with rows (testenv.WriteResultsTable).
func writeResultsTable(t testing.TB, name string, rows [][]string) {
	t.Helper()
	must(t, testenv.WriteResultsTable(name, rows))
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
