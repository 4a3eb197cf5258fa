package embedded

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestHandlerCtxEndsAtTheDeadline: a handler's ctx carries the attempt's
// deadline (the queue's, here 1 s), not the dispatcher's longer one (which
// waits lateCap more for a late webhook), and ends at it.
func TestHandlerCtxEndsAtTheDeadline(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	type seen struct {
		start, deadline, done time.Time
		ok                    bool
	}
	got := make(chan seen, 1)
	must(t, e.Handle("app/slow", func(ctx context.Context, _ *Task) (json.RawMessage, error) {
		s := seen{start: time.Now()}
		s.deadline, s.ok = ctx.Deadline()
		select { // one bounded wait: the deadline is 1 s
		case <-ctx.Done():
			s.done = time.Now()
		case <-time.After(10 * time.Second):
		}
		got <- s
		return nil, ctx.Err()
	}))
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Function: "app/slow", Deadline: time.Second, MaxAttempts: 1}))
	id := add(t, e, "q", NewTask{})[0]
	s := <-got
	if !s.ok || s.deadline.After(s.start.Add(time.Second)) {
		t.Fatalf("handler's deadline %v (set %v); want at most 1 s after its start %v", s.deadline, s.ok, s.start)
	}
	if s.done.IsZero() || s.done.Before(s.deadline) {
		t.Fatalf("ctx ended at %v; want at its deadline %v", s.done, s.deadline)
	}
	waitState(t, e, id, "failed")
}
