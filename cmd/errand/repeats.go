package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// repeatWindow is how often one failure, repeating, is written.
const repeatWindow = 30 * time.Second

// quietRepeats is a log handler that writes a warning carrying an error
// (an "err" attribute) once every repeatWindow while the same message with
// the same error and attributes repeats: in a store outage every background service
// fails each second with the same words, and an operator needs the first
// line and a count, not thousands. The next line written says how many
// were held back (repeated=N); a count whose failure stops within the
// window is not written. Lines without an error (a node declared dead,
// say) and other levels pass as they are.
type quietRepeats struct {
	slog.Handler
	state *repeatState
	attrs []slog.Attr // attributes added with WithAttrs, for the key
}

type repeatState struct {
	mu   sync.Mutex
	seen map[string]*repeatSeen
	now  func() time.Time
}

type repeatSeen struct {
	last time.Time
	held int
}

func newQuietRepeats(h slog.Handler) *quietRepeats {
	return &quietRepeats{Handler: h, state: &repeatState{seen: map[string]*repeatSeen{}, now: time.Now}}
}

// Handle implements slog.Handler.
func (q *quietRepeats) Handle(ctx context.Context, r slog.Record) error {
	if r.Level != slog.LevelWarn {
		return q.Handler.Handle(ctx, r)
	}
	// The key is the message with every attribute, the logger's and the
	// record's: the same failure of another channel, instance or node is
	// another line.
	found := false
	key := r.Message
	r.Attrs(func(a slog.Attr) bool {
		found = found || a.Key == "err"
		key += "\x00" + a.String()
		return true
	})
	if !found {
		return q.Handler.Handle(ctx, r)
	}
	for _, a := range q.attrs {
		key += "\x00" + a.String()
	}
	s := q.state
	s.mu.Lock()
	now := s.now()
	if len(s.seen) > 1000 { // failures of many kinds at once: start afresh rather than grow
		clear(s.seen)
	}
	e := s.seen[key]
	if e != nil && now.Sub(e.last) < repeatWindow {
		e.held++
		s.mu.Unlock()
		return nil
	}
	held := 0
	if e != nil {
		held = e.held
	}
	s.seen[key] = &repeatSeen{last: now}
	s.mu.Unlock()
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held))
	}
	return q.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (q *quietRepeats) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietRepeats{Handler: q.Handler.WithAttrs(as), state: q.state, attrs: append(append([]slog.Attr{}, q.attrs...), as...)}
}

// WithGroup implements slog.Handler.
func (q *quietRepeats) WithGroup(name string) slog.Handler {
	return &quietRepeats{Handler: q.Handler.WithGroup(name), state: q.state, attrs: q.attrs}
}
