// Package p4 holds the JUNCTION-UPF P4 program (v1model and TNA builds, in this
// directory's P4 sources) and the P4Info of both builds, as p4c (v1model) and
// bf-p4c (TNA, Tofino 2) write them: the API between the operator and every
// target, table, action, register, counter and digest names. The software UPF
// and the operator's tests load the v1model P4Info from here; a Tofino UPF's
// pipeline ConfigMap carries the TNA one. hack/p4-build.sh (in `make test`)
// fails when either is stale; `go test ./p4/...` checks that they agree.
package p4

import (
	_ "embed"
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

//go:embed p4info.txtpb
var p4infoText []byte

//go:embed tna/p4info.txtpb
var tnaP4InfoText []byte

// P4InfoText returns the P4Info in protobuf text format, as checked in
// (p4info.txtpb). The slice is a copy; callers may keep or change it.
func P4InfoText() []byte {
	return append([]byte(nil), p4infoText...)
}

// P4Info parses the embedded P4Info. Each call returns a new message, so
// callers may change it.
func P4Info() (*p4configv1.P4Info, error) {
	return parse(p4infoText, "p4info.txtpb")
}

// TNAP4Info parses the embedded P4Info of the TNA build (tna/p4info.txtpb, bf-p4c's),
// a new message each call.
func TNAP4Info() (*p4configv1.P4Info, error) {
	return parse(tnaP4InfoText, "tna/p4info.txtpb")
}

func parse(text []byte, file string) (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(text, info); err != nil {
		return nil, fmt.Errorf("p4: parse embedded %s: %w", file, err)
	}
	return info, nil
}
