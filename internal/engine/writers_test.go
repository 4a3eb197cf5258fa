package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestParallelWritersLoseNoAck: with several outcome batches written at
// once (Config.Writers, PostgreSQL's default), concurrent batch acks are
// each stored exactly once, on every store.
func TestParallelWritersLoseNoAck(t *testing.T) {
	t.Parallel()
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := stores.Open(t, kind)
			ctx := context.Background()
			eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(T0), Dev: true, Writers: 4,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := eng.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				eng.Stop()
				_ = st.Close()
			})
			if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
				t.Fatal(err)
			}
			const n = 600
			for i := 0; i < n; i += 100 {
				if _, err := eng.TaskAdd(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, make([]task.AddInput, 100)); err != nil {
					t.Fatal(err)
				}
			}
			leased, err := eng.Lease(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: n, LeaseSeconds: 60})
			if err != nil || len(leased) != n {
				t.Fatalf("lease: %d tasks, %v", len(leased), err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for w := 0; w < n; w += 20 {
				wg.Go(func() {
					var acks []engine.AckInput
					for _, tk := range leased[w : w+20] {
						acks = append(acks, engine.AckInput{ID: tk.ID, LeaseID: tk.LeaseID})
					}
					res, err := eng.AckMany(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, acks)
					if err != nil {
						errs <- err
						return
					}
					for i, e := range res {
						if e != nil {
							errs <- fmt.Errorf("ack %s: %w", acks[i].ID, e)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			v, err := eng.QueueGet(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"})
			if err != nil {
				t.Fatal(err)
			}
			if v.Counts[task.Succeeded] != n || v.Counts[task.Running] != 0 {
				t.Fatalf("counts after the acks: %v", v.Counts)
			}
		})
	}
}
