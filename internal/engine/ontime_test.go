package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// answeredOnTime is a deliverer that judged its answer on time and said so
// to its target (as a connected worker's "recorded"), and whose clock then
// moved past the deadline before the dispatcher looked.
type answeredOnTime struct{ clock *clock.Fake }

// Deliver succeeds on time, then moves the clock a second past the deadline.
func (a answeredOnTime) Deliver(_ context.Context, r *deliver.Request) deliver.Result {
	a.clock.Advance(time.Duration(r.Task.DeadlineAt-a.clock.Now().UnixMilli())*time.Millisecond + time.Second)
	return deliver.Result{Outcome: task.Outcome{Status: task.AttemptSucceeded}, OnTime: true}
}

// TestOnTimeAnswerIsKept: an answer its deliverer judged on time (and told
// the worker was recorded) is recorded as it came, even when the clock has
// passed the deadline by the time the dispatcher reads it: a worker told
// "recorded" never finds its attempt timed out.
func TestOnTimeAnswerIsKept(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFake(T0)
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: discardLog,
		Deliverer: &deliver.Mux{Webhook: answeredOnTime{clock: fc}}})
	b := &bundle{t: t, eng: eng, clock: fc, ctx: ctx, sig: engine.WithSignals(eng)}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Stop()
		_ = st.Close()
	})
	target := &task.Target{Webhook: "https://example.com/hook"} // never called: the deliverer answers
	b.queue("q", &task.QueuePatch{Target: &target, DeadlineSeconds: ptr(1)})
	id := b.add("q", task.AddInput{})
	if tk := b.waitState(id, task.Succeeded); len(tk.Attempts) != 1 || tk.Attempts[0].Status != task.AttemptSucceeded {
		t.Fatalf("attempts %+v", tk.Attempts)
	}
}
