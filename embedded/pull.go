package embedded

import (
	"context"
	"encoding/json"
	"time"

	"github.com/errandhq/errand/internal/engine"
)

// Lease leases up to count (1–1,000) due tasks of a pull queue for lease
// (1 s–24 h). With wait it waits up to that long (at most 30 s) for a task
// to come due. Both travel in whole seconds, as over HTTP, and a fraction
// rounds up: a lease of 1.5 s is 2 s, and a wait of 500 ms waits 1 s, never
// less than asked. A negative one is refused. Close ends a waiting Lease at
// once with ErrClosed.
func (e *Engine) Lease(ctx context.Context, instance, queue string, count int, lease, wait time.Duration) ([]*Task, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	ctx, cancel := e.untilClose(ctx)
	defer cancel()
	got, err := e.eng.Lease(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, engine.LeaseParams{
		Count: count, LeaseSeconds: wholeSeconds(lease), WaitSeconds: wholeSeconds(wait),
	})
	if err != nil {
		return nil, e.fail(err)
	}
	if len(got) == 0 && e.closed() { // a wait the closing node ended
		return nil, ErrClosed
	}
	out := make([]*Task, len(got))
	for i, t := range got {
		out[i] = publicTask(t)
	}
	return out, nil
}

// Ack finishes one leased task.
type Ack struct {
	ID      string
	LeaseID string
	Result  json.RawMessage // optional JSON
}

// AckMany finishes leased tasks of one queue (1–1,000) in one group commit.
// Each ack stands alone: its error (LEASE_LOST, NOT_FOUND) is in its place
// and the others are stored.
func (e *Engine) AckMany(ctx context.Context, instance, queue string, acks []Ack) ([]error, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	in := make([]engine.AckInput, len(acks))
	for i, a := range acks {
		in[i] = engine.AckInput{ID: a.ID, LeaseID: a.LeaseID, Result: a.Result}
	}
	errs, err := e.eng.AckMany(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, in)
	if err != nil {
		return nil, e.fail(err)
	}
	for i := range errs {
		errs[i] = publicError(errs[i])
	}
	return errs, nil
}

// Release gives a leased task back: with errMsg it is a failed attempt
// (maxAttempts, dead letters), retried after delay when it is above 0,
// else after the queue's backoff; without, it goes back unharmed after
// delay.
func (e *Engine) Release(ctx context.Context, instance, id, leaseID, errMsg string, delay time.Duration) error {
	if err := e.refuse(); err != nil {
		return err
	}
	_, err := e.eng.Release(ctx, engine.TaskRef{Org: e.org, Instance: instance, ID: id}, engine.ReleaseParams{LeaseID: leaseID, Error: errMsg, DelaySeconds: delay.Seconds()})
	return e.fail(err)
}

// Extend lengthens a held lease to lease (1 s–24 h, whole seconds, a
// fraction rounding up) from now and returns the task with its new
// LeaseExpiresAt: a worker whose task takes longer than it leased it for
// keeps it. A lease that has expired, or ended with an ack or a release,
// is LEASE_LOST.
func (e *Engine) Extend(ctx context.Context, instance, id, leaseID string, lease time.Duration) (*Task, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	t, err := e.eng.Extend(ctx, engine.TaskRef{Org: e.org, Instance: instance, ID: id}, engine.ExtendParams{LeaseID: leaseID, LeaseSeconds: wholeSeconds(lease)})
	if err != nil {
		return nil, e.fail(err)
	}
	return publicTask(t), nil
}
