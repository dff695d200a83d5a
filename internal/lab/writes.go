package lab

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
)

// methodWrite is P4Runtime's Write RPC.
const methodWrite = "/p4.v1.P4Runtime/Write"

// writeCounters count the P4Runtime Write RPCs the lab sends each device,
// from its push and its Control sessions; the map is fixed once Up has
// started the devices.
type writeCounters map[string]*atomic.Uint64

// dialOptions returns the dial options that count device's Write RPCs
// (sent, whatever their answer).
func (w writeCounters) dialOptions(device string) []grpc.DialOption {
	n := w[device]
	if n == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if method == methodWrite {
				n.Add(1)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		})}
}

// Writes returns, per device, how many P4Runtime Write RPCs the lab has
// sent it (its push at start-up and every Control session's writes): a
// test asserts that a transfer made none by comparing two readings.
func (l *Lab) Writes() map[string]uint64 {
	out := make(map[string]uint64, len(l.writes))
	for name, n := range l.writes {
		out[name] = n.Load()
	}
	return out
}
