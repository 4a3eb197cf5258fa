package sqlite

import (
	"context"
	"path/filepath"
	"testing"

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
