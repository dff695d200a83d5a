package labtransfer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/lab/labtest"
)

// TestRequestOptionsRefuses: what a request says on its own is checked
// before the lab is touched, the size against MaxSize first of all.
func TestRequestOptionsRefuses(t *testing.T) {
	ok := Request{From: "nic-0", To: "nic-3", Size: 4096}
	for _, c := range []struct {
		name string
		edit func(*Request)
		want string // "" : accepted
	}{
		{"good", func(*Request) {}, ""},
		{"at the limit", func(q *Request) { q.Size = MaxSize }, ""},
		{"above the limit", func(q *Request) { q.Size = MaxSize + 1 }, "at most 16 MiB"},
		{"a terabyte", func(q *Request) { q.Size = 1 << 40 }, "at most 16 MiB"},
		{"zero", func(q *Request) { q.Size = 0 }, "above 0"},
		{"negative", func(q *Request) { q.Size = -1 }, "above 0"},
		{"too many packets", func(q *Request) { q.Size, q.Segment = MaxSize, 1 }, "packets"},
		{"negative segment", func(q *Request) { q.Segment = -5 }, "segment"},
		{"same NIC", func(q *Request) { q.To = q.From }, "same NIC"},
		{"mode", func(q *Request) { q.Mode = "tcp" }, "want mrc or roce"},
		{"negative limit", func(q *Request) { q.LimitSeconds = -1 }, "negative"},
		{"fractions", func(q *Request) { q.Links = []LinkEvents{{A: "a", B: "b", At: []float64{0.6, 0.3}}} }, "not increasing"},
		{"throttle", func(q *Request) { q.Throttles = []Throttle{{Device: "p0-t1-0", PPS: 0}} }, "rate 0"},
		{"loss", func(q *Request) { q.Losses = []Loss{{A: "a", B: "b", Percent: 200}} }, "200%"},
	} {
		q := ok
		c.edit(&q)
		_, err := q.Options()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// noLab is a lab.Controller for a control server whose transfer command is
// never to reach a lab.
type noLab struct{}

func (noLab) SetLink(context.Context, string, string, bool) error     { return fmt.Errorf("no lab") }
func (noLab) SetQueueRate(context.Context, string, uint32, int) error { return fmt.Errorf("no lab") }
func (noLab) SetLoss(string, string, float64) error                   { return fmt.Errorf("no lab") }
func (noLab) Port(string, string) (uint32, bool)                      { return 0, false }
func (noLab) Writes() map[string]uint64                               { return nil }

// TestHandlerRefusesBadRequests sends the transfer command, as `mrcgen lab
// up` serves it, requests that are malformed, oversized or name unknown
// fields: each is answered with an error saying why, before the runner
// takes anything of the lab (it has none here: a request that got that far
// would panic the handler, which the client would see as a broken answer).
func TestHandlerRefusesBadRequests(t *testing.T) {
	srv := lab.NewServer(noLab{})
	srv.HandleStream("transfer", NewRunner(nil).Handler())
	dir, hc := labtest.Serve(t, srv)
	for _, c := range []struct{ name, body, want string }{
		{"unknown field", `{"from":"nic-0","to":"nic-3","size":4096,"sise":4096}`, `unknown field \"sise\"`},
		{"unknown nested field", `{"from":"nic-0","to":"nic-3","size":4096,"links":[{"a":"x","b":"y","at":[0.3],"when":1}]}`, `unknown field \"when\"`},
		{"oversized", fmt.Sprintf(`{"from":"nic-0","to":"nic-3","size":%d}`, MaxSize+1), "at most 16 MiB"},
		{"a terabyte", `{"from":"nic-0","to":"nic-3","size":1099511627776}`, "at most 16 MiB"},
		{"beyond int", `{"from":"nic-0","to":"nic-3","size":1e30}`, "bad request"},
		{"broken JSON", `{"from":"nic-0","to":`, "bad request"},
		{"two values", `{"from":"nic-0","to":"nic-3","size":4096}{}`, "after the request"},
		{"no size", `{"from":"nic-0","to":"nic-3"}`, "above 0"},
	} {
		resp, err := hc.Post("http://lab/v1/transfer", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(answer), c.want) {
			t.Errorf("%s: %d %s (%v), want %d and %q", c.name, resp.StatusCode, answer, err, http.StatusUnprocessableEntity, c.want)
		}
	}
	// The client lab transfer uses, streamed: the same refusal.
	cl, err := lab.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = cl.Stream(t.Context(), "transfer", Request{From: "nic-0", To: "nic-3", Size: 1 << 30}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "at most 16 MiB") {
		t.Errorf("streamed oversized request: %v", err)
	}
}
