package p4rttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/mrc-fabric/mrcgen/p4runtime/infoindex"
)

// Options configure a Server.
type Options struct {
	// DeviceID is the only device the server knows (default 1).
	DeviceID uint64
	// MaxRecvMsgSize is the largest request the server accepts (default
	// 4 MiB, gRPC's default).
	MaxRecvMsgSize int
	// ReadChunk is the number of entities per ReadResponse (default 500).
	ReadChunk int
	// ProgramDefaults gives, by table id, the action (without parameters)
	// a new pipeline sets as the table's default: what the P4 program's
	// default_action would be (P4Info does not carry it unless const).
	// A table not named gets its const default action, else its first
	// parameterless action that is not TABLE_ONLY, else no action.
	ProgramDefaults map[uint32]uint32
	// NoCloneSessionWildcard makes a clone-session read with session_id 0
	// fail with INVALID_ARGUMENT, as a server that only reads sessions by
	// id would (PI answers the wildcard with every session).
	NoCloneSessionWildcard bool
	// ServerOptions are extra gRPC server options (tests: TLS credentials).
	ServerOptions []grpc.ServerOption
	// ReadHold keeps every Read handler running this long after it has
	// sent its entities (the client sees the stream end only then) and
	// whatever the client does, as PI's handlers do: a Read the client
	// cancelled can still be executing in simple_switch_grpc when the
	// client's next RPC arrives.
	ReadHold time.Duration
	// TCP serves on a loopback TCP port instead of a bufconn listener,
	// for tests of programs that dial an address themselves (the CLI);
	// Address then returns host:port and DialOptions nothing.
	TCP bool
}

// Stats counts what the server received.
type Stats struct {
	WriteRPCs int // Write RPCs received
	Updates   int // updates in those RPCs (table entries and clone sessions)
	// CloneSessionUpdates counts the updates of clone sessions among
	// Updates.
	CloneSessionUpdates int
	FailedRPCs          int // Write RPCs answered with an error
	MaxBatch            int // most updates in one WriteRequest
	MaxWriteSize        int // largest marshalled WriteRequest, bytes
	ReadRPCs            int
	SetPipelines        int // SetForwardingPipelineConfig RPCs that changed the pipeline
	// PipelineSetsDuringRead counts SetForwardingPipelineConfig RPCs
	// that arrived while a Read handler was still running: PI crashes
	// on that overlap, so a client must never cause it.
	PipelineSetsDuringRead int
	Streams                int // StreamChannel RPCs opened
}

// Server is an in-process P4Runtime server. Create it with Start.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer

	opts Options
	lis  *bufconn.Listener
	tcp  net.Listener
	gs   *grpc.Server

	mu       sync.Mutex
	pipeline *p4v1.ForwardingPipelineConfig
	index    *infoindex.Index
	entries  map[string]*p4v1.TableEntry        // canonical key -> canonical entry
	held     map[uint32]int                     // entries per table id
	defaults map[uint32]*p4v1.TableEntry        // default entry per table id (canonical)
	sessions map[uint32]*p4v1.CloneSessionEntry // by session id, as written
	groups   map[string]*group                  // by role name
	streams  map[*stream]bool
	stats    Stats
	reading  int // Read handlers running
	hook     func(*p4v1.Update) error
	rpcHook  func(*p4v1.WriteRequest) error
}

type group struct {
	role    string
	members map[*stream]bool
	primary *stream
	past    *p4v1.Uint128 // highest election id ever accepted as primary
}

type stream struct {
	out    chan *p4v1.StreamMessageResponse
	drop   chan struct{}
	joined bool
	device uint64
	role   string
	eid    *p4v1.Uint128 // nil when unset
}

