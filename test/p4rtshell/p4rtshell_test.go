// Package p4rtshell checks that p4runtime-shell, the P4 community's Python P4Runtime client,
// can drive the software UPF by P4Info names: run.sh installs the shell (pinned, cached under
// bin/), starts the software UPF and runs check.py.
package p4rtshell

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/testenv"
)

func TestP4RuntimeShellDrivesSoftUPF(t *testing.T) {
	_, err := exec.LookPath("python3")
	testenv.Require(t, "python3", err)
	out, err := exec.Command("python3", "-m", "venv", "--help").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, out)
	}
	testenv.Require(t, "python3 with venv", err)
	out, err = exec.Command("./run.sh").CombinedOutput()
	t.Logf("run.sh:\n%s", out)
	if err != nil {
		t.Fatalf("run.sh: %v", err)
	}
	if !strings.Contains(string(out), ", 0 failed") {
		t.Fatal("check.py did not report a clean run")
	}
}
