package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSimCommand runs `mrcgen sim` on tiny, built and from the preset: the
// table, JSON equal to the built run's apart from the wall-clock figures,
// and to a run of the cut on two workers, the pictures, and runs on every
// core.
func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	build := filepath.Join(dir, "build")
	if code, _, errOut := mrcgen(t, "build", "-p", "tiny", "-d", build); code != 0 {
		t.Fatalf("build: %s", errOut)
	}
	args := []string{"sim", "--bytes", "256KiB", "--cut", "p0-t0-0:p0-t1-1@5us", "--seed", "3"}
	code, out, errOut := mrcgen(t, append(args, "-p", "tiny", "--svg", filepath.Join(dir, "svg"))...)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"sim tiny: mrc (dctcp), permutation of 4 hosts, 256KiB each, seed 3", "4 of 4 complete",
		"cut p0-t0-0:p0-t1-1@5µs", "packet hops"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, name := range []string{"fct-cdf.svg", "goodput.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, "svg", name))
		if err != nil || !strings.Contains(string(b), "<polyline") {
			t.Errorf("%s: %v, %d bytes", name, err, len(b))
		}
	}
	results := map[string]map[string]any{}
	for _, src := range [][]string{{"-p", "tiny"}, {"--build", build}, {"-p", "tiny", "--workers", "2"}} {
		code, out, errOut := mrcgen(t, append(append(args, src...), "-o", "json")...)
		if code != 0 {
			t.Fatalf("sim %v -o json: %s", src, errOut)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		delete(r, "run")
		b, _ := json.Marshal(r)
		results[string(b)] = r
		if r["completed"].(float64) != 4 || len(r["faults"].([]any)) != 1 {
			t.Errorf("%v: %v", src, out)
		}
	}
	if len(results) != 1 {
		t.Errorf("the build's tables, the generated ones and two workers gave %d different runs", len(results))
	}
	code, out, errOut = mrcgen(t, "sim", "-p", "tiny", "--bytes", "64KiB", "--runs", "3", "-o", "json")
	var many []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &many) != nil || len(many) != 3 || many[2]["seed"].(float64) != 3 {
		t.Errorf("--runs 3: exit %d, %s %s", code, out, errOut)
	}
}

