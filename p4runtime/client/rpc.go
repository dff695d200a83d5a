package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Read sends one ReadRequest with the given filter entities and returns
// every entity of every response. An empty TableEntry with table_id 0 reads
// all tables; a TableEntry with only table_id reads that whole table; a
// clone session with session_id 0 reads every clone session (PI).
func (c *Client) Read(ctx context.Context, filters []*p4v1.Entity) ([]*p4v1.Entity, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Read(ctx, &p4v1.ReadRequest{DeviceId: c.cfg.DeviceID, Role: c.cfg.Role, Entities: filters})
	if err != nil {
		return nil, fmt.Errorf("device %s: read: %w", c.cfg.Name, err)
	}
	var out []*p4v1.Entity
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("device %s: read (after %d entities): %w", c.cfg.Name, len(out), err)
		}
		out = append(out, resp.GetEntities()...)
	}
}

// PipelineCookie returns the cookie of the device's forwarding pipeline
// (GetForwardingPipelineConfig with COOKIE_ONLY). ok is false when the
// device has no pipeline or a pipeline set without a cookie.
func (c *Client) PipelineCookie(ctx context.Context) (cookie uint64, ok bool, err error) {
	resp, err := c.rpc.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId:     c.cfg.DeviceID,
		ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY,
	})
	if err != nil {
		if status.Code(err) == codes.FailedPrecondition {
			// Some servers answer so when no pipeline is set.
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("device %s: get pipeline cookie: %w", c.cfg.Name, err)
	}
	ck := resp.GetConfig().GetCookie()
	if ck == nil {
		return 0, false, nil
	}
	return ck.GetCookie(), true, nil
}

// SetPipeline makes the device run the given pipeline unless it already
// reports the same cookie, in which case it does nothing and returns
// skipped. Otherwise it sends SetForwardingPipelineConfig with
// VERIFY_AND_COMMIT, which clears the device's forwarding state. For BMv2,
// deviceConfig is the JSON written by p4c-bm2-ss. The client must be
// primary.
func (c *Client) SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) (skipped bool, err error) {
	have, ok, err := c.PipelineCookie(ctx)
	if err != nil {
		return false, err
	}
	if ok && have == cookie {
		c.log.Debug("pipeline cookie matches, not pushing", "cookie", cookie)
		return true, nil
	}
	return false, c.ForcePipeline(ctx, info, deviceConfig, cookie)
}

// ForcePipeline sends SetForwardingPipelineConfig(VERIFY_AND_COMMIT)
// without looking at the device's cookie.
func (c *Client) ForcePipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	if c.cfg.ReadOnly {
		return fmt.Errorf("device %s: set pipeline: %w: the client is read-only", c.cfg.Name, ErrNotPrimary)
	}
	if info == nil {
		return fmt.Errorf("device %s: set pipeline: nil P4Info", c.cfg.Name)
	}
	_, err := c.rpc.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId:   c.cfg.DeviceID,
		Role:       c.cfg.Role,
		ElectionId: c.cfg.ElectionID.Proto(),
		Action:     p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{
			P4Info:         info,
			P4DeviceConfig: deviceConfig,
			Cookie:         &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie},
		},
	}, grpc.MaxCallSendMsgSize(c.cfg.MaxPipelineMsgSize))
	if err != nil {
		if status.Code(err) == codes.PermissionDenied {
			return fmt.Errorf("device %s: set pipeline: %w (device says: %s)", c.cfg.Name, ErrNotPrimary, status.Convert(err).Message())
		}
		return fmt.Errorf("device %s: set pipeline (cookie %#x): %w", c.cfg.Name, cookie, err)
	}
	c.log.Info("pipeline pushed", "cookie", cookie)
	return nil
}
