package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotPrimary: the device says this client is not the primary
	// controller for its (device_id, role): a backup at arbitration, or
	// PERMISSION_DENIED on a Write or SetForwardingPipelineConfig.
	ErrNotPrimary = errors.New("not the primary controller")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client closed")
)

// State is the arbitration state of a Client.
type State int

// Arbitration states.
const (
	// StateIdle: no stream started yet (WaitPrimary not called).
	StateIdle State = iota
	// StateConnecting: the stream is being opened or is broken and
	// waiting to reconnect; Status.Err holds the last stream error.
	StateConnecting
	// StatePrimary: the server answered OK to our arbitration.
	StatePrimary
	// StateBackup: the server answered ALREADY_EXISTS (another controller
	// with a higher election id is primary) or NOT_FOUND (no primary).
	StateBackup
	// StateClosed: Close was called.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateIdle:
		return "idle"
	case StateConnecting:
		return "connecting"
	case StatePrimary:
		return "primary"
	case StateBackup:
		return "backup"
	case StateClosed:
		return "closed"
	default:
		return fmt.Sprintf("State(%d)", int(s))
	}
}

// Status is a snapshot of the arbitration state.
type Status struct {
	State State
	// ServerElectionID is the highest election id the server reports for
	// our (device_id, role) in its last arbitration message (the primary's
	// when there is one); zero when it sent none.
	ServerElectionID ElectionID
	// Code and Message are the status of the last arbitration message.
	Code    codes.Code
	Message string
	// Err is the error that ended the last stream (StateConnecting).
	Err error
	// Streams counts the streams opened so far (1 + reconnections).
	Streams int
}

// Primary reports whether the client is the primary controller.
func (s Status) Primary() bool { return s.State == StatePrimary }

// Client is a P4Runtime controller for one (device_id, role). Methods are
// safe for concurrent use.
type Client struct {
	cfg      Config
	conn     *grpc.ClientConn
	rpc      p4v1.P4RuntimeClient
	log      *slog.Logger
	warnings []string

	startOnce sync.Once
	stop      context.CancelFunc
	done      chan struct{} // closed when the supervisor has exited
	closeOnce sync.Once

	mu      sync.Mutex
	st      Status
	seq     uint64        // incremented on every status change
	changed chan struct{} // closed and replaced on every status change
}

// New checks cfg and creates a Client. It does no I/O: the connection is
// made on first use. Call Close when done.
func New(cfg Config) (*Client, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	creds, warnings, err := cfg.Transport.credentials()
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", cfg.Name, err)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithMaxHeaderListSize(cfg.MaxHeaderListSize),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallSendMsgSize(cfg.MaxSendMsgSize),
			grpc.MaxCallRecvMsgSize(cfg.MaxRecvMsgSize),
		),
	}
	opts = append(opts, cfg.DialOptions...)
	conn, err := grpc.NewClient(cfg.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w: %w", cfg.Name, ErrInvalidConfig, err)
	}
	c := &Client{
		cfg:      cfg,
		conn:     conn,
		rpc:      p4v1.NewP4RuntimeClient(conn),
		log:      cfg.Logger.With("device", cfg.Name, "device_id", cfg.DeviceID),
		warnings: warnings,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
	}
	return c, nil
}

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// Warnings returns security warnings about the configuration (a plaintext
// connection), for the caller to show prominently.
func (c *Client) Warnings() []string { return append([]string(nil), c.warnings...) }

// RPC returns the underlying P4Runtime stub, for calls this package does
// not wrap. Requests sent through it must carry device_id, role and
// election_id themselves.
func (c *Client) RPC() p4v1.P4RuntimeClient { return c.rpc }

// Close stops the stream supervisor (which releases primaryship on the
// device) and closes the connection.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		started := false
		c.startOnce.Do(func() {}) // forbid a later start
		c.mu.Lock()
		if c.stop != nil {
			started = true
			c.stop()
		}
		c.mu.Unlock()
		if started {
			<-c.done
		}
		c.setStatus(func(s *Status) { s.State = StateClosed; s.Err = ErrClosed })
		err = c.conn.Close()
	})
	return err
}

