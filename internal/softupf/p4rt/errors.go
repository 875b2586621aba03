package p4rt

import (
	"errors"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// p4Error is an error with a canonical gRPC code, the unit of the per-update and per-read-request
// error reports (P4Runtime spec section 12).
type p4Error struct {
	code codes.Code
	msg  string
}

func (e *p4Error) Error() string { return e.code.String() + ": " + e.msg }

func errf(code codes.Code, format string, args ...any) error {
	return &p4Error{code: code, msg: fmt.Sprintf(format, args...)}
}

// codeOf returns the canonical code of err: a p4Error's, a gRPC status's, or UNKNOWN.
func codeOf(err error) (codes.Code, string) {
	var pe *p4Error
	if errors.As(err, &pe) {
		return pe.code, pe.msg
	}
	if st, ok := status.FromError(err); ok {
		return st.Code(), st.Message()
	}
	return codes.Unknown, err.Error()
}

// targetErr turns an error from the Target into a p4Error, keeping a gRPC code when the target
// gave one and using fallback otherwise.
func targetErr(err error, fallback codes.Code, context string) error {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return errf(st.Code(), "%s: %s", context, st.Message())
	}
	return errf(fallback, "%s: %v", context, err)
}

// rpcStatus is a gRPC status error for RPC-wide failures.
func rpcStatus(code codes.Code, msg string) error { return status.Error(code, msg) }

// rpcErr converts err into the error an RPC returns (a gRPC status error).
func rpcErr(err error) error {
	if err == nil {
		return nil
	}
	c, msg := codeOf(err)
	return status.Error(c, msg)
}

// batchStatus builds the google.rpc.Status of a batch RPC (Write or Read) where at least one
// element failed: UNKNOWN at the top level and one p4.v1.Error per element, OK for the ones
// that succeeded (nil in errs).
func batchStatus(errs []error, what string) error {
	failed := 0
	st := &spb.Status{Code: int32(codes.Unknown)}
	st.Details = make([]*anypb.Any, len(errs))
	for i, err := range errs {
		pe := &p4v1.Error{CanonicalCode: int32(codes.OK)}
		if err != nil {
			failed++
			c, msg := codeOf(err)
			pe.CanonicalCode = int32(c)
			pe.Message = msg
		}
		a, mErr := anypb.New(pe)
		if mErr != nil {
			return status.Errorf(codes.Internal, "encoding error details: %v", mErr)
		}
		st.Details[i] = a
	}
	if failed == 1 {
		for _, err := range errs {
			if err != nil {
				_, msg := codeOf(err)
				st.Message = fmt.Sprintf("%s failed: %s", what, msg)
			}
		}
	} else {
		st.Message = fmt.Sprintf("%s failed: %d of %d elements had errors", what, failed, len(errs))
	}
	return status.ErrorProto(st)
}

// BatchErrors extracts the per-element p4.v1.Error details of a Write or Read error, in the
// order of the request's elements; nil when err carries none. Clients and tests use it.
func BatchErrors(err error) []*p4v1.Error {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	var out []*p4v1.Error
	for _, d := range st.Proto().GetDetails() {
		pe := &p4v1.Error{}
		if d.UnmarshalTo(pe) == nil {
			out = append(out, pe)
		}
	}
	return out
}
