package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrDetailsLost is wrapped when a Write batch failed but its per-update
// errors did not reach the client, typically because the trailer carrying
// them exceeded Config.MaxHeaderListSize.
var ErrDetailsLost = errors.New("per-update errors lost")

// EntityError is the failure of one update of a Write.
type EntityError struct {
	// Index of the update in the slice passed to Write.
	Index  int
	Update *p4v1.Update
	// Code and Message come from the p4.v1.Error the server returned for
	// this update; Space and TargetCode are its target-specific fields.
	Code       codes.Code
	Message    string
	Space      string
	TargetCode int32
}

// WriteError reports the updates of a Write that the device refused while
// the others were applied (CONTINUE_ON_ERROR).
type WriteError struct {
	Device string
	// Total is the number of updates sent; Errors lists each failed one in
	// order of Index.
	Total  int
	Errors []EntityError
	// Describe, when set, renders an update for Error (e.g. with table
	// and action names from the P4Info); the default shows the update
	// type and the ids.
	Describe func(*p4v1.Update) string
}

func (e *WriteError) describe(u *p4v1.Update) string {
	if e.Describe != nil {
		return e.Describe(u)
	}
	return DescribeUpdate(u)
}

// Error is one line: the counts and the first failure. Use %+v or Details
// for every failure.
func (e *WriteError) Error() string {
	if len(e.Errors) == 0 {
		return fmt.Sprintf("device %s: write: 0 of %d updates failed", e.Device, e.Total)
	}
	f := e.Errors[0]
	return fmt.Sprintf("device %s: write: %d of %d updates failed; first: update %d (%s %s): %s: %s",
		e.Device, len(e.Errors), e.Total, f.Index, f.Update.GetType(), e.describe(f.Update), f.Code, f.Message)
}

