package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects a child's output (its log, a terminal) while the
// test reads it, and tells waiters of every write: waitFor wakes on the
// write itself, never on a timer.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next write, when someone waits
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if l.written != nil {
		close(l.written)
		l.written = nil
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the output holds s, at most limit, and returns the
// output then; it fails t, with the output's tail, when limit passes.
func (l *lockedBuffer) waitFor(t *testing.T, s string, limit time.Duration) string {
	t.Helper()
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		l.mu.Lock()
		out := l.b.String()
		if strings.Contains(out, s) {
			l.mu.Unlock()
			return out
		}
		if l.written == nil {
			l.written = make(chan struct{})
		}
		written := l.written
		l.mu.Unlock()
		select {
		case <-written:
		case <-timeout.C:
			t.Fatalf("timed out after %v waiting for %q in the output:\n%s", limit, s, tail(out, 3000))
		}
	}
}
