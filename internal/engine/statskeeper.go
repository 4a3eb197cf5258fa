package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
)

// statsEvery is how often the stats keeper asks the store whether the
// tasks table's statistics are stale: a catalog read, and an ANALYZE only
// when the table grew past what they describe.
const statsEvery = 5 * time.Second

// statsKeeperDeps is what the stats keeper uses.
type statsKeeperDeps struct {
	sk    store.StatsKeeper
	clock clock.Clock
	log   *slog.Logger
	every time.Duration
}

// statsKeeper keeps the store's planner statistics of the tasks table
// fresh while it grows, on errand's timing rather than the database's (see
// store.StatsKeeper). After a failure (a role that may not ANALYZE, say)
// it waits twice as long each time, up to an hour, and logs each failure.
type statsKeeper struct {
	runner
	statsKeeperDeps
	// ran counts the refreshes done, for tests (nil in production).
	ran *progress[int]
}

func newStatsKeeper(d statsKeeperDeps) *statsKeeper {
	if d.every <= 0 {
		d.every = statsEvery
	}
	return &statsKeeper{statsKeeperDeps: d}
}

// Start checks now and then every interval, until Stop.
func (k *statsKeeper) Start(ctx context.Context) error { return k.start(ctx, k.run) }

func (k *statsKeeper) run(ctx context.Context) {
	wait := k.every
	for {
		start := k.clock.Now()
		ran, err := k.sk.RefreshStats(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait = min(2*wait, time.Hour)
			k.log.Warn("refreshing the planner's statistics of tasks failed", "err", err, "retryIn", wait.String())
		case ran:
			wait = k.every
			k.log.Info("the tasks table grew past its planner statistics: analyzed", "ms", k.clock.Now().Sub(start).Milliseconds())
			k.ran.update(func(n *int) { *n++ })
		default:
			wait = k.every
		}
		if !sleep(ctx, k.clock, k.clock.Now().Add(wait), nil, nil) {
			return
		}
	}
}
