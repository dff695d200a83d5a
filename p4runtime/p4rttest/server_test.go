package p4rttest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
)

func dial(t *testing.T) (*p4rttest.Server, p4v1.P4RuntimeClient, context.Context) {
	t.Helper()
	s := p4rttest.Start(p4rttest.Options{DeviceID: 3})
	t.Cleanup(s.Close)
	conn, err := grpc.NewClient(s.Address(), append(s.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return s, p4v1.NewP4RuntimeClient(conn), ctx
}

func arbitration(device, eid uint64) *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: device, ElectionId: &p4v1.Uint128{Low: eid}}}}
}

// open starts a stream, arbitrates and returns it with the first answer.
func open(t *testing.T, ctx context.Context, c p4v1.P4RuntimeClient, device, eid uint64) (p4v1.P4Runtime_StreamChannelClient, *p4v1.MasterArbitrationUpdate, error) {
	t.Helper()
	st, err := c.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(arbitration(device, eid)); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	return st, m.GetArbitration(), err
}

func TestArbitrationRules(t *testing.T) {
	_, c, ctx := dial(t)
	if _, _, err := open(t, ctx, c, 4, 1); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown device: %v, want NOT_FOUND", err)
	}
	a, arb, err := open(t, ctx, c, 3, 5)
	if err != nil || arb.GetStatus().GetCode() != int32(codes.OK) {
		t.Fatalf("first controller: %v %v, want OK", arb, err)
	}
	if _, _, err := open(t, ctx, c, 3, 5); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("duplicate election id: %v, want INVALID_ARGUMENT", err)
	}
	_, arb, err = open(t, ctx, c, 3, 2)
	if err != nil || arb.GetStatus().GetCode() != int32(codes.AlreadyExists) || arb.GetElectionId().GetLow() != 5 {
		t.Fatalf("lower controller: %v %v, want ALREADY_EXISTS with election id 5", arb, err)
	}
	hi, hiArb, err := open(t, ctx, c, 3, 9)
	if err != nil || hiArb.GetStatus().GetCode() != int32(codes.OK) {
		t.Fatalf("higher controller: %v %v, want OK", hiArb, err)
	}
	m, err := a.Recv()
	if err != nil || m.GetArbitration().GetStatus().GetCode() != int32(codes.AlreadyExists) {
		t.Fatalf("old primary notification: %v %v, want ALREADY_EXISTS", m, err)
	}
	if err := hi.Send(arbitration(4, 9)); err != nil {
		t.Fatal(err)
	}
	if _, err := hi.Recv(); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("device change on a live stream: %v, want FAILED_PRECONDITION", err)
	}
	m, err = a.Recv()
	if err != nil || m.GetArbitration().GetStatus().GetCode() != int32(codes.NotFound) {
		t.Fatalf("after the primary left: %v %v, want NOT_FOUND (no primary)", m, err)
	}
}

