package push

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
	"github.com/mrc-fabric/mrcgen/p4runtime/reconcile"
)

// maxInvalidReported bounds the invalid entities listed in one error.
const maxInvalidReported = 10

// Target is one device to push to.
type Target struct {
	// Name identifies the device in results and errors (e.g. "leaf1").
	Name string
	// Address is the P4Runtime gRPC address, e.g. "127.0.0.1:9559".
	Address  string
	DeviceID uint64
	// ElectionID and Role of the push: the default role (client.RoleStatic)
	// and an election id below client.RuntimeElectionIDHigh's range unless
	// a targets file says otherwise; the runtime writers' role and range
	// are refused.
	ElectionID client.ElectionID
	Role       string
	Transport  client.Transport
	// DialOptions are extra gRPC dial options (tests: a bufconn dialer).
	DialOptions []grpc.DialOption
}

// Desired is the state a device should end up in.
type Desired struct {
	P4Info *p4configv1.P4Info
	// DeviceConfig is the target-specific pipeline (BMv2: the JSON from
	// p4c-bm2-ss, as is).
	DeviceConfig []byte
	// LoadDeviceConfig, when DeviceConfig is nil, is called for it only
	// when it is needed: the pipeline must be installed (the device has
	// another cookie, or ForcePipeline) or Cookie is 0. A dry run never
	// calls it. Its error fails the device before anything is written.
	LoadDeviceConfig func() ([]byte, error)
	// Cookie identifies the pipeline; 0 means Cookie(P4Info, DeviceConfig).
	Cookie uint64
	// Entities is the complete desired content of the P4Info's tables
	// and of the device's clone sessions: TableEntry entities and
	// PacketReplicationEngineEntry entities holding a CloneSessionEntry
	// (multicast groups are refused). Entries and clone sessions on the
	// device that are not here are deleted (every clone session is
	// managed, whatever Unmanaged says). A TableEntry with
	// is_default_action is the default entry the table must have: read
	// from the device and MODIFYed back when it differs; the defaults of
	// tables not named here are left as they are.
	Entities []*p4v1.Entity
	// Unmanaged lists tables the push leaves alone: their entries on the
	// device are left out of the diff, so tables written at run time (QPs,
	// EV state set by a failover controller) survive a re-push.
	Unmanaged []uint32
}

// deviceConfig returns DeviceConfig, or what LoadDeviceConfig gives.
func (d Desired) deviceConfig() ([]byte, error) {
	if d.DeviceConfig != nil || d.LoadDeviceConfig == nil {
		return d.DeviceConfig, nil
	}
	return d.LoadDeviceConfig()
}

// Options tune a push. The zero value is a real push with defaults.
type Options struct {
	// DryRun computes the Diff without arbitration or writes.
	DryRun bool
	// ForcePipeline pushes the pipeline even when the cookie matches.
	ForcePipeline bool
	// BatchSize is the most updates per Write RPC (default 1000).
	BatchSize int
	// MaxMsgSize is the gRPC send limit batches stay under (default 4 MiB).
	MaxMsgSize int
	// Progress, when set, is called after each batch with the updates
	// written so far and the total to write.
	Progress func(done, total int)
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// ClientConfig, when set, adjusts the client configuration built from
	// the Target and these Options before it is used.
	ClientConfig func(*client.Config)
}

// Result reports what a push did (or, with DryRun, would do).
type Result struct {
	Device string
	DryRun bool
	// PipelinePushed: SetForwardingPipelineConfig was sent (with DryRun:
	// would be). PipelineSkipped: the device already had the cookie.
	PipelinePushed, PipelineSkipped bool
	Cookie                          uint64
	// Inserted, Modified and Deleted count the updates applied (with
	// DryRun: 0; see Diff).
	Inserted, Modified, Deleted int
	Duration                    time.Duration
	// Phases splits Duration: where a slow device spends its time.
	Phases Phases
	Diff   *reconcile.Diff
	// Warnings about the connection (plaintext) for the caller to show.
	Warnings []string
	// Index names the P4Info's objects, to render Diff.
	Index *infoindex.Index
	// Err is this device's failure in a PushAll (nil on success).
	Err error
}

// Phases is the time a push spent in each step, in order. A step not
// taken is 0.
type Phases struct {
	// Prepare: checking the entities against the P4Info and the cookie.
	Prepare time.Duration
	// Connect: from dialing until the client is primary (a dry run does
	// not arbitrate: only the dial).
	Connect time.Duration
	// Read: the pipeline cookie and the device's entries, read together.
	Read time.Duration
	// Pipeline: installing the pipeline and reading the device again,
	// when the cookie differs.
	Pipeline time.Duration
	// Diff: computing the changes and planning their order.
	Diff time.Duration
	// Write: every Write RPC.
	Write time.Duration
}

