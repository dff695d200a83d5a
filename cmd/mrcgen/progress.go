package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressBar draws a one-line bar on a terminal, and nothing elsewhere (CI
// logs get the closing summary only).
type progressBar struct {
	w     io.Writer
	label string
	tty   bool
	last  time.Time
	start time.Time
}

func newProgressBar(w io.Writer, label string) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, label: label, tty: tty, start: time.Now()}
}

// update redraws the bar, at most every 100 ms and always at the end.
func (p *progressBar) update(done, total int) {
	if !p.tty || total == 0 {
		return
	}
	now := time.Now()
	if done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	const width = 30
	filled := done * width / total
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %.1fs", p.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		done, total, now.Sub(p.start).Seconds())
	if done == total {
		fmt.Fprintln(p.w)
	}
}

// elapsed is for work of unknown size (a compiler run): on a terminal it
// shows the label and the seconds so far, redrawn every 200 ms, until the
// returned stop is called, which ends the line. Elsewhere it shows nothing.
func (p *progressBar) elapsed() (stop func()) {
	if !p.tty {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(p.w, "\r%s %.1fs\n", p.label, time.Since(p.start).Seconds())
				return
			case <-t.C:
				fmt.Fprintf(p.w, "\r%s %.1fs", p.label, time.Since(p.start).Seconds())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