// Start starts a server on a bufconn listener. Close it when done.
func Start(opts Options) *Server {
	if opts.DeviceID == 0 {
		opts.DeviceID = 1
	}
	if opts.MaxRecvMsgSize <= 0 {
		opts.MaxRecvMsgSize = 4 << 20
	}
	if opts.ReadChunk <= 0 {
		opts.ReadChunk = 500
	}
	s := &Server{
		opts:     opts,
		lis:      bufconn.Listen(1 << 20),
		entries:  map[string]*p4v1.TableEntry{},
		held:     map[uint32]int{},
		defaults: map[uint32]*p4v1.TableEntry{},
		sessions: map[uint32]*p4v1.CloneSessionEntry{},
		groups:   map[string]*group{},
		streams:  map[*stream]bool{},
	}
	s.gs = grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(opts.MaxRecvMsgSize)}, opts.ServerOptions...)...)
	p4v1.RegisterP4RuntimeServer(s.gs, s)
	var lis net.Listener = s.lis
	if opts.TCP {
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(fmt.Sprintf("p4rttest: listen on loopback: %v", err))
		}
		s.tcp, lis = tcp, tcp
	}
	go func() { _ = s.gs.Serve(lis) }()
	return s
}

// Address is the gRPC target to use with DialOptions.
func (s *Server) Address() string {
	if s.tcp != nil {
		return s.tcp.Addr().String()
	}
	return "passthrough:///p4rttest"
}

// DialOptions connect a gRPC client to the server (a context dialer; add
// plaintext credentials yourself).
func (s *Server) DialOptions() []grpc.DialOption {
	if s.tcp != nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return s.lis.DialContext(ctx)
	})}
}

// Close stops the server and ends every stream.
func (s *Server) Close() {
	s.gs.Stop()
}

// DeviceID returns the device id the server answers to.
func (s *Server) DeviceID() uint64 { return s.opts.DeviceID }

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ResetStats zeroes the counters.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = Stats{}
}

// SetWriteHook installs f, called for every update of every accepted Write
// before it is applied; a non-nil result (a status error, or any error for
// UNKNOWN) fails that update instead. nil removes the hook. f runs with
// the server locked: it must not call the Server's methods.
func (s *Server) SetWriteHook(f func(*p4v1.Update) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

// SetWriteRPCHook installs f, called for every Write RPC after the
// primary check; a non-nil result fails the whole RPC with that error
// (make it a status error) and nothing of the request is applied, as a
// transport failure or a server error would. nil removes the hook. f runs
// with the server locked: it must not call the Server's methods.
func (s *Server) SetWriteRPCHook(f func(*p4v1.WriteRequest) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rpcHook = f
}

// DropStreams ends every open StreamChannel with UNAVAILABLE, as a switch
// restart or a broken connection would.
func (s *Server) DropStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		select {
		case <-st.drop:
		default:
			close(st.drop)
		}
	}
}

// TableEntries returns the stored entries (canonical), sorted by key.
func (s *Server) TableEntries() []*p4v1.TableEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedEntries(func(*p4v1.TableEntry) bool { return true })
}

// Cookie returns the cookie of the current pipeline.
func (s *Server) Cookie() (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pipeline.GetCookie() == nil {
		return 0, false
	}
	return s.pipeline.GetCookie().GetCookie(), true
}

// Primary returns the election id of the primary for role, if any.
func (s *Server) Primary(role string) (high, low uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[role]
	if g == nil || g.primary == nil {
		return 0, 0, false
	}
	return g.primary.eid.GetHigh(), g.primary.eid.GetLow(), true
}

func (s *Server) sortedEntries(keep func(*p4v1.TableEntry) bool) []*p4v1.TableEntry {
	keys := make([]string, 0, len(s.entries))
	for k, e := range s.entries {
		if keep(e) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]*p4v1.TableEntry, len(keys))
	for i, k := range keys {
		out[i] = proto.CloneOf(s.entries[k])
	}
	return out
}

func cmp128(a, b *p4v1.Uint128) int {
	switch {
	case a.GetHigh() < b.GetHigh(), a.GetHigh() == b.GetHigh() && a.GetLow() < b.GetLow():
		return -1
	case a.GetHigh() == b.GetHigh() && a.GetLow() == b.GetLow():
		return 0
	}
	return 1
}

