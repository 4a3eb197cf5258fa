package engine_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/auth"
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

// countingKeysPG counts the key reads that reach PostgreSQL.
type countingKeysPG struct {
	*postgres.Store
	keyReads atomic.Int64
}

func (c *countingKeysPG) KeyByDigest(ctx context.Context, digest []byte) (*store.APIKey, error) {
	c.keyReads.Add(1)
	return c.Store.KeyByDigest(ctx, digest)
}

// TestKeyCacheAcrossNodes: on a shared PostgreSQL, a key seen once is
// checked again without a round trip (an unknown key is read every time);
// a key revoked through node A is refused by node B as soon as A's
// notification reaches it; a revocation no one announces (written behind
// the engines' backs) is refused once B's copy has lived its lifetime, and
// not before.
func TestKeyCacheAcrossNodes(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	rawA, rawB := open(), open()
	t.Cleanup(func() { rawA.Close(); rawB.Close() })
	stB := &countingKeysPG{Store: rawB}
	fc := clock.NewFake(T0)
	engA := engine.New(engine.Config{Store: rawA, Clock: fc, Logger: discardLog})
	engB := engine.New(engine.Config{Store: stB, Clock: fc, Logger: discardLog})
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

	newKey := func() (string, *store.APIKey) {
		t.Helper()
		secret, k, err := auth.NewKey("acme", []store.Grant{{Instance: "*", Role: "full"}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := rawA.KeyCreate(ctx, k); err != nil {
			t.Fatal(err)
		}
		return secret, k
	}
	onB := auth.Keys{Store: engB.Store()}
	check := func(secret string) error {
		t.Helper()
		r := httptest.NewRequest("GET", "/v1/instances", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		_, err := onB.Authenticate(r)
		if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatal(err)
		}
		return err
	}
	reads := func() int64 { return stB.keyReads.Load() }

	secret1, k1 := newKey()
	if err := check(secret1); err != nil {
		t.Fatalf("a fresh key on B: %v", err)
	}
	before := reads()
	if err := check(secret1); err != nil || reads() != before {
		t.Fatalf("the key again on B: %v, %d reads of PostgreSQL (was %d)", err, reads(), before)
	}
	unknown := auth.KeyPrefix + strings.Repeat("0", 64)
	for range 2 {
		if err := check(unknown); err == nil {
			t.Fatal("an unknown key was accepted")
		}
	}
	if got := reads(); got != before+2 {
		t.Fatalf("an unknown key twice: %d reads, want %d (not kept)", got, before+2)
	}

	// Revoked through A: B refuses it once A's notification has reached it.
	drops := sigB.CacheDropCount()
	if err := engA.Store().KeyRevoke(ctx, store.KeyRef{Org: k1.Org, ID: k1.ID}, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	sigB.CacheDrops(t, drops+1)
	if err := check(secret1); err == nil {
		t.Fatal("B accepts a key A revoked after hearing A's notification")
	}

	// Revoked behind the engines' backs (no notification): B accepts its
	// copy until the copy's lifetime has passed, then refuses it.
	secret2, k2 := newKey()
	if err := check(secret2); err != nil {
		t.Fatalf("a second key on B: %v", err)
	}
	if err := rawA.KeyRevoke(ctx, store.KeyRef{Org: k2.Org, ID: k2.ID}, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(engine.CacheTTL - time.Millisecond)
	mu.Unlock()
	if err := check(secret2); err != nil {
		t.Fatalf("before its lifetime passed B refuses its copy: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	if err := check(secret2); err == nil {
		t.Fatal("after its lifetime B still accepts a revoked key")
	}
}
