package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
)

// cleanBatch is how many finished tasks one delete removes.
const cleanBatch = 1000

// Cleaner removes finished tasks past their instance's retention, in
// batches, never an unfinished one.
type Cleaner struct {
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	every time.Duration
}

func (c *Cleaner) run(ctx context.Context) {
	every := c.every
	if every <= 0 {
		every = time.Minute
	}
	for {
		if _, err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("retention pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(every):
		}
	}
}

// RunOnce deletes every finished task past retention now, batch by batch,
// and returns how many went.
func (c *Cleaner) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := c.store.TaskDeleteFinished(ctx, c.clock.Now().UnixMilli(), cleanBatch)
		total += n
		if err != nil || n < cleanBatch {
			if total > 0 {
				c.log.Info("retention", "deleted", total)
			}
			return total, err
		}
	}
}

// Cleaner returns the retention service (tests run it with RunOnce).
func (e *Engine) Cleaner() *Cleaner { return e.cleaner }