// Cookie derives a pipeline cookie from the P4Info and device config: the
// first 8 bytes of SHA-256 over the deterministic P4Info encoding and the
// config.
func Cookie(info *p4configv1.P4Info, deviceConfig []byte) (uint64, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(info)
	if err != nil {
		return 0, fmt.Errorf("cookie: marshal P4Info: %w", err)
	}
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
	h.Write(deviceConfig)
	return binary.BigEndian.Uint64(h.Sum(nil)), nil
}

// Validate checks the desired entities (table entries and clone sessions)
// against the P4Info (infoindex.Index.Validate) and reports every invalid one
// (up to a bound) by index and content.
func Validate(idx *infoindex.Index, entities []*p4v1.Entity) error {
	var errs []error
	bad := 0
	for i, e := range entities {
		if err := idx.Validate(e); err != nil {
			bad++
			if bad <= maxInvalidReported {
				errs = append(errs, fmt.Errorf("entity %d: %w", i, err))
			}
		}
	}
	if bad > maxInvalidReported {
		errs = append(errs, fmt.Errorf("and %d more invalid entities", bad-maxInvalidReported))
	}
	return errors.Join(errs...)
}

// PushDevice brings one device to the desired state; see the package doc.
// On error, the Result holds what was done before it.
func PushDevice(ctx context.Context, t Target, d Desired, o Options) (Result, error) {
	start := time.Now()
	res := Result{Device: t.Name, DryRun: o.DryRun}
	if res.Device == "" {
		res.Device = t.Address
	}
	err := pushDevice(ctx, t, d, o, &res)
	res.Duration = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("device %s: %w", res.Device, err)
	}
	return res, nil
}

