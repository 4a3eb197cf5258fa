package engine

import (
	"context"
	"time"

	"github.com/errandhq/errand/internal/metrics"
)

// readBacklog is the metrics' BacklogReader: the store's work due and not
// started at the engine's clock, per queue mode.
func (e *Engine) readBacklog(ctx context.Context) ([]metrics.Backlog, error) {
	now := e.clock.Now().UnixMilli()
	got, err := e.store.TaskBacklog(ctx, now, metrics.BacklogLimit)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.Backlog, len(got))
	for i, b := range got {
		out[i] = metrics.Backlog{Mode: string(b.Mode), Due: b.Due, OldestDue: time.Duration(now-b.OldestRunAt) * time.Millisecond}
	}
	return out, nil
}
