package engine

import (
	"context"
	"log/slog"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/metrics"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// finisher ends claimed attempts for the pull calls (ack, release) and the
// rescuer: the domain decides the next state, and the batcher writes it
// fenced on the lease, with a dead-letter copy when the task failed.
type finisher struct {
	store   store.Store
	clock   clock.Clock
	batch   *finishBatcher
	metrics *metrics.Metrics
	log     *slog.Logger
	changed func() // a task will be due again: wakes dispatchers and long polls
}

// finish applies o to the claimed task t and stores it fenced on its lease
// (and, with liveAt not 0, on the lease being live at liveAt: see
// store.FinishParams.LiveAt), with a dead-letter copy if the task failed
// and its queue names one.
func (f *finisher) finish(ctx context.Context, t *task.Task, now int64, o task.Outcome, liveAt int64) error {
	q, err := f.store.QueueGet(ctx, store.QueueRef{InstanceID: t.InstanceID, Name: t.Queue})
	if err != nil {
		return err
	}
	lease := t.LeaseID
	failed, err := t.Finish(q, now, o)
	if err != nil {
		return err
	}
	fp := &store.FinishParams{Task: t, LeaseID: lease, LiveAt: liveAt}
	if failed && q.DeadLetterQueue != "" {
		if dlq, err := f.store.QueueGet(ctx, store.QueueRef{InstanceID: t.InstanceID, Name: q.DeadLetterQueue}); err == nil {
			fp.DeadLetter = deadLetter(f.log, t, dlq, now, f.clock)
		} else if !task.IsCode(err, task.CodeNotFound) {
			return err
		}
	}
	if err := f.batch.finish(ctx, fp); err != nil {
		return err
	}
	countFinish(f.metrics, t, o.Status)
	if t.State == task.RetryWait || fp.DeadLetter != nil {
		f.changed()
	}
	return nil
}

// countAttempt counts a stored attempt outcome.
func countAttempt(m *metrics.Metrics, status string, pull bool) {
	m.Attempts.WithLabelValues(status, kindOf(pull)).Inc()
}

// countFinish counts the stored outcome status of t's attempt, and t
// itself when the outcome failed it for good.
func countFinish(m *metrics.Metrics, t *task.Task, status string) {
	countAttempt(m, status, t.Pull)
	if t.State == task.Failed {
		m.TasksFailed.WithLabelValues(kindOf(t.Pull)).Inc()
	}
}

// kindOf is the metrics' kind label of a task: push or pull.
func kindOf(pull bool) string {
	if pull {
		return "pull"
	}
	return "push"
}

// newID returns a fresh task or instance id, ordered by c's time.
func newID(c clock.Clock) string { return id.New(c.Now()) }

// deadLetter is t's dead-letter copy for dlq with a new id, or nil, logged,
// when the copy would pass task.MaxDepth.
func deadLetter(log *slog.Logger, t *task.Task, dlq *task.Queue, now int64, clk clock.Clock) *task.Task {
	dl := t.DeadLetter(dlq, now)
	if dl == nil {
		log.Warn("no dead-letter copy: it would be a chain more than task.MaxDepth deep (a loop of dead-letter queues?)",
			"task", t.ID, "queue", t.Queue, "deadLetterQueue", dlq.Name, "depth", t.Depth+1, "max", task.MaxDepth)
		return nil
	}
	dl.ID = newID(clk)
	return dl
}