// Status returns the current arbitration state.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// Primary reports whether the device last told us we are primary.
func (c *Client) Primary() bool { return c.Status().Primary() }

func (c *Client) snapshot() (Status, uint64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st, c.seq, c.changed
}

func (c *Client) setStatus(f func(*Status)) {
	c.mu.Lock()
	old := c.st
	f(&c.st)
	c.seq++
	st := c.st
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if old.State != st.State {
		c.log.Info("p4runtime arbitration", "state", st.State.String(), "election_id", c.cfg.ElectionID.String(),
			"server_election_id", st.ServerElectionID.String(), "message", st.Message, "err", st.Err)
	}
}

// Watch returns a channel that receives the current Status and then every
// change, until ctx is done or the client is closed; the channel is then
// closed. A slow reader misses intermediate states but always sees the
// latest one.
func (c *Client) Watch(ctx context.Context) <-chan Status {
	out := make(chan Status, 1)
	go func() {
		defer close(out)
		var last uint64
		first := true
		for {
			st, seq, changed := c.snapshot()
			if first || seq != last {
				select {
				case out <- st:
				case <-ctx.Done():
					return
				}
				first, last = false, seq
			}
			if st.State == StateClosed {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Start starts the StreamChannel supervisor if it is not running yet. It
// returns at once; use WaitPrimary to wait for the outcome.
func (c *Client) Start() {
	if c.cfg.ReadOnly {
		return
	}
	c.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		c.mu.Lock()
		c.stop = cancel
		c.mu.Unlock()
		c.setStatus(func(s *Status) { s.State = StateConnecting })
		go c.supervise(ctx)
	})
}

// WaitPrimary starts the stream supervisor if needed and waits until the
// device makes this client the primary. It returns an error wrapping
// ErrNotPrimary as soon as the device says we are a backup, a non-transient
// stream error (device unknown, election id in use) at once, and the last
// connection error together with ctx's error when ctx ends first.
func (c *Client) WaitPrimary(ctx context.Context) error {
	if c.cfg.ReadOnly {
		return fmt.Errorf("device %s: %w: a read-only client takes no part in arbitration", c.cfg.Name, ErrNotPrimary)
	}
	c.Start()
	var refusedSince time.Time
	for {
		st, _, changed := c.snapshot()
		var wake <-chan time.Time
		switch st.State {
		case StatePrimary:
			return nil
		case StateBackup:
			return c.notPrimaryError(st)
		case StateClosed:
			return fmt.Errorf("device %s: %w", c.cfg.Name, ErrClosed)
		case StateConnecting:
			if st.Err != nil && permanent(st.Err) {
				// A refusal that may be a previous session of ours still
				// holding our election id (it goes when the device notices
				// that stream is closed) is retried for a short grace.
				if !lingering(st.Err) {
					return fmt.Errorf("device %s (%s, device_id %d): arbitration refused: %w", c.cfg.Name, c.cfg.Address, c.cfg.DeviceID, st.Err)
				}
				if refusedSince.IsZero() {
					refusedSince = time.Now()
				}
				left := arbitrationGrace - time.Since(refusedSince)
				if left <= 0 {
					return fmt.Errorf("device %s (%s, device_id %d): arbitration refused for %v: %w", c.cfg.Name, c.cfg.Address, c.cfg.DeviceID, arbitrationGrace, st.Err)
				}
				wake = time.After(left)
			}
		}
		select {
		case <-changed:
		case <-wake:
		case <-ctx.Done():
			if st.Err != nil {
				return fmt.Errorf("device %s (%s): no primary arbitration before %w; last stream error: %w", c.cfg.Name, c.cfg.Address, ctx.Err(), st.Err)
			}
			return fmt.Errorf("device %s (%s): no primary arbitration before %w (state %s)", c.cfg.Name, c.cfg.Address, ctx.Err(), st.State)
		}
	}
}

func (c *Client) notPrimaryError(st Status) error {
	who := "another controller is primary"
	switch {
	case st.Code == codes.NotFound:
		who = "the device has no primary"
	case c.cfg.Role != RoleRuntime && st.ServerElectionID.InRuntimeRange():
		// Only a server that ignores roles (PI) puts a runtime writer in
		// our arbitration.
		who = "a runtime writer (role " + RoleRuntime + ") is primary and this server ignores roles (as PI does): wait until it disconnects"
	}
	return fmt.Errorf("device %s: %w: backup for device_id %d role %q with election id %s; %s (highest election id %s): %s",
		c.cfg.Name, ErrNotPrimary, c.cfg.DeviceID, c.cfg.Role, c.cfg.ElectionID, who, st.ServerElectionID, st.Message)
}

// arbitrationGrace is how long WaitPrimary keeps retrying a refusal that
// lingering says may be transient.
const arbitrationGrace = 3 * time.Second

// lingering reports whether an arbitration refusal may come from a stream
// of ours the device has not dropped yet: PI and the spec answer a second
// live stream with the same election id with INVALID_ARGUMENT.
func lingering(err error) bool {
	return status.Code(err) == codes.InvalidArgument
}

// permanent reports whether a stream error will not go away by retrying.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition, codes.PermissionDenied,
		codes.Unauthenticated, codes.Unimplemented:
		return true
	}
	return false
}

