package bmv2tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/bmv2"
	"github.com/mrc-fabric/mrcgen/internal/lab"
)

// TestLabStartupSmall brings the small fabric (48 switches and 32 NICs:
// 80 BMv2 processes) up, sends one packet per plane across it, and reports
// the start-up time. It is opt-in (MRCGEN_LAB_SMALL=1): it needs several
// GiB of memory and a minute of CPU.
func TestLabStartupSmall(t *testing.T) {
	if os.Getenv("MRCGEN_LAB_SMALL") != "1" {
		t.Skip("skipping: set MRCGEN_LAB_SMALL=1 to start the 80-process small lab")
	}
	needLab(t) // same tool checks as the tiny lab
	tools, _ := bmv2.FindTools()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f, err := fabric.FromPreset("small")
	if err != nil {
		t.Fatal(err)
	}
	buildDir := filepath.Join(dir, "build")
	if _, err := artifacts.Write(ctx, f, buildDir, artifacts.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.Open(buildDir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l, err := lab.Up(ctx, b, lab.Options{Dir: filepath.Join(dir, "lab"), Tools: tools, CaptureHostFrames: true, ID: labIDPrefix + "small"})
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the other cleanups (they talk to
	// the lab's switches).
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Logf("small lab: %d devices up and pushed in %v", len(l.Devices), time.Since(start).Round(time.Millisecond))

	fl := newFlow(l, plan.Host{Row: 0, Port: 0}, plan.Host{Row: f.T0Count - 1, Port: f.T0Down - 1}, 0x000505)
	openQPs(t, control(t, l, fl.src), control(t, l, fl.dst), fl, 0)
	fl.send(t, 0, uint32(f.Planes), 0, nil)
	if _, err := l.WaitHostFrames(ctxFor(t, 30*time.Second), fl.dst, f.Planes); err != nil {
		t.Fatal(err)
	}
}

// TestLabStartsAgainWhenASwitchDies kills one switch process of a lab
// being started, once all are running and before the push, as BMv2's
// P4Runtime server now and then kills itself during the push (a segfault
// in libpip4info inside SetForwardingPipelineConfig). The lab must see the
// dead process, keep its log, start everything again once, and come up.
func TestLabStartsAgainWhenASwitchDies(t *testing.T) {
	shared := needLab(t)
	tools, _ := bmv2.FindTools()
	id := labIDPrefix + "crash"
	var killed atomic.Int64
	progress := func(stage string, done, total int) {
		if stage != "start switches" || done != total || killed.Load() != 0 {
			return
		}
		pids := lab.Leftovers(id)
		if len(pids) == 0 {
			t.Errorf("no process of lab %s found to kill", id)
			return
		}
		if err := syscall.Kill(pids[0], syscall.SIGSEGV); err != nil {
			t.Errorf("kill %d: %v", pids[0], err)
			return
		}
		killed.Store(int64(pids[0]))
	}
	dir := t.TempDir()
	l, err := lab.Up(ctxFor(t, 3*time.Minute), shared.Build, lab.Options{Dir: dir, Tools: tools, ID: id, Progress: progress})
	if err != nil {
		t.Fatalf("lab with one switch killed during start-up: %v", err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if killed.Load() == 0 {
		t.Fatal("no switch was killed: the test proves nothing")
	}
	if len(l.Crashes) != 1 || !strings.Contains(l.Crashes[0], "switch process died") {
		t.Fatalf("crashes recorded: %q; want the one killed start", l.Crashes)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "*.log.crashed"))
	if len(kept) != 1 {
		t.Errorf("crashed logs kept: %v; want the killed switch's", kept)
	}
	t.Logf("killed pid %d; %s", killed.Load(), l.Crashes[0])
	for name, d := range l.Devices {
		if !d.Switch.Alive() {
			t.Errorf("%s: not running after the second start", name)
		}
	}
}