// TestSimPFC: --pfc gives lossless RoCE on small's incast (pauses, no
// tail drop), its line in the table and its figures in the JSON; a run
// without it has neither.
func TestSimPFC(t *testing.T) {
	args := []string{"sim", "-p", "small", "-w", "incast", "--bytes", "256KiB", "--transport", "roce"}
	code, out, errOut := mrcgen(t, append(args, "--pfc")...)
	if code != 0 {
		t.Fatalf("sim --pfc: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"31 of 31 complete", "drops       tail 0", "PFC", "(XOFF 252936, XON 244392)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	code, out, errOut = mrcgen(t, append(args, "--pfc", "--pfc-xoff", "200000", "--pfc-xon", "150KiB", "-o", "json")...)
	var r struct {
		Drops struct {
			TailDrop int64 `json:"tail_drop"`
		} `json:"drops"`
		PFC *struct {
			XOFF   int64 `json:"xoff_bytes"`
			XON    int64 `json:"xon_bytes"`
			Pauses int64 `json:"pause_frames"`
		} `json:"pfc"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.PFC == nil {
		t.Fatalf("sim --pfc -o json: exit %d, %s %s", code, out, errOut)
	}
	if r.Drops.TailDrop != 0 || r.PFC.Pauses == 0 || r.PFC.XOFF != 200000 || r.PFC.XON != 150<<10 {
		t.Errorf("--pfc --pfc-xoff 200000 --pfc-xon 150KiB: %d tail drops, PFC %+v", r.Drops.TailDrop, *r.PFC)
	}
	code, out, errOut = mrcgen(t, append(args, "-o", "json")...)
	if code != 0 || strings.Contains(out, `"pfc"`) {
		t.Errorf("sim without --pfc: exit %d, a pfc figure in its JSON: %s", code, errOut)
	}
	if code, out, _ = mrcgen(t, args...); code != 0 || strings.Contains(out, "PFC") {
		t.Errorf("sim without --pfc: exit %d, a PFC line in its table:\n%s", code, out)
	}
}

// TestSimBadInput: every problem is named, the exit is non-zero, nothing is
// written.
func TestSimBadInput(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "svg")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--cut", "p0-t0-0:p0-t1-9@5us"}, []string{"p0-t0-0 and p0-t1-9 are not neighbours"}},
		{[]string{"--cut", "p0-t0-0:p0-t1-1"}, []string{"no @TIME"}},
		{[]string{"--flap", "p0-t0-0:p0-t1-1@5us,period=10us"}, []string{"a flap needs period= and duty="}},
		{[]string{"--loss", "p0-t0-0:p0-t1-1:150%"}, []string{"is not a percentage"}},
		{[]string{"--bytes", "lots", "--transport", "tcp"}, []string{"--bytes", "transport \"tcp\""}},
		{[]string{"--workload", "ring"}, []string{"--workload \"ring\""}},
		{[]string{"--hosts", "9"}, []string{"9 hosts: the fabric has 4"}},
		{[]string{"--switch-down", "p7-t1-0@1us"}, []string{"no switch \"p7-t1-0\""}},
		{[]string{"--pfc", "--pfc-xoff", "1MiB"}, []string{"--pfc-xoff 1MiB (1048576 bytes): leaves", "want at most"}},
		{[]string{"--pfc", "--pfc-xoff", "64KiB", "--pfc-xon", "64KiB"}, []string{"--pfc-xon 64KiB (65536 bytes): want below XOFF (65536 bytes)"}},
		{[]string{"--pfc", "--pfc-xon", "lots"}, []string{"--pfc-xon: size \"lots\""}},
		{[]string{"--pfc-xoff", "64KiB"}, []string{"give --pfc too"}},
		{[]string{"--loss", "p0-t0-0:p0-t1-1:NaN%"}, []string{`--loss "p0-t0-0:p0-t1-1:NaN%": "NaN%" is not a percentage: want 0% to 100%`}},
		{[]string{"--loss", "p0-t0-0:p0-t1-1:-Inf%"}, []string{`--loss "p0-t0-0:p0-t1-1:-Inf%": "-Inf%" is not a percentage`}},
		{[]string{"--rate", "p0-t0-0:p0-t1-1:0.00001%"}, []string{`--rate "p0-t0-0:p0-t1-1:0.00001%": "0.00001%": a rate is kept to 0.0001% of the link's speed: want 0.0001% to 100%`}},
		{[]string{"--rate", "p0-t0-0:p0-t1-1:0%"}, []string{`--rate "p0-t0-0:p0-t1-1:0%": "0%"`, "want 0.0001% to 100%"}},
		{[]string{"--flap", "p0-t0-0:p0-t1-1@5us,period=10us,duty=NaN%"}, []string{`--flap "p0-t0-0:p0-t1-1@5us,period=10us,duty=NaN%": duty "NaN%"`}},
		{[]string{"--flap", "p0-t0-0:p0-t1-1@5us,period=10ns,duty=50%"}, []string{`--flap "p0-t0-0:p0-t1-1@5us,period=10ns,duty=50%": a down spell of 5ns`}},
		{[]string{"--cut", "p0-t0-0:p0-t1-9@5us"}, []string{`--cut "p0-t0-0:p0-t1-9@5us": p0-t0-0 and p0-t1-9 are not neighbours`}},
		{[]string{"--cut", "p0-t0-0:p0-t1-1@3000h"}, []string{`--cut "p0-t0-0:p0-t1-1@3000h": "3000h" is beyond 24h0m0s`}},
		{[]string{"--limit", "-1s"}, []string{"--limit -1s: want a simulated time above 0 and at most 24h0m0s"}},
		{[]string{"--limit", "0s"}, []string{"--limit 0s: want a simulated time above 0"}},
		{[]string{"--limit", "1000h"}, []string{"--limit 1000h0m0s: want a simulated time above 0 and at most 24h0m0s"}},
		{[]string{"--convergence", "-1s"}, []string{"--convergence -1s: want a simulated time above 0"}},
		{[]string{"--start", "-1us"}, []string{`--start: "-1us" is not a time`}},
		{[]string{"--segment", "0"}, []string{"--segment 0: want 1 to 9000 payload bytes a packet"}},
		{[]string{"--segment", "9001", "--pfc"}, []string{"--segment 9001: want 1 to 9000"}},
		{[]string{"--window", "257"}, []string{"--window 257: want 1 to 256 packets (the NIC's receive window, nic.window_packets; 0: the fabric's send window, 64)"}},
		{[]string{"--window", "-1"}, []string{"--window -1: want 1 to 256"}},
		{[]string{"--qps", "-1"}, []string{"--qps -1: want 1 to 256 QPs per host pair"}},
		{[]string{"--qps", "300"}, []string{"--qps 300: want 1 to 256"}},
		{[]string{"--transport", "tcp"}, []string{`--transport "tcp": want mrc or roce`}},
		{[]string{"--qps", "2", "--transport", "roce"}, []string{"--qps 2: RoCE opens --roce-qps QPs per plane and host pair: --qps is MRC's"}},
		{[]string{"--roce-qps", "-1", "--transport", "roce"}, []string{"--roce-qps -1: want 1 to 128 QPs per plane and host pair, what a NIC holds over 2 planes (0: the default, 1)"}},
		{[]string{"--roce-qps", "129", "--transport", "roce"}, []string{"--roce-qps 129: want 1 to 128"}},
		{[]string{"--roce-qps", "2"}, []string{"--roce-qps 2: RoCE's (--transport roce); MRC's is --qps"}},
		{[]string{"--local-repair", "-1ms"}, []string{"--local-repair -1ms: want a simulated time above 0"}},
		{[]string{"--local-repair", "0s"}, []string{"--local-repair 0s: want a simulated time above 0"}},
		{[]string{"--delay-cc", "--transport", "roce"}, []string{"--delay-cc is MRC's: RoCE runs DCQCN"}},
		{[]string{"--delay-cc", "--no-cc"}, []string{"--delay-cc and --no-cc: give one or the other"}},
		{[]string{"--compare", "tcp,roce+ecn"}, []string{`--compare "tcp,roce+ecn": "tcp" is not a transport: want mrc, mrc+pfc, roce or roce+pfc; "roce+ecn" is not a transport`}},
		{[]string{"--compare", "roce,"}, []string{`--compare "roce,": "" is not a transport`}},
		{[]string{"--compare", "mrc"}, []string{`--compare "mrc": mrc: --transport and --pfc already run it`}},
		{[]string{"--compare", "roce+pfc,roce+pfc"}, []string{`--compare "roce+pfc,roce+pfc": roce+pfc: listed twice`}},
		{[]string{"--transport", "roce", "--compare", "roce+pfc", "--qps", "2"}, []string{"--qps 2: RoCE opens --roce-qps QPs per plane and host pair: --qps is MRC's"}},
		{[]string{"--compare", "roce", "--pfc-xoff", "64KiB"}, []string{"give --pfc too (or compare with a +pfc transport)"}},
		{[]string{"--roce-ecn", "kmin=2MB"}, []string{"--roce-ecn kmin=2MB: kmax 1500000 bytes: want above kmin (2000000 bytes)"}},
		{[]string{"--roce-ecn", "kmax=100KB,pmax=0%"}, []string{"--roce-ecn kmax=100KB,pmax=0%: kmax 100000 bytes: want above kmin (150000 bytes)", "pmax 0: want above 0 and at most 1 (100%)"}},
		{[]string{"--roce-ecn", "pmax=150%"}, []string{"--roce-ecn pmax=150%: pmax 1.5: want above 0 and at most 1 (100%)"}},
		{[]string{"--roce-ecn", "pmax=NaN"}, []string{"--roce-ecn pmax=NaN: pmax NaN: want above 0"}},
		{[]string{"--roce-ecn", "kmin=lots"}, []string{`--roce-ecn kmin=lots: kmin: size "lots"`}},
		{[]string{"--roce-ecn", "kmin=1KB,kmin=2KB"}, []string{"--roce-ecn kmin=1KB,kmin=2KB: kmin given twice"}},
		{[]string{"--roce-ecn", "k=1"}, []string{`--roce-ecn k=1: unknown key "k": want kmin, kmax or pmax`}},
		{[]string{"--roce-ecn", "kmin"}, []string{`--roce-ecn kmin: "kmin": want key=value`}},
		{[]string{"--switch-buffer", "lots"}, []string{`--switch-buffer lots: want BYTES, default or queue: size "lots"`}},
		{[]string{"--switch-buffer", "1000"}, []string{"--switch-buffer 1000: switch buffer 1000 bytes: want at least one of the run's largest frames (4272 bytes)"}},
		{[]string{"--buffer-alpha", "0"}, []string{"--buffer-alpha: buffer alpha 0: want above 0 and at most 64"}},
		{[]string{"--buffer-alpha", "NaN"}, []string{"--buffer-alpha: buffer alpha NaN: want above 0"}},
		{[]string{"--switch-buffer", "queue", "--buffer-alpha", "2"}, []string{"--buffer-alpha 2: --switch-buffer queue has no dynamic threshold"}},
		{[]string{"--pfc", "--switch-buffer", "1MiB"}, []string{"--switch-buffer and --buffer-alpha bound the lossy runs' data: with --pfc the data class is lossless"}},
		{[]string{"--pfc", "--compare", "roce+pfc", "--buffer-alpha", "2"}, []string{"--switch-buffer and --buffer-alpha bound the lossy runs' data"}},
	} {
		code, _, errOut := mrcgen(t, append([]string{"sim", "-p", "tiny", "--svg", svg}, tc.args...)...)
		if code == 0 {
			t.Errorf("%v: exit 0", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: error %q does not say %q", tc.args, errOut, w)
			}
		}
	}
	if _, err := os.Stat(svg); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote %s", svg)
	}
}

// TestSimPortSpeeds: a fabric whose port speed does not divide 8000 ps a
// byte runs, with --pfc too; at 9,000 Gb/s --pfc's headroom (two link
// delays' bytes) does not fit tiny's buffer, which is an error naming the
// flag, where 8000 / 9000 in integers divided by zero.
func TestSimPortSpeeds(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		gbps int
		want string // in the error; "" for none
	}{
		{300, ""},
		{9000, "--pfc: an ingress port's buffer"},
	} {
		file := filepath.Join(dir, fmt.Sprintf("f%d.yaml", tc.gbps))
		spec := fmt.Sprintf("base: tiny\nnic: {speed_gbps: %d}\nswitch: {port_speed_gbps: %d}\n", 2*tc.gbps, tc.gbps)
		if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := mrcgen(t, "sim", "-f", file, "--pfc", "--bytes", "64KiB")
		switch {
		case tc.want == "" && code != 0:
			t.Errorf("%d Gb/s --pfc: exit %d: %s", tc.gbps, code, errOut)
		case tc.want != "" && (code == 0 || !strings.Contains(errOut, tc.want)):
			t.Errorf("%d Gb/s --pfc: exit %d, %q; want an error saying %q", tc.gbps, code, errOut, tc.want)
		}
	}
}