func (c *Client) supervise(ctx context.Context) {
	defer close(c.done)
	delay := c.cfg.Backoff.Initial
	for {
		c.setStatus(func(s *Status) { s.Streams++ })
		arbitrated, err := c.runStream(ctx)
		if ctx.Err() != nil {
			return
		}
		if arbitrated {
			delay = c.cfg.Backoff.Initial
		}
		c.setStatus(func(s *Status) {
			s.State, s.Err, s.Code, s.Message = StateConnecting, err, codes.Unavailable, ""
		})
		// Full jitter in [delay/2, delay) keeps many clients of one
		// restarted switch from reconnecting in lock-step.
		wait := delay/2 + rand.N(delay/2+1)
		c.log.Debug("p4runtime stream ended, reconnecting", "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, c.cfg.Backoff.Max)
	}
}

func (c *Client) arbitrationRequest() *p4v1.StreamMessageRequest {
	a := &p4v1.MasterArbitrationUpdate{DeviceId: c.cfg.DeviceID, ElectionId: c.cfg.ElectionID.Proto()}
	if c.cfg.Role != "" {
		a.Role = &p4v1.Role{Name: c.cfg.Role}
	}
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: a}}
}

// runStream opens one StreamChannel, arbitrates, and follows arbitration
// messages until the stream ends. It reports whether any arbitration
// answer arrived.
func (c *Client) runStream(ctx context.Context) (arbitrated bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.StreamChannel(sctx)
	if err != nil {
		return false, fmt.Errorf("open StreamChannel: %w", err)
	}
	if err := stream.Send(c.arbitrationRequest()); err != nil {
		// Send reports io.EOF when the stream failed; Recv has the cause.
		if _, rerr := stream.Recv(); rerr != nil {
			err = rerr
		}
		return false, fmt.Errorf("send arbitration: %w", err)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return arbitrated, fmt.Errorf("StreamChannel: %w", err)
		}
		switch u := msg.GetUpdate().(type) {
		case *p4v1.StreamMessageResponse_Arbitration:
			arbitrated = true
			c.handleArbitration(u.Arbitration)
		case *p4v1.StreamMessageResponse_Error:
			c.log.Warn("p4runtime stream error from device", "code", codes.Code(u.Error.GetCanonicalCode()), "message", u.Error.GetMessage())
		default:
			c.log.Debug("p4runtime stream message ignored", "type", fmt.Sprintf("%T", u))
		}
	}
}

func (c *Client) handleArbitration(a *p4v1.MasterArbitrationUpdate) {
	code := codes.Code(a.GetStatus().GetCode())
	c.setStatus(func(s *Status) {
		s.ServerElectionID = ElectionIDFromProto(a.GetElectionId())
		s.Code, s.Message, s.Err = code, a.GetStatus().GetMessage(), nil
		if code == codes.OK {
			s.State = StatePrimary
		} else {
			s.State = StateBackup
		}
	})
}
