package engine

import (
	"context"
	"errors"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Lease bounds.
const (
	MaxLeaseCount   = 1000
	MaxLeaseSeconds = 86400
	MaxWaitSeconds  = 30
)

// LeaseMaxBytes bounds a lease's tasks' payloads and params together
// (32 MiB, Cloud Tasks' bound on a LeaseTasks answer): past it a lease
// answers fewer tasks than its count (at least one), and the rest stay
// due for the next lease. Without it a lease of 1,000 tasks could answer
// 128 MiB, held in the node's memory while it is written.
const LeaseMaxBytes = 32 << 20

// LeaseParams is a pull worker's lease request.
type LeaseParams struct {
	Count        int
	LeaseSeconds int
	WaitSeconds  int
	// Admitted, if set, is asked again before each claim after a wait: an
	// error (the caller's key was revoked meanwhile) ends the lease with
	// it, and nothing is leased to a caller no longer admitted.
	Admitted func() error
}

// Lease claims up to p.Count due tasks of a pull queue for p.LeaseSeconds.
// With WaitSeconds it holds the call until a task is available or the wait
// runs out (long polling): it claims again when something changes (an add,
// a release, a run), when the queue's next waiting task comes due (a delay,
// a backoff), and once more when the wait runs out.
func (e *Engine) Lease(ctx context.Context, ref QueueRef, p LeaseParams) ([]*task.Task, error) {
	ts, _, err := e.lease(ctx, ref, p)
	return ts, err
}

// LeaseWithTokens is Lease, and each leased task's delivery token
// (deliver.SignLeaseToken), signed with the key of the instance the lease
// read.
func (e *Engine) LeaseWithTokens(ctx context.Context, ref QueueRef, p LeaseParams) ([]*task.Task, []string, error) {
	ts, inst, err := e.lease(ctx, ref, p)
	if err != nil {
		return nil, nil, err
	}
	tokens := make([]string, len(ts))
	for i, t := range ts {
		tokens[i] = deliver.SignLeaseToken(t, inst.WebhookKey)
	}
	return ts, tokens, nil
}

// lease is Lease, which also returns the queue's instance.
func (e *Engine) lease(ctx context.Context, ref QueueRef, p LeaseParams) ([]*task.Task, *task.Instance, error) {
	if p.Count < 1 || p.Count > MaxLeaseCount {
		return nil, nil, task.FieldErrorf(task.CodeInvalidArgument, "count", "must be 1–%d", MaxLeaseCount)
	}
	if p.LeaseSeconds < 1 || p.LeaseSeconds > MaxLeaseSeconds {
		return nil, nil, task.FieldErrorf(task.CodeInvalidArgument, "leaseSeconds", "must be 1–%d", MaxLeaseSeconds)
	}
	if p.WaitSeconds < 0 || p.WaitSeconds > MaxWaitSeconds {
		return nil, nil, task.FieldErrorf(task.CodeInvalidArgument, "waitSeconds", "must be 0–%d", MaxWaitSeconds)
	}
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return nil, nil, err
	}
	sq := store.QueueRef{InstanceID: inst.ID, Name: ref.Queue}
	var deadline <-chan time.Time
	if p.WaitSeconds > 0 && !e.longPollsEnded() {
		timer := e.clock.NewTimer(time.Duration(p.WaitSeconds) * time.Second)
		defer timer.Stop()
		deadline = timer.C()
	}
	last := false   // the wait ran out: this claim is the last
	waited := false // a claim after a wait asks p.Admitted again
	for {
		if waited && p.Admitted != nil {
			if err := p.Admitted(); err != nil {
				return nil, nil, err
			}
		}
		waited = true
		var now int64              // the claim's
		woken, _ := e.waker.wait() // before the claim: no add slips between
		q, err := e.store.QueueGet(ctx, sq)
		if err != nil {
			return nil, nil, ref.notFound(err)
		}
		if q.Mode != task.ModePull {
			return nil, nil, task.Errorf(task.CodeWrongMode, "queue %q is a push queue; only a pull queue can be leased", ref.Queue)
		}
		var got []*task.Task
		if !q.Paused {
			got, now, err = e.leaseGroup.claim(ctx, e, q, p.Count, int64(p.LeaseSeconds)*1000)
			if err != nil {
				return nil, nil, err
			}
			if len(got) > 0 {
				e.leased.put(got, now) // their acks here need not read them back
			}
		}
		if len(got) > 0 || deadline == nil || last {
			if len(got) > 0 {
				soonest := got[0].LeaseExpiresAt
				for _, t := range got[1:] {
					soonest = min(soonest, t.LeaseExpiresAt)
				}
				e.leases.wakeWith(soonest) // the rescuer learns of the new expiries
				e.metrics.Leased.Add(float64(len(got)))
				e.usage.count(q.InstanceID, usagePull, int64(len(got)))
			}
			return got, inst, nil
		}
		// Counted as waiting before its timer for the next due task is
		// armed, so that a test that sees the timer sees the count.
		e.metrics.LeasesWaiting.Inc()
		due, stop, err := e.queueDue(ctx, q, now)
		if err != nil {
			e.metrics.LeasesWaiting.Dec()
			return nil, nil, err
		}
		e.signals.parked.update(func(n *int) { *n++ })
		unpark := func() { stop(); e.metrics.LeasesWaiting.Dec() }
		select {
		case <-ctx.Done():
			unpark()
			return nil, nil, ctx.Err()
		case <-e.pollsEnd:
			unpark()
			return []*task.Task{}, inst, nil // the node is stopping: the worker polls again, elsewhere
		case <-deadline:
			last = true
		case <-woken:
		case <-due:
		}
		unpark()
	}
}