// StreamChannel implements arbitration; other stream messages are ignored.
func (s *Server) StreamChannel(ss p4v1.P4Runtime_StreamChannelServer) error {
	st := &stream{out: make(chan *p4v1.StreamMessageResponse, 256), drop: make(chan struct{})}
	s.mu.Lock()
	s.streams[st] = true
	s.stats.Streams++
	s.mu.Unlock()
	done := make(chan struct{})
	defer func() {
		close(done)
		s.leave(st)
	}()
	go func() {
		for {
			select {
			case m := <-st.out:
				if ss.Send(m) != nil {
					return
				}
			case <-done:
				return
			}
		}
	}()
	reqs := make(chan *p4v1.StreamMessageRequest)
	recvErr := make(chan error, 1)
	go func() {
		for {
			m, err := ss.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- m:
			case <-done:
				return
			}
		}
	}()
	for {
		select {
		case <-st.drop:
			return status.Error(codes.Unavailable, "p4rttest: stream dropped")
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case m := <-reqs:
			if a := m.GetArbitration(); a != nil {
				if err := s.arbitrate(st, a); err != nil {
					return err
				}
			}
		}
	}
}

func (s *Server) arbitrate(st *stream, a *p4v1.MasterArbitrationUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	role := a.GetRole().GetName()
	eid := a.GetElectionId()
	if eid != nil && eid.GetHigh() == 0 && eid.GetLow() == 0 {
		eid = nil
	}
	if !st.joined {
		if a.GetDeviceId() != s.opts.DeviceID {
			return status.Errorf(codes.NotFound, "unknown device_id %d", a.GetDeviceId())
		}
	} else {
		if a.GetDeviceId() != st.device {
			return status.Errorf(codes.FailedPrecondition, "device_id %d differs from this stream's %d", a.GetDeviceId(), st.device)
		}
		if role != st.role {
			return status.Errorf(codes.FailedPrecondition, "role %q differs from this stream's %q", role, st.role)
		}
	}
	g := s.groups[role]
	if g == nil {
		g = &group{role: role, members: map[*stream]bool{}}
		s.groups[role] = g
	}
	if eid != nil {
		for m := range g.members {
			if m != st && m.eid != nil && cmp128(m.eid, eid) == 0 {
				return status.Errorf(codes.InvalidArgument, "election id %d:%d is used by another controller", eid.GetHigh(), eid.GetLow())
			}
		}
	}
	st.joined, st.device, st.role, st.eid = true, a.GetDeviceId(), role, eid
	g.members[st] = true
	wasPrimary := g.primary == st
	switch {
	case eid != nil && (g.past == nil || cmp128(eid, g.past) >= 0):
		g.primary, g.past = st, eid
		s.notifyAll(g)
	case wasPrimary:
		g.primary = nil
		s.notifyAll(g)
	default:
		s.notify(g, st)
	}
	return nil
}

// leave removes a finished stream; if it was the primary, the others learn
// that there is no primary.
func (s *Server) leave(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, st)
	if !st.joined {
		return
	}
	g := s.groups[st.role]
	delete(g.members, st)
	if g.primary == st {
		g.primary = nil
		s.notifyAll(g)
	}
}

func (s *Server) notifyAll(g *group) {
	for m := range g.members {
		s.notify(g, m)
	}
}

func (s *Server) notify(g *group, m *stream) {
	a := &p4v1.MasterArbitrationUpdate{DeviceId: s.opts.DeviceID, ElectionId: g.past}
	if g.role != "" {
		a.Role = &p4v1.Role{Name: g.role}
	}
	switch {
	case g.primary == m:
		a.Status = &spb.Status{Code: int32(codes.OK), Message: "is primary"}
	case g.primary != nil:
		a.Status = &spb.Status{Code: int32(codes.AlreadyExists), Message: "is backup"}
	default:
		a.Status = &spb.Status{Code: int32(codes.NotFound), Message: "no primary"}
	}
	select {
	case m.out <- &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: a}}:
	default:
		// A client that does not read its stream loses notifications.
	}
}

