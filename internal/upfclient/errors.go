package upfclient

import (
	"context"
	"errors"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// ErrNotConnected: no stream to the device is up (Code: UNAVAILABLE, retry later).
	ErrNotConnected = errors.New("not connected to the device")
	// ErrNotPrimary: this controller is connected but a backup (Code: PERMISSION_DENIED).
	ErrNotPrimary = errors.New("not the primary controller of the device")
	// ErrNoPipeline: no P4Info is known yet; call EnsurePipeline or LoadPipeline first
	// (Code: FAILED_PRECONDITION).
	ErrNoPipeline = errors.New("no forwarding pipeline known: call EnsurePipeline or LoadPipeline first")
)

// UpdateError is the device's verdict on one update of a Write: the p4.v1.Error it returned
// for that update, or the error of the whole request it was part of.
type UpdateError struct {
	Index   int // the update's position in the Write call
	Code    codes.Code
	Message string
	Update  *p4v1.Update
	err     error // a cause on this side (ErrNotConnected, a context error), if any
}

func (e *UpdateError) Error() string {
	return fmt.Sprintf("update %d (%s): %s: %s", e.Index, describeUpdate(e.Update), e.Code, e.Message)
}

// Unwrap returns the local cause (ErrNotConnected, ErrNotPrimary, a context error), if any.
func (e *UpdateError) Unwrap() error { return e.err }

// GRPCStatus makes status.Code(err) return the update's canonical code.
func (e *UpdateError) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Code returns the canonical gRPC code of err: the code of an UpdateError, a gRPC status, a
// context error or one of this package's sentinel errors; UNKNOWN for anything else and OK for nil.
func Code(err error) codes.Code {
	var ue *UpdateError
	switch {
	case err == nil:
		return codes.OK
	case errors.As(err, &ue):
		return ue.Code
	case errors.Is(err, ErrNotConnected):
		return codes.Unavailable
	case errors.Is(err, ErrNotPrimary):
		return codes.PermissionDenied
	case errors.Is(err, ErrNoPipeline):
		return codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// IsResourceExhausted: the table (or another resource) is full.
func IsResourceExhausted(err error) bool { return Code(err) == codes.ResourceExhausted }

// IsNotFound: the entry to modify or delete does not exist.
func IsNotFound(err error) bool { return Code(err) == codes.NotFound }

// IsAlreadyExists: the entry to insert exists already.
func IsAlreadyExists(err error) bool { return Code(err) == codes.AlreadyExists }

// IsUnavailable: the device could not be reached; the update was probably not applied and may
// be retried once the device is primary again.
func IsUnavailable(err error) bool { return Code(err) == codes.Unavailable }

// FirstError returns the first non-nil error of a Write result (nil if there is none), and how
// many failed; handy for logs and conditions.
func FirstError(errs []error) (first error, failed int) {
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	return first, failed
}

// batchDetails extracts the per-element p4.v1.Error details of a Write or Read error (spec
// 12.3); nil when the error carries none.
func batchDetails(err error) []*p4v1.Error {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	details := st.Proto().GetDetails()
	if len(details) == 0 {
		return nil
	}
	out := make([]*p4v1.Error, 0, len(details))
	for _, d := range details {
		pe := &p4v1.Error{}
		if d.UnmarshalTo(pe) != nil {
			return nil // not the P4Runtime format: treat the error as request-wide
		}
		out = append(out, pe)
	}
	return out
}

func describeUpdate(u *p4v1.Update) string {
	if u == nil {
		return "nil"
	}
	t := u.GetType().String()
	switch e := u.GetEntity().GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return fmt.Sprintf("%s table_entry table_id=%d", t, e.TableEntry.GetTableId())
	case *p4v1.Entity_RegisterEntry:
		return fmt.Sprintf("%s register_entry register_id=%d", t, e.RegisterEntry.GetRegisterId())
	case *p4v1.Entity_DigestEntry:
		return fmt.Sprintf("%s digest_entry digest_id=%d", t, e.DigestEntry.GetDigestId())
	case *p4v1.Entity_CounterEntry:
		return fmt.Sprintf("%s counter_entry counter_id=%d", t, e.CounterEntry.GetCounterId())
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return t + " packet_replication_engine_entry"
	}
	return t
}

// sessionErr reports an RPC cut short by the end of its session (this package closes the
// connection when the stream fails) as UNAVAILABLE, not as a cancellation the caller asked for.
func sessionErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && status.Code(err) == codes.Canceled {
		return status.Error(codes.Unavailable, "the connection to the device closed: "+status.Convert(err).Message())
	}
	return err
}