func TestWriteReadRules(t *testing.T) {
	s, c, ctx := dial(t)
	if _, _, err := open(t, ctx, c, 3, 1); err != nil {
		t.Fatal(err)
	}
	eid := &p4v1.Uint128{Low: 1}
	write := func(eid *p4v1.Uint128, typ p4v1.Update_Type, entities ...*p4v1.Entity) error {
		req := &p4v1.WriteRequest{DeviceId: 3, ElectionId: eid}
		for _, e := range entities {
			req.Updates = append(req.Updates, &p4v1.Update{Type: typ, Entity: e})
		}
		_, err := c.Write(ctx, req)
		return err
	}
	e1, e2 := p4rttest.L2Entry(1, 1), p4rttest.L2Entry(2, 2)
	if err := write(eid, p4v1.Update_INSERT, e1); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("write before pipeline: %v", err)
	}
	if _, err := c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 3, ElectionId: eid,
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: p4rttest.SampleP4Info(), Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 7}}}); err != nil {
		t.Fatal(err)
	}
	if err := write(&p4v1.Uint128{Low: 2}, p4v1.Update_INSERT, e1); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("write with another election id: %v", err)
	}
	if _, err := c.Write(ctx, &p4v1.WriteRequest{DeviceId: 9, ElectionId: eid}); status.Code(err) != codes.NotFound {
		t.Fatalf("write to unknown device: %v", err)
	}
	if err := write(eid, p4v1.Update_INSERT, e1); err != nil {
		t.Fatal(err)
	}
	err := write(eid, p4v1.Update_INSERT, e2, e1)
	st := status.Convert(err)
	if st.Code() != codes.Unknown || len(st.Details()) != 2 {
		t.Fatalf("partly failed batch: %v, want UNKNOWN with 2 details", err)
	}
	if d0, d1 := st.Details()[0].(*p4v1.Error), st.Details()[1].(*p4v1.Error); d0.GetCanonicalCode() != 0 || d1.GetCanonicalCode() != int32(codes.AlreadyExists) {
		t.Fatalf("details %v %v, want OK then ALREADY_EXISTS", d0, d1)
	}
	if err := write(eid, p4v1.Update_MODIFY, p4rttest.L2Entry(3, 1)); status.Code(err) != codes.Unknown {
		t.Fatalf("modify of a missing entry: %v", err)
	}

	rs, err := c.Read(ctx, &p4v1.ReadRequest{DeviceId: 3, Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rs.Recv()
	if err != nil || len(resp.GetEntities()) != 2 {
		t.Fatalf("wildcard read: %v %v", resp, err)
	}
	te := resp.GetEntities()[0].GetTableEntry()
	if v := te.GetMatch()[0].GetExact().GetValue(); !bytes.Equal(v, []byte{1}) {
		t.Fatalf("read match value %x, want canonical 01", v)
	}
	if v := te.GetAction().GetAction().GetParams()[0].GetValue(); !bytes.Equal(v, []byte{1}) {
		t.Fatalf("read param value %x, want canonical 01", v)
	}
	if n := len(s.TableEntries()); n != 2 {
		t.Fatalf("%d entries", n)
	}
	g, err := c.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 3, ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY})
	if err != nil || g.GetConfig().GetCookie().GetCookie() != 7 || g.GetConfig().GetP4Info() != nil {
		t.Fatalf("COOKIE_ONLY: %v %v", g, err)
	}
}