// checkPrimary applies the spec's checks shared by Write and
// SetForwardingPipelineConfig. Called with s.mu held.
func (s *Server) checkPrimary(device uint64, role string, eid *p4v1.Uint128) error {
	if device != s.opts.DeviceID {
		return status.Errorf(codes.NotFound, "unknown device_id %d", device)
	}
	g := s.groups[role]
	if g == nil && role != "" {
		return status.Errorf(codes.NotFound, "unknown role %q", role)
	}
	if g == nil || g.primary == nil || cmp128(g.primary.eid, eid) != 0 {
		return status.Error(codes.PermissionDenied, "not primary")
	}
	return nil
}

// Write applies a batch of updates.
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.WriteRPCs++
	s.stats.Updates += len(req.GetUpdates())
	for _, u := range req.GetUpdates() {
		if u.GetEntity().GetPacketReplicationEngineEntry().GetCloneSessionEntry() != nil {
			s.stats.CloneSessionUpdates++
		}
	}
	s.stats.MaxBatch = max(s.stats.MaxBatch, len(req.GetUpdates()))
	s.stats.MaxWriteSize = max(s.stats.MaxWriteSize, proto.Size(req))
	resp, err := s.write(req)
	if err != nil {
		s.stats.FailedRPCs++
	}
	return resp, err
}

func (s *Server) write(req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if err := s.checkPrimary(req.GetDeviceId(), req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	if s.pipeline == nil {
		return nil, status.Error(codes.FailedPrecondition, "no forwarding pipeline config set")
	}
	if s.rpcHook != nil {
		if err := s.rpcHook(req); err != nil {
			return nil, err
		}
	}
	if req.GetAtomicity() != p4v1.WriteRequest_CONTINUE_ON_ERROR {
		return nil, status.Errorf(codes.Unimplemented, "atomicity %v not supported", req.GetAtomicity())
	}
	details := make([]*anypb.Any, len(req.GetUpdates()))
	failed := false
	for i, u := range req.GetUpdates() {
		pe := &p4v1.Error{}
		if err := s.apply(u); err != nil {
			failed = true
			st := status.Convert(err)
			pe.CanonicalCode, pe.Message, pe.Space = int32(st.Code()), st.Message(), "p4rttest"
		}
		a, err := anypb.New(pe)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "pack error detail: %v", err)
		}
		details[i] = a
	}
	if !failed {
		return &p4v1.WriteResponse{}, nil
	}
	return nil, status.ErrorProto(&spb.Status{Code: int32(codes.Unknown), Message: "write failure", Details: details})
}

func (s *Server) apply(u *p4v1.Update) error {
	if s.hook != nil {
		if err := s.hook(u); err != nil {
			return err
		}
	}
	if pre := u.GetEntity().GetPacketReplicationEngineEntry(); pre != nil {
		cs := pre.GetCloneSessionEntry()
		if cs == nil {
			return status.Errorf(codes.Unimplemented, "p4rttest: PRE entry %T not supported (only clone sessions)", pre.GetType())
		}
		return s.applyCloneSession(u.GetType(), cs)
	}
	te := u.GetEntity().GetTableEntry()
	if te == nil {
		return status.Errorf(codes.Unimplemented, "entity %T not supported", u.GetEntity().GetEntity())
	}
	if te.GetIsDefaultAction() {
		return s.applyDefault(u.GetType(), te)
	}
	if u.GetType() != p4v1.Update_DELETE {
		if err := s.index.Validate(u.GetEntity()); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
	} else if _, ok := s.index.Table(te.GetTableId()); !ok {
		return status.Errorf(codes.InvalidArgument, "unknown table id %#x", te.GetTableId())
	}
	c := canonEntry(te)
	k := entryKey(c)
	_, exists := s.entries[k]
	switch u.GetType() {
	case p4v1.Update_INSERT:
		if exists {
			return status.Error(codes.AlreadyExists, "entry already exists")
		}
		if t, _ := s.index.Table(te.GetTableId()); t.Proto.GetSize() > 0 && int64(s.held[te.GetTableId()]) >= t.Proto.GetSize() {
			return status.Errorf(codes.ResourceExhausted, "table %s is full (%d entries)", t.Proto.GetPreamble().GetName(), t.Proto.GetSize())
		}
		s.entries[k] = c
		s.held[te.GetTableId()]++
	case p4v1.Update_MODIFY:
		if !exists {
			return status.Error(codes.NotFound, "entry not found")
		}
		s.entries[k] = c
	case p4v1.Update_DELETE:
		if !exists {
			return status.Error(codes.NotFound, "entry not found")
		}
		delete(s.entries, k)
		s.held[te.GetTableId()]--
	default:
		return status.Errorf(codes.InvalidArgument, "update type %v", u.GetType())
	}
	return nil
}

