package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/bmv2"
)

const stateFile = "lab.json"

// State is what a lab leaves on disk so that another process (mrcgen lab
// status / down) can find it.
type State struct {
	ID      string        `json:"id"`
	Build   string        `json:"build"`
	Targets string        `json:"targets"`
	Devices []DeviceState `json:"devices"`
}

// DeviceState is one device of a lab on disk.
type DeviceState struct {
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	GRPC       string `json:"grpc"`
	Dataplane  string `json:"dataplane"`
	ThriftPort int    `json:"thrift_port"`
	Log        string `json:"log"`
}

func (l *Lab) writeState() error {
	st := State{ID: l.ID, Build: l.Build.Dir, Targets: filepath.Join(l.Dir, "targets.yaml")}
	for name, d := range l.Devices {
		st.Devices = append(st.Devices, DeviceState{Name: name, PID: d.Switch.PID, GRPC: d.Switch.GRPCAddr,
			Dataplane: d.Switch.DPAddr, ThriftPort: d.Switch.ThriftPort, Log: d.Switch.LogPath})
	}
	sort.Slice(st.Devices, func(i, j int) bool { return st.Devices[i].Name < st.Devices[j].Name })
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.Dir, stateFile), data, 0o644); err != nil {
		return fmt.Errorf("lab state: %w", err)
	}
	return nil
}

// ReadState reads the state a lab left in dir.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("no lab in %s: %w", dir, err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("lab state %s: %w", dir, err)
	}
	return &st, nil
}

// markedProcesses lists the processes whose environment carries the lab's
// marker: found from the live processes, not from our own records, so that
// teardown works after a crash.
func markedProcesses(labID string) []int {
	want := []byte(bmv2.EnvMarker + "=" + labID + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Alive reports, per device, whether its process still runs.
func (st *State) Alive() map[string]bool {
	live := map[int]bool{}
	for _, pid := range markedProcesses(st.ID) {
		live[pid] = true
	}
	out := map[string]bool{}
	for _, d := range st.Devices {
		out[d.Name] = live[d.PID]
	}
	return out
}

// Down stops every process of the lab in dir (found by marker), keeps going
// past failures and returns them joined, and removes the state file.
func Down(dir string) (stopped int, err error) {
	st, err := ReadState(dir)
	if err != nil {
		return 0, err
	}
	pids := markedProcesses(st.ID)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && len(markedProcesses(st.ID)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	var errs []error
	for _, pid := range markedProcesses(st.ID) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	if left := markedProcesses(st.ID); len(left) > 0 {
		time.Sleep(500 * time.Millisecond)
		if left = markedProcesses(st.ID); len(left) > 0 {
			errs = append(errs, fmt.Errorf("processes still running: %v", left))
		}
	}
	for _, f := range []string{stateFile, ControlSocket} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return len(pids), errors.Join(errs...)
}

// Leftovers lists the processes still running whose marker (bmv2.EnvMarker)
// starts with idPrefix: tests give their labs ids with a prefix of their own
// and check, when they end, that none of theirs is left, whatever labs of
// other people (mrcgen lab up) run on the machine. An empty prefix matches
// every lab.
func Leftovers(idPrefix string) []int {
	want := []byte(bmv2.EnvMarker + "=" + idPrefix)
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
