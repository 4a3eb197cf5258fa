package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress is a one-line progress bar on a terminal, redrawn in place; on
// anything else (a pipe, a file, a test) it prints nothing.
type progress struct {
	w     io.Writer // nil: not a terminal
	total int64     // bytes to read; 0 when unknown (stdin)
	start time.Time
	last  time.Time
	drawn bool
}

func newAddProgress(w io.Writer, total int64) *progress {
	p := &progress{total: total, start: time.Now()}
	if isTerminal(w) {
		p.w = w
	}
	return p
}

// set draws the bar at read bytes and n tasks done, at most ten times a
// second.
func (p *progress) set(read int64, n int) {
	if p.w == nil {
		return
	}
	now := time.Now()
	if p.drawn && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.drawn = now, true
	rate := float64(n) / max(now.Sub(p.start).Seconds(), 0.001)
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d tasks  %.0f/s ", n, rate)
		return
	}
	frac := min(float64(read)/float64(p.total), 1)
	const width = 30
	full := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %d tasks  %.0f/s ", strings.Repeat("=", full), strings.Repeat(" ", width-full), frac*100, n, rate)
}

// done clears the bar's line.
func (p *progress) done() {
	if p.w != nil && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
