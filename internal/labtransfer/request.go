package labtransfer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/transport"
)

// Request is a transfer as the lab's control API takes it (`mrcgen lab
// transfer` sends it to the lab's process).
type Request struct {
	From         string       `json:"from"`
	To           string       `json:"to"`
	Size         int          `json:"size"`
	Mode         string       `json:"mode"` // mrc (default) or roce
	Segment      int          `json:"segment,omitempty"`
	Window       int          `json:"window,omitempty"`
	LimitSeconds float64      `json:"limit_seconds,omitempty"`
	Seed         uint64       `json:"seed,omitempty"`
	Links        []LinkEvents `json:"links,omitempty"`
	Throttles    []Throttle   `json:"throttles,omitempty"`
	Losses       []Loss       `json:"losses,omitempty"`
}

// ParseMode reads "mrc" or "roce".
func ParseMode(s string) (transport.Mode, error) {
	switch s {
	case "", "mrc":
		return transport.MRC, nil
	case "roce":
		return transport.RoCE, nil
	}
	return 0, fmt.Errorf("mode %q: want mrc or roce", s)
}

// Options returns the request as Options, once checked as far as it can be
// without the lab: its size (at most MaxSize), mode, limit and scenario.
func (q Request) Options() (Options, error) {
	mode, err := ParseMode(q.Mode)
	if err != nil {
		return Options{}, err
	}
	if q.LimitSeconds < 0 {
		return Options{}, fmt.Errorf("limit %vs is negative", q.LimitSeconds)
	}
	opt := Options{From: q.From, To: q.To, Size: q.Size, Mode: mode, Segment: q.Segment, Window: q.Window,
		Limit: time.Duration(q.LimitSeconds * float64(time.Second)), Seed: q.Seed,
		Links: q.Links, Throttles: q.Throttles, Losses: q.Losses}
	if err := opt.check(); err != nil {
		return Options{}, err
	}
	return opt, nil
}

// Handler is the control API's "transfer" command on r
// (lab.Server.HandleStream): it runs the request and reports Progress. A
// request with a field Request does not have, or that Options refuses, is
// answered with the error before anything of the lab is used.
func (r *Runner) Handler() func(ctx context.Context, raw json.RawMessage, progress func(any)) (any, error) {
	return func(ctx context.Context, raw json.RawMessage, progress func(any)) (any, error) {
		var q Request
		if err := lab.DecodeRequest(raw, &q); err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		opt, err := q.Options()
		if err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		opt.Progress = func(p Progress) { progress(p) }
		return r.Run(ctx, opt)
	}
}
