package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/bmv2"
)

func TestLabStatus(t *testing.T) {
	// One device whose process runs (a sleep carrying the lab's marker) and
	// one whose process is gone.
	const id = "lab-status-test"
	sleep := exec.Command("sleep", "60")
	sleep.Env = append(os.Environ(), bmv2.EnvMarker+"="+id)
	if err := sleep.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	dir := t.TempDir()
	state := map[string]any{"id": id, "build": "build/tiny", "targets": filepath.Join(dir, "targets.yaml"), "devices": []map[string]any{
		{"name": "p0-t0-0", "pid": sleep.Process.Pid, "grpc": "127.0.0.1:50001", "dataplane": "127.0.0.1:50101", "thrift_port": 9091, "log": filepath.Join(dir, "p0-t0-0.log")},
		{"name": "p0-t0-1", "pid": gone.Process.Pid, "grpc": "127.0.0.1:50002", "dataplane": "127.0.0.1:50102", "thrift_port": 9092, "log": filepath.Join(dir, "p0-t0-1.log")},
	}}
	data, _ := json.Marshal(state)
	if err := os.WriteFile(filepath.Join(dir, "lab.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := mrcgen(t, "lab", "status", "--dir", dir, "-o", "json")
	if code == 0 || !strings.Contains(errOut, "1 of 2 lab devices are down") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
	var s labStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	want := labStatus{ID: id, Build: "build/tiny", Targets: filepath.Join(dir, "targets.yaml"), Running: 1, Total: 2, Devices: []labDeviceStatus{
		{Name: "p0-t0-0", PID: sleep.Process.Pid, Up: true, P4Runtime: "127.0.0.1:50001", Dataplane: "127.0.0.1:50101", ThriftPort: 9091, Log: filepath.Join(dir, "p0-t0-0.log")},
		{Name: "p0-t0-1", PID: gone.Process.Pid, Up: false, P4Runtime: "127.0.0.1:50002", Dataplane: "127.0.0.1:50102", ThriftPort: 9092, Log: filepath.Join(dir, "p0-t0-1.log")},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("status:\n%+v\nwant\n%+v", s, want)
	}

	code, out, _ = mrcgen(t, "lab", "status", "--dir", dir)
	for _, w := range []string{"p0-t0-0", "127.0.0.1:50101", "9091", "up", "DOWN (see p0-t0-1.log)", "1 of 2 devices up"} {
		if code == 0 || !strings.Contains(out, w) {
			t.Errorf("table: exit %d, no %q in\n%s", code, w, out)
		}
	}
}