// Read answers table-entry and clone-session reads.
func (s *Server) Read(req *p4v1.ReadRequest, rs p4v1.P4Runtime_ReadServer) error {
	s.mu.Lock()
	s.stats.ReadRPCs++
	s.reading++
	s.mu.Unlock()
	defer func() {
		time.Sleep(s.opts.ReadHold)
		s.mu.Lock()
		s.reading--
		s.mu.Unlock()
	}()
	s.mu.Lock()
	out, err := s.read(req)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for len(out) > 0 {
		n := min(len(out), s.opts.ReadChunk)
		if err := rs.Send(&p4v1.ReadResponse{Entities: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
	}
	return nil
}

func (s *Server) read(req *p4v1.ReadRequest) ([]*p4v1.Entity, error) {
	if req.GetDeviceId() != s.opts.DeviceID {
		return nil, status.Errorf(codes.NotFound, "unknown device_id %d", req.GetDeviceId())
	}
	if s.pipeline == nil {
		return nil, status.Error(codes.FailedPrecondition, "no forwarding pipeline config set")
	}
	var out []*p4v1.Entity
	for _, f := range req.GetEntities() {
		if pre := f.GetPacketReplicationEngineEntry(); pre != nil {
			got, err := s.readCloneSessions(pre)
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
			continue
		}
		te := f.GetTableEntry()
		if te == nil {
			return nil, status.Errorf(codes.Unimplemented, "read of %T not supported", f.GetEntity())
		}
		var got []*p4v1.TableEntry
		switch {
		case te.GetIsDefaultAction():
			if len(te.GetMatch()) > 0 {
				return nil, status.Error(codes.InvalidArgument, "default entry filter with match fields")
			}
			ids := []uint32{te.GetTableId()}
			if te.GetTableId() == 0 {
				ids = s.index.TableIDs()
			} else if _, ok := s.index.Table(te.GetTableId()); !ok {
				return nil, status.Errorf(codes.NotFound, "unknown table id %#x", te.GetTableId())
			}
			for _, id := range ids {
				got = append(got, s.defaultEntry(id))
			}
		case te.GetTableId() == 0:
			got = s.sortedEntries(func(*p4v1.TableEntry) bool { return true })
		case len(te.GetMatch()) == 0:
			if _, ok := s.index.Table(te.GetTableId()); !ok {
				return nil, status.Errorf(codes.NotFound, "unknown table id %#x", te.GetTableId())
			}
			id := te.GetTableId()
			got = s.sortedEntries(func(e *p4v1.TableEntry) bool { return e.GetTableId() == id })
		default:
			if e, ok := s.entries[entryKey(canonEntry(te))]; ok {
				got = []*p4v1.TableEntry{proto.CloneOf(e)}
			}
		}
		for _, e := range got {
			out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: e}})
		}
	}
	return out, nil
}

