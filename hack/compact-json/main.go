// Command compact-json rewrites JSON files without the whitespace their writer put in
// (internal/jsonfile). hack/p4-build.sh runs it on p4c's BMv2 JSON: a pipeline ConfigMap (and
// the chart's, from pipeline.deviceConfig) holds 1 MiB at most, and the indented program is
// larger than that; compacted it is half.
//
//	go run ./hack/compact-json FILE...
package main

import (
	"fmt"
	"os"

	"github.com/junction-atsss/junction/internal/jsonfile"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compact-json FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := jsonfile.Compact(path); err != nil {
			fmt.Fprintln(os.Stderr, "compact-json:", err)
			os.Exit(1)
		}
	}
}