// TestSimTooManyPeers: a workload that has a host open more QPs than its
// NIC holds is refused before its flows are drawn, with the flags to
// change: an all-to-all of mrc-131k's hosts would have allocated 824 GB of
// flows first. The check allocates next to nothing.
func TestSimTooManyPeers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "mrc-1k", "-w", "all-to-all"}, "--workload all-to-all: each of the 1024 hosts has a QP with each of the 1023 others (1 per host pair, --qps), 1023 QPs, and a NIC holds 256: take --hosts 257 or fewer"},
		{[]string{"-p", "mrc-1k", "-w", "alltoall-collective", "--hosts", "64", "--transport", "roce"}, "(8 per host pair: --roce-qps 1 on each of 8 planes), 504 QPs, and a NIC holds 256: take --hosts 33 or fewer"},
		{[]string{"-p", "small", "-w", "all-to-all", "--transport", "roce", "--roce-qps", "3"}, "(12 per host pair: --roce-qps 3 on each of 4 planes), 372 QPs, and a NIC holds 256: take --hosts 22 or fewer, or fewer --roce-qps"},
		{[]string{"-p", "small", "-w", "all-to-all", "--qps", "9"}, "279 QPs, and a NIC holds 256: take --hosts 29 or fewer, or fewer --qps"},
		{[]string{"-p", "mrc-1k", "-w", "incast", "--hosts", "300"}, "--workload incast: the receiver has a QP with each of the 299 others"},
		{[]string{"-p", "mrc-131k", "-w", "all-to-all"}, "take --hosts 257 or fewer"},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		code, _, errOut := mrcgen(t, append([]string{"sim"}, tc.args...)...)
		runtime.ReadMemStats(&after)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want an error saying %q", tc.args, code, errOut, tc.want)
		}
		if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 32 {
			t.Errorf("%v: allocated %d MiB before refusing", tc.args, mb)
		}
	}
}

