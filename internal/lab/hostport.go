package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
)

// ErrDetached is returned by HostPort.Recv and Send once the port was
// closed or its lab stopped.
var ErrDetached = errors.New("host port detached")

// HostPort is a host attached to its NIC's host port, as a transport
// engine is: Send hands the NIC a frame, Recv returns the frames the NIC
// hands its host, in the order the NIC transmitted them. Nothing is
// dropped: frames wait in the port's queue until received. The lab's
// capture (HostFrames, WaitHostFrames), when on, keeps them too.
//
// A NIC has at most one attached host at a time. A HostPort is safe for
// concurrent use.
type HostPort struct {
	NIC string
	l   *Lab
	dp  *bmv2.Dataplane

	mu     sync.Mutex
	q      []Frame
	closed bool
	// ready holds a token when q may have grown; done is closed by Close.
	ready chan struct{}
	done  chan struct{}
}

// AttachHost attaches a host to nic's host port.
func (l *Lab) AttachHost(nic string) (*HostPort, error) {
	d, ok := l.Devices[nic]
	if !ok || d.Role != plan.RoleNIC.String() {
		return nil, fmt.Errorf("lab: no NIC %q", nic)
	}
	if l.closed.Load() {
		return nil, fmt.Errorf("lab: attach to %s: lab stopped", nic)
	}
	h := &HostPort{NIC: nic, l: l, dp: d.dp, ready: make(chan struct{}, 1), done: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hosts[nic] != nil {
		return nil, fmt.Errorf("lab: a host is already attached to %s", nic)
	}
	if l.hosts == nil {
		l.hosts = map[string]*HostPort{}
	}
	l.hosts[nic] = h
	return h, nil
}

// Send hands a frame to the NIC's host port.
func (h *HostPort) Send(frame []byte) error {
	select {
	case <-h.done:
		return fmt.Errorf("lab: %s: %w", h.NIC, ErrDetached)
	default:
	}
	if err := h.dp.Send(bmv2.Packet{Port: plan.NICHostPort, Data: frame}); err != nil {
		return fmt.Errorf("lab: %s: %w", h.NIC, err)
	}
	return nil
}

// Recv returns the next frame the NIC handed its host, waiting for one
// until ctx ends or the port is closed. The frame's Data may be shared with
// the lab's capture: do not modify it.
func (h *HostPort) Recv(ctx context.Context) (Frame, error) {
	for {
		h.mu.Lock()
		if len(h.q) > 0 {
			f := h.q[0]
			h.q[0] = Frame{}
			h.q = h.q[1:]
			h.mu.Unlock()
			return f, nil
		}
		h.mu.Unlock()
		select {
		case <-h.ready:
		case <-h.done:
			return Frame{}, fmt.Errorf("lab: %s: %w", h.NIC, ErrDetached)
		case <-ctx.Done():
			return Frame{}, fmt.Errorf("lab: %s: receive: %w", h.NIC, ctx.Err())
		}
	}
}

// Pending is the number of frames waiting to be received.
func (h *HostPort) Pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.q)
}

// Close detaches the host; frames not received are dropped and the NIC's
// host port is free for another AttachHost. It is safe to call twice.
func (h *HostPort) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.q = nil
	close(h.done)
	h.mu.Unlock()
	h.l.mu.Lock()
	if h.l.hosts[h.NIC] == h {
		delete(h.l.hosts, h.NIC)
	}
	h.l.mu.Unlock()
	return nil
}

// push queues a frame for Recv.
func (h *HostPort) push(f Frame) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.q = append(h.q, f)
	h.mu.Unlock()
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// hostCapture is what the lab keeps of the frames NICs hand their hosts
// (Options.CaptureHostFrames): per NIC the first limit since the last
// reset, and a count of those not kept. Guarded by the lab's mu.
type hostCapture struct {
	on      bool
	limit   int
	frames  map[string][]Frame
	dropped map[string]uint64
}

func newHostCapture(opt Options) (hostCapture, error) {
	if opt.HostFramesLimit < 0 {
		return hostCapture{}, fmt.Errorf("lab: host frames limit %d is negative", opt.HostFramesLimit)
	}
	c := hostCapture{on: opt.CaptureHostFrames, limit: opt.HostFramesLimit}
	if c.limit == 0 {
		c.limit = DefaultHostFramesLimit
	}
	c.reset()
	return c, nil
}

