package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// These cover what this backend does where store.go is silent.

func newFixture(t *testing.T) (store.Store, *task.Instance) {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "errand.db"), sqliteOptions())
	t.Cleanup(func() { s.Close() })
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	return s, inst
}

func pullTask(t *testing.T, q *task.Queue, id string) *task.Task {
	t.Helper()
	tk, err := task.NewTask(q, task.AddInput{}, 1, task.URLRules{})
	if err != nil {
		t.Fatal(err)
	}
	tk.ID = id
	return tk
}

func TestAddToMissingQueueOrDuplicateID(t *testing.T) {
	s, _ := newFixture(t)
	ctx := t.Context()
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	gone := task.NewQueue("i1", "gone", task.ModePull)
	res, err := s.TaskAdd(ctx, []*task.Task{pullTask(t, q, "a"), pullTask(t, gone, "b"), pullTask(t, q, "a"), pullTask(t, q, "c")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[3].Err != nil {
		t.Fatalf("results = %+v", res)
	}
	if res[1].Err == nil || res[1].Err.Code != task.CodeNotFound {
		t.Fatalf("task for a missing queue: %+v", res[1])
	}
	if res[2].Err == nil || res[2].Err.Code != task.CodeTaskExists || res[2].Err.ID != "a" {
		t.Fatalf("duplicate id: %+v", res[2])
	}
	// An id already stored is TASK_EXISTS too.
	res, err = s.TaskAdd(ctx, []*task.Task{pullTask(t, q, "c")})
	if err != nil || res[0].Err == nil || res[0].Err.Code != task.CodeTaskExists || res[0].Err.ID != "c" {
		t.Fatalf("stored id again: %+v, %v", res, err)
	}
}

func TestQueueCreateNeedsInstance(t *testing.T) {
	s, _ := newFixture(t)
	err := s.QueueCreate(t.Context(), task.NewQueue("nope", "work", task.ModePull))
	if !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("QueueCreate in a missing instance: %v", err)
	}
}

// TestQueueDeleteUnlinksDeadLetter: deleting a dead-letter queue clears it
// from the queues that named it, and a failure that still carries a copy
// for it (the engine's view was older) keeps no copy and loses nothing
// else.
func TestQueueDeleteUnlinksDeadLetter(t *testing.T) {
	s, _ := newFixture(t)
	ctx := t.Context()
	dlq := task.NewQueue("i1", "dead", task.ModePull)
	q := task.NewQueue("i1", "work", task.ModePull)
	q.DeadLetterQueue, q.MaxAttempts = "dead", 1
	for _, x := range []*task.Queue{dlq, q} {
		if err := s.QueueCreate(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.TaskAdd(ctx, []*task.Task{pullTask(t, q, "a")}); err != nil {
		t.Fatal(err)
	}
	c, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 1, Limit: 1, LeaseMs: 1000, NewLeaseID: func() string { return "L" }})
	if err != nil || len(c) != 1 {
		t.Fatalf("claim = %v, %v", c, err)
	}
	if _, err := s.QueueDelete(ctx, "i1", "dead"); err != nil {
		t.Fatal(err)
	}
	got, err := s.QueueGet(ctx, "i1", "work")
	if err != nil || got.DeadLetterQueue != "" {
		t.Fatalf("work after its DLQ was deleted: %+v, %v", got, err)
	}
	if _, err := c[0].Finish(q, 2, task.Outcome{Status: task.AttemptFailed, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	dl := c[0].DeadLetter(dlq, 2)
	dl.ID = "dl"
	res, err := s.TaskFinish(ctx, []*store.FinishParams{{Task: c[0], LeaseID: "L", DeadLetter: dl}})
	if err != nil || res[0] != nil {
		t.Fatalf("TaskFinish = %v, %v", res, err)
	}
	if tk, err := s.TaskGet(ctx, "i1", "a"); err != nil || tk.State != task.Failed {
		t.Fatalf("failed task = %+v, %v", tk, err)
	}
	if _, err := s.TaskGet(ctx, "i1", "dl"); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("copy into a deleted queue: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	s, _ := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.InstanceGet(ctx, "acme", "jobs"); err != context.Canceled {
		t.Fatalf("read with a cancelled context: %v", err)
	}
	if _, err := s.InstanceUpdate(ctx, "acme", "jobs", func(*task.Instance) error { return nil }); err != context.Canceled {
		t.Fatalf("write with a cancelled context: %v", err)
	}
}