func TestCloneSessionRules(t *testing.T) {
	s, c, ctx := dial(t)
	if _, _, err := open(t, ctx, c, 3, 1); err != nil {
		t.Fatal(err)
	}
	eid := &p4v1.Uint128{Low: 1}
	if _, err := c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 3, ElectionId: eid,
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: p4rttest.SampleP4Info()}}); err != nil {
		t.Fatal(err)
	}
	// write sends one update and returns the code of its outcome.
	write := func(typ p4v1.Update_Type, e *p4v1.Entity) codes.Code {
		t.Helper()
		_, err := c.Write(ctx, &p4v1.WriteRequest{DeviceId: 3, ElectionId: eid, Updates: []*p4v1.Update{{Type: typ, Entity: e}}})
		st := status.Convert(err)
		if st.Code() == codes.OK {
			return codes.OK
		}
		if len(st.Details()) != 1 {
			t.Fatalf("write %v: %v without one detail per update", typ, err)
		}
		return codes.Code(st.Details()[0].(*p4v1.Error).GetCanonicalCode())
	}
	read := func(id uint32) ([]*p4v1.Entity, error) {
		t.Helper()
		rs, err := c.Read(ctx, &p4v1.ReadRequest{DeviceId: 3, Entities: []*p4v1.Entity{
			{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
				Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []*p4v1.Entity
		for {
			resp, err := rs.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return out, nil
				}
				return out, err
			}
			out = append(out, resp.GetEntities()...)
		}
	}
	sess := func(e *p4v1.Entity) *p4v1.CloneSessionEntry {
		return e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
	}

	for _, tc := range []struct {
		name string
		typ  p4v1.Update_Type
		e    *p4v1.Entity
		want codes.Code
	}{
		{"insert 1", p4v1.Update_INSERT, p4rttest.CloneSession(1, 1), codes.OK},
		{"insert 2 (two replicas)", p4v1.Update_INSERT, p4rttest.CloneSession(2, 5, 4), codes.OK},
		{"insert 1 again", p4v1.Update_INSERT, p4rttest.CloneSession(1, 2), codes.AlreadyExists},
		{"modify missing", p4v1.Update_MODIFY, p4rttest.CloneSession(3, 1), codes.NotFound},
		{"delete missing", p4v1.Update_DELETE, p4rttest.CloneSession(3, 1), codes.NotFound},
		{"session 0", p4v1.Update_INSERT, p4rttest.CloneSession(0, 1), codes.InvalidArgument},
		{"session 32768", p4v1.Update_INSERT, p4rttest.CloneSession(32768, 1), codes.InvalidArgument},
		{"duplicate replica", p4v1.Update_INSERT, p4rttest.CloneSession(4, 1, 1), codes.InvalidArgument},
		{"modify 1 to port 3", p4v1.Update_MODIFY, p4rttest.CloneSession(1, 3), codes.OK},
	} {
		if got := write(tc.typ, tc.e); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	trunc := p4rttest.CloneSession(5, 1)
	sess(trunc).PacketLengthBytes = 64
	if got := write(p4v1.Update_INSERT, trunc); got != codes.Unknown {
		t.Errorf("truncating session: %v, want UNKNOWN (BMv2 does not truncate)", got)
	}
	cos := p4rttest.CloneSession(6, 1)
	sess(cos).ClassOfService = 1
	if got := write(p4v1.Update_INSERT, cos); got != codes.Unimplemented {
		t.Errorf("class of service: %v, want UNIMPLEMENTED", got)
	}
	mc := &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: 1}}}}}
	if got := write(p4v1.Update_INSERT, mc); got != codes.Unimplemented {
		t.Errorf("multicast group: %v, want UNIMPLEMENTED", got)
	}

	all, err := read(0)
	if err != nil || len(all) != 2 {
		t.Fatalf("wildcard read: %d sessions, %v; want 2", len(all), err)
	}
	if id, port := sess(all[0]).GetSessionId(), sess(all[0]).GetReplicas()[0].GetEgressPort(); id != 1 || port != 3 {
		t.Fatalf("session %d port %d, want session 1 modified to port 3", id, port)
	}
	// Replicas answered in the server's order, not the one written.
	if r := sess(all[1]).GetReplicas(); len(r) != 2 || r[0].GetEgressPort() != 4 || r[1].GetEgressPort() != 5 {
		t.Fatalf("session 2 replicas %v, want ports 4 then 5", r)
	}
	if one, err := read(2); err != nil || len(one) != 1 || sess(one[0]).GetSessionId() != 2 {
		t.Fatalf("read of session 2: %v %v", one, err)
	}
	if _, err := read(3); status.Code(err) != codes.NotFound {
		t.Fatalf("read of a missing session: %v, want NOT_FOUND", err)
	}
	if got := write(p4v1.Update_DELETE, p4rttest.CloneSession(1)); got != codes.OK {
		t.Fatalf("delete 1: %v", got)
	}
	if got := s.CloneSessions(); len(got) != 1 || got[0].GetSessionId() != 2 {
		t.Fatalf("sessions after delete: %v", got)
	}
	// The 9 of the table, truncation, class of service and the delete: 12
	// clone-session updates; 13 updates with the multicast group.
	if st := s.Stats(); st.CloneSessionUpdates != 12 || st.Updates != 13 {
		t.Fatalf("stats %+v, want 12 clone-session updates of 13", st)
	}

	// A new pipeline clears the clone sessions, as in PI.
	if _, err := c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 3, ElectionId: eid,
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: p4rttest.SampleP4Info()}}); err != nil {
		t.Fatal(err)
	}
	if got, err := read(0); err != nil || len(got) != 0 {
		t.Fatalf("sessions after a new pipeline: %v %v, want none", got, err)
	}
}

