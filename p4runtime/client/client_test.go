package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
)

const testCookie = 0xc0ffee

func startServer(t *testing.T) *p4rttest.Server {
	t.Helper()
	s := p4rttest.Start(p4rttest.Options{DeviceID: 1})
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, s *p4rttest.Server, eid uint64, adjust ...func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{
		Name:        fmt.Sprintf("test-eid%d", eid),
		Address:     s.Address(),
		DeviceID:    s.DeviceID(),
		ElectionID:  client.ElectionID{Low: eid},
		Transport:   client.Transport{Insecure: true},
		DialOptions: s.DialOptions(),
		Backoff:     client.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	}
	for _, f := range adjust {
		f(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// primaryWithPipeline returns a primary client of a server with the sample
// pipeline installed.
func primaryWithPipeline(t *testing.T, s *p4rttest.Server, adjust ...func(*client.Config)) *client.Client {
	t.Helper()
	c := newClient(t, s, 10, adjust...)
	ctx := ctxTimeout(t, 5*time.Second)
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatalf("WaitPrimary: %v", err)
	}
	if _, err := c.SetPipeline(ctx, p4rttest.SampleP4Info(), []byte("{}"), testCookie); err != nil {
		t.Fatalf("SetPipeline: %v", err)
	}
	return c
}

// waitState waits until c reports state want.
func waitState(t *testing.T, c *client.Client, want client.State) client.Status {
	t.Helper()
	return waitFor(t, c, want.String(), func(st client.Status) bool { return st.State == want })
}

// waitFor waits until c's status satisfies ok.
func waitFor(t *testing.T, c *client.Client, what string, ok func(client.Status) bool) client.Status {
	t.Helper()
	ctx := ctxTimeout(t, 5*time.Second)
	for st := range c.Watch(ctx) {
		if ok(st) {
			return st
		}
	}
	t.Fatalf("never reached: %s; last status %+v", what, c.Status())
	return client.Status{}
}

func TestConfigRefused(t *testing.T) {
	base := client.Config{Address: "127.0.0.1:9559", DeviceID: 1, ElectionID: client.ElectionID{Low: 1}, Transport: client.Transport{Insecure: true}}
	for _, tc := range []struct {
		name   string
		adjust func(*client.Config)
		want   string
	}{
		{"device_id 0", func(c *client.Config) { c.DeviceID = 0 }, "device_id 0"},
		{"election_id 0", func(c *client.Config) { c.ElectionID = client.ElectionID{} }, "election_id 0"},
		{"insecure with CA", func(c *client.Config) { c.Transport.CAFile = "ca.pem" }, "Insecure excludes"},
		{"cert without key", func(c *client.Config) { c.Transport = client.Transport{CertFile: "c.pem"} }, "go together"},
		{"missing CA file", func(c *client.Config) { c.Transport = client.Transport{CAFile: "/nonexistent/ca.pem"} }, "CA file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.adjust(&cfg)
			c, err := client.New(cfg)
			if err == nil {
				c.Close()
				t.Fatal("New accepted the config")
			}
			if !errors.Is(err, client.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
}

func TestInsecureWarns(t *testing.T) {
	c, err := client.New(client.Config{Address: "127.0.0.1:9559", DeviceID: 1, ElectionID: client.ElectionID{Low: 1}, Transport: client.Transport{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "plaintext") {
		t.Fatalf("Warnings() = %q, want one plaintext warning", w)
	}
	tlsClient, err := client.New(client.Config{Address: "127.0.0.1:9559", DeviceID: 1, ElectionID: client.ElectionID{Low: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer tlsClient.Close()
	if w := tlsClient.Warnings(); len(w) != 0 {
		t.Fatalf("TLS client warnings = %q, want none", w)
	}
}

func TestElectionIDString(t *testing.T) {
	if got := (client.ElectionID{High: 1, Low: 2}).String(); got != "18446744073709551618" {
		t.Fatalf("String = %s", got)
	}
	if (client.ElectionID{High: 1}).Compare(client.ElectionID{Low: ^uint64(0)}) != 1 {
		t.Fatal("High must dominate Low")
	}
}

func TestPrimaryBackup(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t, 10*time.Second)

	low := newClient(t, s, 5)
	if err := low.WaitPrimary(ctx); err != nil {
		t.Fatalf("first client alone must become primary: %v", err)
	}
	high := newClient(t, s, 10)
	if err := high.WaitPrimary(ctx); err != nil {
		t.Fatalf("higher election id must become primary: %v", err)
	}
	st := waitState(t, low, client.StateBackup)
	if st.Code != codes.AlreadyExists || st.ServerElectionID != (client.ElectionID{Low: 10}) {
		t.Fatalf("backup status = %+v, want ALREADY_EXISTS with election id 10", st)
	}
	if err := low.WaitPrimary(ctx); !errors.Is(err, client.ErrNotPrimary) {
		t.Fatalf("WaitPrimary of backup = %v, want ErrNotPrimary", err)
	}
	if hi, lo, ok := s.Primary(""); !ok || hi != 0 || lo != 10 {
		t.Fatalf("server primary = %d:%d %v, want 0:10", hi, lo, ok)
	}

	if _, err := high.SetPipeline(ctx, p4rttest.SampleP4Info(), nil, testCookie); err != nil {
		t.Fatal(err)
	}
	s.ResetStats()
	err := low.Write(ctx, p4rttest.Inserts(p4rttest.L2Entries(1, 3)))
	if !errors.Is(err, client.ErrNotPrimary) || status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup Write = %v, want ErrNotPrimary wrapping PERMISSION_DENIED", err)
	}
	if st := s.Stats(); st.WriteRPCs != 1 || st.FailedRPCs != 1 {
		t.Fatalf("server stats %+v: the denial must come from the server", st)
	}
	if err := high.Write(ctx, p4rttest.Inserts(p4rttest.L2Entries(1, 3))); err != nil {
		t.Fatalf("primary Write: %v", err)
	}
	if n := len(s.TableEntries()); n != 3 {
		t.Fatalf("%d entries stored, want 3", n)
	}

	// The primary leaves: the backup learns there is no primary, and
	// (spec: election ids below the highest ever seen never win) stays
	// backup.
	high.Close()
	waitFor(t, low, "backup with no primary (NOT_FOUND)", func(st client.Status) bool {
		return st.State == client.StateBackup && st.Code == codes.NotFound
	})
}

func TestReconnectAfterDrop(t *testing.T) {
	s := startServer(t)
	c := primaryWithPipeline(t, s)
	ctx := ctxTimeout(t, 10*time.Second)

	seenConnecting := make(chan client.Status, 1)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	updates := c.Watch(watchCtx)
	<-updates // current state
	s.DropStreams()
	go func() {
		for st := range updates {
			if st.State == client.StateConnecting {
				seenConnecting <- st
				return
			}
		}
	}()
	select {
	case st := <-seenConnecting:
		if status.Code(st.Err) != codes.Unavailable {
			t.Errorf("stream error %v, want the server's UNAVAILABLE", st.Err)
		}
	case <-ctx.Done():
		t.Fatal("client never noticed the dropped stream")
	}
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatalf("no re-arbitration after drop: %v", err)
	}
	if st := c.Status(); st.Streams < 2 {
		t.Fatalf("Streams = %d, want a second stream", st.Streams)
	}
	if err := c.Write(ctx, p4rttest.Inserts(p4rttest.L2Entries(1, 1))); err != nil {
		t.Fatalf("Write after re-arbitration: %v", err)
	}
}

func TestUnknownDeviceRefused(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s, 1, func(cfg *client.Config) { cfg.DeviceID = 7 })
	err := c.WaitPrimary(ctxTimeout(t, 5*time.Second))
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "arbitration refused") {
		t.Fatalf("WaitPrimary for unknown device = %v, want NOT_FOUND at once", err)
	}
}

// TestUnreachable: against a port nobody listens on, WaitPrimary keeps
// waiting while the client retries (connection refused is not a reason to
// give up), and returns ctx's error with the address and the cause once ctx
// ends. The test bounds the work, not the time: it ends ctx itself after
// the client has failed a given number of streams, so a loaded machine only
// makes it slower. A WaitPrimary that returned before (for another reason)
// would not carry context.Canceled; one that ignored ctx would hang until
// go test's timeout.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens there now

	c, err := client.New(client.Config{Address: addr, DeviceID: 1, ElectionID: client.ElectionID{Low: 1}, Transport: client.Transport{Insecure: true},
		Backoff: client.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.WaitPrimary(ctx) }()

	// Wait until failedStreams streams were refused (the supervisor has
	// opened the next one, the last failure recorded), WaitPrimary still
	// waiting.
	const failedStreams = 3
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	var last client.Status
	for st := range c.Watch(wctx) {
		last = st
		if st.Streams > failedStreams && st.Err != nil {
			break
		}
		if st.State != client.StateConnecting && st.State != client.StateIdle {
			t.Fatalf("state %s against a closed port (err %v)", st.State, st.Err)
		}
	}
	if last.Err == nil || !strings.Contains(last.Err.Error(), "connection refused") {
		t.Fatalf("after %d streams the last stream error is %v, want connection refused", last.Streams, last.Err)
	}
	select {
	case err := <-done:
		t.Fatalf("WaitPrimary returned after %d refused streams, before its context ended: %v", last.Streams-1, err)
	default:
	}
	cancel()
	err = <-done
	if err == nil {
		t.Fatal("WaitPrimary succeeded against a closed port")
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q: want the context's end, the address and the cause (connection refused)", err)
	}
}

func TestPerUpdateErrors(t *testing.T) {
	const n = 3000
	failAt := map[int]codes.Code{17: codes.ResourceExhausted, 2501: codes.InvalidArgument}
	entities := p4rttest.L2Entries(0x10000, n)
	updates := p4rttest.Inserts(entities)
	bad := map[*p4v1.Entity]codes.Code{}
	for i, code := range failAt {
		bad[entities[i]] = code
	}
	hook := func(u *p4v1.Update) error {
		for e, code := range bad {
			if proto.Equal(e, u.GetEntity()) {
				return status.Errorf(code, "injected failure")
			}
		}
		return nil
	}

	t.Run("details kept", func(t *testing.T) {
		s := startServer(t)
		c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxBatchUpdates = n })
		s.SetWriteHook(hook)
		s.ResetStats()
		err := c.Write(ctxTimeout(t, 60*time.Second), updates)
		werr, ok := errors.AsType[*client.WriteError](err)
		if !ok {
			t.Fatalf("Write = %v, want *WriteError", err)
		}
		if st := s.Stats(); st.WriteRPCs != 1 || st.MaxBatch != n {
			t.Fatalf("stats %+v: want one batch of %d", st, n)
		}
		if werr.Total != n || len(werr.Errors) != len(failAt) {
			t.Fatalf("WriteError total %d with %d errors, want %d with %d", werr.Total, len(werr.Errors), n, len(failAt))
		}
		for _, e := range werr.Errors {
			want, ok := failAt[e.Index]
			if !ok || e.Code != want || e.Update != updates[e.Index] || e.Message != "injected failure" {
				t.Errorf("entity error %+v: not one of the injected failures", e)
			}
		}
		if got := len(s.TableEntries()); got != n-len(failAt) {
			t.Errorf("%d entries stored, want %d (CONTINUE_ON_ERROR)", got, n-len(failAt))
		}
		line := werr.Error()
		if strings.Contains(line, "\n") || !strings.Contains(line, "2 of 3000 updates failed") || !strings.Contains(line, "update 17") {
			t.Errorf("Error() = %q: want one line with the counts and the first failure", line)
		}
		all := fmt.Sprintf("%+v", err)
		if !strings.Contains(all, "update 17:") || !strings.Contains(all, "update 2501:") {
			t.Errorf("%%+v = %q: want every failure", all)
		}
	})

	t.Run("details lost with an 8 KiB header limit", func(t *testing.T) {
		s := startServer(t)
		c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxBatchUpdates = n; cfg.MaxHeaderListSize = 8 << 10 })
		s.SetWriteHook(hook)
		err := c.Write(ctxTimeout(t, 60*time.Second), updates)
		werr, ok := errors.AsType[*client.WriteError](err)
		if !ok || !errors.Is(err, client.ErrDetailsLost) || werr.InDoubt != n || werr.Applied() != 0 || len(werr.Errors) != 0 {
			t.Fatalf("Write = %v, want ErrDetailsLost (the trailer exceeds 8 KiB) with the whole batch in doubt", err)
		}
	})
}

// TestWriteStopsAtRPCError: per-update failures do not stop a Write (every
// batch is sent, every refused update is reported); an RPC-level failure
// does (no batch after it), and the counts say exactly what was applied.
func TestWriteStopsAtRPCError(t *testing.T) {
	const batch, batches = 100, 6
	entities := p4rttest.L2Entries(0x20000, batch*batches)
	updates := p4rttest.Inserts(entities)
	// One refused update in each of the first two batches and in the
	// batch after the failing RPC.
	refuse := map[uint64]bool{0x20000 + 5: true, 0x20000 + 150: true, 0x20000 + 350: true}
	macOf := func(u *p4v1.Update) uint64 {
		var m uint64
		for _, b := range u.GetEntity().GetTableEntry().GetMatch()[0].GetExact().GetValue() {
			m = m<<8 | uint64(b)
		}
		return m
	}
	for _, window := range []int{1, 2} {
		t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
			s := startServer(t)
			c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxBatchUpdates = batch; cfg.WriteWindow = window })
			s.SetWriteHook(func(u *p4v1.Update) error {
				if refuse[macOf(u)] {
					return status.Error(codes.InvalidArgument, "injected refusal")
				}
				return nil
			})
			// The third batch (updates 200-299) fails as a whole; record
			// the order in which the batches reached the device.
			var got []uint64
			s.SetWriteRPCHook(func(req *p4v1.WriteRequest) error {
				first := macOf(req.GetUpdates()[0])
				got = append(got, first)
				if first == 0x20000+200 {
					return status.Error(codes.Unavailable, "injected transport failure")
				}
				return nil
			})
			s.ResetStats()
			err := c.Write(ctxTimeout(t, 60*time.Second), updates)
			werr, ok := errors.AsType[*client.WriteError](err)
			if !ok || status.Code(werr.Err) != codes.Unavailable {
				t.Fatalf("Write = %v, want a WriteError with the UNAVAILABLE RPC error", err)
			}
			// One at a time, nothing is sent after the failed batch. With a
			// window, batches started while it was in flight may follow it
			// (not bounded: an earlier batch may finish and free a slot),
			// but the counts must still match what the device holds.
			failedAt := slices.Index(got, 0x20000+200)
			if failedAt < 0 || window == 1 && len(got) != 3 {
				t.Fatalf("batches reached the device in order %x; want the failed one last (window 1)", got)
			}
			answered := (len(got) - 1) * batch
			wantErrs := 0
			for _, first := range got {
				for m := range refuse {
					if first != 0x20000+200 && m >= first && m < first+batch {
						wantErrs++
					}
				}
			}
			if werr.Answered != answered || werr.InDoubt != batch || werr.NotSent != batch*batches-answered-batch {
				t.Fatalf("answered %d, in doubt %d, not sent %d; want %d, %d, %d", werr.Answered, werr.InDoubt, werr.NotSent,
					answered, batch, batch*batches-answered-batch)
			}
			if len(werr.Errors) != wantErrs {
				t.Fatalf("%d refused updates reported, want %d: %+v", len(werr.Errors), wantErrs, err)
			}
			for _, e := range werr.Errors {
				if !refuse[macOf(e.Update)] || e.Code != codes.InvalidArgument || e.Update != updates[e.Index] {
					t.Errorf("entity error %+v is not an injected refusal", e)
				}
			}
			stored := map[uint64]bool{}
			for _, te := range s.TableEntries() {
				var m uint64
				for _, b := range te.GetMatch()[0].GetExact().GetValue() {
					m = m<<8 | uint64(b)
				}
				stored[m] = true
			}
			for i, u := range updates {
				if werr.AppliedIndex(i) != stored[macOf(u)] {
					t.Fatalf("AppliedIndex(%d) = %v, but the device holds it: %v", i, werr.AppliedIndex(i), stored[macOf(u)])
				}
			}
			if got := len(s.TableEntries()); got != werr.Applied() {
				t.Fatalf("device holds %d entries, WriteError.Applied() = %d", got, werr.Applied())
			}
			if line := werr.Error(); strings.Contains(line, "\n") || !strings.Contains(line, "injected transport failure") ||
				!strings.Contains(line, "injected refusal") {
				t.Errorf("Error() = %q: want one line with the RPC error and the first refusal", line)
			}
		})
	}
	t.Run("every RPC fails", func(t *testing.T) {
		s := startServer(t)
		c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxBatchUpdates = batch; cfg.WriteWindow = 4 })
		s.SetWriteRPCHook(func(*p4v1.WriteRequest) error { return status.Error(codes.Unavailable, "down") })
		err := c.Write(ctxTimeout(t, 60*time.Second), updates)
		werr, ok := errors.AsType[*client.WriteError](err)
		// Up to 4 batches were in flight; each failure is kept, on one line.
		if !ok || werr.Applied() != 0 || werr.InDoubt == 0 || werr.InDoubt+werr.NotSent != batch*batches ||
			strings.Contains(err.Error(), "\n") || strings.Count(err.Error(), "down") != werr.InDoubt/batch {
			t.Fatalf("Write = %q (%+v), want one line with every failed RPC", err, werr)
		}
	})
	t.Run("per-update failures in every batch", func(t *testing.T) {
		s := startServer(t)
		c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxBatchUpdates = batch })
		s.SetWriteHook(func(u *p4v1.Update) error {
			if macOf(u)%batch == 7 {
				return status.Error(codes.ResourceExhausted, "injected refusal")
			}
			return nil
		})
		s.ResetStats()
		err := c.Write(ctxTimeout(t, 60*time.Second), updates)
		werr, ok := errors.AsType[*client.WriteError](err)
		if !ok || werr.Err != nil || len(werr.Errors) != batches || werr.Applied() != batch*batches-batches || s.Stats().WriteRPCs != batches {
			t.Fatalf("Write = %+v (%d RPCs), want %d refusals, one per batch, every batch sent", err, s.Stats().WriteRPCs, batches)
		}
	})
}

