package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
)

// The vacuumer's defaults: how often it reads the dead row count, and the
// count (plus a hundredth of the live rows) at which it vacuums.
const (
	vacuumEvery   = time.Second
	vacuumMinDead = 10_000
)

// vacuumerDeps is what the vacuumer uses.
type vacuumerDeps struct {
	store   store.Vacuumer
	clock   clock.Clock // real time by default: the interval is not a task time
	log     *slog.Logger
	every   time.Duration
	minDead int64
}

// vacuumer keeps the task table of a store that needs vacuuming
// (PostgreSQL) free of the dead row versions that claims would otherwise
// step over, whatever autovacuum's schedule: every second it reads the
// table's dead row count and vacuums when it passed the threshold
// (store.Vacuumer). Every node runs one; a vacuum already running on
// another node is not repeated. After a vacuum it pauses at least as long
// as the vacuum took.
type vacuumer struct {
	runner
	vacuumerDeps
	passes *progress[vacuumPass] // tests only: each pass's reading
}

// vacuumPass is what one pass of the vacuumer read and did.
type vacuumPass struct {
	passes int
	dead   int64
	ran    int // vacuums started so far
}

func newVacuumer(d vacuumerDeps) *vacuumer {
	if d.clock == nil {
		d.clock = clock.Real{}
	}
	if d.every <= 0 {
		d.every = vacuumEvery
	}
	if d.minDead <= 0 {
		d.minDead = vacuumMinDead
	}
	return &vacuumer{vacuumerDeps: d}
}

// Start runs a pass every interval until Stop.
func (v *vacuumer) Start(ctx context.Context) error { return v.start(ctx, v.run) }

func (v *vacuumer) run(ctx context.Context) {
	pause := v.every
	for {
		if !sleep(ctx, v.clock, v.clock.Now().Add(pause), nil, nil) {
			return
		}
		// After a vacuum the node waits at least as long as it took, so
		// that on a large table (a long retention) vacuums take at most
		// half of one database session's time, however fast the churn.
		pause = max(v.every, v.pass(ctx))
	}
}

// pass reads the dead row count and vacuums if it is due; it returns how
// long the vacuum took (0 without one).
func (v *vacuumer) pass(ctx context.Context) time.Duration {
	start := v.clock.Now()
	dead, ran, err := v.store.VacuumTasks(ctx, v.minDead)
	if err != nil {
		if ctx.Err() == nil {
			v.log.Warn("vacuum of the task table failed", "err", err)
		}
		return 0
	}
	took := time.Duration(0)
	if ran {
		took = v.clock.Now().Sub(start)
		v.log.Debug("vacuumed the task table", "dead", dead, "took", took)
	}
	v.passes.update(func(p *vacuumPass) {
		p.passes++
		p.dead = dead
		if ran {
			p.ran++
		}
	})
	return took
}
