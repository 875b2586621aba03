//go:build linux

package vectors

// Runs every vector against BMv2 simple_switch_grpc, p4lang's reference target, with the program
// compiled by p4c from p4/v1model: the same topology, runner and cases as the software UPF.
// Registers go through BMv2's Thrift runtime, which its P4Runtime server lacks.

import (
	"context"
	"os"
	"testing"

	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/junction-atsss/junction/p4"
	"github.com/junction-atsss/junction/test/bmv2"
	"github.com/junction-atsss/junction/test/netns"
)

func TestVectorsAgainstBMv2(t *testing.T) {
	netns.Require(t)
	runAllCases(t, startBMv2(t))
}

// startBMv2 compiles the v1model program with p4c, runs simple_switch_grpc behind
// vectorTopology and returns the runner's configuration for it (registers through Thrift).
// Outside CI it skips the test when hack/tools.sh p4tools has not run (bmv2.ForTest).
func startBMv2(t testing.TB) Config {
	root := testenv.RepoRoot()
	config := bmv2.ForTest(t, root)
	info, err := p4.P4Info() // p4c's, byte for byte (hack/p4-build.sh checks)
	if err != nil {
		t.Fatal(err)
	}
	target, tester, ports := vectorTopology(t)
	sw := bmv2.StartForTest(t, root, target, bmv2.Options{
		DeviceID: 1, CPUPort: upfCPUPort, GRPCAddr: upfGRPCAddr,
		Ports: map[uint32]string{1: "u-n3", 2: "u-n6", 3: "u-wifi"}, LogFile: os.Getenv("JUNCTION_BMV2_LOG"),
	})
	thrift, err := sw.Thrift(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { thrift.Close() })
	return Config{
		Target:       upfGRPCAddr,
		DeviceID:     1,
		ElectionID:   [2]uint64{0, 1},
		P4Info:       info,
		DeviceConfig: config,
		Ports:        ports,
		CPUPort:      upfCPUPort,
		Dial:         sw.Dial,
		InNamespace:  tester.Do,
		Registers:    thrift,
	}
}
