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

// cleanerDeps is what the cleaner uses.
type cleanerDeps struct {
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	every time.Duration // default 1 min
}

// Cleaner removes finished tasks past their instance's retention, in
// batches, never an unfinished one.
type Cleaner struct {
	runner
	cleanerDeps
}

func newCleaner(d cleanerDeps) *Cleaner {
	if d.every <= 0 {
		d.every = time.Minute
	}
	return &Cleaner{cleanerDeps: d}
}

// Start runs a pass now and then every interval, until Stop.
func (c *Cleaner) Start(ctx context.Context) error { return c.start(ctx, c.run) }

func (c *Cleaner) run(ctx context.Context) {
	for {
		if _, err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("retention pass failed", "err", err)
		}
		if !sleep(ctx, c.clock, c.clock.Now().Add(c.every), nil, nil) {
			return
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
