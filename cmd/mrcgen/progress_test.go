package main

import (
	"bytes"
	"regexp"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to write from the redraw goroutine
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestElapsed: on a terminal, work of unknown size shows its label and the
// seconds so far, redrawn while it runs, and stopping ends the line;
// elsewhere nothing is written.
func TestElapsed(t *testing.T) {
	var tty lockedBuffer
	p := &progressBar{w: &tty, label: "compiling for tofino2", tty: true, start: time.Now()}
	stop := p.elapsed()
	for deadline := time.Now().Add(10 * time.Second); tty.String() == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			t.Fatal("no redraw in 10 s")
		}
	}
	stop()
	got := tty.String()
	if !regexp.MustCompile(`^(\rcompiling for tofino2 \d+\.\ds){2,}\n$`).MatchString(got) {
		t.Errorf("terminal output %q: want at least one redraw, then the final line", got)
	}
	var log lockedBuffer
	p = &progressBar{w: &log, label: "compiling", start: time.Now()}
	p.elapsed()()
	if s := log.String(); s != "" {
		t.Errorf("not a terminal, but wrote %q", s)
	}
}