// EndLongPolls answers every lease waiting for tasks at once, with none
// (a node that is stopping: its workers lease again, from another node or
// after the restart, rather than hold the shutdown), and lets no lease
// wait from then on.
func (e *Engine) EndLongPolls() { e.pollsOnce.Do(func() { close(e.pollsEnd) }) }

// longPollsEnded reports whether EndLongPolls was called.
func (e *Engine) longPollsEnded() bool {
	select {
	case <-e.pollsEnd:
		return true
	default:
		return false
	}
}

// queueDue returns a channel that fires when q's first waiting task due
// after claimed (the time of the claim that found nothing) comes due, and
// the function that stops its timer; nil when q is paused or has none. A
// task that came due between the claim and now fires at once; one due at
// the claim that it did not take waits for a change.
func (e *Engine) queueDue(ctx context.Context, q *task.Queue, claimed int64) (<-chan time.Time, func(), error) {
	if q.Paused {
		return nil, func() {}, nil
	}
	next, err := e.store.TaskQueueNextRunAt(ctx, store.QueueRef{InstanceID: q.InstanceID, Name: q.Name}, claimed)
	if err != nil || next == 0 {
		return nil, func() {}, err
	}
	timer := e.clock.NewTimer(time.Duration(max(next-e.now(), 0)) * time.Millisecond)
	return timer.C(), func() { timer.Stop() }, nil
}

// Ack finishes a leased task with an optional result.
func (e *Engine) Ack(ctx context.Context, ref TaskRef, p AckParams) (*task.Task, error) {
	result := p.Result
	if task.IsJSONNull(result) {
		result = nil
	} else if err := task.ValidateJSONBytes(result, "result"); err != nil {
		return nil, err
	}
	return e.finishLeased(ctx, ref, p.LeaseID, task.Outcome{Status: task.AttemptSucceeded, Result: result})
}

// Release gives a leased task back. With an error it is a failed attempt
// (maxAttempts, dead letters) retried after delaySeconds when given, else
// after the queue's backoff; without one the task goes back unharmed after
// delaySeconds and the attempt is not counted.
func (e *Engine) Release(ctx context.Context, ref TaskRef, p ReleaseParams) (*task.Task, error) {
	if !(p.DelaySeconds >= 0) || p.DelaySeconds > MaxLeaseSeconds {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "delaySeconds", "must be 0–%d", MaxLeaseSeconds)
	}
	o := task.Outcome{Status: task.AttemptReleased, Delay: time.Duration(p.DelaySeconds * float64(time.Second))}
	if p.Error != "" {
		o.Status, o.Error = task.AttemptFailed, p.Error
	}
	return e.finishLeased(ctx, ref, p.LeaseID, o)
}

