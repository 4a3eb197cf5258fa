package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// TestStopGraceLetsAttemptsFinish: a stop with a grace starts nothing new
// but lets the attempt in flight finish, its success stored (not cut and
// handed back, to be sent again by the next node); with no grace the
// attempt is cut and given back, uncounted.
func TestStopGraceLetsAttemptsFinish(t *testing.T) {
	t.Parallel()
	for _, grace := range []time.Duration{time.Minute, 0} {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
		if err != nil {
			t.Fatal(err)
		}
		target := newHoldingTarget(t)
		wh := deliver.NewWebhook(deliver.WebhookOptions{})
		eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(T0), Dev: true, URLRules: task.URLRules{AllowHTTP: true},
			Logger: discardLog, Deliverer: &deliver.Mux{Webhook: wh}, StopGrace: grace})
		sig := engine.WithSignals(eng)
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}
		if _, err := eng.QueueCreate(ctx, ref, &task.QueuePatch{Target: targetPtr(target.URL)}); err != nil {
			t.Fatal(err)
		}
		res, err := eng.TaskAdd(ctx, ref, []task.AddInput{{}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("add: %v %+v", err, res)
		}
		id := res[0].Task.ID
		release := target.next(t)
		stopped := make(chan struct{})
		go func() { eng.Stop(); close(stopped) }()
		if n := sig.Draining(t); n != 1 {
			t.Fatalf("grace %v: %d attempts in flight at the stop, want 1", grace, n)
		}
		if grace > 0 {
			select {
			case <-stopped:
				t.Fatal("the stop did not wait for the attempt in flight")
			default:
			}
			close(release) // the target answers within the grace
		}
		<-stopped
		if grace == 0 {
			close(release)
		}
		tk, err := st.TaskGet(ctx, store.TaskRef{InstanceID: res[0].Task.InstanceID, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		want, status := task.Succeeded, task.AttemptSucceeded
		if grace == 0 {
			want, status = task.RetryWait, task.AttemptReleased
		}
		if tk.State != want || len(tk.Attempts) != 1 || tk.Attempts[0].Status != status {
			t.Fatalf("grace %v: %s with attempts %+v, want %s after one %s", grace, tk.State, tk.Attempts, want, status)
		}
		wh.Close()
		_ = st.Close()
	}
}
