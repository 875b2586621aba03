package gnb

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A sysctl that already holds the value is not written (a container's /proc/sys is read-only);
// one that does not is.
func TestSetSysctlWritesOnlyADifferentValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rp_filter")
	if err := os.WriteFile(path, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := setSysctl(path, "0"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || !st.ModTime().Equal(old) {
		t.Fatalf("a file already holding 0 was written (%v, %v)", st.ModTime(), err)
	}
	if err := setSysctl(path, "1"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "1" {
		t.Fatalf("after setting 1: %q, %v", b, err)
	}
}
