package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestClaimsLeaveCommitsSynchronous: after push claims every pooled
// connection still waits for the WAL flush on commit. A claim must be
// durable before its delivery starts (cmd/errand's
// TestPostgresCrashAfterClaimDeliversOnce crashes a private cluster to show
// why); nothing may turn synchronous_commit off on a pooled connection.
func TestClaimsLeaveCommitsSynchronous(t *testing.T) {
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

// TestHeartbeatSkipsLockedRows: a heartbeat never waits for a row another
// transaction holds (an outcome being written, locking rows in its own
// order): waiting deadlocked with such writes under load. The row is
// skipped and renewed by the next heartbeat.
func TestHeartbeatSkipsLockedRows(t *testing.T) {
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
	for _, id := range []string{"ta", "tb"} {
		tk, err := task.NewTask(q, task.AddInput{}, 1, task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = id
		batch = append(batch, tk)
	}
	if _, err := s.TaskAdd(ctx, batch); err != nil {
		t.Fatal(err)
	}
	n := 0
	claimed, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 10, Limit: 2, LeaseMs: 30_000,
		NewLeaseID: func() string { n++; return "l" + string(rune('0'+n)) }})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d tasks, %v", len(claimed), err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT 1 FROM tasks WHERE instance_id = 'i1' AND id = $1 FOR UPDATE`, claimed[0].ID); err != nil {
		t.Fatal(err)
	}
	refs := []store.LeaseRef{
		{InstanceID: "i1", ID: claimed[0].ID, LeaseID: claimed[0].LeaseID},
		{InstanceID: "i1", ID: claimed[1].ID, LeaseID: claimed[1].LeaseID},
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := s.TaskHeartbeat(hctx, refs, 99_000)
	if err != nil || got != 1 {
		t.Fatalf("TaskHeartbeat with one row held elsewhere = %d, %v; want 1 (the other skipped, not waited for)", got, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TaskHeartbeat(ctx, refs, 99_000); err != nil || got != 2 {
		t.Fatalf("TaskHeartbeat once released = %d, %v; want 2", got, err)
	}
}
