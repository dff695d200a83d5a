package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
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

// WriteError reports a Write that did not apply every update: the updates
// the device refused while it applied the others (CONTINUE_ON_ERROR), and,
// when a whole RPC failed, that error (Err) and how many updates were left
// in doubt or never sent. Applied is exact: the updates of every batch the
// device answered, minus the refused ones.
type WriteError struct {
	Device string
	// Total is the number of updates passed to Write; Errors lists each
	// refused one in order of Index.
	Total  int
	Errors []EntityError
	// Err is the RPC-level error (not primary: ErrNotPrimary; device
	// unreachable; per-update details lost; context) that stopped the
	// Write, nil when every batch was answered. Unwrap returns it.
	Err error
	// Answered counts the updates of the batches the device answered (OK
	// or with per-update errors). InDoubt counts those of batches whose RPC
	// failed: they may or may not have been applied. NotSent counts the
	// updates of the batches not sent after Err.
	Answered, InDoubt, NotSent int
	// answered lists the [start, end) index ranges of the answered batches.
	answered [][2]int
	// Describe, when set, renders an update for Error (e.g. with table
	// and action names from the P4Info); the default shows the update
	// type and the ids.
	Describe func(*p4v1.Update) string
}

// Applied returns the number of updates the device applied for certain.
func (e *WriteError) Applied() int { return e.Answered - len(e.Errors) }

// AppliedIndex reports whether update i of the Write (its index in the
// slice passed to Write) was applied for certain: its batch was answered
// and the device did not refuse it.
func (e *WriteError) AppliedIndex(i int) bool {
	in := false
	for _, r := range e.answered {
		if i >= r[0] && i < r[1] {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	_, refused := slices.BinarySearchFunc(e.Errors, i, func(f EntityError, i int) int { return cmp.Compare(f.Index, i) })
	return !refused
}

// Unwrap returns the RPC-level error, if any.
func (e *WriteError) Unwrap() error { return e.Err }

func (e *WriteError) describe(u *p4v1.Update) string {
	if e.Describe != nil {
		return e.Describe(u)
	}
	return DescribeUpdate(u)
}

// Error is one line: the counts, the RPC error if any and the first refused
// update. Use %+v or Details for every failure.
func (e *WriteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "device %s: write: ", e.Device)
	if e.Err != nil {
		fmt.Fprintf(&b, "stopped after %d of %d updates applied (%d in doubt, %d not sent): %v",
			e.Applied(), e.Total, e.InDoubt, e.NotSent, e.Err)
		if len(e.Errors) == 0 {
			return b.String()
		}
		fmt.Fprintf(&b, "; and ")
	}
	if len(e.Errors) == 0 {
		fmt.Fprintf(&b, "0 of %d updates failed", e.Total)
		return b.String()
	}
	f := e.Errors[0]
	fmt.Fprintf(&b, "%d of %d updates failed; first: update %d (%s %s): %s: %s",
		len(e.Errors), e.Total, f.Index, f.Update.GetType(), e.describe(f.Update), f.Code, f.Message)
	return b.String()
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

// wireRequest is a WriteRequest already in protobuf wire format: its fixed
// fields, then one `updates` field per update. wireCodec sends it as is.
type wireRequest struct{ b []byte }

// wireCodec is gRPC's proto codec, except that a *wireRequest is sent as
// the bytes it holds: Write encodes each update once, while it batches,
// instead of sizing every update to batch it and leaving gRPC to size and
// encode the whole request again.
type wireCodec struct{ encoding.CodecV2 }

func (w wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*wireRequest); ok {
		return mem.BufferSlice{mem.SliceBuffer(r.b)}, nil
	}
	return w.CodecV2.Marshal(v)
}

// batchEncoder cuts updates into batches (as Batches does) and encodes each
// one into a WriteRequest in wire format, one batch at a time, so that the
// first batch is on the wire before the last is encoded.
type batchEncoder struct {
	updates  []*p4v1.Update
	header   []byte // the request's fixed fields
	maxCount int
	maxBytes int
	next     int // first update of the next batch
	// size of update next, already computed (0: not yet); proto.Size also
	// fills the size caches that the encoding then uses.
	pending int
}

// batch encodes the next batch: the index of its first update, its length
// and the request. n is 0 at the end. err names an update too large for
// any request: the updates before it have been batched.
func (e *batchEncoder) batch() (start, n int, req *wireRequest, err error) {
	start = e.next
	if start >= len(e.updates) {
		return start, 0, nil, nil
	}
	var b []byte
	for i := start; i < len(e.updates) && i-start < e.maxCount; i++ {
		u := e.updates[i]
		te, fast := fastTableEntry(u)
		var z fastSizes
		sz := e.pending
		switch {
		case fast:
			z = fastUpdateSize(u, te)
			sz = z.update
		case sz == 0:
			sz = proto.Size(u)
		}
		field := protowire.SizeTag(4) + protowire.SizeBytes(sz)
		if len(e.header)+field > e.maxBytes {
			e.pending = 0
			return start, i - start, e.request(b), fmt.Errorf("update %d (%s) is %d bytes: over the %d-byte message limit", i, DescribeUpdate(u), field, e.maxBytes)
		}
		if i > start && len(e.header)+len(b)+field > e.maxBytes {
			e.pending = sz
			break
		}
		e.pending = 0
		if b == nil {
			// Room for a full batch of updates like this one.
			b = make([]byte, 0, len(e.header)+min(e.maxBytes, field*min(e.maxCount, len(e.updates)-start)))
			b = append(b, e.header...)
		}
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sz))
		at := len(b)
		if fast {
			b = appendFastUpdate(b, u, te, z)
		} else if b, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, u); err != nil {
			return start, i - start, e.request(b[:at-protowire.SizeTag(4)-protowire.SizeVarint(uint64(sz))]),
				fmt.Errorf("update %d (%s): encode: %w", i, DescribeUpdate(u), err)
		}
		if len(b)-at != sz {
			// A size that disagrees with the bytes would corrupt the request.
			return start, i - start, e.request(b[:at-protowire.SizeTag(4)-protowire.SizeVarint(uint64(sz))]),
				fmt.Errorf("update %d (%s): encoded %d bytes, sized %d", i, DescribeUpdate(u), len(b)-at, sz)
		}
		e.next = i + 1
	}
	return start, e.next - start, &wireRequest{b: b}, nil
}

