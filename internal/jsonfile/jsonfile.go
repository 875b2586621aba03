// Package jsonfile rewrites JSON files in place.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Compact rewrites the JSON file at path without the whitespace its writer put in. p4c indents
// the BMv2 JSON it writes, and indented the program no longer fits a pipeline ConfigMap (1 MiB):
// hack/p4-build.sh and test/bmv2 compact it.
func Compact(path string) error {
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