// Details returns one line per failed update.
func (e *WriteError) Details() string {
	var b strings.Builder
	for _, f := range e.Errors {
		fmt.Fprintf(&b, "update %d: %s %s: %s: %s", f.Index, f.Update.GetType(), e.describe(f.Update), f.Code, f.Message)
		if f.Space != "" || f.TargetCode != 0 {
			fmt.Fprintf(&b, " (%s code %d)", f.Space, f.TargetCode)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Format implements fmt.Formatter: %+v prints Error then Details.
func (e *WriteError) Format(s fmt.State, verb rune) {
	if verb == 'v' && s.Flag('+') {
		fmt.Fprintf(s, "%s\n%s", e.Error(), e.Details())
		return
	}
	fmt.Fprint(s, e.Error())
}

// Codes counts the failures by code.
func (e *WriteError) Codes() map[codes.Code]int {
	m := map[codes.Code]int{}
	for _, f := range e.Errors {
		m[f.Code]++
	}
	return m
}

// DescribeUpdate renders an update's entity with ids only.
func DescribeUpdate(u *p4v1.Update) string {
	if te := u.GetEntity().GetTableEntry(); te != nil {
		return fmt.Sprintf("table %#x entry (%d match fields, priority %d)", te.GetTableId(), len(te.GetMatch()), te.GetPriority())
	}
	if cs := u.GetEntity().GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs != nil {
		return fmt.Sprintf("clone session %d (%d replicas)", cs.GetSessionId(), len(cs.GetReplicas()))
	}
	return fmt.Sprintf("%T", u.GetEntity().GetEntity())
}

// WriteOption adjusts one Write call.
type WriteOption func(*writeOptions)

type writeOptions struct {
	progress func(done, total int)
}

// WithProgress calls f after every batch with the number of updates sent so
// far and the total.
func WithProgress(f func(done, total int)) WriteOption {
	return func(o *writeOptions) { o.progress = f }
}

// Batches splits updates into consecutive batches, each with at most
// maxCount updates and a WriteRequest (with the given fixed-field overhead)
// of at most maxBytes. It fails on an update too large for any batch.
func Batches(updates []*p4v1.Update, maxCount, maxBytes, overhead int) ([][]*p4v1.Update, error) {
	var out [][]*p4v1.Update
	start, size := 0, overhead
	for i, u := range updates {
		n := proto.Size(u)
		// Field 4 (updates), length-delimited: tag + length + body.
		n = protowire.SizeTag(4) + protowire.SizeBytes(n)
		if overhead+n > maxBytes {
			return nil, fmt.Errorf("update %d (%s) is %d bytes: over the %d-byte message limit", i, DescribeUpdate(u), n, maxBytes)
		}
		if i > start && (i-start >= maxCount || size+n > maxBytes) {
			out = append(out, updates[start:i])
			start, size = i, overhead
		}
		size += n
	}
	if start < len(updates) {
		out = append(out, updates[start:])
	}
	return out, nil
}

func (c *Client) writeRequest(updates []*p4v1.Update) *p4v1.WriteRequest {
	return &p4v1.WriteRequest{
		DeviceId:   c.cfg.DeviceID,
		Role:       c.cfg.Role,
		ElectionId: c.cfg.ElectionID.Proto(),
		Updates:    updates,
		Atomicity:  p4v1.WriteRequest_CONTINUE_ON_ERROR,
	}
}

// Write sends updates in batches (see Batches; limits from Config) one
// Write RPC after the other, with CONTINUE_ON_ERROR atomicity. Updates in
// one call must not depend on each other: the device may apply the updates
// of a batch in any order.
//
// When the device refuses some updates, the other batches are still sent
// and the result is a *WriteError listing every refused update. Errors for
// a whole RPC (not primary: ErrNotPrimary; device unreachable; context)
// stop the call; they say how many updates were sent before.
func (c *Client) Write(ctx context.Context, updates []*p4v1.Update, opts ...WriteOption) error {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	// Fixed fields of the request, plus slack for varint growth.
	overhead := proto.Size(c.writeRequest(nil)) + 16
	batches, err := Batches(updates, c.cfg.MaxBatchUpdates, c.cfg.MaxSendMsgSize, overhead)
	if err != nil {
		return fmt.Errorf("device %s: write: %w", c.cfg.Name, err)
	}
	// Up to WriteWindow batches are in flight at once: the device works on
	// one while the next is marshalled and sent. The updates of one Write
	// call are independent by contract (dependent updates go in separate
	// calls), so their order across batches does not matter.
	window := max(c.cfg.WriteWindow, 1)
	type result struct {
		failed []EntityError
		err    error
	}
	results := make([]result, len(batches))
	starts := make([]int, len(batches))
	for bi := 1; bi < len(batches); bi++ {
		starts[bi] = starts[bi-1] + len(batches[bi-1])
	}
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for bi, batch := range batches {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := c.rpc.Write(ctx, c.writeRequest(batch))
			if err != nil {
				errs, rpcErr := c.decodeWriteError(err, batch, starts[bi])
				if rpcErr != nil {
					rpcErr = fmt.Errorf("device %s: write batch %d/%d (updates %d-%d of %d): %w",
						c.cfg.Name, bi+1, len(batches), starts[bi], starts[bi]+len(batch)-1, len(updates), rpcErr)
				}
				results[bi] = result{failed: errs, err: rpcErr}
			}
			mu.Lock()
			done += len(batch)
			if o.progress != nil {
				o.progress(done, len(updates))
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	var failed []EntityError
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		failed = append(failed, r.failed...)
	}
	if err := ctx.Err(); err != nil && done < len(updates) {
		return fmt.Errorf("device %s: write: %d of %d updates sent: %w", c.cfg.Name, done, len(updates), err)
	}
	if len(failed) > 0 {
		return &WriteError{Device: c.cfg.Name, Total: len(updates), Errors: failed}
	}
	return nil
}

// decodeWriteError turns the error of one batch into per-update errors
// (offset by base), or returns an error for the whole RPC.
func (c *Client) decodeWriteError(err error, batch []*p4v1.Update, base int) ([]EntityError, error) {
	st, ok := status.FromError(err)
	if !ok {
		return nil, err
	}
	switch st.Code() {
	case codes.Unknown:
		// Per spec: one p4.v1.Error per update, in order.
	case codes.PermissionDenied:
		return nil, fmt.Errorf("%w for device_id %d role %q with election id %s: %w",
			ErrNotPrimary, c.cfg.DeviceID, c.cfg.Role, c.cfg.ElectionID, err)
	case codes.Internal, codes.ResourceExhausted:
		// A server that cannot send a trailer larger than the client's
		// advertised header list size resets the stream instead.
		if m := st.Message(); strings.Contains(m, "header list size") || strings.Contains(m, "RST_STREAM") {
			return nil, fmt.Errorf("%w: probably the error trailer exceeded the client's max header list size (%d bytes; raise Config.MaxHeaderListSize): %w",
				ErrDetailsLost, c.cfg.MaxHeaderListSize, err)
		}
		return nil, err
	default:
		return nil, err
	}
	details := st.Proto().GetDetails()
	if len(details) != len(batch) {
		return nil, fmt.Errorf("%w: device returned %d error details for a batch of %d updates: %w", ErrDetailsLost, len(details), len(batch), err)
	}
	var out []EntityError
	for i, d := range details {
		var pe p4v1.Error
		if err := d.UnmarshalTo(&pe); err != nil {
			return nil, fmt.Errorf("%w: detail %d is not a p4.v1.Error (%s): %w", ErrDetailsLost, i, d.GetTypeUrl(), err)
		}
		if codes.Code(pe.GetCanonicalCode()) == codes.OK {
			continue
		}
		out = append(out, EntityError{
			Index:      base + i,
			Update:     batch[i],
			Code:       codes.Code(pe.GetCanonicalCode()),
			Message:    pe.GetMessage(),
			Space:      pe.GetSpace(),
			TargetCode: pe.GetCode(),
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("device returned UNKNOWN but every update reports OK: %w", err)
	}
	return out, nil
}
