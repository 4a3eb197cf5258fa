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

// vacuumEvery is how often the vacuum keeper asks the store whether the
// tasks table has enough dead row versions to vacuum: a catalog read.
const vacuumEvery = time.Second

// keeperDeps is what a table keeper uses.
type keeperDeps struct {
	clock clock.Clock
	log   *slog.Logger
	every time.Duration
	// do is the store's upkeep: whether it ran, and whether the table is
	// now in order (false: what it could not do yet, as dead versions a
	// long transaction elsewhere still sees).
	do func(ctx context.Context) (ran, cleared bool, err error)
	// did is logged at info after each run; empty: at debug.
	did string
}

// keeper keeps one of the store's tables in order on errand's timing
// rather than the database's: the stats service (store.StatsKeeper) and
// the vacuum service (store.Vacuumer). It asks every interval; after a run
// it waits at least four times as long as the run took (the store's work
// takes at most a fifth of one connection's time), after a run that left
// work it could not do twice as long each time up to a minute, and after a
// failure (a role that may not ANALYZE, say) twice as long each time up to
// an hour, logging each failure.
type keeper struct {
	runner
	keeperDeps
	// ran counts the runs, for tests (nil in production).
	ran *progress[int]
}

func newKeeper(d keeperDeps) *keeper { return &keeper{keeperDeps: d} }

// newStatsKeeper is the stats service on sk.
func newStatsKeeper(sk store.StatsKeeper, c clock.Clock, log *slog.Logger) *keeper {
	return newKeeper(keeperDeps{clock: c, log: log, every: statsEvery,
		did: "the tasks table grew past its planner statistics: analyzed",
		do: func(ctx context.Context) (bool, bool, error) {
			ran, err := sk.RefreshStats(ctx)
			return ran, true, err
		}})
}

// newVacuumKeeper is the vacuum service on v.
func newVacuumKeeper(v store.Vacuumer, c clock.Clock, log *slog.Logger) *keeper {
	return newKeeper(keeperDeps{clock: c, log: log, every: vacuumEvery, do: v.VacuumTasks})
}

// Start checks now and then every interval, until Stop.
func (k *keeper) Start(ctx context.Context) error { return k.start(ctx, k.run) }

func (k *keeper) run(ctx context.Context) {
	wait := k.every
	for {
		start := k.clock.Now()
		ran, cleared, err := k.do(ctx)
		took := k.clock.Now().Sub(start)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait = min(2*max(wait, k.every), time.Hour)
			k.log.Warn("keeping the tasks table failed", "err", err, "retryIn", wait.String())
		case ran && !cleared:
			wait = min(2*max(wait, k.every, 4*took), time.Minute)
			k.log.Debug("the tasks table still needs upkeep", "ms", took.Milliseconds(), "retryIn", wait.String())
		case ran:
			wait = max(k.every, 4*took)
			if k.did != "" {
				k.log.Info(k.did, "ms", took.Milliseconds())
			} else {
				k.log.Debug("tasks table upkeep", "ms", took.Milliseconds())
			}
		default:
			wait = k.every
		}
		if ran {
			k.ran.update(func(n *int) { *n++ })
		}
		if !sleep(ctx, k.clock, k.clock.Now().Add(wait), nil, nil) {
			return
		}
	}
}
