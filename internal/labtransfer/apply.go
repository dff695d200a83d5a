package labtransfer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// step is one link change of a scenario.
type step struct {
	link int // index in Options.Links
	at   float64
	up   bool
	done bool
}

func (s step) String() string {
	return fmt.Sprintf("link %s at %.0f%%", map[bool]string{true: "up", false: "down"}[s.up], s.at*100)
}

// scenario applies Options' throttles and losses for the transfer's time and
// its link changes at their fractions; restore undoes all of it.
type scenario struct {
	r      *Runner
	opt    *Options
	steps  []step
	events []Event
	// What to undo.
	throttled []Throttle
	lossy     []Loss
	downs     map[int]bool
}

func (s *scenario) begin(ctx context.Context) error {
	s.downs = map[int]bool{}
	for i, le := range s.opt.Links {
		for k, f := range le.At {
			s.steps = append(s.steps, step{link: i, at: f, up: k%2 == 1})
		}
	}
	l := s.r.lab
	for _, t := range s.opt.Throttles {
		port := t.Port
		if t.Neighbour != "" {
			p, ok := l.Port(t.Device, t.Neighbour)
			if !ok {
				return fmt.Errorf("throttle: %s and %s are not linked", t.Device, t.Neighbour)
			}
			port = p
		}
		if err := l.SetQueueRate(ctx, t.Device, port, t.PPS); err != nil {
			return fmt.Errorf("throttle %s port %d: %w", t.Device, port, err)
		}
		t.Port, t.Neighbour = port, ""
		s.throttled = append(s.throttled, t)
		s.events = append(s.events, Event{What: fmt.Sprintf("throttle %s/%d to %d pkt/s", t.Device, port, t.PPS)})
	}
	for _, ls := range s.opt.Losses {
		if err := l.SetLoss(ls.A, ls.B, ls.Percent/100); err != nil {
			return err
		}
		s.lossy = append(s.lossy, ls)
		s.events = append(s.events, Event{What: fmt.Sprintf("loss %s:%s %g%%", ls.A, ls.B, ls.Percent)})
	}
	return nil
}

// packet is the first send a step is due at: the fraction at of n
// packets, rounded up.
func (st step) packet(n int64) int64 { return int64(math.Ceil(st.at * float64(n))) }

// sendLimit is where the write's first sends must wait (transport's send
// limit) for the next step to be applied: its packet, 0 when no step is
// left. The sender stops there, so every step is applied after exactly
// its packet's first sends, however late the runner looks.
func (s *scenario) sendLimit(n int64) int {
	limit := int64(0)
	for _, st := range s.steps {
		if p := st.packet(n); !st.done && (limit == 0 || p < limit) {
			limit = p
		}
	}
	return int(limit)
}

// due returns the steps whose fraction of n packets has been first sent,
// marking them done.
func (s *scenario) due(sent, n int64) []step {
	var out []step
	for i := range s.steps {
		st := &s.steps[i]
		if st.done || sent < st.packet(n) {
			continue
		}
		st.done = true
		out = append(out, *st)
	}
	return out
}

func (s *scenario) apply(ctx context.Context, st step, sent int64, elapsed time.Duration) error {
	le := s.opt.Links[st.link]
	if err := s.r.lab.SetLink(ctx, le.A, le.B, st.up); err != nil {
		return fmt.Errorf("%s: %w", st, err)
	}
	s.downs[st.link] = !st.up
	s.events = append(s.events, Event{What: fmt.Sprintf("link %s:%s %s", le.A, le.B, map[bool]string{true: "up", false: "down"}[st.up]),
		At: st.at, Sent: sent, Elapsed: elapsed.Seconds()})
	return nil
}

// restore brings every link the scenario cut back up, and clears its
// throttles and losses.
func (s *scenario) restore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	l := s.r.lab
	var errs []error
	for i, down := range s.downs {
		if down {
			le := s.opt.Links[i]
			errs = append(errs, l.SetLink(ctx, le.A, le.B, true))
		}
	}
	for _, t := range s.throttled {
		errs = append(errs, l.SetQueueRate(ctx, t.Device, t.Port, 0))
	}
	for _, ls := range s.lossy {
		errs = append(errs, l.SetLoss(ls.A, ls.B, 0))
	}
	return errors.Join(errs...)
}
