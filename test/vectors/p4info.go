package vectors

// Vectors name tables, fields, actions, params, registers, counters and digests as
// docs/pipeline.md does, and the runner resolves them against the target's P4Info at run time
// (internal/p4schema), exactly as the operator must: a vector that names something the P4Info
// lacks fails with an error that says which name.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// LoadP4Info reads a P4Info file in text (.txt, .txtpb, .pb.txt), JSON (.json) or binary form.
func LoadP4Info(path string) (*p4configv1.P4Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info := &p4configv1.P4Info{}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		err = protojson.Unmarshal(data, info)
	case ".bin", ".pb":
		err = proto.Unmarshal(data, info)
	default:
		err = prototext.Unmarshal(data, info)
	}
	if err != nil {
		return nil, fmt.Errorf("parse P4Info %s: %w", path, err)
	}
	return info, nil
}
