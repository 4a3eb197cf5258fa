package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/store/storetest"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func open(tb testing.TB, path string, opts sqlite.Options) *sqlite.Store {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{})
	})
}

func TestOptions(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{Synchronous: "OFF"})
	if err == nil || !strings.Contains(err.Error(), "synchronous") {
		t.Fatalf("Open(synchronous OFF) = %v, want an error", err)
	}
	// FULL works, and an odd path is safe.
	s := open(t, filepath.Join(t.TempDir(), "a dir?#%", "..", "odd name?.db"), sqlite.Options{Synchronous: "full"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestReopen checks that the schema and data survive closing and opening
// the file again, with no migration applied twice.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "errand.db")
	s := open(t, path, sqlite.Options{})
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, sqlite.Options{})
	defer s.Close()
	if _, err := s.InstanceGet(t.Context(), store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatalf("instance after reopen: %v", err)
	}
}

// TestTwoStoresOneFile runs two Stores (as two processes would) on one file
// and claims from both at once: BEGIN IMMEDIATE and busy_timeout keep every
// task claimed exactly once.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "errand.db")
	a := open(t, path, sqlite.Options{})
	defer a.Close()
	b := open(t, path, sqlite.Options{})
	defer b.Close()
	ctx := t.Context()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := a.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := b.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	const n = 300
	addTasks(t, a, q, n, 0)
	var leases atomic.Int64
	newLease := func() string { return fmt.Sprint("l", leases.Add(1)) }
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, s := range []*sqlite.Store{a, b} {
		wg.Go(func() {
			for {
				got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 10, Limit: 9, LeaseMs: 1000, NewLeaseID: newLease})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range got {
					if seen[tk.ID] {
						t.Errorf("%s claimed twice", tk.ID)
					}
					seen[tk.ID] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d, want %d", len(seen), n)
	}
}

var payload = json.RawMessage(`{"to":"someone@example.com","template":"receipt","order":123456,"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)

// addTasks adds n tasks to q in batches of 100, their ids starting at from.
func addTasks(tb testing.TB, s store.Store, q *task.Queue, n, from int) {
	tb.Helper()
	for start := 0; start < n; start += 100 {
		batch := make([]*task.Task, 0, 100)
		for i := start; i < min(n, start+100); i++ {
			tk, err := task.NewTask(q, task.AddInput{Payload: payload}, 1, task.URLRules{})
			if err != nil {
				tb.Fatal(err)
			}
			tk.ID = fmt.Sprintf("t%09d", from+i)
			batch = append(batch, tk)
		}
		res, err := s.TaskAdd(context.Background(), batch)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				tb.Fatal(r.Err)
			}
		}
	}
}

func benchStore(b *testing.B, sync string) (*sqlite.Store, *task.Queue) {
	b.Helper()
	s := open(b, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Synchronous: sync})
	b.Cleanup(func() { s.Close() })
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(context.Background(), inst); err != nil {
		b.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := s.QueueCreate(context.Background(), q); err != nil {
		b.Fatal(err)
	}
	return s, q
}

// BenchmarkTaskAdd100 adds 100 tasks per TaskAdd call (one transaction).
func BenchmarkTaskAdd100(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run(sync, func(b *testing.B) {
			s, q := benchStore(b, sync)
			n := 0
			b.ReportAllocs()
			cpu := testkit.CPUTime()
			for b.Loop() {
				addTasks(b, s, q, 100, n)
				n += 100
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/task")
			b.ReportMetric(float64((testkit.CPUTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkClaimFinish claims 100 due tasks and finishes them, each a
// transaction, over a backlog that is refilled outside the timer.
func BenchmarkClaimFinish(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run(sync, func(b *testing.B) {
			s, q := benchStore(b, sync)
			ctx := context.Background()
			const backlog = 10_000
			addTasks(b, s, q, backlog, 0)
			next := backlog
			left := backlog
			var leases int64
			newLease := func() string { leases++; return fmt.Sprint("lease-", leases) }
			b.ReportAllocs()
			var refill time.Duration
			cpu := testkit.CPUTime()
			for b.Loop() {
				if left < 100 {
					b.StopTimer()
					c := testkit.CPUTime()
					addTasks(b, s, q, backlog, next)
					refill += testkit.CPUTime() - c
					next += backlog
					left += backlog
					b.StartTimer()
				}
				got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 10, Limit: 100, LeaseMs: 60_000, NewLeaseID: newLease})
				if err != nil || len(got) != 100 {
					b.Fatalf("claim: %d, %v", len(got), err)
				}
				left -= 100
				ps := make([]*store.FinishParams, len(got))
				for i, tk := range got {
					lease := tk.LeaseID
					if _, err := tk.Finish(q, 20, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200, Result: json.RawMessage(`{"ok":true}`)}); err != nil {
						b.Fatal(err)
					}
					ps[i] = &store.FinishParams{Task: tk, LeaseID: lease}
				}
				res, err := s.TaskFinish(ctx, ps)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range res {
					if e != nil {
						b.Fatal(e)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/task")
			b.ReportMetric(float64((testkit.CPUTime()-cpu-refill).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