// SetForwardingPipelineConfig supports VERIFY and VERIFY_AND_COMMIT.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading > 0 {
		s.stats.PipelineSetsDuringRead++
	}
	if err := s.checkPrimary(req.GetDeviceId(), req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	cfg := req.GetConfig()
	if cfg.GetP4Info() == nil {
		return nil, status.Error(codes.InvalidArgument, "config without p4info")
	}
	idx, err := infoindex.New(cfg.GetP4Info())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "bad p4info: %v", err)
	}
	switch req.GetAction() {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		s.pipeline = proto.CloneOf(cfg)
		s.index = idx
		s.entries = map[string]*p4v1.TableEntry{}
		s.held = map[uint32]int{}
		s.defaults = programDefaults(cfg.GetP4Info(), s.opts.ProgramDefaults)
		s.sessions = map[uint32]*p4v1.CloneSessionEntry{} // PI resets its PRE with the pipeline
		s.stats.SetPipelines++
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	default:
		return nil, status.Errorf(codes.Unimplemented, "action %v not supported by p4rttest", req.GetAction())
	}
}

// GetForwardingPipelineConfig returns the fields the response type asks
// for; an empty config when none is set (as PI does).
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetDeviceId() != s.opts.DeviceID {
		return nil, status.Errorf(codes.NotFound, "unknown device_id %d", req.GetDeviceId())
	}
	out := &p4v1.ForwardingPipelineConfig{}
	if s.pipeline != nil {
		out.Cookie = proto.CloneOf(s.pipeline.GetCookie())
		switch req.GetResponseType() {
		case p4v1.GetForwardingPipelineConfigRequest_ALL:
			out.P4Info, out.P4DeviceConfig = s.pipeline.GetP4Info(), s.pipeline.GetP4DeviceConfig()
		case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
			out.P4Info = s.pipeline.GetP4Info()
		case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
			out.P4DeviceConfig = s.pipeline.GetP4DeviceConfig()
		case p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY:
		default:
			return nil, status.Errorf(codes.InvalidArgument, "response type %v", req.GetResponseType())
		}
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: out}, nil
}

// String describes the server for test logs.
func (s *Server) String() string {
	return fmt.Sprintf("p4rttest(device_id=%d)", s.opts.DeviceID)
}

// Seed stores entries directly, as another writer (a host, a failover
// controller) would have, without a Write RPC and without touching Stats.
func (s *Server) Seed(entries ...*p4v1.TableEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, te := range entries {
		c := canonEntry(te)
		k := entryKey(c)
		if _, ok := s.entries[k]; !ok {
			s.held[c.GetTableId()]++
		}
		s.entries[k] = c
	}
}

// maxCloneSessionID bounds session ids as PI does (ids in [1, 32768)).
const maxCloneSessionID = 1<<15 - 1

// applyCloneSession writes a clone session with PI's checks and codes.
// Called with s.mu held.
func (s *Server) applyCloneSession(typ p4v1.Update_Type, cs *p4v1.CloneSessionEntry) error {
	id := cs.GetSessionId()
	switch {
	case id == 0:
		return status.Error(codes.InvalidArgument, "0 is not a valid session id")
	case id > maxCloneSessionID:
		return status.Error(codes.InvalidArgument, "Clone session id out-of-range")
	}
	_, exists := s.sessions[id]
	switch typ {
	case p4v1.Update_INSERT:
		if exists {
			return status.Error(codes.AlreadyExists, "Clone session id already exists")
		}
	case p4v1.Update_MODIFY, p4v1.Update_DELETE:
		if !exists {
			return status.Error(codes.NotFound, "Clone session id does not exist")
		}
	default:
		return status.Errorf(codes.InvalidArgument, "update type %v", typ)
	}
	if typ == p4v1.Update_DELETE {
		delete(s.sessions, id)
		return nil
	}
	type pair struct {
		port     string
		instance uint32
	}
	seen := map[pair]bool{}
	for _, r := range cs.GetReplicas() {
		var port []byte
		switch t := r.GetPortKind().(type) {
		case *p4v1.Replica_EgressPort:
			port = canonBytes([]byte{byte(t.EgressPort >> 24), byte(t.EgressPort >> 16), byte(t.EgressPort >> 8), byte(t.EgressPort)})
		case *p4v1.Replica_Port:
			switch {
			case len(t.Port) == 0:
				return status.Error(codes.InvalidArgument, "Port must not be the empty string")
			case len(t.Port) > 4:
				return status.Errorf(codes.Unimplemented, "Got port of %d bytes, but only 4 bytes are supported", len(t.Port))
			}
			port = canonBytes(t.Port)
		default:
			return status.Error(codes.InvalidArgument, "Missing port in multicast group replica")
		}
		p := pair{string(port), r.GetInstance()}
		if seen[p] {
			return status.Error(codes.InvalidArgument, "Duplicate replica in multicast group")
		}
		seen[p] = true
	}
	if cs.GetClassOfService() != 0 {
		return status.Error(codes.Unimplemented, "COS for clone sessions not supported yet")
	}
	if cs.GetPacketLengthBytes() != 0 {
		// BMv2 answers PI_STATUS_NOT_IMPLEMENTED_BY_TARGET, which PI
		// reports so.
		return status.Error(codes.Unknown, "Error when creating clone session in target")
	}
	s.sessions[id] = proto.CloneOf(cs)
	return nil
}

