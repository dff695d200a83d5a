package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/labtransfer"
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

func (f *oneLink) SetLoss(a, b string, p float64) error {
	if _, ok := f.Port(a, b); !ok {
		return fmt.Errorf("lab: %s and %s are not linked", a, b)
	}
	f.calls = append(f.calls, fmt.Sprintf("loss %s %s %g", a, b, p))
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
		{[]string{"lab", "loss", "p0-t0-0:p0-t1-0", "101%"}, `"101%" is not a percentage`},
		{[]string{"lab", "transfer", "--size", "lots"}, `size "lots"`},
		{[]string{"lab", "transfer", "--mode", "tcp"}, `mode "tcp": want mrc or roce`},
		{[]string{"lab", "transfer", "--cut", "p0-t0-0:p0-t1-0"}, `want SW:NEIGHBOUR@30%`},
		{[]string{"lab", "transfer", "--flap", "p0-t0-0:p0-t1-0@60%,30%"}, `fractions must increase`},
		{[]string{"lab", "transfer", "--throttle", "p0-t1-0/1:0"}, `not a rate`},
		{[]string{"lab", "transfer", "--loss", "p0-t0-0:1%"}, `is not A:B`},
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
	code, out, errOut = mrcgen(t, "lab", "loss", "p0-t1-0:p0-t0-0", "1.5%", "--dir", dir, "-o", "json")
	var lo lab.LossRequest
	if code != 0 || json.Unmarshal([]byte(out), &lo) != nil || lo != (lab.LossRequest{A: "p0-t1-0", B: "p0-t0-0", Percent: 1.5}) {
		t.Errorf("loss -o json: exit %d, %q %q", code, out, errOut)
	}
	want := "link p0-t0-0 p0-t1-0 false|link p0-t0-0 p0-t1-0 true|rate p0-t0-0 2 250|rate p0-t1-0 0 0|loss p0-t1-0 p0-t0-0 0.015"
	if got := strings.Join(fake.calls, "|"); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
}

// TestLabTransferVerb drives `lab transfer` against a control server whose
// transfer command is a fake: the flags become the request, progress goes to
// stderr, the result to a table or JSON.
func TestLabTransferVerb(t *testing.T) {
	dir := t.TempDir()
	srv := lab.NewServer(&oneLink{})
	var got labtransfer.Request
	srv.HandleStream("transfer", func(_ context.Context, raw json.RawMessage, progress func(any)) (any, error) {
		if err := json.Unmarshal(raw, &got); err != nil {
			return nil, err
		}
		progress(labtransfer.Progress{Sent: 77, Packets: 256, Event: "link down at 30%"})
		return labtransfer.Result{From: got.From, To: got.To, Mode: got.Mode, Bytes: int64(got.Size), Complete: true, Seconds: 0.5,
			Packets: 256, PacketsSent: 270, Retransmits: labtransfer.Retransmits{SACKGap: 14, Total: 14}, Match: true,
			SentSHA256: "ab", RecvSHA256: "ab"}, nil
	})
	if err := srv.Listen(dir); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	code, out, errOut := mrcgen(t, "lab", "transfer", "--dir", dir, "--from", "nic-1", "--to", "nic-2", "--size", "4MiB",
		"--cut", "p0-t0-0:p0-t1-0@30%", "--flap", "p0-t0-1:p0-t1-1@20%,40%,60%", "--throttle", "p0-t1-0/1:50", "--loss", "p0-t0-1:nic-3:1%", "--timeout", "5s")
	if code != 0 || !strings.Contains(out, "yes, in 0.500s") || !strings.Contains(out, "SACK gap 14") || !strings.Contains(out, "(matches)") ||
		!strings.Contains(errOut, "link down at 30% (77 of 256 packets sent") {
		t.Errorf("transfer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	want := labtransfer.Request{From: "nic-1", To: "nic-2", Size: 4 << 20, Mode: "mrc", LimitSeconds: 5,
		Links:     []labtransfer.LinkEvents{{A: "p0-t0-0", B: "p0-t1-0", At: []float64{0.3}}, {A: "p0-t0-1", B: "p0-t1-1", At: []float64{0.2, 0.4, 0.6}}},
		Throttles: []labtransfer.Throttle{{Device: "p0-t1-0", Port: 1, PPS: 50}},
		Losses:    []labtransfer.Loss{{A: "p0-t0-1", B: "nic-3", Percent: 1}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request %+v, want %+v", got, want)
	}
	code, out, errOut = mrcgen(t, "lab", "transfer", "--dir", dir, "--mode", "roce", "-o", "json")
	var res labtransfer.Result
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Complete || res.Mode != "roce" || res.Bytes != 256<<10 {
		t.Errorf("transfer -o json: exit %d, %q %q", code, out, errOut)
	}
}

// TestLabTransferSizeLimit: a size past labtransfer.MaxSize is refused by
// the command itself, naming the limit, before it dials the lab; the limit
// itself is accepted (the fake lab answers it).
func TestLabTransferSizeLimit(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []string{"17MiB", "16777217", "1GiB", "2GiB", "0", "-1", "many"} {
		code, out, errOut := mrcgen(t, "lab", "transfer", "--dir", dir, "--size", size)
		want := "at most 16 MiB"
		if size == "many" || size == "0" || size == "-1" {
			want = "above 0"
		}
		if code == 0 || out != "" || !strings.Contains(errOut, want) || strings.Contains(errOut, "no lab running") {
			t.Errorf("--size %s: exit %d, stdout %q, stderr %q; want a refusal with %q", size, code, out, errOut, want)
		}
	}
	srv := lab.NewServer(&oneLink{})
	var got labtransfer.Request
	srv.HandleStream("transfer", func(_ context.Context, raw json.RawMessage, _ func(any)) (any, error) {
		if err := json.Unmarshal(raw, &got); err != nil {
			return nil, err
		}
		return labtransfer.Result{Bytes: int64(got.Size), Complete: true, Match: true}, nil
	})
	if err := srv.Listen(dir); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	if code, _, errOut := mrcgen(t, "lab", "transfer", "--dir", dir, "--size", "16MiB"); code != 0 || got.Size != labtransfer.MaxSize {
		t.Errorf("--size 16MiB: exit %d, %q; request size %d", code, errOut, got.Size)
	}
}
