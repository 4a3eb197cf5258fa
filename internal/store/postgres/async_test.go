package postgres

import (
	"context"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestPushClaimCommitsAsyncOnlyItself: a push claim runs with
// synchronous_commit off, and only inside its own transaction: the pool's
// connections, which later store answered writes (adds, acks, outcomes),
// still wait for the flush.
func TestPushClaimCommitsAsyncOnlyItself(t *testing.T) {
	s := OpenTest(t)
	defer s.Close()
	ctx := context.Background()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "push", task.ModePush)
	q.Target = &task.Target{Webhook: "https://example.com/hook"}
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	var batch []*task.Task
	for i := range 5 {
		tk, err := task.NewTask(q, task.AddInput{}, 1, task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = "t" + string(rune('a'+i))
		batch = append(batch, tk)
	}
	if _, err := s.TaskAdd(ctx, batch); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range 5 { // one at a time: every pooled connection gets a claim
		got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 10, Limit: 1, LeaseMs: 30_000,
			NewLeaseID: func() string { n++; return "l" + string(rune('a'+n)) }})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(got), err)
		}
	}
	// Every connection of the pool, held at once, still commits synchronously.
	var conns []interface{ Release() }
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range testPoolConns {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var v string
		if err := c.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "on" {
			t.Fatalf("a pooled connection has synchronous_commit %q after push claims; want on", v)
		}
	}
}
