package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// rescueBatch is how many expired leases one pass takes at a time.
const rescueBatch = 500

// rescuerDeps is what the rescuer uses.
type rescuerDeps struct {
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	leases   *waker    // rung when leases are taken or extended
	finisher *finisher // stores each expiry as a failed attempt
	backstop time.Duration
}

// Rescuer ends attempts whose lease ran out: a pull worker that never acked,
// or a push attempt whose node died. Each becomes a failed attempt with
// backoff. It sleeps until the next expiry or a wake, so an expired lease is
// found within moments, not on a minute timer.
type Rescuer struct {
	runner
	rescuerDeps
	asleep *progress[sleepReport] // tests only
	fulls  atomic.Int64           // passes that read the expired leases (tests)
	nexts  atomic.Int64           // passes that read the next expiry (tests)
}

func newRescuer(d rescuerDeps) *Rescuer { return &Rescuer{rescuerDeps: d} }

// Start runs the rescuer until Stop.
func (r *Rescuer) Start(ctx context.Context) error { return r.start(ctx, r.run) }

func (r *Rescuer) run(ctx context.Context) {
	full := true
	var wakeAt time.Time
	for {
		woken, seen := r.leases.wait()
		now := r.clock.Now()
		at, hint := r.leases.takeHint()
		var err error
		if full {
			r.fulls.Add(1)
			_, err = r.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				r.log.Warn("rescue pass failed", "err", err)
			}
		}
		// The wake time is absolute, so that a sleep armed late (after the
		// clock moved) still ends on time.
		switch {
		case full || hint == hintUnknown || wakeAt.IsZero():
			r.nexts.Add(1)
			wakeAt = now.Add(r.backstop)
			if _, exp, err := r.store.TaskNextDue(ctx); err == nil && exp > 0 {
				wakeAt = wakeAtOrBefore(now, wakeAt, time.UnixMilli(exp))
			}
		case hint == hintAt:
			// Leases taken or extended on this node, and nothing else: their
			// expiry came with the wake, and no other can have moved sooner
			// (a lease ended since only makes the time set early: the full
			// pass then finds nothing, and reads the next expiry). Under
			// load leases wake it many times a second, and the read of the
			// next expiry walks every RUNNING row.
			wakeAt = wakeAtOrBefore(now, wakeAt, time.UnixMilli(at))
		}
		// hintNone: the wake was told on the previous pass.
		if err != nil {
			// The expired leases are still there (a full disk: reads work,
			// writes fail): look again in a second, as the dispatcher does,
			// not at once in a loop.
			wakeAt = r.clock.Now().Add(time.Second)
		}
		r.asleep.report(sleepReport{Seen: seen, Now: now, WakeAt: wakeAt})
		if !sleep(ctx, r.clock, wakeAt, woken, nil) {
			return
		}
		// A wake before the time set (a lease taken or extended here,
		// another node's change) brings expiries in the future, never a
		// lease already run out: the next pass only learns the next expiry,
		// which may be sooner now. (Each read of expired leases walks every
		// RUNNING row: under load, leases wake it many times a second.)
		// The time set, reached, runs a full pass.
		full = !r.clock.Now().Before(wakeAt)
	}
}

// RunOnce expires every lease that has run out by now and returns how many.
func (r *Rescuer) RunOnce(ctx context.Context) (int, error) {
	total := 0
	push := false // a push attempt was ended: its slot is free
	defer r.freed(&push)
	for {
		now := r.clock.Now().UnixMilli()
		ts, err := r.store.TaskExpired(ctx, now, rescueBatch)
		if err != nil {
			return total, err
		}
		for _, t := range ts {
			o := task.Outcome{Status: task.AttemptExpired, Error: "lease expired without an ack"}
			if !t.Pull {
				o = task.Outcome{Status: task.AttemptTimedOut, Error: "attempt abandoned: its node stopped answering"}
			}
			attempt, expired := t.Attempt, t.LeaseExpiresAt
			push = push || !t.Pull
			ended, err := r.end(ctx, t, now, o)
			if err != nil {
				return total, err
			}
			if ended && !t.Pull {
				// A push lease runs out only when the node that holds it
				// stops renewing it: worth an operator's attention.
				r.log.Warn("push attempt abandoned by its node; retrying", append(instanceAttrs(ctx, r.store, t.InstanceID),
					"queue", t.Queue, "task", t.ID, "attempt", attempt, "leaseExpiredAt", expired)...)
			}
			total++
		}
		if len(ts) < rescueBatch {
			return total, nil
		}
	}
}

// RescueNodes ends the push attempts that nodes, declared dead, held: each
// becomes a failed attempt retried at once (a node's death is not its
// target's failure; the attempt still counts, so a task that kills every
// node that takes it ends FAILED), its slot freed. It returns how many it
// ended.
func (r *Rescuer) RescueNodes(ctx context.Context, nodes []string) (int, error) {
	total := 0
	push := false
	defer r.freed(&push)
	for {
		ts, err := r.store.TaskHeldBy(ctx, &store.HeldByParams{Nodes: nodes, Limit: rescueBatch})
		if err != nil {
			return total, err
		}
		now := r.clock.Now().UnixMilli()
		for _, t := range ts {
			o := task.Outcome{Status: task.AttemptTimedOut, NoBackoff: true,
				Error: "attempt abandoned: its node " + store.LeaseNode(t.LeaseID) + " stopped beating"}
			push = true // a dead node's attempts are push attempts
			ended, err := r.end(ctx, t, now, o)
			if err != nil {
				return total, err
			}
			if ended {
				total++
			}
		}
		if len(ts) < rescueBatch {
			return total, nil
		}
	}
}

// freed wakes the dispatchers when the pass ended a push attempt (*push):
// its slot under maxConcurrent is free, whether the task was retried,
// failed for good or (purged) removed, and the dispatcher, which learns of
// its own deliveries' ends only, would sleep until its backstop.
func (r *Rescuer) freed(push *bool) {
	if *push {
		r.finisher.changed()
	}
}

// end stores o as the outcome of t's attempt, fenced on its lease, and
// reports false when the attempt was ended meanwhile (its node finished
// it, or another node's rescuer did).
func (r *Rescuer) end(ctx context.Context, t *task.Task, now int64, o task.Outcome) (bool, error) {
	switch err := r.finisher.finish(ctx, t, now, o, 0); {
	case task.IsCode(err, task.CodeLeaseLost):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Rescuer returns the lease rescuer (tests run it with RunOnce).
func (e *Engine) Rescuer() *Rescuer { return e.rescuer }
