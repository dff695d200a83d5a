package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/lab"
)

// oneLink is a lab.Controller of one link, p0-t0-0 port 2 to p0-t1-0 port
// 0, recording what it is asked.
type oneLink struct{ calls []string }

func (f *oneLink) SetLink(_ context.Context, a, b string, up bool) error {
	if _, ok := f.Port(a, b); !ok {
		return fmt.Errorf("lab: %s and %s are not linked", a, b)
	}
	f.calls = append(f.calls, fmt.Sprintf("link %s %s %v", a, b, up))
	return nil
}

func (f *oneLink) SetQueueRate(_ context.Context, device string, port uint32, pps int) error {
	f.calls = append(f.calls, fmt.Sprintf("rate %s %d %d", device, port, pps))
	return nil
}

func (f *oneLink) Port(a, b string) (uint32, bool) {
	if a == "p0-t0-0" && b == "p0-t1-0" {
		return 2, true
	}
	if a == "p0-t1-0" && b == "p0-t0-0" {
		return 0, true
	}
	return 0, false
}

func (f *oneLink) Writes() map[string]uint64 { return map[string]uint64{"p0-t0-0": 1} }

func TestLabControlVerbsWithoutALab(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"lab", "link", "down", "p0-t0-0:p0-t1-0", "--dir", dir},
		{"lab", "throttle", "p0-t1-0/1", "100", "--dir", dir, "-o", "json"},
	} {
		code, out, errOut := mrcgen(t, args...)
		if code == 0 || !strings.Contains(errOut, "no lab running in "+dir) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lab", "link", "sideways", "a:b"}, `"sideways" is neither down nor up`},
		{[]string{"lab", "link", "down", "p0-t0-0"}, `"p0-t0-0" is not A:B`},
		{[]string{"lab", "link", "down", "a:b:c"}, `"a:b:c" is not A:B`},
		{[]string{"lab", "throttle", "p0-t1-0/x", "100"}, `port "x" of p0-t1-0 is not a number`},
		{[]string{"lab", "throttle", "p0-t1-0", "100"}, "neither SW/PORT nor SW:NEIGHBOUR"},
		{[]string{"lab", "throttle", "p0-t1-0/1", "fast"}, `rate "fast" is not a number`},
	} {
		code, _, errOut := mrcgen(t, append(c.args, "--dir", dir)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
	code, out, errOut := mrcgen(t, "lab", "down", "--dir", dir, "-o", "json")
	var d labDown
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d != (labDown{Dir: dir}) {
		t.Errorf("lab down -o json without a lab: exit %d, %q %q", code, out, errOut)
	}
}

func TestLabControlVerbs(t *testing.T) {
	dir := t.TempDir()
	fake := &oneLink{}
	srv := lab.NewServer(fake)
	if err := srv.Listen(dir); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()

	code, out, errOut := mrcgen(t, "lab", "link", "down", "p0-t0-0:p0-t1-0", "--dir", dir, "-o", "json")
	var lr lab.LinkRequest
	if code != 0 || json.Unmarshal([]byte(out), &lr) != nil || lr != (lab.LinkRequest{A: "p0-t0-0", B: "p0-t1-0"}) {
		t.Errorf("link down -o json: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = mrcgen(t, "lab", "link", "up", "p0-t0-0:p0-t1-0", "--dir", dir)
	if code != 0 || !strings.Contains(out, "p0-t0-0:p0-t1-0  up") {
		t.Errorf("link up: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = mrcgen(t, "lab", "link", "down", "p0-t0-0:nic-3", "--dir", dir)
	if code == 0 || !strings.Contains(errOut, "p0-t0-0 and nic-3 are not linked") {
		t.Errorf("link to a stranger: exit %d, %q", code, errOut)
	}
	code, out, errOut = mrcgen(t, "lab", "throttle", "p0-t0-0:p0-t1-0", "250", "--dir", dir, "-o", "json")
	var tr lab.ThrottleResult
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil || tr != (lab.ThrottleResult{Device: "p0-t0-0", Port: 2, PPS: 250}) {
		t.Errorf("throttle -o json: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = mrcgen(t, "lab", "throttle", "p0-t1-0/0", "0", "--dir", dir)
	if code != 0 || !strings.Contains(out, "p0-t1-0  0     unlimited") {
		t.Errorf("throttle restore: exit %d, %q %q", code, out, errOut)
	}
	want := "link p0-t0-0 p0-t1-0 false|link p0-t0-0 p0-t1-0 true|rate p0-t0-0 2 250|rate p0-t1-0 0 0"
	if got := strings.Join(fake.calls, "|"); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
}
