package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeController is a lab of two linked switches, p0-t0-0 port 2 facing
// p0-t1-0 port 0, that records what it is asked.
type fakeController struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeController) SetLink(_ context.Context, a, b string, up bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.Port(a, b); !ok {
		return fmt.Errorf("lab: %s and %s are not linked", a, b)
	}
	f.calls = append(f.calls, fmt.Sprintf("link %s %s %v", a, b, up))
	return nil
}

func (f *fakeController) SetQueueRate(_ context.Context, device string, port uint32, pps int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if device != "p0-t0-0" && device != "p0-t1-0" {
		return fmt.Errorf("lab: no device %q", device)
	}
	f.calls = append(f.calls, fmt.Sprintf("rate %s %d %d", device, port, pps))
	return nil
}

func (f *fakeController) SetLoss(a, b string, p float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.Port(a, b); !ok {
		return fmt.Errorf("lab: %s and %s are not linked", a, b)
	}
	f.calls = append(f.calls, fmt.Sprintf("loss %s %s %g", a, b, p))
	return nil
}

func (f *fakeController) Port(a, b string) (uint32, bool) {
	switch {
	case a == "p0-t0-0" && b == "p0-t1-0":
		return 2, true
	case a == "p0-t1-0" && b == "p0-t0-0":
		return 0, true
	}
	return 0, false
}

func (f *fakeController) Writes() map[string]uint64 {
	return map[string]uint64{"p0-t0-0": 3, "p0-t1-0": 0}
}

func serve(t *testing.T, c Controller) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	s := NewServer(c)
	if err := s.Listen(dir); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, dir
}

func TestControlServer(t *testing.T) {
	fc := &fakeController{}
	s, dir := serve(t, fc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	fi, err := os.Stat(filepath.Join(dir, ControlSocket))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket mode %v, want a socket with 0600", fi.Mode())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".control-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}

	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var lr LinkRequest
	if err := c.Call(ctx, "link", LinkRequest{A: "p0-t0-0", B: "p0-t1-0"}, &lr); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "link", LinkRequest{A: "p0-t0-0", B: "nic-9", Up: true}, nil); err == nil || !strings.Contains(err.Error(), "p0-t0-0 and nic-9 are not linked") {
		t.Errorf("link to a stranger: %v", err)
	}
	var tr ThrottleResult
	if err := c.Call(ctx, "throttle", ThrottleRequest{Device: "p0-t0-0", Neighbour: "p0-t1-0", PPS: 500}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr != (ThrottleResult{Device: "p0-t0-0", Port: 2, PPS: 500}) {
		t.Errorf("throttle by neighbour: %+v", tr)
	}
	if err := c.Call(ctx, "throttle", ThrottleRequest{Device: "p0-t1-0", Port: 3}, &tr); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []ThrottleRequest{{Device: "p0-t0-0", Neighbour: "nic-9", PPS: 1}, {Device: "x", Port: 1, PPS: 1}, {Device: "p0-t0-0", PPS: -1}} {
		if err := c.Call(ctx, "throttle", bad, nil); err == nil {
			t.Errorf("throttle %+v: no error", bad)
		}
	}
	var lossr LossRequest
	if err := c.Call(ctx, "loss", LossRequest{A: "p0-t1-0", B: "p0-t0-0", Percent: 1}, &lossr); err != nil || lossr.Percent != 1 {
		t.Errorf("loss: %+v, %v", lossr, err)
	}
	for _, bad := range []LossRequest{{A: "p0-t0-0", B: "nic-9", Percent: 1}, {A: "p0-t0-0", B: "p0-t1-0", Percent: 101}, {A: "p0-t0-0", B: "p0-t1-0", Percent: -1}} {
		if err := c.Call(ctx, "loss", bad, nil); err == nil {
			t.Errorf("loss %+v: no error", bad)
		}
	}
	var wr WritesResult
	if err := c.Call(ctx, "writes", struct{}{}, &wr); err != nil || wr.Writes["p0-t0-0"] != 3 {
		t.Errorf("writes: %+v, %v", wr, err)
	}
	want := []string{"link p0-t0-0 p0-t1-0 false", "rate p0-t0-0 2 500", "rate p0-t1-0 3 0", "loss p0-t1-0 p0-t0-0 0.01"}
	if !reflect.DeepEqual(fc.calls, want) {
		t.Errorf("calls %q, want %q", fc.calls, want)
	}

	// Unknown commands and fields are refused, naming what exists.
	if err := c.Call(ctx, "transfer", struct{}{}, nil); err == nil || !strings.Contains(err.Error(), "link, loss, throttle, writes") {
		t.Errorf("unknown command: %v", err)
	}
	if err := c.Call(ctx, "link", map[string]any{"a": "p0-t0-0", "b": "p0-t1-0", "speed": 1}, nil); err == nil || !strings.Contains(err.Error(), "speed") {
		t.Errorf("unknown field: %v", err)
	}

	// A command added later (a transfer) runs in the server's process.
	s.Handle("echo", func(_ context.Context, raw json.RawMessage) (any, error) { return raw, nil })
	var echoed map[string]int
	if err := c.Call(ctx, "echo", map[string]int{"n": 7}, &echoed); err != nil || echoed["n"] != 7 {
		t.Errorf("added command: %v, %v", echoed, err)
	}

	// A streamed command: every progress report arrives, in order, then
	// the result; a plain Call of it gets the result alone; an error
	// after progress is the caller's error.
	s.HandleStream("count", func(_ context.Context, raw json.RawMessage, progress func(any)) (any, error) {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, err
		}
		for i := 1; i <= n; i++ {
			progress(i)
		}
		if n > 5 {
			return nil, fmt.Errorf("%d is too many", n)
		}
		return "done", nil
	})
	var got []string
	var res string
	if err := c.Stream(ctx, "count", 3, &res, func(m json.RawMessage) { got = append(got, string(m)) }); err != nil || res != "done" || !reflect.DeepEqual(got, []string{"1", "2", "3"}) {
		t.Errorf("stream: progress %q, result %q, %v", got, res, err)
	}
	res = ""
	if err := c.Call(ctx, "count", 2, &res); err != nil || res != "done" {
		t.Errorf("call of a streamed command: %q, %v", res, err)
	}
	got = nil
	if err := c.Stream(ctx, "count", 6, &res, func(m json.RawMessage) { got = append(got, string(m)) }); err == nil || !strings.Contains(err.Error(), "6 is too many") || len(got) != 6 {
		t.Errorf("stream ending in an error: %v after %d reports", err, len(got))
	}

	// A second server in the same directory is refused.
	if err := NewServer(fc).Listen(dir); err == nil {
		t.Error("a second server listened on a live socket")
	}
}