func TestBatching(t *testing.T) {
	const n = 10000
	updates := p4rttest.Inserts(p4rttest.L2Entries(1, n))

	t.Run("count limit", func(t *testing.T) {
		s := startServer(t)
		c := primaryWithPipeline(t, s)
		s.ResetStats()
		var calls []int
		err := c.Write(ctxTimeout(t, 60*time.Second), updates, client.WithProgress(func(done, total int) {
			if total != n {
				t.Errorf("progress total %d", total)
			}
			calls = append(calls, done)
		}))
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.WriteRPCs != n/client.DefaultMaxBatchUpdates || st.MaxBatch != client.DefaultMaxBatchUpdates || st.Updates != n {
			t.Fatalf("stats %+v: want %d RPCs of %d", st, n/client.DefaultMaxBatchUpdates, client.DefaultMaxBatchUpdates)
		}
		if len(calls) != st.WriteRPCs || calls[len(calls)-1] != n {
			t.Fatalf("progress calls %v", calls)
		}
		if len(s.TableEntries()) != n {
			t.Fatal("entries missing")
		}
	})

	t.Run("size limit", func(t *testing.T) {
		const limit = 64 << 10
		s := startServer(t)
		c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxSendMsgSize = limit; cfg.MaxBatchUpdates = n })
		s.ResetStats()
		if err := c.Write(ctxTimeout(t, 60*time.Second), updates); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.WriteRPCs < 2 || st.MaxWriteSize > limit || st.Updates != n {
			t.Fatalf("stats %+v: want several RPCs each <= %d bytes", st, limit)
		}
		// The batches are full: the first RPCs fill the limit closely.
		if st.MaxWriteSize < limit*9/10 {
			t.Errorf("largest batch %d bytes: batching wastes the %d-byte limit", st.MaxWriteSize, limit)
		}
	})
}

// An update too large for any request stops the Write where it stands,
// like a failed RPC: the batches before it are sent and counted, it and
// the updates after it are counted as not sent.
func TestWriteUpdateTooLarge(t *testing.T) {
	const n, big = 10, 5
	s := startServer(t)
	c := primaryWithPipeline(t, s, func(cfg *client.Config) { cfg.MaxBatchUpdates = 2; cfg.MaxSendMsgSize = 4096 })
	updates := p4rttest.Inserts(p4rttest.L2Entries(1, n))
	updates[big].GetEntity().GetTableEntry().Metadata = make([]byte, 8192)
	s.ResetStats()
	err := c.Write(ctxTimeout(t, 10*time.Second), updates)
	werr, ok := errors.AsType[*client.WriteError](err)
	if !ok || werr.Applied() != big || werr.NotSent != n-big || werr.InDoubt != 0 || !strings.Contains(err.Error(), "update 5") ||
		!strings.Contains(err.Error(), "message limit") {
		t.Fatalf("Write = %v (%+v): want %d applied, %d not sent, naming update %d", err, werr, big, n-big, big)
	}
	for i := range updates {
		if werr.AppliedIndex(i) != (i < big) {
			t.Errorf("AppliedIndex(%d) = %v", i, werr.AppliedIndex(i))
		}
	}
	if got := len(s.TableEntries()); got != big || s.Stats().WriteRPCs != 3 {
		t.Fatalf("device holds %d entries after %d RPCs, want %d after 3", got, s.Stats().WriteRPCs, big)
	}
}