// readCloneSessions answers a PRE read filter: session_id 0 for every
// session (unless Options.NoCloneSessionWildcard), else that session or
// NOT_FOUND, which fails the whole read as in PI. Called with s.mu held.
func (s *Server) readCloneSessions(pre *p4v1.PacketReplicationEngineEntry) ([]*p4v1.Entity, error) {
	f := pre.GetCloneSessionEntry()
	if f == nil {
		return nil, status.Errorf(codes.Unimplemented, "p4rttest: read of PRE entry %T not supported (only clone sessions)", pre.GetType())
	}
	var ids []uint32
	if id := f.GetSessionId(); id != 0 {
		if _, ok := s.sessions[id]; !ok {
			return nil, status.Error(codes.NotFound, "Clone session id does not exist")
		}
		ids = []uint32{id}
	} else {
		if s.opts.NoCloneSessionWildcard {
			return nil, status.Error(codes.InvalidArgument, "0 is not a valid session id")
		}
		ids = s.sessionIDs()
	}
	out := make([]*p4v1.Entity, len(ids))
	for i, id := range ids {
		out[i] = cloneSessionEntity(answerCloneSession(s.sessions[id]))
	}
	return out, nil
}

func (s *Server) sessionIDs() []uint32 {
	ids := make([]uint32, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// answerCloneSession returns a stored session as PI answers it: each
// replica's port in the form it was written, replicas grouped by instance
// then sorted by port (PI's own order, not the one written).
func answerCloneSession(cs *p4v1.CloneSessionEntry) *p4v1.CloneSessionEntry {
	out := proto.CloneOf(cs)
	portOf := func(r *p4v1.Replica) []byte {
		if p, ok := r.GetPortKind().(*p4v1.Replica_EgressPort); ok {
			return canonBytes([]byte{byte(p.EgressPort >> 24), byte(p.EgressPort >> 16), byte(p.EgressPort >> 8), byte(p.EgressPort)})
		}
		return canonBytes(r.GetPort())
	}
	sort.SliceStable(out.Replicas, func(i, j int) bool {
		a, b := out.Replicas[i], out.Replicas[j]
		if a.GetInstance() != b.GetInstance() {
			return a.GetInstance() < b.GetInstance()
		}
		pa, pb := portOf(a), portOf(b)
		if len(pa) != len(pb) {
			return len(pa) < len(pb)
		}
		return string(pa) < string(pb)
	})
	return out
}

func cloneSessionEntity(cs *p4v1.CloneSessionEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs},
	}}}
}

// CloneSessions returns the stored clone sessions, sorted by session id,
// as a Read answers them.
func (s *Server) CloneSessions() []*p4v1.CloneSessionEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.sessionIDs()
	out := make([]*p4v1.CloneSessionEntry, len(ids))
	for i, id := range ids {
		out[i] = answerCloneSession(s.sessions[id])
	}
	return out
}

