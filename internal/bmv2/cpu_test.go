package bmv2

import (
	"os"
	"testing"
	"time"
)

func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the kernel's count moves: at least one tick.
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		after, err := ProcessCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			if after-before < time.Second/clockTicks {
				t.Fatalf("cpu moved by %v, less than a tick", after-before)
			}
			return
		}
	}
	t.Fatalf("cpu time stayed %v over 5 s of work (%d)", before, x)
}

func TestProcessCPUNoProcess(t *testing.T) {
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