// Extend lengthens a held lease to leaseSeconds from now.
func (e *Engine) Extend(ctx context.Context, ref TaskRef, p ExtendParams) (*task.Task, error) {
	if p.LeaseSeconds < 1 || p.LeaseSeconds > MaxLeaseSeconds {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "leaseSeconds", "must be 1–%d", MaxLeaseSeconds)
	}
	st, err := e.taskOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	e.leased.drop(st.InstanceID, st.ID) // its expiry changes: the ack reads the store
	t, err := e.store.TaskUpdate(ctx, st, func(t *task.Task) error {
		if !t.Pull {
			return task.Errorf(task.CodeLeaseLost, "the task is not leased")
		}
		return t.Extend(p.LeaseID, e.now(), p.LeaseSeconds)
	})
	if err == nil {
		e.leases.wakeWith(t.LeaseExpiresAt) // sooner or later than before
	}
	return t, ref.notFound(err)
}

// finishLeased ends a leased attempt: the domain checks the lease and decides
// the next state; the store writes it fenced on the lease id and on the
// lease being live at the time it was checked at, adding a dead-letter copy
// in the same transaction when the task failed. The task is this node's
// copy from the lease when it has one that holds the lease (leasedTasks),
// else it is read from the store.
func (e *Engine) finishLeased(ctx context.Context, ref TaskRef, leaseID string, o task.Outcome) (*task.Task, error) {
	st, err := e.taskOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	now := e.now()
	ack := o.Status == task.AttemptSucceeded
	t := e.leased.take(st.InstanceID, st.ID)
	cached := t != nil && checkLeased(t, leaseID, now) == nil
	if !cached {
		if t, err = e.store.TaskGet(ctx, st); err != nil {
			return nil, ref.notFound(err)
		}
		now = e.now()
		// A task purged during the attempt is written under its purged
		// lease: the store removes it and answers task.ErrPurged. An ack
		// that finds its own ack done (repeated, its answer lost) is done.
		if err := checkLeased(t, leaseID, now); err != nil {
			switch {
			case ack && t.AckedBy(leaseID):
				return t, nil
			case !errors.Is(err, task.ErrPurged):
				return nil, err
			}
		}
	}
	if err := e.fin.finish(ctx, t, now, o, now); err != nil {
		if (cached || ack) && (task.IsCode(err, task.CodeLeaseLost) || task.IsCode(err, task.CodeNotFound)) {
			return e.refusedLeased(ctx, ref, st, leaseID, now, ack, err)
		}
		return nil, err
	}
	return t, nil
}

// checkLeased is the check of an ack or release on its task: a pull task
// under leaseID, live at now.
func checkLeased(t *task.Task, leaseID string, now int64) error {
	if !t.Pull {
		return task.Errorf(task.CodeLeaseLost, "the task is not leased")
	}
	return t.CheckLease(leaseID, now)
}

// refusedLeased answers a finish that the store refused (err: the fence
// missed, or the queue is gone) as the read would have answered it: the
// task is read, and a task gone is NOT_FOUND, an ack (ack) that finds its
// own lease's ack done (the same ack, sent twice at once) is done, a lease
// not held is its LEASE_LOST; a lease that still holds in what was read
// lost a race, and err stands, as it does when the read fails.
func (e *Engine) refusedLeased(ctx context.Context, ref TaskRef, st store.TaskRef, leaseID string, now int64, ack bool, err error) (*task.Task, error) {
	if errors.Is(err, task.ErrPurged) {
		return nil, err // the store removed the task
	}
	t, gerr := e.store.TaskGet(ctx, st)
	if task.IsCode(gerr, task.CodeNotFound) {
		return nil, ref.notFound(gerr)
	}
	if gerr != nil {
		return nil, err
	}
	if ack && t.AckedBy(leaseID) {
		return t, nil
	}
	if cerr := checkLeased(t, leaseID, now); cerr != nil {
		return nil, cerr
	}
	return nil, err
}
