package upfclient

import (
	"context"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Write sends updates in as few WriteRequests as the limits allow (MaxUpdatesPerWrite,
// MaxWriteBytes; MaxWritesInFlight at once), with CONTINUE_ON_ERROR, and returns nil when
// every update was applied. Otherwise it returns one error per update, in order: nil for the
// ones applied, an *UpdateError with the device's canonical code for the others (see
// IsAlreadyExists, IsNotFound, IsResourceExhausted, IsUnavailable). An update whose request
// failed as a whole (connection lost, not primary) carries that request's error.
//
// P4Runtime applies the updates of one request in any order, and this call may spread them
// over several requests: put updates that depend on each other (delete, then insert the same
// key) in separate calls.
func (d *Device) Write(ctx context.Context, updates []*p4v1.Update) []error {
	if len(updates) == 0 {
		return nil
	}
	errs := make([]error, len(updates))
	s, err := d.primary()
	if err != nil {
		failAll(errs, updates, 0, err)
		d.m.writeUpdates(d.cfg.Name, updates, errs)
		return errs
	}
	chunks := d.chunks(updates)
	if len(chunks) == 1 {
		d.writeChunk(ctx, s, updates, 0, errs)
	} else {
		sem := make(chan struct{}, d.cfg.MaxWritesInFlight)
		var wg sync.WaitGroup
		for i, lo := range chunks {
			hi := len(updates)
			if i+1 < len(chunks) {
				hi = chunks[i+1]
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				d.writeChunk(ctx, s, updates[lo:hi], lo, errs[lo:hi])
			}()
		}
		wg.Wait()
	}
	d.m.writeUpdates(d.cfg.Name, updates, errs)
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// chunks cuts updates into requests: the start index of each.
func (d *Device) chunks(updates []*p4v1.Update) []int {
	starts := []int{0}
	n, size := 0, 0
	for i, u := range updates {
		// Per-update framing within the request: a tag and a length prefix.
		us := proto.Size(u) + 4
		if n > 0 && (n >= d.cfg.MaxUpdatesPerWrite || size+us > d.cfg.MaxWriteBytes) {
			starts = append(starts, i)
			n, size = 0, 0
		}
		n++
		size += us
	}
	return starts
}

// writeChunk sends one WriteRequest and fills errs (the chunk's slice of the result).
func (d *Device) writeChunk(ctx context.Context, s *session, updates []*p4v1.Update, base int, errs []error) {
	req := &p4v1.WriteRequest{
		DeviceId:   d.cfg.DeviceID,
		Role:       d.cfg.Role,
		ElectionId: s.electionID(),
		Updates:    updates,
		Atomicity:  p4v1.WriteRequest_CONTINUE_ON_ERROR,
	}
	start := d.clock.Now()
	_, err := s.client.Write(ctx, req)
	err = sessionErr(ctx, err)
	d.m.writeRequest(d.cfg.Name, status.Code(err), d.clock.Since(start))
	if err == nil {
		return
	}
	details := batchDetails(err)
	if len(details) != len(updates) {
		// No per-update report (spec: the whole request failed): every update shares it.
		failAll(errs, updates, base, err)
		return
	}
	for i, pe := range details {
		if code := codes.Code(pe.GetCanonicalCode()); code != codes.OK {
			errs[i] = &UpdateError{Index: base + i, Code: code, Message: pe.GetMessage(), Update: updates[i]}
		}
	}
}

// failAll gives every update the error of the request (or of this side) that carried it.
func failAll(errs []error, updates []*p4v1.Update, base int, err error) {
	code := Code(err)
	msg := err.Error()
	if st, ok := status.FromError(err); ok && code == st.Code() {
		msg = st.Message()
	}
	for i := range errs {
		errs[i] = &UpdateError{Index: base + i, Code: code, Message: msg, Update: updates[i], err: err}
	}
}
