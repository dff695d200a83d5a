package p4rttest_test

import (
	"bytes"
	"context"
	"testing"
	"time"

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
