// Command compact-json rewrites JSON files without the whitespace their writer put in.
// hack/p4-build.sh runs it on p4c's BMv2 JSON, which p4c indents: a pipeline ConfigMap (and
// the chart's, from pipeline.deviceConfig) holds 1 MiB at most, and the indented program is
// larger than that; compacted it is half.
//
//	go run ./hack/compact-json FILE...
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compact-json FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := compact(path); err != nil {
			fmt.Fprintln(os.Stderr, "compact-json:", err)
			os.Exit(1)
		}
	}
}

func compact(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
