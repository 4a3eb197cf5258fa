package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/groupcommit"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// finishBatcher group-commits attempt outcomes: concurrent callers of finish
// (pull acks, releases, the rescuer) are written in one TaskFinish, so many
// acks cost one transaction and one disk flush instead of one each. A caller
// waits for its own result; a lone caller is written at once. Up to writers
// batches are written at once (the engine's Config.Writers).
type finishBatcher struct {
	g groupcommit.Group[*store.FinishParams, error]
}

// newFinishBatcher returns a batcher of up to writers transactions at once;
// stored, if not nil, is told of each batch written (the chainer's wake).
func newFinishBatcher(st store.Store, writers int, log *slog.Logger, stored func(ps []*store.FinishParams)) *finishBatcher {
	write := func(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
		errs, err := storeOutcomes(ctx, st, ps, log, clock.Real{}, callerDeadline)
		if err == nil && stored != nil {
			stored(ps)
		}
		return errs, err
	}
	return &finishBatcher{g: groupcommit.Group[*store.FinishParams, error]{Write: write, Max: maxFinishBatch, Writers: writers}}
}

// maxFinishBatch bounds one group commit.
const maxFinishBatch = 500

// finish stores fp with whatever else is waiting, and returns fp's result.
func (b *finishBatcher) finish(ctx context.Context, fp *store.FinishParams) error {
	return b.finishMany(ctx, []*store.FinishParams{fp})[0]
}

// finishMany stores fps with whatever else is waiting, and returns the
// result of each, in order.
func (b *finishBatcher) finishMany(ctx context.Context, fps []*store.FinishParams) []error {
	rs, errs := b.g.Do(ctx, fps)
	for i, err := range errs {
		if err == nil {
			errs[i] = rs[i]
		}
	}
	return errs
}

// Patience of an outcome's writer with a store that answers UNAVAILABLE:
// a caller waiting for its answer (a pull ack) is told after about 2.5 s
// (8 tries); a push attempt's outcome, which nobody waits for, is written
// for as long as its lease may still hold, so that a database back after
// an outage of seconds gets it (else the attempt would wait for its lease
// to run out and be delivered again, recorded as abandoned).
const (
	callerPatience = 2500 * time.Millisecond
	pushPatience   = pushLease
	// outcomeMaxPause caps the pause between two writes of one batch.
	outcomeMaxPause = time.Second
)

// callerDeadline is when a waiting caller's outcome stops being tried: it
// is told UNAVAILABLE.
func callerDeadline(start time.Time) time.Time { return start.Add(callerPatience) }

// errOutcomeUnknown answers an outcome whose first write may have
// committed before the store's answer was lost.
var errOutcomeUnknown = task.Errorf(task.CodeUnavailable, "the store's answer was lost while this outcome was written, and it may have been recorded: read the task before trying again")

// storeOutcomes writes ps with TaskFinish, and tries again, pausing 10 ms
// and doubling up to outcomeMaxPause, while the store answers UNAVAILABLE
// (a deadlock with a concurrent heartbeat on PostgreSQL, a dropped
// connection, a database restarting) and the next try comes before
// deadline(the first try's time), on clk. A write under way is never cut. Giving up on a batch lets its leases run
// out, and the rescuer then delivers those tasks again, although they were
// done. Writing a batch again is safe: each row is still fenced on its
// lease.
//
// But an UNAVAILABLE may come after the commit reached the database (the
// connection dropped before its answer, as when PostgreSQL crashes): then
// the next try finds the lease gone because this very outcome finished
// the task. So after a failed try, an item refused LEASE_LOST is answered
// UNAVAILABLE ("may have been recorded") rather than LEASE_LOST, which
// would tell a worker that its stored ack was refused.
func storeOutcomes(ctx context.Context, st store.Store, ps []*store.FinishParams, log *slog.Logger, clk clock.Clock, deadline func(start time.Time) time.Time) ([]error, error) {
	pause := 10 * time.Millisecond
	start := clk.Now()
	for try := 1; ; try++ {
		errs, err := st.TaskFinish(ctx, ps)
		if err == nil && try > 1 {
			for i, e := range errs {
				if task.IsCode(e, task.CodeLeaseLost) {
					errs[i] = errOutcomeUnknown
				}
			}
		}
		if err == nil || !task.IsCode(err, task.CodeUnavailable) || clk.Now().Add(pause).After(deadline(start)) {
			return errs, err
		}
		// The first failure warns; each later try is a debug line (an
		// outage's warnings are its services' first failures).
		level := slog.LevelDebug
		if try == 1 {
			level = slog.LevelWarn
		}
		log.Log(ctx, level, "storing outcomes failed; trying again", "n", len(ps), "try", try, "err", err)
		t := clk.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C():
		}
		pause = min(2*pause, outcomeMaxPause)
	}
}