func TestControlClientNoLab(t *testing.T) {
	dir := t.TempDir()
	if _, err := Dial(dir); !errors.Is(err, ErrNoLab) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Dial on an empty dir: %v", err)
	}
	// A socket that nothing serves (a lab that was killed).
	ln, err := net.Listen("unix", filepath.Join(dir, ControlSocket))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Call(ctx, "writes", struct{}{}, nil); !errors.Is(err, ErrNoLab) {
		t.Errorf("Call on a dead socket: %v", err)
	}
	// A new lab replaces the dead socket.
	s := NewServer(&fakeController{})
	if err := s.Listen(dir); err != nil {
		t.Fatalf("listen over a dead socket: %v", err)
	}
	s.Close()
}

// postRaw sends body as is to command name of the lab serving in dir, and
// returns the status and the answer: what a client other than ours may
// send.
func postRaw(t *testing.T, dir, name, body string) (int, string) {
	t.Helper()
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", filepath.Join(dir, ControlSocket))
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post("http://lab/v1/"+name, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", name, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", name, err)
	}
	return resp.StatusCode, string(answer)
}

// TestControlServerRefusesMalformedRequests: a request with an unknown
// field, a second value after its object, broken JSON or a body past the
// limit is refused with a clear error, for every command, and nothing is
// applied; the server answers a good request afterwards.
func TestControlServerRefusesMalformedRequests(t *testing.T) {
	fc := &fakeController{}
	_, dir := serve(t, fc)
	for _, c := range []struct {
		name, cmd, body string
		status          int
		want            string
	}{
		{"unknown field", "link", `{"a":"p0-t0-0","b":"p0-t1-0","speed":1}`, http.StatusUnprocessableEntity, `unknown field \"speed\"`},
		{"unknown field of writes", "writes", `{"device":"p0-t0-0"}`, http.StatusUnprocessableEntity, `unknown field \"device\"`},
		{"not an object for writes", "writes", `[1]`, http.StatusUnprocessableEntity, "bad request"},
		{"two values", "link", `{"a":"p0-t0-0","b":"p0-t1-0"} {"up":true}`, http.StatusUnprocessableEntity, "after the request"},
		{"trailing garbage", "loss", `{"a":"p0-t0-0","b":"p0-t1-0","percent":1}x`, http.StatusUnprocessableEntity, "after the request"},
		{"broken JSON", "throttle", `{"device":"p0-t0-0",`, http.StatusUnprocessableEntity, "bad request"},
		{"wrong type", "throttle", `{"device":"p0-t0-0","pps":"fast"}`, http.StatusUnprocessableEntity, "bad request"},
		{"too large", "link", `{"a":"` + strings.Repeat("x", MaxRequestBytes) + `"}`, http.StatusRequestEntityTooLarge, "more than 1048576 bytes"},
	} {
		status, answer := postRaw(t, dir, c.cmd, c.body)
		if status != c.status || !strings.Contains(answer, c.want) {
			t.Errorf("%s: %d %s, want %d and %q", c.name, status, answer, c.status, c.want)
		}
	}
	if len(fc.calls) != 0 {
		t.Errorf("refused requests applied: %q", fc.calls)
	}
	if status, answer := postRaw(t, dir, "link", `{"a":"p0-t0-0","b":"p0-t1-0","up":true}`); status != http.StatusOK {
		t.Errorf("a good request after the bad ones: %d %s", status, answer)
	}
	if status, answer := postRaw(t, dir, "writes", ``); status != http.StatusOK {
		t.Errorf("writes with no body: %d %s", status, answer)
	}
}
