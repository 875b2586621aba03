package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteResultsTable replaces table name of docs/results.md, the lines between
// "<!-- table:NAME -->" and "<!-- /table:NAME -->", with rows (a header row first) as a
// Markdown table: what `make scenarios` regenerates. A document without the markers is an
// error.
func WriteResultsTable(name string, rows [][]string) error {
	path := filepath.Join(RepoRoot(), "docs", "results.md")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := "<!-- table:"+name+" -->\n", "<!-- /table:"+name+" -->"
	i, j := strings.Index(string(b), begin), strings.Index(string(b), end)
	if i < 0 || j < i {
		return fmt.Errorf("docs/results.md has no %q ... %q", strings.TrimSpace(begin), end)
	}
	var table strings.Builder
	for k, r := range rows {
		table.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if k == 0 {
			table.WriteString(strings.Repeat("| --- ", len(r)) + "|\n")
		}
	}
	return os.WriteFile(path, []byte(string(b[:i+len(begin)])+table.String()+string(b[j:])), 0o644)
}
