// Package p4rtshell checks that p4runtime-shell, the P4 community's Python P4Runtime client,
// can drive the software UPF by P4Info names: run.sh installs the shell (pinned, cached under
// bin/), starts the software UPF and runs check.py.
package p4rtshell

import (
	"os/exec"
	"strings"
	"testing"
)

func TestP4RuntimeShellDrivesSoftUPF(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("skipping: python3 is not installed")
	}
	if out, err := exec.Command("python3", "-m", "venv", "--help").CombinedOutput(); err != nil {
		t.Skipf("skipping: python3 cannot create virtual environments: %v\n%s", err, out)
	}
	out, err := exec.Command("./run.sh").CombinedOutput()
	t.Logf("run.sh:\n%s", out)
	if err != nil {
		t.Fatalf("run.sh: %v", err)
	}
	if !strings.Contains(string(out), ", 0 failed") {
		t.Fatal("check.py did not report a clean run")
	}
}
