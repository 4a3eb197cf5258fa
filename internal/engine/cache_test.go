package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// countingPG counts the queue reads that reach PostgreSQL.
type countingPG struct {
	*postgres.Store
	queueGets atomic.Int64
}

func (c *countingPG) QueueGet(ctx context.Context, ref store.QueueRef) (*task.Queue, error) {
	c.queueGets.Add(1)
	return c.Store.QueueGet(ctx, ref)
}

// TestCacheAcrossNodes: on a shared PostgreSQL, a queue read again costs
// no round trip; a change made on one node is seen on the other as soon as
// its notification arrives; and a change whose notification never comes
// (written behind the engines' backs) is seen once the copy's lifetime
// has passed, not before.
func TestCacheAcrossNodes(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	rawA, rawB := open(), open()
	t.Cleanup(func() { rawA.Close(); rawB.Close() })
	stB := &countingPG{Store: rawB}
	fc := clock.NewFake(T0)
	engA := engine.New(engine.Config{Store: rawA, Clock: fc, Dev: true, Logger: discardLog})
	engB := engine.New(engine.Config{Store: stB, Clock: fc, Dev: true, Logger: discardLog})
	sigB := engine.WithSignals(engB)
	var mu sync.Mutex
	now := time.Now()
	engine.CacheClock(engB, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	ctx := context.Background()
	for _, e := range []*engine.Engine{engA, engB} {
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Stop)
	}
	sigB.CacheDrops(t, 1) // B listens (its connect drops the copies)
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}
	if _, err := engA.QueueCreate(ctx, ref, &task.QueuePatch{Mode: ptr(task.ModePull), MaxAttempts: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	sigB.CacheDrops(t, 3) // A's creates (the instance on first use, the queue) reached B
	maxAttempts := func() int {
		t.Helper()
		v, err := engB.QueueGet(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return v.Queue.MaxAttempts
	}
	if got := maxAttempts(); got != 3 {
		t.Fatalf("B reads maxAttempts %d, want 3", got)
	}
	reads := stB.queueGets.Load()
	if got := maxAttempts(); got != 3 || stB.queueGets.Load() != reads {
		t.Fatalf("a second read: %d, %d reads of PostgreSQL (was %d)", got, stB.queueGets.Load(), reads)
	}

	// A changes it: B drops its copy on the notification.
	if _, err := engA.QueuePatch(ctx, ref, &task.QueuePatch{MaxAttempts: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	sigB.CacheDrops(t, 4)
	if got := maxAttempts(); got != 5 {
		t.Fatalf("after A's change B reads maxAttempts %d, want 5", got)
	}

	// A change no one announces: B keeps its copy for its lifetime.
	inst, err := engA.Instance(ctx, "dev", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawA.QueueUpdate(ctx, store.QueueRef{InstanceID: inst.ID, Name: "q"}, func(q *task.Queue) error { q.MaxAttempts = 7; return nil }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(engine.CacheTTL - time.Millisecond)
	mu.Unlock()
	if got := maxAttempts(); got != 5 {
		t.Fatalf("before its lifetime passed B reads %d, want its copy's 5", got)
	}
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	if got := maxAttempts(); got != 7 {
		t.Fatalf("after its lifetime B reads %d, want 7", got)
	}
}
