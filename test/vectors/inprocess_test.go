package vectors

import (
	"context"
	"testing"
	"time"

	"github.com/junction-atsss/junction/p4"
)

// The vectors' logical ports and the CPU port, on every target.
const (
	upfGRPCAddr = "127.0.0.1:9559"
	upfCPUPort  = 255
)

var testPorts = []Port{
	{Name: "n3", Number: 1},
	{Name: "n6", Number: 2},
	{Name: "wifi", Number: 3},
}

// TestVectorsInProcess runs every vector against the software UPF in this process: no
// namespaces or privileges, so it runs wherever go test does.
func TestVectorsInProcess(t *testing.T) {
	info, err := p4.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	upf, err := StartInProcess(testPorts, upfCPUPort)
	if err != nil {
		t.Fatal(err)
	}
	defer upf.Close()
	runAllCases(t, upf.Config(info))
}

// runAllCases runs every case in cases/ against the target of cfg, one subtest each.
func runAllCases(t *testing.T, cfg Config) {
	cases, err := LoadCases("cases", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := NewRunner(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	passed, failed := 0, 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			res := r.RunCase(ctx, c)
			for _, f := range res.Failures {
				t.Error(f)
			}
			if res.Passed() {
				passed++
			} else {
				failed++
			}
		})
	}
	t.Logf("vectors: %d passed, %d failed", passed, failed)
}
