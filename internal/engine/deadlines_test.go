package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// TestDeadlineGroups: the attempts of a claim that share a deadline share
// one group, whose attempt context ends at the deadline (read in the
// engine's clock) and whose cut context lateCap after it; the contexts end
// only once the group's last attempt has ended.
func TestDeadlineGroups(t *testing.T) {
	now := time.UnixMilli(1_790_000_000_000) // a fake clock's time
	a, b := now.Add(30*time.Second).UnixMilli(), now.Add(time.Hour).UnixMilli()
	ts := []*task.Task{{ID: "1", DeadlineAt: a}, {ID: "2", DeadlineAt: a}, {ID: "3", DeadlineAt: b}, {ID: "4", DeadlineAt: a}, {ID: "5", DeadlineAt: b}}
	before := time.Now()
	gs := deadlineGroups(context.Background(), ts, now)
	if gs[0] != gs[1] || gs[0] != gs[3] || gs[2] != gs[4] || gs[0] == gs[2] {
		t.Fatalf("groups %p %p %p %p %p; want 1, 2 and 4 in one, 3 and 5 in another", gs[0], gs[1], gs[2], gs[3], gs[4])
	}
	if n, m := gs[0].left.Load(), gs[2].left.Load(); n != 3 || m != 2 {
		t.Fatalf("attempts left %d and %d; want 3 and 2", n, m)
	}
	within := func(name string, ctx context.Context, want time.Duration) {
		t.Helper()
		d, ok := ctx.Deadline()
		if !ok || d.Before(before.Add(want)) || d.After(time.Now().Add(want)) {
			t.Fatalf("%s: deadline %v (set %v); want %v after %v", name, d, ok, want, before)
		}
	}
	within("first group's attempt", gs[0].attempt, 30*time.Second)
	within("first group's cut", gs[0].cut, 30*time.Second+lateCap)
	within("second group's attempt", gs[2].attempt, time.Hour)
	within("second group's cut", gs[2].cut, time.Hour+lateCap)

	gs[0].done()
	gs[1].done()
	gs[2].done()
	for i, g := range []*deadlineGroup{gs[0], gs[2]} {
		if g.attempt.Err() != nil || g.cut.Err() != nil {
			t.Fatalf("group %d ended (%v, %v) with an attempt still on", i, g.attempt.Err(), g.cut.Err())
		}
	}
	gs[3].done()
	if !errors.Is(gs[0].attempt.Err(), context.Canceled) || !errors.Is(gs[0].cut.Err(), context.Canceled) {
		t.Fatalf("first group after its last attempt: %v, %v; want both canceled", gs[0].attempt.Err(), gs[0].cut.Err())
	}
	if gs[2].cut.Err() != nil {
		t.Fatalf("second group ended with the first: %v", gs[2].cut.Err())
	}
	gs[4].done()
	if gs[2].attempt.Err() == nil || gs[2].cut.Err() == nil {
		t.Fatal("second group did not end after its last attempt")
	}
	if gs := deadlineGroups(context.Background(), nil, now); len(gs) != 0 {
		t.Fatalf("%d groups for no tasks", len(gs))
	}
}
