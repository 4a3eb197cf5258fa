package engine

import (
	"context"
	"time"

	"github.com/errandhq/errand/internal/metrics"
)

// readBacklog is the metrics' BacklogReader: the store's work due and not
// started at the engine's clock, per queue mode, and its chain outbox.
func (e *Engine) readBacklog(ctx context.Context) (*metrics.BacklogRead, error) {
	now := e.clock.Now().UnixMilli()
	got, err := e.store.TaskBacklog(ctx, now, metrics.BacklogLimit)
	if err != nil {
		return nil, err
	}
	events, err := e.store.TriggerEventBacklog(ctx, metrics.BacklogLimit)
	if err != nil {
		return nil, err
	}
	out := &metrics.BacklogRead{Queues: make([]metrics.Backlog, len(got)), ChainEvents: events.Pending}
	for i, b := range got {
		out.Queues[i] = metrics.Backlog{Mode: string(b.Mode), Due: b.Due, OldestDue: ms(now - b.OldestRunAt)}
	}
	if events.Pending > 0 {
		out.OldestChainEvent = ms(now - events.OldestFinishedAt)
	}
	return out, nil
}

// ms is a span of Unix milliseconds as a duration.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
