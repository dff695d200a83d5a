package lab

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/internal/bmv2"
)

// startMarked starts a process that sleeps, with the lab marker set to id,
// and stops it when the test ends.
func startMarked(t *testing.T, id string) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), bmv2.EnvMarker+"="+id)
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// TestLeftoversOnlyOwnLabs: the leftover check of a test run sees only the
// processes of the labs it started (their ids share its prefix), not a lab a
// user runs at the same time.
func TestLeftoversOnlyOwnLabs(t *testing.T) {
	prefix := "leftovers-test-" + newID() + "-"
	mine := startMarked(t, prefix+"tiny")
	theirs := startMarked(t, newID())
	// /proc/PID/environ is readable once exec has happened.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if all := Leftovers(""); slices.Contains(all, mine) && slices.Contains(all, theirs) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := Leftovers(prefix)
	if !slices.Contains(got, mine) {
		t.Errorf("Leftovers(%q) = %v, misses the test's own process %d", prefix, got, mine)
	}
	if slices.Contains(got, theirs) {
		t.Errorf("Leftovers(%q) = %v, includes another lab's process %d", prefix, got, theirs)
	}
	if all := Leftovers(""); !slices.Contains(all, mine) || !slices.Contains(all, theirs) {
		t.Errorf(`Leftovers("") = %v, want both %d and %d`, all, mine, theirs)
	}
}