// SeedCloneSessions stores clone sessions directly, without a Write RPC,
// checks or Stats (replacing a session with the same id).
func (s *Server) SeedCloneSessions(sessions ...*p4v1.CloneSessionEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cs := range sessions {
		s.sessions[cs.GetSessionId()] = proto.CloneOf(cs)
	}
}

// programDefaults returns the default entries a new pipeline starts with;
// see Options.ProgramDefaults.
func programDefaults(info *p4configv1.P4Info, given map[uint32]uint32) map[uint32]*p4v1.TableEntry {
	params := map[uint32]int{}
	for _, a := range info.GetActions() {
		params[a.GetPreamble().GetId()] = len(a.GetParams())
	}
	out := map[uint32]*p4v1.TableEntry{}
	for _, t := range info.GetTables() {
		id := t.GetPreamble().GetId()
		action, ok := given[id]
		if !ok {
			action = t.GetConstDefaultActionId()
		}
		for _, r := range t.GetActionRefs() {
			if action != 0 {
				break
			}
			if r.GetScope() != p4configv1.ActionRef_TABLE_ONLY && params[r.GetId()] == 0 {
				action = r.GetId()
			}
		}
		te := &p4v1.TableEntry{TableId: id, IsDefaultAction: true}
		if action != 0 {
			te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: action}}}
		}
		out[id] = te
	}
	return out
}

// defaultEntry returns a copy of a table's default entry. Called with s.mu
// held.
func (s *Server) defaultEntry(table uint32) *p4v1.TableEntry {
	if te, ok := s.defaults[table]; ok {
		return proto.CloneOf(te)
	}
	return &p4v1.TableEntry{TableId: table, IsDefaultAction: true}
}

// applyDefault writes a default entry with PI's checks: only MODIFY, no
// match or priority, not for a const default action, an action allowed as
// default; MODIFY without action resets the program's default. Called with
// s.mu held.
func (s *Server) applyDefault(typ p4v1.Update_Type, te *p4v1.TableEntry) error {
	t, ok := s.index.Table(te.GetTableId())
	if !ok {
		return status.Errorf(codes.InvalidArgument, "unknown table id %#x", te.GetTableId())
	}
	switch {
	case typ == p4v1.Update_INSERT:
		return status.Error(codes.InvalidArgument, "Cannot use INSERT for default entry")
	case typ == p4v1.Update_DELETE:
		return status.Error(codes.InvalidArgument, "Cannot use DELETE for default entry")
	case typ != p4v1.Update_MODIFY:
		return status.Errorf(codes.InvalidArgument, "update type %v", typ)
	case len(te.GetMatch()) > 0:
		return status.Error(codes.InvalidArgument, "Non-empty key for default entry")
	case te.GetPriority() != 0:
		return status.Error(codes.InvalidArgument, "Non-zero priority for default entry")
	case t.Proto.GetConstDefaultActionId() != 0:
		return status.Error(codes.PermissionDenied, "Cannot set / reset default action for table which has a const default action")
	}
	if te.GetAction() == nil {
		s.defaults[te.GetTableId()] = programDefaults(&p4configv1.P4Info{Tables: []*p4configv1.Table{t.Proto}, Actions: s.index.P4Info().GetActions()},
			s.opts.ProgramDefaults)[te.GetTableId()]
		return nil
	}
	if err := s.index.Validate(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	s.defaults[te.GetTableId()] = canonEntry(te)
	return nil
}

// SetDefault replaces a table's default entry directly, without a Write
// RPC or checks, as another writer (BMv2's thrift CLI, which knows no
// action scopes) could. te needs only table_id and action.
func (s *Server) SetDefault(te *p4v1.TableEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := canonEntry(te)
	c.IsDefaultAction = true
	s.defaults[te.GetTableId()] = c
}

// DefaultEntry returns a table's default entry, as a Read answers it.
func (s *Server) DefaultEntry(table uint32) *p4v1.TableEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.defaultEntry(table)
}