func TestCloneSessionNoWildcard(t *testing.T) {
	s := p4rttest.Start(p4rttest.Options{NoCloneSessionWildcard: true})
	t.Cleanup(s.Close)
	conn, err := grpc.NewClient(s.Address(), append(s.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := p4v1.NewP4RuntimeClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	if _, _, err := open(t, ctx, c, 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 1, ElectionId: &p4v1.Uint128{Low: 1},
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: p4rttest.SampleP4Info()}}); err != nil {
		t.Fatal(err)
	}
	s.SeedCloneSessions(p4rttest.CloneSession(1, 1).GetPacketReplicationEngineEntry().GetCloneSessionEntry())
	rs, err := c.Read(ctx, &p4v1.ReadRequest{DeviceId: 1, Entities: []*p4v1.Entity{p4rttest.CloneSession(0)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("wildcard read: %v, want INVALID_ARGUMENT", err)
	}
}

func TestDefaultEntryRules(t *testing.T) {
	s, c, ctx := dial(t)
	if _, _, err := open(t, ctx, c, 3, 1); err != nil {
		t.Fatal(err)
	}
	eid := &p4v1.Uint128{Low: 1}
	info := p4rttest.SampleP4Info()
	info.Tables[0].Size = 2
	info.Tables[0].ActionRefs[0].Scope = p4configv1.ActionRef_TABLE_ONLY // set_port
	if _, err := c.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 3, ElectionId: eid,
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info}}); err != nil {
		t.Fatal(err)
	}
	write := func(typ p4v1.Update_Type, e *p4v1.Entity) codes.Code {
		_, err := c.Write(ctx, &p4v1.WriteRequest{DeviceId: 3, ElectionId: eid, Updates: []*p4v1.Update{{Type: typ, Entity: e}}})
		st := status.Convert(err)
		if st.Code() == codes.Unknown && len(st.Details()) == 1 {
			return codes.Code(st.Details()[0].(*p4v1.Error).GetCanonicalCode())
		}
		return st.Code()
	}
	readDefault := func() *p4v1.TableEntry {
		rs, err := c.Read(ctx, &p4v1.ReadRequest{DeviceId: 3, Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{
			TableEntry: &p4v1.TableEntry{TableId: p4rttest.L2TableID, IsDefaultAction: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rs.Recv()
		if err != nil || len(resp.GetEntities()) != 1 || !resp.GetEntities()[0].GetTableEntry().GetIsDefaultAction() {
			t.Fatalf("default read: %v %v", resp, err)
		}
		return resp.GetEntities()[0].GetTableEntry()
	}
	if a := readDefault().GetAction().GetAction().GetActionId(); a != p4rttest.DropAction {
		t.Fatalf("program default %#x, want drop (first parameterless non-table-only action)", a)
	}
	fwd := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.SetPortAction, []byte{5})
	drop := p4rttest.DefaultEntry(p4rttest.L2TableID, p4rttest.DropAction)
	for _, tc := range []struct {
		typ  p4v1.Update_Type
		e    *p4v1.Entity
		want codes.Code
	}{
		{p4v1.Update_INSERT, drop, codes.InvalidArgument},
		{p4v1.Update_DELETE, drop, codes.InvalidArgument},
		{p4v1.Update_MODIFY, fwd, codes.InvalidArgument}, // TABLE_ONLY
		{p4v1.Update_MODIFY, drop, codes.OK},
		{p4v1.Update_INSERT, p4rttest.L2Entry(1, 1), codes.OK},
		{p4v1.Update_INSERT, p4rttest.L2Entry(2, 1), codes.OK},
		{p4v1.Update_INSERT, p4rttest.L2Entry(3, 1), codes.ResourceExhausted}, // size 2
		{p4v1.Update_DELETE, p4rttest.L2Entry(2, 1), codes.OK},
		{p4v1.Update_INSERT, p4rttest.L2Entry(3, 1), codes.OK},
	} {
		if got := write(tc.typ, tc.e); got != tc.want {
			t.Fatalf("%v %v: %v, want %v", tc.typ, tc.e, got, tc.want)
		}
	}
	// Another writer sets a table-only action; MODIFY without action resets.
	s.SetDefault(fwd.GetTableEntry())
	if a := readDefault().GetAction().GetAction(); a.GetActionId() != p4rttest.SetPortAction || !bytes.Equal(a.GetParams()[0].GetValue(), []byte{5}) {
		t.Fatalf("default after SetDefault: %v", a)
	}
	reset := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4rttest.L2TableID, IsDefaultAction: true}}}
	if got := write(p4v1.Update_MODIFY, reset); got != codes.OK || readDefault().GetAction().GetAction().GetActionId() != p4rttest.DropAction {
		t.Fatalf("reset: %v, default %v", got, readDefault())
	}
	if n := len(s.TableEntries()); n != 2 {
		t.Fatalf("%d entries, want 2 (default entries are not table entries)", n)
	}
}