// TestSimSwitchBufferFlags: --switch-buffer and --buffer-alpha go to the
// lossy runs of a comparison, which report the buffers they used; the
// +pfc runs have none; queue is the per-port limit; without the flags a
// small T0 and T1 have 8 ports of 200 Gb/s at a Tomahawk 5's 165.2 MB per
// 51.2 Tb/s: 5,162,500 bytes.
func TestSimSwitchBufferFlags(t *testing.T) {
	type buffers map[string]*struct {
		T0      int64   `json:"t0_bytes"`
		T1      int64   `json:"t1_bytes"`
		Alpha   float64 `json:"alpha"`
		PerPort bool    `json:"per_port_queue"`
	}
	read := func(args ...string) buffers {
		t.Helper()
		code, out, errOut := mrcgen(t, append([]string{"sim", "--bytes", "64KiB", "--transport", "roce", "--compare", "mrc,roce+pfc", "-o", "json"}, args...)...)
		var got map[string]struct {
			Buffer *struct {
				T0      int64   `json:"t0_bytes"`
				T1      int64   `json:"t1_bytes"`
				Alpha   float64 `json:"alpha"`
				PerPort bool    `json:"per_port_queue"`
			} `json:"switch_buffer"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 3 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errOut)
		}
		b := buffers{}
		for k, v := range got {
			b[k] = v.Buffer
		}
		return b
	}
	for _, tc := range []struct {
		args    []string
		t0, t1  int64
		alpha   float64
		perPort bool
	}{
		{[]string{"-p", "small", "--hosts", "4"}, 5_162_500, 5_162_500, 1, false},
		{[]string{"-p", "tiny", "--switch-buffer", "1MiB", "--buffer-alpha", "0.5"}, 1 << 20, 1 << 20, 0.5, false},
		{[]string{"-p", "tiny", "--switch-buffer", "queue"}, 0, 0, 0, true},
	} {
		b := read(tc.args...)
		for _, k := range []string{"roce", "mrc"} {
			if r := b[k]; r == nil || r.T0 != tc.t0 || r.T1 != tc.t1 || r.Alpha != tc.alpha || r.PerPort != tc.perPort {
				t.Errorf("%v: %s's buffer %+v, want T0 %d, T1 %d, alpha %g, per port %v", tc.args, k, r, tc.t0, tc.t1, tc.alpha, tc.perPort)
			}
		}
		if b["roce+pfc"] != nil {
			t.Errorf("%v: roce+pfc reports a switch buffer %+v", tc.args, b["roce+pfc"])
		}
	}
}

// TestRunsError: an interrupted run's own error, which says how far it got,
// wins over the context's bare "context canceled"; with no run error the
// context's is the command's.
func TestRunsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := fmt.Errorf("sim: stopped at 5µs simulated, 1000 events in: %w", ctx.Err())
	if err := runsError(ctx, []error{nil, stopped}); err == nil || !strings.Contains(err.Error(), "stopped at 5µs simulated") || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted run: %v", err)
	}
	if err := runsError(ctx, []error{nil, nil}); !errors.Is(err, context.Canceled) {
		t.Errorf("no run started: %v", err)
	}
	if err := runsError(context.Background(), []error{nil}); err != nil {
		t.Errorf("no error: %v", err)
	}
}

// TestSimCPUProfile: --cpu-profile writes a profile (gzip, as pprof
// writes) of a run that succeeds, leaves none for one that fails, and
// names itself when it cannot write.
func TestSimCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	if code, _, errOut := mrcgen(t, "sim", "-p", "tiny", "--bytes", "64KiB", "--cpu-profile", prof); code != 0 {
		t.Fatalf("sim: %s", errOut)
	}
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile: %v, %d bytes, want a gzip file", err, len(b))
	}
	// A run that fails stops its profile with keep false (runSim).
	failed := filepath.Join(dir, "failed.prof")
	stop, err := startCPUProfile(failed)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(failed); !os.IsNotExist(err) {
		t.Errorf("a failed run's profile %s is still there (%v)", failed, err)
	}
	if code, _, errOut := mrcgen(t, "sim", "-p", "tiny", "--cpu-profile", filepath.Join(dir, "no", "such", "dir", "p")); code == 0 || !strings.Contains(errOut, "--cpu-profile") {
		t.Errorf("an unwritable profile: exit %d, %q", code, errOut)
	}
}
