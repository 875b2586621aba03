//go:build linux

package bmv2

import (
	"os"
	"testing"

	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/test/netns"
)

// ForTest is what a test needs before it starts a switch: the BMv2 JSON that p4c compiles from
// p4/v1model under the module root. Without root privileges, or without the toolchain
// (hack/tools.sh p4tools), it skips the test; in CI ($CI set) either fails it.
func ForTest(t testing.TB, root string) (deviceConfig []byte) {
	t.Helper()
	netns.Require(t)
	testenv.Require(t, "BMv2 and p4c (hack/tools.sh p4tools)", Available(root))
	jsonPath, _, err := Compile(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if deviceConfig, err = os.ReadFile(jsonPath); err != nil {
		t.Fatal(err)
	}
	return deviceConfig
}

// StartForTest is Start for a test: it fails the test when the switch does not come up, and
// stops it when the test ends, printing its output if the test failed.
func StartForTest(t testing.TB, root string, ns *netns.Namespace, o Options) *Switch {
	t.Helper()
	sw, err := Start(root, ns, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sw.Stop()
		if t.Failed() {
			t.Logf("simple_switch_grpc output:\n%s", sw.Logs())
		}
	})
	return sw
}