func pushDevice(ctx context.Context, t Target, d Desired, o Options, res *Result) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("device", res.Device)
	mark := time.Now()
	lap := func(d *time.Duration) {
		now := time.Now()
		*d = now.Sub(mark)
		mark = now
	}
	if t.DeviceID == 0 {
		return errors.New("device_id 0 is not allowed by P4Runtime")
	}
	if t.Role == client.RoleRuntime || t.ElectionID.InRuntimeRange() {
		return fmt.Errorf("role %q, election id %s: the runtime writers' role or range (see client.RoleRuntime); push writes static tables in its own",
			t.Role, t.ElectionID)
	}
	idx, err := infoindex.New(d.P4Info)
	if err != nil {
		return err
	}
	res.Index = idx
	if err := Validate(idx, d.Entities); err != nil {
		return fmt.Errorf("refusing to push: %w", err)
	}
	res.Cookie = d.Cookie
	if res.Cookie == 0 {
		config, err := d.deviceConfig()
		if err != nil {
			return err
		}
		if res.Cookie, err = Cookie(d.P4Info, config); err != nil {
			return err
		}
	}

	lap(&res.Phases.Prepare)
	cfg := client.Config{
		Name:            res.Device,
		Address:         t.Address,
		DeviceID:        t.DeviceID,
		Role:            t.Role,
		ElectionID:      t.ElectionID,
		Transport:       t.Transport,
		MaxSendMsgSize:  o.MaxMsgSize,
		MaxBatchUpdates: o.BatchSize,
		Logger:          log,
		DialOptions:     t.DialOptions,
	}
	if o.ClientConfig != nil {
		o.ClientConfig(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	res.Warnings = c.Warnings()

	if !o.DryRun {
		if err := c.WaitPrimary(ctx); err != nil {
			return err
		}
	}
	lap(&res.Phases.Connect)

	// The cookie is asked first and the state read only after it, never
	// both at once: PI (simple_switch_grpc) does not serialise a Read
	// with the SetForwardingPipelineConfig that follows a cookie
	// mismatch. A Read cancelled on our side can still be running in the
	// switch while the new P4Info is installed, and the switch then dies
	// in pi_p4info_is_valid_id (a segfault seen in CI: the push got EOF).
	// The round trip this costs is the price of not crashing the device.
	have, ok, err := c.PipelineCookie(ctx)
	if err != nil {
		return err
	}
	same := ok && have == res.Cookie && !o.ForcePipeline
	var current []*p4v1.Entity
	if same {
		if current, err = reconcile.ReadState(ctx, c, idx, d.Entities); err != nil {
			return err
		}
	}
	lap(&res.Phases.Read)
	switch {
	case same:
		res.PipelineSkipped = true
		log.Debug("pipeline cookie matches", "cookie", res.Cookie)
	case o.DryRun:
		// The device runs another pipeline (or none): a push would
		// replace it and clear every table and clone session (PI resets
		// its packet replication engine with the pipeline), so the
		// current state is empty but for the default entries, taken to be
		// the new program's, i.e. the ones wanted.
		res.PipelinePushed = true
		for _, e := range d.Entities {
			if e.GetTableEntry().GetIsDefaultAction() {
				current = append(current, e)
			}
		}
	default:
		config, err := d.deviceConfig()
		if err != nil {
			return fmt.Errorf("the device runs another pipeline or none (want cookie %#x): %w", res.Cookie, err)
		}
		if err := c.ForcePipeline(ctx, d.P4Info, config, res.Cookie); err != nil {
			return err
		}
		res.PipelinePushed = true
		// VERIFY_AND_COMMIT clears the tables and clone sessions; read
		// anyway rather than assume it.
		if current, err = reconcile.ReadState(ctx, c, idx, d.Entities); err != nil {
			return err
		}
		lap(&res.Phases.Pipeline)
	}

	if len(d.Unmanaged) > 0 {
		current = dropTables(current, d.Unmanaged)
	}
	diff, err := reconcile.Compute(d.Entities, current)
	if err != nil {
		return err
	}
	res.Diff = diff
	log.Info("diff computed", "summary", diff.Summary(), "dry_run", o.DryRun)
	if o.DryRun || diff.Empty() {
		lap(&res.Phases.Diff)
		return nil
	}
	plan := diff.Plan(func(id uint32) int64 {
		if t, ok := idx.Table(id); ok {
			return t.Proto.GetSize()
		}
		return 0
	})
	lap(&res.Phases.Diff)

	total, done := len(diff.Changes), 0
	defer lap(&res.Phases.Write)
	for _, ph := range plan {
		updates := ph.Updates()
		var opts []client.WriteOption
		if o.Progress != nil {
			base := done
			opts = append(opts, client.WithProgress(func(n, _ int) { o.Progress(base+n, total) }))
		}
		err := c.Write(ctx, updates, opts...)
		werr, _ := errors.AsType[*client.WriteError](err)
		if werr != nil {
			werr.Describe = func(u *p4v1.Update) string { return idx.Describe(u.GetEntity()) }
		}
		for i, ch := range ph.Changes {
			if err != nil && (werr == nil || !werr.AppliedIndex(i)) {
				continue
			}
			switch ch.Op {
			case reconcile.Delete:
				res.Deleted++
			case reconcile.Modify:
				res.Modified++
			case reconcile.Insert:
				res.Inserted++
			}
		}
		if err != nil {
			return fmt.Errorf("%s phase: %w", ph.Name, err)
		}
		done += len(updates)
	}
	log.Info("push done", "inserted", res.Inserted, "modified", res.Modified, "deleted", res.Deleted)
	return nil
}

// Job is one device of a PushAll.
type Job struct {
	Target  Target
	Desired Desired
	Options Options
}

// PushAll pushes every job with at most parallelism pushes at a time
// (parallelism < 1 means 1). A failing device does not stop the others.
// Results are in job order. The error joins one error per failed device,
// each naming it. progress, when set, is called with the device name after
// each batch; calls are serialized.
func PushAll(ctx context.Context, jobs []Job, parallelism int, progress func(device string, done, total int)) ([]Result, error) {
	parallelism = max(parallelism, 1)
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	var progressMu sync.Mutex
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				name := j.Target.Name
				if name == "" {
					name = j.Target.Address
				}
				errs[i] = fmt.Errorf("device %s: not started: %w", name, ctx.Err())
				results[i] = Result{Device: name, Err: errs[i]}
				return
			}
			defer func() { <-sem }()
			o := j.Options
			if progress != nil {
				name, inner := j.Target.Name, o.Progress
				o.Progress = func(done, total int) {
					if inner != nil {
						inner(done, total)
					}
					progressMu.Lock()
					defer progressMu.Unlock()
					progress(name, done, total)
				}
			}
			results[i], errs[i] = PushDevice(ctx, j.Target, j.Desired, o)
			results[i].Err = errs[i]
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// dropTables removes the table entries of the given tables.
func dropTables(entities []*p4v1.Entity, tables []uint32) []*p4v1.Entity {
	skip := make(map[uint32]bool, len(tables))
	for _, id := range tables {
		skip[id] = true
	}
	out := entities[:0:0]
	for _, e := range entities {
		if te := e.GetTableEntry(); te != nil && skip[te.GetTableId()] {
			continue
		}
		out = append(out, e)
	}
	return out
}
