package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// rescueBatch is how many expired leases one pass takes at a time.
const rescueBatch = 500

// Rescuer ends attempts whose lease ran out: a pull worker that never acked,
// or a push attempt whose node died. Each becomes a failed attempt with
// backoff. It sleeps until the next expiry or a wake, so an expired lease is
// found within moments, not on a minute timer.
type Rescuer struct {
	e   *Engine
	log *slog.Logger
	// backstop bounds a sleep, for expiries written by other nodes.
	backstop time.Duration
}

func (r *Rescuer) run(ctx context.Context) {
	for {
		woken := r.e.leases.wait()
		_, err := r.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("rescue pass failed", "err", err)
		}
		sleep := r.backstop
		if _, exp, err := r.e.store.TaskNextDue(ctx); err == nil && exp > 0 {
			if d := time.Duration(exp-r.e.now()) * time.Millisecond; d < sleep {
				sleep = max(d, time.Millisecond)
			}
		}
		if err != nil {
			// The expired leases are still there (a full disk: reads work,
			// writes fail): look again in a second, as the dispatcher does,
			// not at once in a loop.
			sleep = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-woken:
		case <-r.e.clock.After(sleep):
		}
	}
}

// RunOnce expires every lease that has run out by now and returns how many.
func (r *Rescuer) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		now := r.e.now()
		ts, err := r.e.store.TaskExpired(ctx, now, rescueBatch)
		if err != nil {
			return total, err
		}
		for _, t := range ts {
			o := task.Outcome{Status: task.AttemptExpired, Error: "lease expired without an ack"}
			if !t.Pull {
				o = task.Outcome{Status: task.AttemptTimedOut, Error: "attempt abandoned: its node stopped answering"}
			}
			attempt, expired := t.Attempt, t.LeaseExpiresAt
			switch err := r.e.finish(ctx, t, now, o); {
			case task.IsCode(err, task.CodeLeaseLost): // its node finished it meanwhile
			case err != nil:
				return total, err
			case !t.Pull:
				// A push lease runs out only when the node that holds it
				// stops renewing it: worth an operator's attention.
				r.log.Warn("push attempt abandoned by its node; retrying", "task", t.ID, "queue", t.Queue,
					"attempt", attempt, "leaseExpiredAt", expired)
			}
			total++
		}
		if len(ts) < rescueBatch {
			return total, nil
		}
	}
}

// Rescuer returns the lease rescuer (tests run it with RunOnce).
func (e *Engine) Rescuer() *Rescuer { return e.rescuer }