func TestBatchesEdges(t *testing.T) {
	u := p4rttest.Inserts(p4rttest.L2Entries(1, 5))
	b, err := client.Batches(u, 2, 1<<20, 0)
	if err != nil || len(b) != 3 || len(b[0]) != 2 || len(b[2]) != 1 {
		t.Fatalf("Batches(5, max 2) = %d batches, %v", len(b), err)
	}
	if b, err := client.Batches(nil, 2, 1<<20, 0); err != nil || len(b) != 0 {
		t.Fatalf("Batches(nil) = %v, %v", b, err)
	}
	if _, err := client.Batches(u, 2, 10, 0); err == nil || !strings.Contains(err.Error(), "update 0") {
		t.Fatalf("an update over the limit must be refused by index, got %v", err)
	}
}

func TestPipelineCookie(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s, 10)
	ctx := ctxTimeout(t, 5*time.Second)
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.PipelineCookie(ctx); err != nil || ok {
		t.Fatalf("fresh device cookie: ok=%v err=%v", ok, err)
	}
	info := p4rttest.SampleP4Info()
	for i, tc := range []struct {
		cookie      uint64
		wantSkipped bool
		wantSets    int
	}{
		{1, false, 1},
		{1, true, 1},
		{2, false, 2},
	} {
		skipped, err := c.SetPipeline(ctx, info, []byte("{}"), tc.cookie)
		if err != nil {
			t.Fatal(err)
		}
		if skipped != tc.wantSkipped || s.Stats().SetPipelines != tc.wantSets {
			t.Fatalf("step %d cookie %d: skipped=%v sets=%d, want %v %d", i, tc.cookie, skipped, s.Stats().SetPipelines, tc.wantSkipped, tc.wantSets)
		}
	}
	if ck, ok := s.Cookie(); !ok || ck != 2 {
		t.Fatalf("device cookie %d %v", ck, ok)
	}
}

