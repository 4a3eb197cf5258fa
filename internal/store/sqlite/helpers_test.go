package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// openWithQueue opens a store in a fresh file with opts (a quiet logger
// unless opts has one), the instance i1 and its pull queue "work"; the
// store is closed when tb ends.
func openWithQueue(tb testing.TB, opts Options) (*Store, *task.Queue) {
	tb.Helper()
	ctx := context.Background()
	if opts.Logger == nil {
		opts.Logger = quietLog
	}
	s, err := Open(ctx, filepath.Join(tb.TempDir(), "errand.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		tb.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := s.QueueCreate(ctx, q); err != nil {
		tb.Fatal(err)
	}
	return s, q
}

// newTasks makes n tasks of q with the ids prefix00, prefix01, …, each
// from in(i) (a payload of {} where in is nil).
func newTasks(tb testing.TB, q *task.Queue, prefix string, n int, in func(i int) task.AddInput) []*task.Task {
	tb.Helper()
	tasks := make([]*task.Task, n)
	for i := range n {
		input := task.AddInput{Payload: []byte(`{}`)}
		if in != nil {
			input = in(i)
		}
		t, err := task.NewTask(q, input, 1_000, task.URLRules{})
		if err != nil {
			tb.Fatal(err)
		}
		t.ID = fmt.Sprintf("%s%02d", prefix, i)
		tasks[i] = t
	}
	return tasks
}

// addAndClaim adds tasks to q and claims them all at 2,000 with 45 s
// leases named lease-1, lease-2, …, and returns what the claim returned.
func addAndClaim(tb testing.TB, s *Store, q *task.Queue, tasks []*task.Task) []*task.Task {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.TaskAdd(ctx, tasks); err != nil {
		tb.Fatal(err)
	}
	lease := 0
	claimed, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 2_000, Limit: len(tasks), LeaseMs: 45_000,
		NewLeaseID: func() string { lease++; return fmt.Sprintf("lease-%d", lease) }})
	if err != nil || len(claimed) != len(tasks) {
		tb.Fatalf("claim: %d of %d, %v", len(claimed), len(tasks), err)
	}
	return claimed
}