// request wraps b (nil: no update) unless it is empty.
func (e *batchEncoder) request(b []byte) *wireRequest {
	if b == nil {
		return nil
	}
	return &wireRequest{b: b}
}

// Write sends updates in batches (see Batches; limits from Config), up to
// Config.WriteWindow Write RPCs in flight, with CONTINUE_ON_ERROR
// atomicity. Updates in one call must not depend on each other: the device
// may apply the updates of a batch, and the batches in flight, in any
// order. Each batch is encoded while the ones before it are in flight.
//
// A batch in which the device refuses some updates (per-update errors) does
// not stop the call: the other batches are still sent and every refused
// update is collected. An RPC-level error (not primary: ErrNotPrimary;
// device unreachable; per-update details lost: ErrDetailsLost; ctx done)
// stops it: no batch is started after it (those already in flight finish
// and are counted). So does an update too large for any request (over
// Config.MaxSendMsgSize on its own): the batches before it are sent, it
// and the updates after it are not. Unless every update was applied, the
// result is a *WriteError with every refused update, the RPC error if any
// (errors.Is sees through it) and exact counts; see WriteError.Applied.
func (c *Client) Write(ctx context.Context, updates []*p4v1.Update, opts ...WriteOption) error {
	if c.cfg.ReadOnly {
		return fmt.Errorf("device %s: write: %w: the client is read-only", c.cfg.Name, ErrNotPrimary)
	}
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	header, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.writeRequest(nil))
	if err != nil {
		return fmt.Errorf("device %s: write: encode request: %w", c.cfg.Name, err)
	}
	enc := &batchEncoder{updates: updates, header: header, maxCount: max(c.cfg.MaxBatchUpdates, 1), maxBytes: c.cfg.MaxSendMsgSize}
	codec := grpc.ForceCodecV2(wireCodec{encoding.GetCodecV2(protoenc.Name)})
	window := max(c.cfg.WriteWindow, 1)
	type result struct {
		start, n int
		failed   []EntityError
		err      error
	}
	var (
		results []*result // one per batch sent, in order
		sem     = make(chan struct{}, window)
		wg      sync.WaitGroup
		mu      sync.Mutex
		done    = 0
		stopped = false // an RPC-level error: start no further batch
		encErr  error   // an update that cannot be sent
	)
	for {
		start, n, req, err := enc.batch()
		if err != nil {
			encErr = err
		}
		if n == 0 || req == nil {
			break
		}
		sem <- struct{}{}
		mu.Lock()
		stop := stopped
		mu.Unlock()
		if stop || ctx.Err() != nil {
			<-sem
			break
		}
		r := &result{start: start, n: n}
		results = append(results, r)
		bi, batch := len(results), updates[start:start+n]
		wg.Go(func() {
			defer func() { <-sem }()
			err := c.conn.Invoke(ctx, p4v1.P4Runtime_Write_FullMethodName, req, &p4v1.WriteResponse{}, codec)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.failed, r.err = c.decodeWriteError(err, batch, start)
				if r.err != nil {
					r.err = fmt.Errorf("batch %d (updates %d-%d of %d): %w", bi, start, start+n-1, len(updates), r.err)
					stopped = true
				}
			}
			done += n
			if o.progress != nil {
				o.progress(done, len(updates))
			}
		})
		if encErr != nil {
			break
		}
	}
	wg.Wait()
	werr := &WriteError{Device: c.cfg.Name, Total: len(updates), NotSent: len(updates)}
	var rpcErrs []error
	for _, r := range results {
		werr.NotSent -= r.n
		if r.err != nil {
			werr.InDoubt += r.n
			rpcErrs = append(rpcErrs, r.err)
			continue
		}
		werr.Answered += r.n
		werr.answered = append(werr.answered, [2]int{r.start, r.start + r.n})
		werr.Errors = append(werr.Errors, r.failed...)
	}
	switch {
	case encErr != nil:
		rpcErrs = append(rpcErrs, encErr)
	case werr.NotSent > 0 && len(rpcErrs) == 0:
		rpcErrs = append(rpcErrs, ctx.Err())
	}
	// One line, every RPC error kept for errors.Is.
	for _, e := range rpcErrs {
		if werr.Err == nil {
			werr.Err = e
		} else {
			werr.Err = fmt.Errorf("%w; %w", werr.Err, e)
		}
	}
	if werr.Err == nil && len(werr.Errors) == 0 {
		return nil
	}
	return werr
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
