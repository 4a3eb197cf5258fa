package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
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
	path := filepath.Join(t.TempDir(), "mt.db")
	s, err := Open(ctx, path, Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
	plain, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if mutexOf(plain) == 0 {
		t.Error("a connection the driver opened itself has no mutex: the check above proves nothing")
	}

	// The readers, used by many goroutines at once, each on its own
	// connection, read what the writer writes beside them.
	if err := s.InstanceCreate(ctx, &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g == 0 {
					q := task.NewQueue("i1", "q"+string(rune('a'+i%26))+string(rune('a'+i/26)), task.ModePull)
					if err := s.QueueCreate(ctx, q); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				if _, err := s.InstanceGetByID(ctx, "i1"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
