package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// The benchmarks mirror the SQLite backend's, on a fresh schema of the
// database at ERRAND_TEST_POSTGRES. cpu-ns/op is this process's CPU (the
// client's); the server's is not counted.

func benchStore(b *testing.B) (*postgres.Store, *task.Queue) {
	b.Helper()
	s := postgres.OpenTest(b)
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

// BenchmarkTaskAdd100 adds 100 tasks per TaskAdd call (one statement).
func BenchmarkTaskAdd100(b *testing.B) {
	s, q := benchStore(b)
	n := 0
	b.ReportAllocs()
	cpu := testkit.CPUTime()
	for b.Loop() {
		addTasks(b, s, q, 100, n)
		n += 100
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/task")
	b.ReportMetric(float64((testkit.CPUTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkClaimFinish claims 100 due tasks and finishes them (a claim
// transaction and a finish batch), over a backlog that is refilled outside
// the timer.
func BenchmarkClaimFinish(b *testing.B) {
	s, q := benchStore(b)
	ctx := context.Background()
	const backlog = 10_000
	addTasks(b, s, q, backlog, 0)
	next := backlog
	left := backlog
	var leases int64
	newLease := func() string { leases++; return fmt.Sprint("lease-", leases) }
	b.ReportAllocs()
	var refill int64
	cpu := testkit.CPUTime()
	for b.Loop() {
		if left < 100 {
			b.StopTimer()
			c := testkit.CPUTime()
			addTasks(b, s, q, backlog, next)
			refill += int64(testkit.CPUTime() - c)
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
	b.ReportMetric(float64((testkit.CPUTime()-cpu).Nanoseconds()-refill)/float64(b.N), "cpu-ns/op")
}