func TestWriteErrorKeepsRPCCode(t *testing.T) {
	s := startServer(t)
	c := primaryWithPipeline(t, s)
	ctx := ctxTimeout(t, 5*time.Second)
	e := p4rttest.L2Entries(1, 2)
	if err := c.Write(ctx, p4rttest.Inserts(e)); err != nil {
		t.Fatal(err)
	}
	// Inserting again: every update fails with ALREADY_EXISTS.
	err := c.Write(ctx, p4rttest.Inserts(e))
	werr, ok := errors.AsType[*client.WriteError](err)
	if !ok || werr.Codes()[codes.AlreadyExists] != 2 {
		t.Fatalf("Write = %v, want 2 ALREADY_EXISTS", err)
	}
	del := []*p4v1.Update{{Type: p4v1.Update_DELETE, Entity: p4rttest.L2Entry(99, 1)}}
	err = c.Write(ctx, del)
	if werr, ok := errors.AsType[*client.WriteError](err); !ok || werr.Errors[0].Code != codes.NotFound {
		t.Fatalf("DELETE of a missing entry = %v, want NOT_FOUND", err)
	}
}

// TestSameElectionIDAfterRestart: a controller that reconnects with its
// election id while its previous stream is still open on the device is
// refused (INVALID_ARGUMENT) until that stream goes; WaitPrimary rides the
// refusal out instead of failing at once.
func TestSameElectionIDAfterRestart(t *testing.T) {
	s := startServer(t)
	old := newClient(t, s, 5)
	if err := old.WaitPrimary(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	restarted := newClient(t, s, 5)
	done := make(chan error, 1)
	go func() { done <- restarted.WaitPrimary(ctxTimeout(t, 10*time.Second)) }()
	select {
	case err := <-done:
		t.Fatalf("WaitPrimary returned while the old stream held the election id: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	old.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the old stream closed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitPrimary did not return after the old stream closed")
	}
}

// TestBackupToRuntimeWriter: where a runtime writer shares our arbitration
// (a server that ignores roles, as PI does; emulated here by giving it our
// role), the refusal says so.
func TestBackupToRuntimeWriter(t *testing.T) {
	s := startServer(t)
	ctx := ctxTimeout(t, 5*time.Second)
	rt := newClient(t, s, 1, func(c *client.Config) { c.ElectionID = client.RuntimeElectionID(100) })
	if err := rt.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, 1<<62)
	err := c.WaitPrimary(ctx)
	if !errors.Is(err, client.ErrNotPrimary) || !strings.Contains(err.Error(), "runtime writer") {
		t.Fatalf("WaitPrimary = %v, want ErrNotPrimary naming the runtime writer", err)
	}
	if !rt.Primary() {
		t.Fatal("runtime writer demoted")
	}
}

