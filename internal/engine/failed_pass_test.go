package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// unwritable is a store on a full disk: reads see work that is overdue by a
// second (an expired lease, a due schedule rule), but the pass that would
// end it fails with UNAVAILABLE.
type unwritable struct {
	store.Store
	now   func() int64
	calls chan struct{} // one per failed pass
}

var errDiskFull = task.Errorf(task.CodeUnavailable, "the store's disk is full; try again later")

func (s *unwritable) TaskExpired(context.Context, int64, int) ([]*task.Task, error) {
	s.calls <- struct{}{}
	return nil, errDiskFull
}

func (s *unwritable) TaskNextDue(context.Context) (int64, int64, error) {
	return 0, s.now() - 1000, nil
}

func (s *unwritable) TriggerDue(context.Context, *store.TriggerDueParams) ([]*task.Trigger, error) {
	s.calls <- struct{}{}
	return nil, errDiskFull
}

func (s *unwritable) TriggerNextTick(context.Context) (int64, error) { return s.now() - 1000, nil }

// failedPassWaits runs one service of an engine on an unwritable store and
// checks that after each failed pass it sleeps at least a second, then
// tries again when the clock passes it. pick returns the service's run loop
// and turns its test signal on.
func failedPassWaits(t *testing.T, name string, pick func(e *Engine) (func(context.Context), *progress[sleepReport])) {
	t.Helper()
	base := stores.Open(t, "sqlite")
	defer base.Close()
	t0 := time.UnixMilli(1_790_000_000_000)
	fc := clock.NewFake(t0)
	st := &unwritable{Store: base, now: func() int64 { return fc.Now().UnixMilli() }, calls: make(chan struct{}, 1)}
	run, asleep := pick(New(Config{Store: st, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	defer func() { cancel(); <-done }()

	for i := range 2 {
		if i > 0 {
			fc.Advance(time.Second) // and it does try again
		}
		<-st.calls
		at := t0.Add(time.Duration(i) * time.Second)
		r := wait(t, name+"'s sleep", asleep, func(r sleepReport) bool { return r.Now.Equal(at) })
		if d := r.WakeAt.Sub(r.Now); d < time.Second {
			t.Fatalf("pass %d: after a failed pass the %s sleeps %s before the next; want at least 1s", i+1, name, d)
		}
	}
}

// TestRescuerWaitsAfterAFailedPass: a rescue pass that fails while an
// expired lease is still there (the disk is full: reads work, writes do
// not) waits a second before the next, as the dispatcher does, instead of
// looping every millisecond and logging each pass. The fault suite's
// disk-full test found the loop (thousands of "rescue pass failed" lines a
// second).
func TestRescuerWaitsAfterAFailedPass(t *testing.T) {
	t.Parallel()
	failedPassWaits(t, "rescuer", func(e *Engine) (func(context.Context), *progress[sleepReport]) {
		e.rescuer.asleep = newProgress[sleepReport]()
		return e.rescuer.run, e.rescuer.asleep
	})
}

// TestSchedulerWaitsAfterAFailedPass: the same for the scheduler, whose
// overdue rule stays due while its pass fails.
func TestSchedulerWaitsAfterAFailedPass(t *testing.T) {
	t.Parallel()
	failedPassWaits(t, "scheduler", func(e *Engine) (func(context.Context), *progress[sleepReport]) {
		e.scheduler.asleep = newProgress[sleepReport]()
		return e.scheduler.run, e.scheduler.asleep
	})
}
