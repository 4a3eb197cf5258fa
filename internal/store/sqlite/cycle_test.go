package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// BenchmarkTaskCycle is the store's whole write work per task as the engine
// asks for it: TaskAdd, TaskClaim and TaskFinish of 100 tasks each, in a
// store holding a 20,000-task backlog, with a ~150-byte and a 4 KB payload.
// cpu-ns/task is the process CPU time (getrusage: steadier than wall time
// on a shared machine) of the three calls, WAL checkpoints included, over
// the tasks that went through them.
//
//	go test -run '^$' -bench TaskCycle -benchtime 200x ./internal/store/sqlite/
func BenchmarkTaskCycle(b *testing.B) {
	for _, c := range []struct {
		name    string
		payload json.RawMessage
	}{
		{"payload-150B", breakdownPayload},
		{"payload-4KB", json.RawMessage(`{"blob":"` + strings.Repeat("x", 4000) + `"}`)},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "cycle.db"), Options{Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.InstanceCreate(ctx, &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
				b.Fatal(err)
			}
			q := task.NewQueue("i1", "work", task.ModePull)
			if err := s.QueueCreate(ctx, q); err != nil {
				b.Fatal(err)
			}
			next := 0
			batch := func(runAt int64) []*task.Task {
				ts := make([]*task.Task, 100)
				for i := range ts {
					t, err := task.NewTask(q, task.AddInput{Payload: c.payload, RunAt: &runAt}, 1_000, task.URLRules{})
					if err != nil {
						b.Fatal(err)
					}
					t.ID = fmt.Sprintf("t%012d", next)
					next++
					ts[i] = t
				}
				return ts
			}
			// The backlog waits behind every task the loop adds.
			for range 200 {
				if _, err := s.TaskAdd(ctx, batch(300*86_400_000)); err != nil {
					b.Fatal(err)
				}
			}
			now, lease := int64(2_000), 0
			start := testkit.CPUTime()
			for b.Loop() {
				if _, err := s.TaskAdd(ctx, batch(now)); err != nil {
					b.Fatal(err)
				}
				got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: now, Limit: 100, LeaseMs: 60_000,
					NewLeaseID: func() string { lease++; return fmt.Sprint("lease-", lease) }})
				if err != nil || len(got) != 100 {
					b.Fatalf("claim: %d, %v", len(got), err)
				}
				ps := make([]*store.FinishParams, len(got))
				for i, t := range got {
					fence := t.LeaseID
					if _, err := t.Finish(q, now+5, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
						b.Fatal(err)
					}
					ps[i] = &store.FinishParams{Task: t, LeaseID: fence}
				}
				if _, err := s.TaskFinish(ctx, ps); err != nil {
					b.Fatal(err)
				}
				now += 10
			}
			b.ReportMetric(float64((testkit.CPUTime()-start).Nanoseconds())/float64(b.N*100), "cpu-ns/task")
		})
	}
}