// TestReadOnlyClient: a read-only client (election id 0) reads from a
// device without arbitrating, so the primary stays primary, and it refuses
// every write.
func TestReadOnlyClient(t *testing.T) {
	s := startServer(t)
	primary := primaryWithPipeline(t, s)
	ctx := ctxTimeout(t, 10*time.Second)
	if err := primary.Write(ctx, p4rttest.Inserts(p4rttest.L2Entries(0, 3))); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(client.Config{Address: s.Address(), DeviceID: s.DeviceID(), Transport: client.Transport{Insecure: true}, DialOptions: s.DialOptions()}); !errors.Is(err, client.ErrInvalidConfig) {
		t.Fatalf("election id 0 without ReadOnly: %v, want ErrInvalidConfig", err)
	}
	r, err := client.New(client.Config{Name: "reader", Address: s.Address(), DeviceID: s.DeviceID(), ReadOnly: true, Transport: client.Transport{Insecure: true}, DialOptions: s.DialOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}})
	if err != nil || len(got) != 3 {
		t.Fatalf("read-only Read: %d entities, %v; want 3", len(got), err)
	}
	if err := r.Write(ctx, p4rttest.Inserts(p4rttest.L2Entries(100, 1))); !errors.Is(err, client.ErrNotPrimary) {
		t.Errorf("read-only Write: %v, want ErrNotPrimary", err)
	}
	if err := r.WaitPrimary(ctx); !errors.Is(err, client.ErrNotPrimary) {
		t.Errorf("read-only WaitPrimary: %v, want ErrNotPrimary", err)
	}
	if !primary.Primary() {
		t.Errorf("the primary lost its role to a read-only client")
	}
	if err := primary.Write(ctx, p4rttest.Inserts(p4rttest.L2Entries(200, 1))); err != nil {
		t.Errorf("the primary's write after the reader: %v", err)
	}
}
