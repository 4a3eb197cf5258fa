package sqlite

import (
	"context"
	"runtime"
	"testing"

	"github.com/errandhq/errand/internal/store"
)

// TestWriteOutlivesItsCallersContext: a write transaction whose caller
// gives up (its request cancelled) keeps the writer until fn returns, and
// its statements still run and commit. database/sql rolls back a
// transaction begun with a context that ends, from another goroutine, and
// hands the connection to the next writer while fn still runs on the
// store's one-writer scratch — which a concurrent lease and release once
// shared under the race detector.
func TestWriteOutlivesItsCallersContext(t *testing.T) {
	s, q := openWithQueue(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	err := s.write(ctx, func(w *wtx) error {
		cancel()
		go func() { second <- s.write(context.Background(), func(*wtx) error { return nil }) }()
		// Give a rollback on the context's end every chance to happen (and
		// to hand the writer to the second write) before the statement.
		for i := 0; i < 2000 && s.w.Stats().InUse > 0; i++ {
			runtime.Gosched()
		}
		_, err := w.tx.ExecContext(w.ctx, `UPDATE queues SET paused = 1 WHERE instance_id = ? AND name = ?`, q.InstanceID, q.Name)
		return err
	})
	if err != nil {
		t.Fatalf("a write whose caller gave up: %v", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the write after it: %v", err)
	}
	got, err := s.QueueGet(context.Background(), store.QueueRef{InstanceID: q.InstanceID, Name: q.Name})
	if err != nil || !got.Paused {
		t.Fatalf("the write did not commit: %+v %v", got, err)
	}
}
