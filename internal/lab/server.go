package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ControlSocket is the name, in the lab's directory, of the unix socket a
// running lab (mrcgen lab up) serves its control API on.
const ControlSocket = "control.sock"

// Controller is what the control server drives; *Lab is one, tests use
// fakes.
type Controller interface {
	SetLink(ctx context.Context, a, b string, up bool) error
	SetQueueRate(ctx context.Context, device string, port uint32, pps int) error
	// SetLoss sets the random loss of the link between a and b (0 clears).
	SetLoss(a, b string, p float64) error
	// Port returns the port of device a that faces device b.
	Port(a, b string) (uint32, bool)
	Writes() map[string]uint64
}

var _ Controller = (*Lab)(nil)

// Handler runs one command of the control API: it decodes its request from
// req (with DecodeRequest, so that every command refuses unknown fields
// alike) and returns a result to encode as JSON. A command that runs long (a
// transfer) runs in the lab's process, as long as ctx, the request's
// context, lives.
type Handler func(ctx context.Context, req json.RawMessage) (any, error)

// StreamHandler is a Handler that reports progress while it runs: each
// value given to progress reaches the caller (Client.Stream) at once.
type StreamHandler func(ctx context.Context, req json.RawMessage, progress func(any)) (any, error)

// streamLine is one line of a streamed answer (NDJSON): progress lines,
// then one result or error line.
type streamLine struct {
	Progress json.RawMessage `json:"progress,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
}

const ndjson = "application/x-ndjson"

// MaxRequestBytes is the largest request body a command takes: requests
// are a few hundred bytes; a larger one is refused, not read.
const MaxRequestBytes = 1 << 20

// Requests and results of the built-in commands.
type (
	// LinkRequest cuts (Up false) or restores the link between A and B.
	LinkRequest struct {
		A  string `json:"a"`
		B  string `json:"b"`
		Up bool   `json:"up"`
	}
	// ThrottleRequest limits a switch port to PPS packets/s (0 restores).
	// The port is Port, or the one facing Neighbour when that is set.
	ThrottleRequest struct {
		Device    string `json:"device"`
		Port      uint32 `json:"port"`
		Neighbour string `json:"neighbour,omitempty"`
		PPS       int    `json:"pps"`
	}
	// ThrottleResult says which port was throttled.
	ThrottleResult struct {
		Device string `json:"device"`
		Port   uint32 `json:"port"`
		PPS    int    `json:"pps"`
	}
	// LossRequest makes the link between A and B lose Percent % of the
	// packets in each direction, at random from the lab's seed (0 clears).
	LossRequest struct {
		A       string  `json:"a"`
		B       string  `json:"b"`
		Percent float64 `json:"percent"`
	}
	// WritesResult is the P4Runtime Write RPCs per device (Lab.Writes).
	WritesResult struct {
		Writes map[string]uint64 `json:"writes"`
	}
)

// Server serves the control API of a running lab: JSON over HTTP on a unix
// socket only its user can open (mode 0600). Each command is a POST to
// /v1/<name> with a JSON request; the answer is the JSON result, or
// {"error": "..."} with a non-2xx status.
type Server struct {
	mu       sync.Mutex
	handlers map[string]StreamHandler
	ln       net.Listener
	path     string
	srv      *http.Server
}

// NewServer returns a server with the built-in commands (link, throttle,
// writes) for c. More commands (a transfer) are added with Handle.
func NewServer(c Controller) *Server {
	s := &Server{handlers: map[string]StreamHandler{}}
	s.Handle("link", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var r LinkRequest
		if err := DecodeRequest(raw, &r); err != nil {
			return nil, err
		}
		if err := c.SetLink(ctx, r.A, r.B, r.Up); err != nil {
			return nil, err
		}
		return r, nil
	})
	s.Handle("throttle", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var r ThrottleRequest
		if err := DecodeRequest(raw, &r); err != nil {
			return nil, err
		}
		if r.PPS < 0 {
			return nil, fmt.Errorf("throttle %s: negative rate %d", r.Device, r.PPS)
		}
		port := r.Port
		if r.Neighbour != "" {
			p, ok := c.Port(r.Device, r.Neighbour)
			if !ok {
				return nil, fmt.Errorf("lab: %s and %s are not linked", r.Device, r.Neighbour)
			}
			port = p
		}
		if err := c.SetQueueRate(ctx, r.Device, port, r.PPS); err != nil {
			return nil, err
		}
		return ThrottleResult{Device: r.Device, Port: port, PPS: r.PPS}, nil
	})
	s.Handle("loss", func(_ context.Context, raw json.RawMessage) (any, error) {
		var r LossRequest
		if err := DecodeRequest(raw, &r); err != nil {
			return nil, err
		}
		if !(r.Percent >= 0 && r.Percent <= 100) {
			return nil, fmt.Errorf("loss %s:%s: %v%% is not a percentage", r.A, r.B, r.Percent)
		}
		if err := c.SetLoss(r.A, r.B, r.Percent/100); err != nil {
			return nil, err
		}
		return r, nil
	})
	s.Handle("writes", func(_ context.Context, raw json.RawMessage) (any, error) {
		if err := DecodeRequest(raw, &struct{}{}); err != nil {
			return nil, err
		}
		return WritesResult{Writes: c.Writes()}, nil
	})
	return s
}

// DecodeRequest decodes a command's request into v strictly, as every
// command of the control API does: a field v does not have, a value of the
// wrong type, or anything after the request's one JSON value is an error
// naming it.
func DecodeRequest(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad request: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("bad request: more after the request's JSON value (at byte %d)", dec.InputOffset())
	}
	return nil
}

// Handle adds (or replaces) the command name.
func (s *Server) Handle(name string, h Handler) {
	s.HandleStream(name, func(ctx context.Context, req json.RawMessage, _ func(any)) (any, error) { return h(ctx, req) })
}

// HandleStream adds (or replaces) the command name, which reports progress:
// its answer is NDJSON, one {"progress": ...} line per report and a last
// {"result": ...} or {"error": ...} line.
func (s *Server) HandleStream(name string, h StreamHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[name] = h
}

// Commands lists the command names, sorted.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.handlers))
	for n := range s.handlers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	s.mu.Lock()
	h := s.handlers[name]
	s.mu.Unlock()
	if !ok || h == nil {
		writeAnswer(w, http.StatusNotFound, errorAnswer{fmt.Sprintf("no command %q (commands: %s)", strings.TrimPrefix(r.URL.Path, "/v1/"), strings.Join(s.Commands(), ", "))})
		return
	}
	if r.Method != http.MethodPost {
		writeAnswer(w, http.StatusMethodNotAllowed, errorAnswer{"use POST"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		writeAnswer(w, http.StatusBadRequest, errorAnswer{err.Error()})
		return
	}
	if len(body) > MaxRequestBytes {
		writeAnswer(w, http.StatusRequestEntityTooLarge, errorAnswer{fmt.Sprintf("%s: request of more than %d bytes (MaxRequestBytes)", name, MaxRequestBytes)})
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if r.Header.Get("Accept") != ndjson {
		res, err := h(r.Context(), body, func(any) {})
		if err != nil {
			writeAnswer(w, http.StatusUnprocessableEntity, errorAnswer{err.Error()})
			return
		}
		writeAnswer(w, http.StatusOK, res)
		return
	}
	// Streamed: the status is sent before the outcome is known; the last
	// line tells it.
	w.Header().Set("Content-Type", ndjson)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	// Progress may come from the handler's goroutines; none is written
	// once the handler has returned.
	var wmu sync.Mutex
	done := false
	line := func(l streamLine, last bool) {
		wmu.Lock()
		defer wmu.Unlock()
		if done {
			return
		}
		done = last
		_ = json.NewEncoder(w).Encode(l)
		if flusher != nil {
			flusher.Flush()
		}
	}
	res, err := h(r.Context(), body, func(v any) {
		if data, jerr := json.Marshal(v); jerr == nil {
			line(streamLine{Progress: data}, false)
		}
	})
	if err != nil {
		line(streamLine{Error: err.Error()}, true)
		return
	}
	data, err := json.Marshal(res)
	if err != nil {
		line(streamLine{Error: err.Error()}, true)
		return
	}
	line(streamLine{Result: data}, true)
}

type errorAnswer struct {
	Error string `json:"error"`
}

func writeAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Listen binds the control socket in dir, mode 0600 from the start: it is
// bound inside a fresh directory only this user can enter, made 0600, and
// only then renamed into dir. A socket left by a lab that crashed is
// replaced when nothing answers on it.
func (s *Server) Listen(dir string) error {
	path := filepath.Join(dir, ControlSocket)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("lab control: a lab already serves %s", path)
	}
	tmp, err := os.MkdirTemp(dir, ".control-")
	if err != nil {
		return fmt.Errorf("lab control: %w", err)
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", bound)
	if err != nil {
		return fmt.Errorf("lab control: listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(bound, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("lab control: %w", err)
	}
	if err := os.Rename(bound, path); err != nil {
		ln.Close()
		return fmt.Errorf("lab control: %w", err)
	}
	s.ln, s.path = ln, path
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return nil
}

// Serve answers requests until Close.
func (s *Server) Serve() error {
	if s.ln == nil {
		return errors.New("lab control: Serve before Listen")
	}
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("lab control: %w", err)
	}
	return nil
}

// Close stops serving and removes the socket.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	_ = os.Remove(s.path)
	return err
}

// ErrNoLab is wrapped by Dial's and Call's errors when no lab answers in
// the directory.
var ErrNoLab = errors.New("no lab running")

// Client calls the control API of the lab running in a directory.
type Client struct {
	Dir  string
	path string
	hc   *http.Client
}

// Dial returns a client of the lab running in dir; it fails, wrapping
// ErrNoLab, when there is no control socket.
func Dial(dir string) (*Client, error) {
	path := filepath.Join(dir, ControlSocket)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w in %s (no %s; start one with `mrcgen lab up --dir %s`)", ErrNoLab, dir, ControlSocket, dir)
	}
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{Dir: dir, path: path, hc: &http.Client{Transport: tr}}, nil
}

// Call runs command name with req and decodes its result into res (nil:
// ignored).
func (c *Client) Call(ctx context.Context, name string, req, res any) error {
	return c.do(ctx, name, req, res, nil)
}

// Stream runs command name with req, hands each progress report to
// progress as it comes, and decodes the result into res (nil: ignored).
// A command registered with Handle answers without progress.
func (c *Client) Stream(ctx context.Context, name string, req, res any, progress func(json.RawMessage)) error {
	if progress == nil {
		progress = func(json.RawMessage) {}
	}
	return c.do(ctx, name, req, res, progress)
}

func (c *Client) do(ctx context.Context, name string, req, res any, progress func(json.RawMessage)) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("lab %s: %w", name, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lab/v1/"+name, strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("lab %s: %w", name, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if progress != nil {
		hr.Header.Set("Accept", ndjson)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("%w in %s: nothing answers on its %s (left by a lab that stopped?): %v", ErrNoLab, c.Dir, ControlSocket, op.Err)
		}
		return fmt.Errorf("lab %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == ndjson {
		return readStream(name, resp.Body, res, progress)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("lab %s: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorAnswer
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("lab %s: %s", name, resp.Status)
	}
	if res == nil {
		return nil
	}
	if err := json.Unmarshal(data, res); err != nil {
		return fmt.Errorf("lab %s: answer: %w", name, err)
	}
	return nil
}

// readStream reads a streamed answer: progress lines, then the result.
func readStream(name string, r io.Reader, res any, progress func(json.RawMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var l streamLine
		if err := dec.Decode(&l); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("lab %s: answer ended before its result: %w", name, err)
		}
		switch {
		case l.Error != "":
			return errors.New(l.Error)
		case l.Result != nil:
			if res == nil {
				return nil
			}
			if err := json.Unmarshal(l.Result, res); err != nil {
				return fmt.Errorf("lab %s: answer: %w", name, err)
			}
			return nil
		case l.Progress != nil && progress != nil:
			progress(l.Progress)
		}
	}
}

// Close releases the client's connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }
