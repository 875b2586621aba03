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
	path, doc, i, j, err := resultsTable(name)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(doc[:i]+markdownTable(rows)+doc[j:]), 0o644)
}

// ResultsTableIs reports whether table name of docs/results.md holds rows as WriteResultsTable
// writes them: for a table computed without a testbed, which a test can hold to its source.
func ResultsTableIs(name string, rows [][]string) (bool, error) {
	_, doc, i, j, err := resultsTable(name)
	if err != nil {
		return false, err
	}
	return doc[i:j] == markdownTable(rows), nil
}

// resultsTable reads docs/results.md and finds table name's lines: doc[i:j].
func resultsTable(name string) (path, doc string, i, j int, err error) {
	path = filepath.Join(RepoRoot(), "docs", "results.md")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", 0, 0, err
	}
	doc = string(b)
	begin, end := "<!-- table:"+name+" -->\n", "<!-- /table:"+name+" -->"
	i, j = strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return "", "", 0, 0, fmt.Errorf("docs/results.md has no %q ... %q", strings.TrimSpace(begin), end)
	}
	return path, doc, i + len(begin), j, nil
}

func markdownTable(rows [][]string) string {
	var table strings.Builder
	for k, r := range rows {
		table.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if k == 0 {
			table.WriteString(strings.Repeat("| --- ", len(r)) + "|\n")
		}
	}
	return table.String()
}