func (c *hostCapture) reset() {
	c.frames, c.dropped = map[string][]Frame{}, map[string]uint64{}
}

// add keeps f if the capture is on and nic's frames are below the limit,
// and counts it as dropped otherwise.
func (c *hostCapture) add(nic string, f Frame) {
	switch {
	case !c.on:
	case len(c.frames[nic]) < c.limit:
		c.frames[nic] = append(c.frames[nic], f)
	default:
		c.dropped[nic]++
	}
}

// deliverHost records a frame nic handed its host: in the capture, for the
// attached host if any, and for WaitHostFrames and WaitHostDeliveries.
func (l *Lab) deliverHost(nic string, f Frame) {
	l.mu.Lock()
	l.capture.add(nic, f)
	l.hostDelivered++
	h := l.hosts[nic]
	l.cond.Broadcast()
	l.mu.Unlock()
	if h != nil {
		h.push(f)
	}
}

// HostFrames returns a copy of the frames nic has delivered to its host
// since ResetCaptures, whether or not a host is attached (AttachHost): with
// Options.CaptureHostFrames, the first HostFramesLimit of them; without,
// none.
func (l *Lab) HostFrames(nic string) []Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Frame(nil), l.capture.frames[nic]...)
}

// HostFramesDropped counts the frames nic delivered to its host since
// ResetCaptures that the capture did not keep, being full
// (Options.HostFramesLimit).
func (l *Lab) HostFramesDropped(nic string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.capture.dropped[nic]
}

// WaitHostFrames waits until nic has delivered at least n frames to its
// host, or ctx ends; it returns what arrived either way. It fails at once
// when the lab does not capture host frames or n is beyond what the
// capture keeps.
func (l *Lab) WaitHostFrames(ctx context.Context, nic string, n int) ([]Frame, error) {
	if !l.capture.on {
		return nil, fmt.Errorf("lab: wait for %d frames of %s: the lab captures no host frames (Options.CaptureHostFrames)", n, nic)
	}
	if n > l.capture.limit {
		return nil, fmt.Errorf("lab: wait for %d frames of %s: the capture keeps at most %d per NIC (Options.HostFramesLimit)", n, nic, l.capture.limit)
	}
	unlock := l.waitLocked(ctx, func() bool { return len(l.capture.frames[nic]) >= n })
	defer unlock()
	out := append([]Frame(nil), l.capture.frames[nic]...)
	if len(out) < n {
		return out, fmt.Errorf("lab: %s delivered %d of %d frames: %w", nic, len(out), n, ctx.Err())
	}
	return out, nil
}

// HostDeliveries counts the frames every NIC has handed its host since the
// lab started (ResetCaptures does not reset it).
func (l *Lab) HostDeliveries() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hostDelivered
}

// WaitHostDeliveries waits until some NIC hands its host a frame after the
// first `after` (HostDeliveries), or ctx ends; it returns the count then.
// A caller waiting for a condition on the captures reads the count, checks
// its condition and waits with that count: no delivery is missed.
func (l *Lab) WaitHostDeliveries(ctx context.Context, after uint64) (uint64, error) {
	unlock := l.waitLocked(ctx, func() bool { return l.hostDelivered > after })
	defer unlock()
	if l.hostDelivered <= after {
		return l.hostDelivered, fmt.Errorf("lab: no frame for any host after %d: %w", after, ctx.Err())
	}
	return l.hostDelivered, nil
}

// waitLocked waits on the lab's condition until done (called with l.mu
// held) or ctx ends, and returns with l.mu held: the caller reads what it
// waited for, then calls the returned unlock.
func (l *Lab) waitLocked(ctx context.Context, done func() bool) (unlock func()) {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	l.mu.Lock()
	for !done() && ctx.Err() == nil {
		l.cond.Wait()
	}
	return func() {
		l.mu.Unlock()
		stop()
	}
}

// detachAll closes every attached host port (Close of the lab).
func (l *Lab) detachAll() {
	l.mu.Lock()
	hs := make([]*HostPort, 0, len(l.hosts))
	for _, h := range l.hosts {
		hs = append(hs, h)
	}
	l.mu.Unlock()
	for _, h := range hs {
		h.Close()
	}
}
