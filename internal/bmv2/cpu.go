package bmv2

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on every
// Linux this runs on).
const clockTicks = 100

// ProcessCPU returns the CPU time (user + system) process pid has used,
// from /proc/PID/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu time of process %d: %w", pid, err)
	}
	s := string(data)
	// The command name, in parentheses, may hold spaces: fields count from
	// the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of process %d: /proc/%d/stat has no command name", pid, pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of process %d: /proc/%d/stat has no utime and stime", pid, pid)
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of process %d: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(user+sys) * time.Second / clockTicks, nil
}

// CPU returns the CPU time the switch process has used.
func (s *Switch) CPU() (time.Duration, error) { return ProcessCPU(s.PID) }

// WaitIdle waits until the switches together use less than one clock tick
// (10 ms) of CPU over a whole window: until work queued before the call (a
// pipeline just installed, streams being torn down) is done. It returns
// ctx's error if they never go quiet.
func WaitIdle(ctx context.Context, switches []*Switch, window time.Duration) error {
	total := func() (time.Duration, error) {
		var sum time.Duration
		for _, s := range switches {
			d, err := s.CPU()
			if err != nil {
				return 0, err
			}
			sum += d
		}
		return sum, nil
	}
	last, err := total()
	if err != nil {
		return err
	}
	t := time.NewTicker(window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d switches to go idle: %w", len(switches), ctx.Err())
		case <-t.C:
		}
		now, err := total()
		if err != nil {
			return err
		}
		if now-last < time.Second/clockTicks {
			return nil
		}
		last = now
	}
}
