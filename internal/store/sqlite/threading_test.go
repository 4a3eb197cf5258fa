package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestConnectionsMultiThread checks that every connection of the store —
// the writer, the readers and the checkpointer — runs in SQLite's
// multi-thread mode (no mutex on its handle), and that a connection the
// driver opens on its own is serialized, so that the check can fail: a
// modernc upgrade that moves the handle shows here, not only as a slower
// benchmark.
func TestConnectionsMultiThread(t *testing.T) {
	ctx := context.Background()
	s, q := openWithQueue(t, Options{})
	mutexOf := func(db *sql.DB) uintptr {
		t.Helper()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var m uintptr
		if err := c.Raw(func(dc any) error {
			h, ok := handleOf(dc.(driver.Conn))
			if !ok {
				t.Fatalf("no sqlite3 handle in the driver's %T", dc)
			}
			m = h.Fmutex
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r, "checkpointer": s.ckpt.db} {
		if m := mutexOf(db); m != 0 {
			t.Errorf("the %s's connection is serialized (mutex %#x), want the multi-thread mode", name, m)
		}
	}
	plain, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "plain.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if mutexOf(plain) == 0 {
		t.Error("a connection the driver opened itself has no mutex: the check above proves nothing")
	}

	// The readers, used by many goroutines at once, each on its own
	// connection, read beside the writer's adds.
	batches := make([][]*task.Task, 50)
	for i := range batches {
		batches[i] = newTasks(t, q, fmt.Sprintf("t%02d-", i), 10, nil)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, b := range batches {
			if _, err := s.TaskAdd(ctx, b); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 7 {
		wg.Go(func() {
			for range 50 {
				if _, err := s.InstanceGetByID(ctx, "i1"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
