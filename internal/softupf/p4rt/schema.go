package p4rt

import (
	"fmt"

	"google.golang.org/grpc/codes"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/junction-atsss/junction/internal/p4schema"
)

// schema is the pipeline's P4Info compiled by internal/p4schema (the operator's client and the
// data plane read it through the same package): everything the server checks a request against.
// It is immutable once built and shared by readers without locks.
type schema struct {
	*p4schema.Schema
}

// compileP4Info checks a P4Info for what this server needs to serve it and builds its schema.
// Errors are INVALID_ARGUMENT and name the offending object.
func compileP4Info(info *p4configv1.P4Info) (*schema, error) {
	s, err := p4schema.Compile(info)
	if err != nil {
		return nil, errf(codes.InvalidArgument, "p4info: %v", err)
	}
	return &schema{s}, nil
}

func registerName(s *schema, id uint32) string {
	if r, ok := s.RegisterByID(id); ok {
		return r.Name
	}
	return fmt.Sprint(id)
}

func counterName(s *schema, id uint32) string {
	if c, ok := s.CounterByID(id); ok {
		return c.Name
	}
	return fmt.Sprint(id)
}

func meterName(s *schema, id uint32) string {
	if m, ok := s.MeterByID(id); ok {
		return m.Name
	}
	return fmt.Sprint(id)
}
