package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompactTakesOutTheIndentationAndKeepsTheValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	in := "{\n  \"tables\" : [\n    {\"name\" : \"a b\", \"size\" : 1024}\n  ]\n}\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Compact(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tables":[{"name":"a b","size":1024}]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestCompactRefusesWhatIsNotJSONNamingTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(path, []byte(`{"tables": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Compact(path)
	if err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Fatalf("got %v, want an error naming broken.json", err)
	}
	if got, _ := os.ReadFile(path); string(got) != `{"tables": [` {
		t.Errorf("the file was changed to %q", got)
	}
}
