package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// pagingStore is a real store that runs onPage after its first TaskPage.
type pagingStore struct {
	store.Store
	onPage func()
}

func (p *pagingStore) TaskPage(ctx context.Context, q *store.TaskPageParams) ([]*task.Task, error) {
	ts, err := p.Store.TaskPage(ctx, q)
	if f := p.onPage; f != nil {
		p.onPage = nil
		f()
	}
	return ts, err
}

// TestOpsListJobSubmittedMeanwhile: OpsList reads the jobs 200 at a time;
// a job submitted between two reads (newest first: it goes before every
// job read) moves no job from one read to the next, so none is listed
// twice and none is skipped.
func TestOpsListJobSubmittedMeanwhile(t *testing.T) {
	t.Parallel()
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			raw := stores.Open(t, kind)
			t.Cleanup(func() { _ = raw.Close() })
			st := &pagingStore{Store: raw}
			fc := clock.NewFake(T0)
			eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: discardLog})
			ctx := context.Background()
			submit := func(i int) {
				t.Helper()
				if _, _, err := eng.OpsSubmit(ctx, "dev", task.KindBackupExport, json.RawMessage(`{}`), fmt.Sprint("job-", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			const jobs = 250
			for i := range jobs {
				fc.Advance(time.Millisecond) // one job a millisecond (created_at's unit): newest first is submission order, reversed
				submit(i)
			}
			fc.Advance(time.Millisecond)
			st.onPage = func() { submit(jobs) }
			got, err := eng.OpsList(ctx, "dev", 200, 100, func(*engine.OpsJob) bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, j := range got {
				if seen[j.ID] {
					t.Fatalf("job %s listed twice", j.ID)
				}
				seen[j.ID] = true
			}
			if len(got) != jobs-100 {
				t.Fatalf("listed %d jobs after the first 100, want %d", len(got), jobs-100)
			}
		})
	}
}
