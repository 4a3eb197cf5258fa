package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestQuietRepeats: a warning with an error is written once a window
// while the same message and error repeat, the next one saying how many
// were held back; another error, another message, a warning without an
// error and other levels are written as they come.
func TestQuietRepeats(t *testing.T) {
	var buf bytes.Buffer
	q := newQuietRepeats(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q.state.now = func() time.Time { return now }
	log := slog.New(q).With("node", "a")
	down := errors.New("UNAVAILABLE: the store is unreachable")
	for range 5 {
		log.Warn("dispatch pass failed", "err", down)
		log.Warn("rescue pass failed", "err", down)
		log.Warn("nodes stopped beating", "nodes", "b")
		log.Warn("LISTEN lost", "channel", "errand_wake", "err", down)
		log.Warn("LISTEN lost", "channel", "errand_channel", "err", down)
		log.Info("attempt failed", "err", down)
		now = now.Add(time.Second)
	}
	log.Warn("dispatch pass failed", "err", errors.New("disk full"))
	now = now.Add(repeatWindow)
	log.Warn("dispatch pass failed", "err", down)
	out := buf.String()
	for _, c := range []struct {
		what string
		n    int
	}{
		{`msg="dispatch pass failed" node=a err="UNAVAILABLE: the store is unreachable"` + "\n", 1},
		{`msg="dispatch pass failed" node=a err="UNAVAILABLE: the store is unreachable" repeated=4`, 1},
		{`msg="rescue pass failed"`, 1},
		{`err="disk full"`, 1},
		{`msg="nodes stopped beating"`, 5},
		{`msg="attempt failed"`, 5},
		{`msg="LISTEN lost" node=a channel=errand_wake`, 1}, // another attribute: another line
		{`msg="LISTEN lost" node=a channel=errand_channel`, 1},
	} {
		if n := strings.Count(out, c.what); n != c.n {
			t.Errorf("%q written %d times, want %d:\n%s", c.what, n, c.n, out)
		}
	}
}
